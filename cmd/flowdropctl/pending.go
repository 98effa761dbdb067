package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aymanbagabas/go-udiff"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
)

// Pending upstream changes to imported tools (definition pinning): an
// upstream MCP server's change to a tool imported from it is held until
// an admin approves it; these commands show, diff, approve and reject.

func toolsPending(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newToolsFlags("pending", "pending [--prefix P] [--addr HOST:PORT]", stderr, 30*time.Second)
	prefix := f.fs.String("prefix", "", "only tools whose name starts with P")
	if _, code := f.parse(args, 0, stderr); code >= 0 {
		return code
	}
	client, ctx, done, ok := f.dial(ctx, stderr)
	if !ok {
		return 2
	}
	defer done()
	var changes []*gatewayv1.PendingChange
	req := &gatewayv1.ListPendingChangesRequest{NamePrefix: *prefix, PageSize: 1000}
	for {
		resp, err := client.ListPendingChanges(ctx, req)
		if err != nil {
			return f.fail(stdout, stderr, err)
		}
		changes = append(changes, resp.GetChanges()...)
		if resp.GetNextPageToken() == "" {
			break
		}
		if resp.GetNextPageToken() == req.GetPageToken() {
			fmt.Fprintln(stderr, "error: the gateway returned the same page token twice; stopping")
			return 1
		}
		req.PageToken = resp.GetNextPageToken()
	}
	if f.out.json {
		items := make([]json.RawMessage, len(changes))
		for i, c := range changes {
			b, err := protoNames.Marshal(c)
			if err != nil {
				fmt.Fprintf(stderr, "error: encoding %s: %v\n", c.GetTool().GetName(), err)
				return exitCall
			}
			items[i] = b
		}
		writeJSON(stdout, map[string]any{"pending": items})
		return 0
	}
	if len(changes) == 0 {
		fmt.Fprintln(stdout, "no pending upstream changes")
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tREVISION\tCHANGES\tHELD\tDETECTED\tUPSTREAM")
	for _, c := range changes {
		t := c.GetTool()
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", t.GetName(), t.GetRevision(), strings.Join(c.GetKinds(), ","), c.GetHeldBecause(),
			c.GetDetectedAt().AsTime().UTC().Format(time.RFC3339), t.GetOrigin().GetMcpUpstream())
	}
	tw.Flush()
	return 0
}

func toolsDiff(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newToolsFlags("diff", "diff NAME [--addr HOST:PORT]", stderr, 30*time.Second)
	pos, code := f.parse(args, 1, stderr)
	if code >= 0 {
		return code
	}
	client, ctx, done, ok := f.dial(ctx, stderr)
	if !ok {
		return 2
	}
	defer done()
	resp, err := client.GetPendingChange(ctx, &gatewayv1.GetPendingChangeRequest{Name: pos[0]})
	if err != nil {
		return f.fail(stdout, stderr, err)
	}
	c := resp.GetChange()
	if f.out.json {
		raw, err := protoJSON(c)
		if err != nil {
			fmt.Fprintf(stderr, "error: encoding the change: %v\n", err)
			return exitCall
		}
		writeJSONLine(stdout, raw)
		return 0
	}
	t := c.GetTool()
	fmt.Fprintf(stdout, "tool %s revision %d: pending upstream change (%s), held: %s, detected %s\n", t.GetName(), t.GetRevision(),
		strings.Join(c.GetKinds(), ", "), c.GetHeldBecause(), c.GetDetectedAt().AsTime().UTC().Format(time.RFC3339))
	fmt.Fprintf(stdout, "approve: flowdropctl tools approve %s --expected-revision %d\n", t.GetName(), t.GetRevision())
	for _, n := range c.GetCompatibilityNotes() {
		fmt.Fprintf(stdout, "compatibility: %s %s: %s\n", n.GetKind(), n.GetPath(), n.GetMessage())
	}
	served, err := definitionText(t)
	if err != nil {
		fmt.Fprintf(stderr, "error: encoding the tool: %v\n", err)
		return exitCall
	}
	proposed := "" // a removal: the whole definition goes
	if p := c.GetProposed(); p != nil {
		if proposed, err = definitionText(p); err != nil {
			fmt.Fprintf(stderr, "error: encoding the change: %v\n", err)
			return exitCall
		}
	}
	fmt.Fprint(stdout, udiff.Unified(fmt.Sprintf("%s (served, revision %d)", t.GetName(), t.GetRevision()), t.GetName()+" (upstream)", served, proposed))
	return 0
}

// definitionText is the part of a tool an upstream defines, as indented
// JSON with sorted keys, one value a line: a line diff of two reads well.
func definitionText(t *gatewayv1.Tool) (string, error) {
	def := &gatewayv1.Tool{Description: t.GetDescription(), InputSchema: t.GetInputSchema(), OutputSchema: t.GetOutputSchema(), Annotations: t.GetAnnotations()}
	raw, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(def)
	if err != nil {
		return "", err
	}
	var v any // re-encoded: encoding/json sorts keys, protojson's order is not stable
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return buf.String(), nil
}

func toolsApprove(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return decidePending(ctx, args, "approve", stdout, stderr,
		func(ctx context.Context, c gatewayv1.ToolRegistryServiceClient, name string, expected *int64) (*gatewayv1.ApprovePendingChangeResponse, error) {
			return c.ApprovePendingChange(ctx, &gatewayv1.ApprovePendingChangeRequest{Name: name, ExpectedRevision: expected})
		},
		func(stdout io.Writer, name string, resp *gatewayv1.ApprovePendingChangeResponse) {
			if resp.GetDeleted() {
				fmt.Fprintf(stdout, "approved: %s deleted (its upstream no longer has it)\n", name)
				return
			}
			fmt.Fprintf(stdout, "approved: %s serves the upstream's definition (revision %d)\n", name, resp.GetTool().GetRevision())
			for _, n := range resp.GetCompatibilityNotes() {
				fmt.Fprintf(stdout, "  compatibility: %s %s: %s\n", n.GetKind(), n.GetPath(), n.GetMessage())
			}
			for _, l := range resp.GetLintFindings() {
				fmt.Fprintf(stdout, "  lint: %s\n", lintLine(l))
			}
		})
}

func toolsReject(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return decidePending(ctx, args, "reject", stdout, stderr,
		func(ctx context.Context, c gatewayv1.ToolRegistryServiceClient, name string, expected *int64) (*gatewayv1.RejectPendingChangeResponse, error) {
			return c.RejectPendingChange(ctx, &gatewayv1.RejectPendingChangeRequest{Name: name, ExpectedRevision: expected})
		},
		func(stdout io.Writer, name string, resp *gatewayv1.RejectPendingChangeResponse) {
			fmt.Fprintf(stdout, "rejected: %s keeps its definition (revision %d); that upstream change is not proposed again\n", name, resp.GetTool().GetRevision())
		})
}

// decidePending is approve and reject: NAME [--expected-revision N], one
// call, its answer as JSON (--output json) or as say renders it.
func decidePending[R proto.Message](ctx context.Context, args []string, verb string, stdout, stderr io.Writer,
	call func(context.Context, gatewayv1.ToolRegistryServiceClient, string, *int64) (R, error), say func(io.Writer, string, R)) int {
	f := newToolsFlags(verb, verb+" NAME [--expected-revision N] [--addr HOST:PORT]", stderr, 30*time.Second)
	var expected optionalRevision
	f.fs.Var(&expected, "expected-revision", verb+" only if the tool is still at revision N (the one `tools diff` showed)")
	pos, code := f.parse(args, 1, stderr)
	if code >= 0 {
		return code
	}
	client, ctx, done, ok := f.dial(ctx, stderr)
	if !ok {
		return 2
	}
	defer done()
	resp, err := call(ctx, client, pos[0], expected.v)
	if err != nil {
		return f.fail(stdout, stderr, err)
	}
	if f.out.json {
		raw, err := protoJSON(resp)
		if err != nil {
			fmt.Fprintf(stderr, "error: encoding the answer: %v\n", err)
			return exitCall
		}
		writeJSONLine(stdout, raw)
		return 0
	}
	say(stdout, pos[0], resp)
	return 0
}
