package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"time"

	"github.com/flowdrop/gateway/internal/mcpimport"
	"github.com/flowdrop/gateway/internal/mcpupstream"
)

const importMCPUsage = "import mcp --url URL [--header-file F | --credential-env NAME] [--prefix P] [--dry-run] [--require-compatible] [--addr HOST:PORT]"

// toolsImportMCP registers one MCP-tool tool per tool of an upstream MCP
// server (streamable HTTP). The credential's file path or environment
// variable's name is stored in each tool; the credential is read here to
// list the tools, and by the gateway on connect, never stored.
func toolsImportMCP(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newToolsFlags("import mcp", importMCPUsage, stderr, 30*time.Second)
	upstream := f.fs.String("url", "", "the upstream MCP server's streamable-HTTP URL, stored in each tool")
	headerFile := f.fs.String("header-file", "", `file holding a bearer token or one "Header-Name: value" line; its absolute path is stored, read by the gateway on connect`)
	credEnv := f.fs.String("credential-env", "", "environment variable (of the gateway, and of this command for the listing) holding the same")
	prefix := f.fs.String("prefix", "", "start every tool name with P")
	dryRun := f.fs.Bool("dry-run", false, "print the tools as JSON instead of registering them")
	requireCompat := f.fs.Bool("require-compatible", false, "refuse re-importing a tool whose input schema changed incompatibly")
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
	if u, err := url.Parse(*upstream); *upstream == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fail(2, "--url: want the upstream's http or https URL")
	}
	if *headerFile != "" && *credEnv != "" {
		return fail(2, "set at most one of --header-file and --credential-env")
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
	cs, err := mcpupstream.Connect(ctx, *upstream, h, mcpupstream.ConnectOptions{})
	if err != nil {
		return fail(1, "connecting to %s: %v", *upstream, err)
	}
	listed, err := mcpimport.List(ctx, cs)
	cs.Close()
	if err != nil {
		return fail(1, "listing the tools of %s: %v", *upstream, err)
	}
	tools, skipped, err := mcpimport.Tools(listed, mcpimport.Options{URL: *upstream, Prefix: *prefix, CredentialEnv: ref.Env, CredentialFile: ref.File})
	if err != nil {
		return fail(2, "%v", err)
	}
	type skip struct {
		Tool   string `json:"tool"`
		Reason string `json:"reason"`
	}
	skips := []skip{}
	for _, s := range skipped {
		fmt.Fprintf(stderr, "skipped %s: %s\n", s.Tool, s.Reason)
		skips = append(skips, skip{s.Tool, s.Reason})
	}
	if len(tools) == 0 {
		return fail(1, "no tool to import")
	}
	return registerImported(ctx, f, tools, skips, *dryRun, *requireCompat, stdout, stderr)
}
