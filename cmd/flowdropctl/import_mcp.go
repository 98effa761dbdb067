package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/mcpimport"
	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/registry"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

const importMCPUsage = "import mcp (--url URL [--transport streamable_http|sse] [--header-file F | --credential-env NAME] | --stdio NAME -- COMMAND [ARG...]) [--prefix P] [--max-description-bytes N] [--max-schema-bytes N] [--dry-run] [--require-compatible] [--replace] [--addr HOST:PORT]"

// toolsImportMCP registers one MCP-tool tool per tool of an upstream MCP
// server (streamable HTTP, or legacy HTTP+SSE with --transport sse). The credential's file path or environment
// variable's name is stored in each tool; the credential is read here to
// list the tools, and by the gateway on connect, never stored. With
// --stdio NAME the server is one the gateway runs (its policy file's
// mcp_upstreams.stdio.NAME): the command after -- runs it here, with this
// shell's environment, only to list its tools; the tools name stdio://NAME.
// Each tool carries its origin (the upstream), so the gateway holds the
// upstream's later changes for approval; a tool of the same name that was
// not imported from this upstream, or that an admin edited, is replaced
// only with --replace.
func toolsImportMCP(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var command []string // after "--": the flag parser must not read its flags
	if i := slices.Index(args, "--"); i >= 0 {
		args, command = args[:i], args[i+1:]
	}
	f := newToolsFlags("import mcp", importMCPUsage, stderr, 30*time.Second)
	f.imp = addImportFlags(f.fs)
	upstream := f.fs.String("url", "", "the upstream MCP server's HTTP URL, stored in each tool")
	transport := f.fs.String("transport", "", "the upstream's HTTP transport, stored in each tool: streamable_http, or sse (legacy HTTP+SSE, 2024-11-05); unset: detected on each connect")
	stdioName := f.fs.String("stdio", "", "NAME of the stdio server in the gateway's policy file (mcp_upstreams.stdio); the command after -- runs it here to list its tools")
	headerFile := f.fs.String("header-file", "", `file holding a bearer token or one "Header-Name: value" line; its absolute path is stored, read by the gateway on connect`)
	credEnv := f.fs.String("credential-env", "", "environment variable (of the gateway, and of this command for the listing) holding the same")
	prefix := f.fs.String("prefix", "", "start every tool name with P")
	dryRun := f.fs.Bool("dry-run", false, "print the tools as JSON instead of registering them")
	requireCompat := f.fs.Bool("require-compatible", false, "refuse re-importing a tool whose input schema changed incompatibly")
	maxDesc := f.fs.Int("max-description-bytes", mcpimport.DefaultMaxDescriptionBytes, "skip an upstream tool whose description is longer (at most the registry's bound)")
	maxSchema := f.fs.Int("max-schema-bytes", mcpimport.DefaultMaxSchemaBytes, "skip an upstream tool whose input or output schema, as JSON, is larger (at most the registry's bound)")
	replace := f.fs.Bool("replace", false, "replace a tool of the same name that was not imported from this upstream, or that an admin edited")
	if _, code := f.parse(args, 0, stderr); code >= 0 {
		return code
	}
	fail := func(code int, format string, a ...any) int {
		msg := fmt.Sprintf(format, a...)
		if code == exitCall && f.out.json {
			writeJSON(stdout, map[string]any{"error": &callError{Code: "Unknown", Message: msg}})
		}
		fmt.Fprintln(stderr, "flowdropctl tools import mcp: "+msg)
		return code
	}
	if *stdioName != "" {
		switch {
		case *upstream != "" || *headerFile != "" || *credEnv != "":
			return fail(2, "--stdio takes no --url, --header-file or --credential-env: the gateway's policy file gives the server its environment")
		case !registry.ValidStdioName(*stdioName):
			return fail(2, "--stdio %q: want the server's name in the gateway's policy file (^[a-z0-9_-]{1,64}$)", *stdioName)
		case len(command) == 0:
			return fail(2, "--stdio NAME -- COMMAND [ARG...]: give the command that runs the server here, to list its tools")
		}
	} else if u, err := url.Parse(*upstream); *upstream == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fail(2, "--url: want the upstream's http or https URL (or --stdio NAME -- COMMAND)")
	} else if len(command) > 0 {
		return fail(2, "a command after -- goes with --stdio")
	}
	switch tr := registry.MCPTransport(*transport); {
	case *stdioName != "" && tr != registry.MCPTransportDetect:
		return fail(2, "--transport goes with --url: a stdio server is spoken to over its stdio")
	case tr != registry.MCPTransportDetect && tr != registry.MCPTransportStreamable && tr != registry.MCPTransportSSE:
		return fail(2, "--transport %q: want streamable_http or sse (unset: detected)", *transport)
	}
	if *headerFile != "" && *credEnv != "" {
		return fail(2, "set at most one of --header-file and --credential-env")
	}
	bounds := mcpimport.DefaultBounds()
	bounds.DescriptionBytes, bounds.SchemaBytes = *maxDesc, *maxSchema
	if err := bounds.Check(); err != nil || *maxDesc <= 0 || *maxSchema <= 0 {
		return fail(2, "--max-description-bytes %d, --max-schema-bytes %d: each from 1 to the registry's bound (%d, %d)",
			*maxDesc, *maxSchema, registry.MaxDescriptionBytes, registry.MaxSchemaBytes)
	}
	ref := mcpupstream.Reference{Env: *credEnv}
	if *headerFile != "" {
		abs, err := filepath.Abs(*headerFile)
		if err != nil {
			return fail(2, "--header-file: %v", err)
		}
		ref.File = abs
	}
	h, _, err := ref.Load()
	if err != nil {
		return fail(2, "%v", err)
	}
	if *f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *f.timeout)
		defer cancel()
	}
	// Each tool's execution.taskSupport, which the SDK's Tool drops: told
	// as a stdio or legacy SSE session reads the listing, else read by
	// the caller's own tools/list (as the gateway reads it).
	taskSupport := map[string]string{}
	tell := func(page map[string]string) {
		for name, ts := range page {
			if ts != "" && len(taskSupport) < mcpimport.MaxListed {
				taskSupport[name] = ts
			}
		}
	}
	var cs *mcp.ClientSession
	var caller *mcpupstream.Caller
	if *stdioName != "" {
		path, err := exec.LookPath(command[0])
		if err != nil {
			return fail(2, "the command: %v", err)
		}
		if path, err = filepath.Abs(path); err != nil {
			return fail(2, "the command: %v", err)
		}
		*upstream = registry.StdioScheme + "://" + *stdioName
		caller, err = mcpupstream.ConnectCommandCaller(ctx, mcpupstream.Command{Path: path, Args: command[1:], InheritEnv: true},
			mcpupstream.ConnectOptions{Stderr: stderr, OnToolExecution: tell})
		if err != nil {
			return fail(1, "starting %s: %v", command[0], err)
		}
		cs = caller.Session
	} else if caller, err = mcpupstream.ConnectCaller(ctx, *upstream, h, mcpupstream.ConnectOptions{MaxResponseBytes: bounds.ListBytes,
		Transport: mcpupstream.Transport(*transport), OnToolExecution: tell}); err != nil {
		return fail(1, "connecting to %s: %v%s", *upstream, err, redirectHint(err))
	} else {
		cs = caller.Session
	}
	// What the upstream lists is bounded as it is read (its bytes, its
	// tools), and a tool over a size bound is skipped, never registered.
	listed, oversized, err := mcpimport.ListWithin(ctx, cs, bounds)
	if err == nil && !caller.ConnectionBound() {
		// Only what the import says depends on it (the gateway reads it
		// again to decide whom it offers a tool), so a listing the
		// tools came through but this read does not (over its page
		// bound, say) is said, not fatal.
		if terr := readTaskSupport(ctx, caller, bounds.ListBytes, taskSupport); terr != nil {
			fmt.Fprintf(stderr, "the tools' task support is not known (%v): the gateway reads it itself\n", terr)
		}
	}
	// Whether the gateway will carry the upstream's tasks, as it decides
	// for its own session (the revision this one negotiated).
	uncarried := !caller.CarriesTasks()
	cs.Close()
	if err != nil {
		return fail(1, "listing the tools of %s: %v%s", *upstream, err, redirectHint(err))
	}
	tools, skipped, err := mcpimport.Tools(listed, mcpimport.Options{URL: *upstream, Transport: registry.MCPTransport(*transport), Prefix: *prefix, CredentialEnv: ref.Env, CredentialFile: ref.File})
	if err != nil {
		return fail(2, "%v", err)
	}
	type skip struct {
		Tool   string `json:"tool"`
		Reason string `json:"reason"`
	}
	skips := []skip{}
	for _, o := range oversized {
		flag := "--max-description-bytes"
		if o.Bound != "description" {
			flag = "--max-schema-bytes"
		}
		skipped = append(skipped, mcpimport.Skipped{Tool: o.Tool, Reason: o.String() + " (" + flag + ")"})
	}
	for _, s := range skipped {
		fmt.Fprintf(stderr, "skipped %s: %s\n", s.Tool, s.Reason)
		skips = append(skips, skip{s.Tool, s.Reason})
	}
	if len(tools) == 0 {
		return fail(1, "no tool to import")
	}
	for _, t := range tools {
		if note := mcpimport.TaskNote(t.GetName(), taskSupport[t.GetSpec().GetMcpTool().GetTool()], uncarried); note != "" {
			fmt.Fprintln(stderr, note)
		}
	}
	var guard importGuard
	if !*replace {
		guard = mcpImportGuard(*upstream)
	}
	return registerImported(ctx, f, tools, skips, *dryRun, *requireCompat, guard, stdout, stderr)
}

// readTaskSupport adds to into the execution.taskSupport of the tools of
// c's upstream over streamable HTTP, read from its raw tools/list within
// the listing's byte bound (over stdio and legacy SSE the listing read
// through as it passed, ConnectOptions.OnToolExecution, told it already).
func readTaskSupport(ctx context.Context, c *mcpupstream.Caller, limit int64, into map[string]string) error {
	ctx, stop := mcpupstream.WithResponseLimit(ctx, limit)
	defer stop()
	ts, err := c.ToolTaskSupport(ctx)
	if errors.Is(err, mcpupstream.ErrTasksUnsupported) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading its tools' task support: %w", err)
	}
	maps.Copy(into, ts)
	return nil
}

// mcpImportGuard lets an import write a tool that does not exist, or one
// imported from the same upstream and not edited by an admin; anything
// else (an admin's tool, another upstream's, an edited one) is refused,
// naming --replace. The write is pinned to the revision checked (0: must
// not exist), so a tool written meanwhile is not replaced either.
func mcpImportGuard(url string) importGuard {
	return func(ctx context.Context, client gatewayv1.ToolRegistryServiceClient, t *gatewayv1.Tool) (*int64, error) {
		resp, err := client.GetTool(ctx, &gatewayv1.GetToolRequest{Name: t.GetName()})
		if status.Code(err) == codes.NotFound {
			none := int64(0)
			return &none, nil
		}
		if err != nil {
			return nil, err
		}
		cur := resp.GetTool()
		refuse := func(why string) error {
			return status.Errorf(codes.AlreadyExists, "tool %s exists and %s; not replaced (--replace replaces it)", cur.GetName(), why)
		}
		switch o := cur.GetOrigin(); {
		case o.GetMcpUpstream() == "":
			return nil, refuse("was not imported (backend " + toolBackend(cur) + ")")
		case o.GetMcpUpstream() != url:
			return nil, refuse("was imported from another upstream")
		case o.GetEdited():
			return nil, refuse("an admin edited its definition")
		}
		rev := cur.GetRevision()
		return &rev, nil
	}
}

// redirectHint says what to do about a redirect, which the session did not
// follow: the credential goes to --url's origin only, as the gateway's
// sessions send it.
func redirectHint(err error) string {
	if !errors.Is(err, mcpupstream.ErrRedirect) {
		return ""
	}
	return "\n(flowdropctl sends the credential and the calls only to --url: give it the upstream's own endpoint)"
}
