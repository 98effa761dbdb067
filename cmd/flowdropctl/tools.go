package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/registry"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	"github.com/flowdrop/gateway/internal/toolproto"
)

const toolsUsage = `usage: flowdropctl tools <command> [flags]

commands:
  register -f FILE [--expected-revision N] [--require-compatible] [--strict-lint]
                   register (create or update) the tool(s) in FILE: one tool or a
                   tools: list, YAML or JSON ("-" reads stdin)
  alias NAME --target TOOL [--description D] [--schema FILE] [--fixed P=JSON]...
             [--inject P=subject|auth-method|claim:NAME]... [--expected-revision N]
                   register NAME as an alias of TOOL: its own description and
                   narrower schema (default: TOOL's less what the alias sets),
                   arguments the gateway sets and the model never sees
  list [--prefix P] [--label k=v]... [--bundle B] [--json]
                   list registered tools (every page; --bundle: a bundle's)
  get NAME         print one tool as JSON
  delete NAME [--expected-revision N]
                   delete a tool
  watch [--from REV] [--count N]
                   print one line per registry change until interrupted
                   (--from 0, the default, starts with the current tools)
  import grpc --target HOST:PORT [--protoset FILE] [--service NAME] [--method NAME]
              [--prefix P] [--dry-run] [--require-compatible]
                   register one tool per unary method of a gRPC service, its
                   descriptors from server reflection or a descriptor set file;
                   prints the names registered, one a line (skips on stderr)
  export --format openai|openai-strict|anthropic|gemini|mcp [--bundle B]
                   print the tools you may invoke (of bundle B) in a model API's tool
                   format, named by provider-safe names the gateway maps back (tools
                   the format cannot carry: on stderr with the reason)
  search QUERY [--limit N]
                   rank the tools you may invoke against QUERY (quoted words):
                   names, descriptions and parameter names, best first
  import openapi --spec FILE|URL --base-url URL [--operation ID] [--prefix P]
                 [--dry-run] [--require-compatible]
                   register one HTTP-operation tool per operation of an OpenAPI 3
                   (or Swagger 2.0) document; prints the names registered
  import mcp --url URL [--header-file F | --credential-env NAME] [--prefix P]
             [--dry-run] [--require-compatible] [--replace]
                   register one tool per tool of an upstream MCP server
                   (streamable HTTP) with its input schema; the credential's
                   file path or variable name is stored, never the credential;
                   a tool of the same name not imported from that upstream (or
                   edited by an admin) is replaced only with --replace
                 every import also takes --tls-ca-file F, --tls-cert-file F,
                 --tls-key-file F, --tls-server-name N, --tls-require (each
                 tool's spec.tls: its backend over TLS) and --annotation
                 NAME=true|false (repeatable); --dry-run's output is a file
                 "flowdropctl apply -f" takes unchanged
  pending [--prefix P]
                   list the upstream changes to imported tools awaiting approval
  diff NAME        show a tool's pending upstream change against what it serves
  approve NAME [--expected-revision N]
                   serve the pending change (a removal deletes the tool)
  reject NAME [--expected-revision N]
                   drop the pending change; the served definition stays
  stats [TOOL] [--top N]
                   repair analytics: calls repaired and failing validation by
                   field, caller and client, and suggested schema changes
                   (the answering replica's counts since it started)
  history NAME [--limit N]
                   the tool's kept definitions (its last 20), newest first:
                   revision, time, writer, description; --output json gives
                   each definition whole
  lint -f FILE [--profile P]...
                   check schemas against model providers offline

Every command but lint takes --timeout DUR and the connection flags below.
Exit status: 0 ok, 1 the gateway refused or failed, 2 bad usage or input.

` + connHelp

var toolsGroup = &group{name: "tools", usage: toolsUsage, subs: []subcommand{
	{"register", toolsRegister},
	{"alias", noStdin(toolsAlias)},
	{"list", noStdin(toolsList)},
	{"get", noStdin(toolsGet)},
	{"delete", noStdin(toolsDelete)},
	{"watch", noStdin(toolsWatch)},
	{"import", noStdin(toolsImport)},
	{"export", noStdin(toolsExport)},
	{"search", noStdin(toolsSearch)},
	{"pending", noStdin(toolsPending)},
	{"diff", noStdin(toolsDiff)},
	{"approve", noStdin(toolsApprove)},
	{"reject", noStdin(toolsReject)},
	{"stats", noStdin(toolsStats)},
	{"history", noStdin(toolsHistory)},
	// lint reads files and calls no gateway: it takes no context.
	{"lint", func(_ context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
		return runToolsLint(args, stdin, stdout, stderr)
	}},
}}

var toolsCommand = toolsGroup.command("manage the gateway's tool registry: register, list, get, delete, watch, import, export, search, approve upstream changes, lint")

// toolsFlags are the flags every gateway-calling subcommand shares.
type toolsFlags struct {
	fs      *flag.FlagSet
	conn    *connFlags
	timeout *time.Duration
	out     *output
	// imp is an importer's flags (nil for other commands).
	imp *importFlags
}

func newToolsFlags(sub, usage string, stderr io.Writer, defaultTimeout time.Duration) *toolsFlags {
	fs := flag.NewFlagSet("flowdropctl tools "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, "usage: flowdropctl tools "+usage); fs.PrintDefaults() }
	return &toolsFlags{
		fs:      fs,
		conn:    addConnFlags(fs),
		timeout: fs.Duration("timeout", defaultTimeout, "deadline for the whole command (0: none)"),
		out:     addOutputFlag(fs),
	}
}

// fail reports a failed call — on stdout as {"error": ...} with --output
// json, else on stderr — and returns exitCall.
func (f *toolsFlags) fail(stdout, stderr io.Writer, err error) int {
	if f.out.json {
		return writeJSONError(stdout, err)
	}
	printToolsStatus(stderr, err)
	return exitCall
}

// parse parses flags placed before or after the positional arguments and
// checks their number. It returns the positionals and an exit code (-1: go on).
func (f *toolsFlags) parse(args []string, wantPositional int, stderr io.Writer) ([]string, int) {
	var positional []string
	for {
		if err := f.fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, 0
			}
			return nil, 2
		}
		if f.fs.NArg() == 0 {
			break
		}
		positional = append(positional, f.fs.Arg(0))
		args = f.fs.Args()[1:]
	}
	if len(positional) != wantPositional {
		if wantPositional == 0 {
			fmt.Fprintf(stderr, "%s: unexpected argument %q\n", f.fs.Name(), positional[0])
		} else {
			fmt.Fprintf(stderr, "%s: want exactly %d NAME, got %d arguments\n", f.fs.Name(), wantPositional, len(positional))
		}
		f.fs.Usage()
		return nil, 2
	}
	if *f.timeout < 0 {
		fmt.Fprintf(stderr, "%s: --timeout must not be negative, got %v\n", f.fs.Name(), *f.timeout)
		return nil, 2
	}
	return positional, -1
}

// dial connects to the gateway and applies --timeout to ctx.
func (f *toolsFlags) dial(ctx context.Context, stderr io.Writer) (gatewayv1.ToolRegistryServiceClient, context.Context, func(), bool) {
	conn, err := f.conn.dial(stderr)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", f.fs.Name(), err)
		return nil, nil, nil, false
	}
	cancel := func() {}
	if *f.timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, *f.timeout)
	}
	return gatewayv1.NewToolRegistryServiceClient(conn), ctx, func() { cancel(); conn.Close() }, true
}

// optionalRevision is an --expected-revision flag that knows whether it was set.
type optionalRevision struct{ v *int64 }

func (o *optionalRevision) String() string {
	if o.v == nil {
		return ""
	}
	return strconv.FormatInt(*o.v, 10)
}

func (o *optionalRevision) Set(s string) error {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return errors.New("want a revision number >= 0 (0: must not exist yet)")
	}
	o.v = &v
	return nil
}

// labelFlags collects repeated --label k=v.
type labelFlags map[string]string

func (l labelFlags) String() string {
	keys := slices.Sorted(maps.Keys(l))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + l[k]
	}
	return strings.Join(parts, ",")
}

func (l labelFlags) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, got %q", s)
	}
	l[k] = v
	return nil
}

func toolsRegister(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f := newToolsFlags("register", "register -f FILE [--expected-revision N] [--require-compatible] [--strict-lint] [--addr HOST:PORT]", stderr, 30*time.Second)
	file := f.fs.String("f", "", "tool file, YAML or JSON: one tool or a tools: list (\"-\" reads stdin)")
	var expected optionalRevision
	f.fs.Var(&expected, "expected-revision", "register only if the tool's current revision is N (0: only if it does not exist)")
	requireCompat := f.fs.Bool("require-compatible", false, "refuse an update that would break existing callers")
	strictLint := f.fs.Bool("strict-lint", false, "refuse a schema with provider-lint errors")
	if _, code := f.parse(args, 0, stderr); code >= 0 {
		return code
	}
	if *file == "" {
		fmt.Fprintln(stderr, "flowdropctl tools register: -f FILE is required")
		return 2
	}
	data, err := lintReadFile(*file, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "flowdropctl tools register: %v\n", err)
		return 2
	}
	tools, err := parseToolFile(data, lintDisplayName(*file))
	if err != nil {
		fmt.Fprintf(stderr, "flowdropctl tools register: %v\n", err)
		return 2
	}
	if expected.v != nil && len(tools) != 1 {
		fmt.Fprintf(stderr, "flowdropctl tools register: --expected-revision applies to one tool; %s holds %d\n", lintDisplayName(*file), len(tools))
		return 2
	}
	client, ctx, done, ok := f.dial(ctx, stderr)
	if !ok {
		return 2
	}
	defer done()
	// JSON: {"registered": [RegisterToolResponse...]}, plus "error" when a
	// tool was refused (the later ones were not sent).
	registered := []json.RawMessage{}
	for i, t := range tools {
		resp, err := client.RegisterTool(ctx, &gatewayv1.RegisterToolRequest{
			Tool: t, ExpectedRevision: expected.v, RequireCompatible: *requireCompat, StrictLint: *strictLint,
		})
		if err != nil {
			left := len(tools) - i - 1
			if f.out.json {
				writeJSON(stdout, map[string]any{"registered": registered, "error": newCallError(err), "not_sent": left})
				return exitCall
			}
			printToolsStatus(stderr, err)
			if left > 0 {
				fmt.Fprintf(stderr, "stopped: %d later tool(s) in the file were not registered\n", left)
			}
			return 1
		}
		if f.out.json {
			raw, err := protoJSON(resp)
			if err != nil {
				fmt.Fprintf(stderr, "error: encoding %s: %v\n", resp.GetTool().GetName(), err)
				return exitCall
			}
			registered = append(registered, raw)
			continue
		}
		verb := "updated"
		if resp.GetCreated() {
			verb = "created"
		}
		fmt.Fprintf(stdout, "%s %s (revision %d)\n", verb, resp.GetTool().GetName(), resp.GetTool().GetRevision())
		for _, n := range resp.GetCompatibilityNotes() {
			fmt.Fprintf(stdout, "  compatibility: %s %s: %s\n", n.GetKind(), n.GetPath(), n.GetMessage())
		}
		for _, l := range resp.GetLintFindings() {
			fmt.Fprintf(stdout, "  lint: %s\n", lintLine(l))
		}
	}
	if f.out.json {
		writeJSON(stdout, map[string]any{"registered": registered})
	}
	return 0
}

// lintLine renders a finding like `tools lint` does: PROFILE SEVERITY PATH MESSAGE.
func lintLine(l *gatewayv1.LintFinding) string {
	p := l.GetPath()
	if p == "" {
		p = "(root)"
	}
	return l.GetProfile() + " " + l.GetSeverity() + " " + p + " " + l.GetMessage()
}

// parseToolFile reads one tool or a tools: list with the gateway's own
// tools-file reader (strict fields, durations, duplicate names, and the
// schema compiled so mistakes are caught before the gateway is called).
func parseToolFile(data []byte, source string) ([]*gatewayv1.Tool, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%s is empty", source)
	}
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(js, &top); err != nil {
		return nil, fmt.Errorf("%s: the file must hold one tool or a tools: list", source)
	}
	if _, isList := top["tools"]; !isList {
		if _, hasName := top["name"]; !hasName {
			return nil, fmt.Errorf("%s: neither a tool (no name) nor a tools: list", source)
		}
		js = append(append([]byte(`{"tools":[`), js...), "]}"...)
	} else if _, hasName := top["name"]; hasName {
		return nil, fmt.Errorf("%s: has both a tools: list and a top-level \"name\"; use one form", source)
	}
	parsed, err := registry.ParseTools(js, source)
	if err != nil {
		return nil, err
	}
	if len(parsed) == 0 {
		return nil, fmt.Errorf("%s: tools: is empty", source)
	}
	// The registry API's own converter: every field the file defines is sent.
	out := make([]*gatewayv1.Tool, len(parsed))
	for i, t := range parsed {
		out[i] = toolproto.ToProto(t)
	}
	return out, nil
}

func toolsList(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newToolsFlags("list", "list [--prefix P] [--label k=v]... [--bundle B] [--json] [--addr HOST:PORT]", stderr, 30*time.Second)
	prefix := f.fs.String("prefix", "", "only tools whose name starts with P")
	bundle := f.fs.String("bundle", "", "only the tools of bundle B")
	labels := labelFlags{}
	f.fs.Var(labels, "label", "only tools with this label (key=value; repeatable, all must match)")
	asJSON := f.fs.Bool("json", false, "print a JSON array of tools (as --output json)")
	pageSize := f.fs.Int("page-size", 100, "tools per request (the gateway caps it at 1000)")
	if _, code := f.parse(args, 0, stderr); code >= 0 {
		return code
	}
	if *pageSize < 1 || *pageSize > 1000 {
		fmt.Fprintf(stderr, "flowdropctl tools list: --page-size must be 1..1000, got %d\n", *pageSize)
		return 2
	}
	client, ctx, done, ok := f.dial(ctx, stderr)
	if !ok {
		return 2
	}
	defer done()
	var tools []*gatewayv1.Tool
	req := &gatewayv1.ListToolsRequest{PageSize: int32(*pageSize), NamePrefix: *prefix, Labels: labels, Bundle: *bundle}
	for {
		resp, err := client.ListTools(ctx, req)
		if err != nil {
			return f.fail(stdout, stderr, err)
		}
		tools = append(tools, resp.GetTools()...)
		if resp.GetNextPageToken() == "" {
			break
		}
		if resp.GetNextPageToken() == req.GetPageToken() {
			fmt.Fprintln(stderr, "error: the gateway returned the same page token twice; stopping")
			return 1
		}
		req.PageToken = resp.GetNextPageToken()
	}
	if *asJSON || f.out.json {
		items := make([]json.RawMessage, len(tools))
		for i, t := range tools {
			b, err := protoNames.Marshal(t)
			if err != nil {
				fmt.Fprintf(stderr, "error: encoding %s: %v\n", t.GetName(), err)
				return 1
			}
			items[i] = b
		}
		out, _ := json.MarshalIndent(items, "", "  ")
		if len(items) == 0 {
			out = []byte("[]")
		}
		fmt.Fprintln(stdout, string(out))
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tREVISION\tBACKEND\tLABELS\tDESCRIPTION")
	for _, t := range tools {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", t.GetName(), t.GetRevision(), toolBackend(t), labelFlags(t.GetLabels()).String(), firstLine(t.GetDescription()))
	}
	tw.Flush()
	return 0
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func toolsGet(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newToolsFlags("get", "get NAME [--addr HOST:PORT]", stderr, 30*time.Second)
	pos, code := f.parse(args, 1, stderr)
	if code >= 0 {
		return code
	}
	client, ctx, done, ok := f.dial(ctx, stderr)
	if !ok {
		return 2
	}
	defer done()
	resp, err := client.GetTool(ctx, &gatewayv1.GetToolRequest{Name: pos[0]})
	if err != nil {
		return f.fail(stdout, stderr, err)
	}
	// protojson's whitespace is deliberately unstable; re-indent for a
	// stable print.
	b, err := protoNames.Marshal(resp.GetTool())
	var buf bytes.Buffer
	if err == nil {
		err = json.Indent(&buf, b, "", "  ")
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: encoding the tool: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, buf.String())
	return 0
}

func toolsDelete(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newToolsFlags("delete", "delete NAME [--expected-revision N] [--addr HOST:PORT]", stderr, 30*time.Second)
	var expected optionalRevision
	f.fs.Var(&expected, "expected-revision", "delete only if the tool's current revision is N")
	pos, code := f.parse(args, 1, stderr)
	if code >= 0 {
		return code
	}
	client, ctx, done, ok := f.dial(ctx, stderr)
	if !ok {
		return 2
	}
	defer done()
	if _, err := client.DeleteTool(ctx, &gatewayv1.DeleteToolRequest{Name: pos[0], ExpectedRevision: expected.v}); err != nil {
		return f.fail(stdout, stderr, err)
	}
	if f.out.json {
		writeJSON(stdout, map[string]any{"deleted": pos[0]})
		return 0
	}
	fmt.Fprintf(stdout, "deleted %s\n", pos[0])
	return 0
}

func toolsWatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newToolsFlags("watch", "watch [--from REV] [--count N] [--addr HOST:PORT]", stderr, 0)
	from := f.fs.Int64("from", 0, "print changes after this registry revision (0: the current tools first)")
	count := f.fs.Int("count", 0, "stop after N events (0: until interrupted)")
	if _, code := f.parse(args, 0, stderr); code >= 0 {
		return code
	}
	if *from < 0 || *count < 0 {
		fmt.Fprintln(stderr, "flowdropctl tools watch: --from and --count must not be negative")
		return 2
	}
	interrupted := ctx
	client, ctx, done, ok := f.dial(ctx, stderr)
	if !ok {
		return 2
	}
	defer done()
	stream, err := client.WatchTools(ctx, &gatewayv1.WatchToolsRequest{StartRevision: *from})
	if err != nil {
		return f.fail(stdout, stderr, err)
	}
	for n := 0; *count == 0 || n < *count; n++ {
		ev, err := stream.Recv()
		if err != nil {
			if interrupted.Err() != nil && status.Code(err) == codes.Canceled {
				return 0 // Ctrl-C is how a watch is meant to end
			}
			if errors.Is(err, io.EOF) {
				fmt.Fprintln(stderr, "error: the gateway ended the watch")
				return 1
			}
			return f.fail(stdout, stderr, err)
		}
		if f.out.json { // JSON lines: one event per line
			raw, err := protoJSON(ev)
			if err != nil {
				fmt.Fprintf(stderr, "error: encoding an event: %v\n", err)
				return exitCall
			}
			writeJSONLine(stdout, raw)
			continue
		}
		fmt.Fprintln(stdout, watchLine(ev))
	}
	return 0
}

// watchLine is one event: "PUT name revision=N backend=..." (with
// " pending=KIND,..." while an upstream change awaits approval, and
// " edited" for an imported tool an admin edited) or "DELETE name revision=N".
func watchLine(ev *gatewayv1.WatchToolsResponse) string {
	switch ev.GetType() {
	case gatewayv1.WatchToolsResponse_EVENT_TYPE_PUT:
		line := fmt.Sprintf("PUT %s revision=%d backend=%s", ev.GetTool().GetName(), ev.GetRevision(), toolBackend(ev.GetTool()))
		if o := ev.GetTool().GetOrigin(); len(o.GetPending()) > 0 {
			line += " pending=" + strings.Join(o.GetPending(), ",")
		}
		if ev.GetTool().GetOrigin().GetEdited() {
			line += " edited"
		}
		return line
	case gatewayv1.WatchToolsResponse_EVENT_TYPE_DELETE:
		return fmt.Sprintf("DELETE %s revision=%d", ev.GetTool().GetName(), ev.GetRevision())
	}
	return fmt.Sprintf("%s %s revision=%d", ev.GetType(), ev.GetTool().GetName(), ev.GetRevision())
}

// printToolsStatus prints "error: <Code>: <message>" and then each field
// violation, compatibility problem and lint finding the status carries, one
// per line.
func printToolsStatus(w io.Writer, err error) {
	st, ok := status.FromError(err)
	if !ok {
		fmt.Fprintf(w, "error: %v\n", err)
		return
	}
	fmt.Fprintf(w, "error: %s: %s\n", st.Code(), st.Message())
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.BadRequest:
			for _, v := range d.GetFieldViolations() {
				fmt.Fprintf(w, "  %s: %s\n", v.GetField(), v.GetDescription())
			}
		case *errdetails.PreconditionFailure:
			for _, v := range d.GetViolations() {
				fmt.Fprintf(w, "  %s %s: %s\n", strings.ToLower(v.GetType()), v.GetSubject(), v.GetDescription())
			}
		}
	}
}

// protoNames prints tools with the field names of the tools file
// (input_schema, not inputSchema).
var protoNames = protojson.MarshalOptions{UseProtoNames: true}
