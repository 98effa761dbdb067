package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// defaultGatewayAddr matches server.DefaultListenAddr (not imported, so the
// CLI does not pull in the whole server).
const defaultGatewayAddr = "127.0.0.1:7443"

const invokeUsage = `usage: flowdropctl invoke TOOL [--args '{...}'] [--args-struct] [--call-id ID] [--idempotency-key KEY] [--timeout DUR] [--output text|json] [connection flags]

Calls a tool through the gateway and prints the result and the repairs the
gateway made to the arguments. Exits 1 on an error (printing the status code,
message and any field violations) or when the tool reported one, 2 on bad
usage. With --output json, stdout is one JSON document: the response
({"result", "is_error", "repairs"}), or {"error": {"code", "message",
"details"}} when the call failed. --args is sent as the text it is
(arguments_json), so the gateway's strict parser judges it — a number such
as 9007199254740993 is refused by the gateway, not rounded here;
--args-struct sends it as a Struct instead (for gateways before
arguments_json). With --idempotency-key, a retry with the same key and
arguments gets the first call's stored result ("replayed") instead of
running the tool again.

` + connHelp

var invokeCommand = &command{
	name:    "invoke",
	summary: "call a tool through the gateway; print the result and the repairs",
	run: interruptible(func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
		return runInvoke(ctx, args, stdout, stderr)
	}),
}

// runInvoke implements `flowdropctl invoke`. args excludes the subcommand name.
func runInvoke(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("invoke", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, invokeUsage); fs.PrintDefaults() }
	argsJSON := fs.String("args", "{}", "the tool's arguments as a JSON object, sent as the text it is (arguments_json)")
	argsStruct := fs.Bool("args-struct", false, "parse --args here and send a Struct (arguments) instead of the text")
	gw := addConnFlags(fs)
	callID := fs.String("call-id", "", "tool-call id passed to the backend and the audit log")
	idemKey := fs.String("idempotency-key", "", "run the tool at most once for this key (1-128 printable ASCII); a retry gets the stored result")
	timeout := fs.Duration("timeout", 30*time.Second, "deadline for the call")
	out := addOutputFlag(fs)

	// Accept flags before and after TOOL.
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(positional) != 1 {
		fmt.Fprintf(stderr, "flowdropctl invoke: want exactly one TOOL, got %d\n", len(positional))
		fs.Usage()
		return 2
	}
	tool := positional[0]
	req := &gatewayv1.InvokeToolRequest{Tool: tool, CallId: *callID, IdempotencyKey: *idemKey}
	if *argsStruct {
		req.Arguments = &structpb.Struct{}
		if err := protojson.Unmarshal([]byte(*argsJSON), req.Arguments); err != nil {
			fmt.Fprintf(stderr, "flowdropctl invoke: --args must be a JSON object: %v\n", err)
			return 2
		}
	} else {
		// Only the syntax is checked here (json.Valid builds no numbers);
		// everything else is the gateway's to judge.
		if t := bytes.TrimSpace([]byte(*argsJSON)); !json.Valid(t) || len(t) == 0 || t[0] != '{' {
			fmt.Fprintf(stderr, "flowdropctl invoke: --args must be a JSON object\n")
			return 2
		}
		req.ArgumentsJson = *argsJSON
	}
	if *timeout <= 0 {
		fmt.Fprintf(stderr, "flowdropctl invoke: --timeout must be positive, got %v\n", *timeout)
		return 2
	}

	conn, err := gw.dial(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "flowdropctl invoke: %v\n", err)
		return 2
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	resp, err := gatewayv1.NewToolGatewayServiceClient(conn).InvokeTool(ctx, req)
	if err != nil {
		if out.json {
			return writeJSONError(stdout, err)
		}
		printStatus(stderr, err)
		return 1
	}
	if out.json {
		// The response as the gateway sent it: result, is_error, repairs.
		raw, err := protoJSON(resp)
		if err != nil {
			fmt.Fprintf(stderr, "flowdropctl invoke: encoding the response: %v\n", err)
			return 1
		}
		writeJSON(stdout, raw)
	} else {
		printResponse(stdout, resp)
	}
	if resp.GetIsError() {
		// The tool ran and reported a failure: the result is printed, but a
		// script should still see that it failed.
		return 1
	}
	return 0
}

func printResponse(w io.Writer, resp *gatewayv1.InvokeToolResponse) {
	result := "null"
	if resp.GetResult() != nil {
		// protojson's whitespace is deliberately unstable; re-indent for a
		// stable, readable print.
		var buf bytes.Buffer
		if b, err := protojson.Marshal(resp.GetResult()); err == nil && json.Indent(&buf, b, "", "  ") == nil {
			result = buf.String()
		}
	}
	if resp.GetIsError() {
		fmt.Fprintln(w, "tool reported an error:")
	}
	fmt.Fprintln(w, result)
	printRepairs(w, resp.GetRepairs())
	if resp.GetReplayed() {
		fmt.Fprintln(w, "replayed: the stored result of an earlier call with this idempotency key (the tool did not run again)")
	}
}

func printRepairs(w io.Writer, repairs []*gatewayv1.Repair) {
	if len(repairs) == 0 {
		fmt.Fprintln(w, "repairs: none")
		return
	}
	fmt.Fprintln(w, "repairs:")
	for _, r := range repairs {
		fmt.Fprintf(w, "  %s %s", repairKind(r.GetKind()), r.GetPath())
		if r.GetPasses() > 0 {
			fmt.Fprintf(w, " (%d passes", r.GetPasses())
			if r.GetBoundHit() {
				fmt.Fprint(w, ", pass bound reached")
			}
			fmt.Fprint(w, ")")
		}
		fmt.Fprintln(w)
	}
}

func repairKind(k gatewayv1.RepairKind) string {
	switch k {
	case gatewayv1.RepairKind_REPAIR_KIND_JSON_DECODED:
		return "json-decoded"
	case gatewayv1.RepairKind_REPAIR_KIND_ENTITIES_DECODED:
		return "entities-decoded"
	case gatewayv1.RepairKind_REPAIR_KIND_NULL_DROPPED:
		return "null-dropped"
	}
	return strings.ToLower(k.String())
}

func printStatus(w io.Writer, err error) {
	st, ok := status.FromError(err)
	if !ok {
		fmt.Fprintf(w, "error: %v\n", err)
		return
	}
	fmt.Fprintf(w, "error: %s: %s\n", st.Code(), st.Message())
	var repairs []*gatewayv1.Repair
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.BadRequest:
			for _, v := range d.GetFieldViolations() {
				fmt.Fprintf(w, "  %s: %s\n", v.GetField(), v.GetDescription())
			}
		case *gatewayv1.Repair:
			repairs = append(repairs, d)
		case error:
			if !errors.Is(d, err) {
				fmt.Fprintf(w, "  (undecodable detail: %v)\n", d)
			}
		}
	}
	if len(repairs) > 0 {
		printRepairs(w, repairs)
	}
}
