package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/internal/mcpupstreamtest"
)

func TestToolsImportMCP(t *testing.T) {
	up := mcpupstreamtest.Start(t)
	// "say/hello" maps to the same name as "say hello": both are refused,
	// named, rather than one silently winning.
	mcp.AddTool(up.MCP, &mcp.Tool{Name: "say/hello"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	gw := startRegistryGateway(t)
	const token = "tok-import-7f3a9c"
	headerFile := writeTempFile(t, "up.token", []byte(token+"\n"))

	code, out, errOut := ctl(t, "tools", "import", "mcp", "--url", up.URL, "--header-file", headerFile, "--prefix", "up.", "--addr", gw)
	if code != 0 {
		t.Fatalf("import: exit %d\n%s", code, errOut)
	}
	if want := "up.add_items\nup.refuse\nup.wait\n"; out != want {
		t.Errorf("stdout %q, want %q", out, want)
	}
	for _, s := range []string{`skipped say hello: upstream tools ["say hello" "say/hello"] all map to "up.say_hello"`, "skipped say/hello:"} {
		if !strings.Contains(errOut, s) {
			t.Errorf("stderr %q: want %q", errOut, s)
		}
	}
	for i, c := range up.Credentials() {
		if c != "Bearer "+token {
			t.Fatalf("upstream request %d carried %q, want the file's bearer token", i, c)
		}
	}
	code, got, errOut := ctl(t, "tools", "get", "up.add_items", "--addr", gw)
	if code != 0 {
		t.Fatalf("get: exit %d\n%s", code, errOut)
	}
	abs, _ := filepath.Abs(headerFile)
	if !strings.Contains(got, abs) || !strings.Contains(got, `"tool": "add_items"`) || strings.Contains(got, token) {
		t.Errorf("stored tool %s: want the header file's path and the upstream name as stored, never the token", got)
	}

	cases := []struct {
		name, reason string
		args         []string
		wantCode     int
		wantOut      []string
		wantErr      []string
		wantNotOut   []string
	}{
		{name: "dry-run", reason: "--dry-run prints the tools as JSON with their input and output schemas and the reference, not the token",
			args:     []string{"--header-file", headerFile, "--dry-run"},
			wantCode: 0, wantOut: []string{`"name":"add_items"`, `"mcp_tool":{"url":"` + up.URL + `","tool":"add_items","credential_file":"` + abs + `"}`, `"title":{"type":"string"}`, `"output_schema":`},
			wantNotOut: []string{token}},
		{name: "json", reason: "--output json: one document with what was registered and skipped",
			args:     []string{"--header-file", headerFile, "--prefix", "j.", "--output", "json"},
			wantCode: 0, wantOut: []string{`"registered":["j.add_items","j.refuse","j.wait"]`, `"tool":"say hello"`}},
		{name: "env", reason: "a credential in an environment variable is stored by its name",
			args:     []string{"--credential-env", "FLOWDROP_TEST_UPSTREAM_TOKEN", "--dry-run"},
			wantCode: 0, wantOut: []string{`"credential_env":"FLOWDROP_TEST_UPSTREAM_TOKEN"`}, wantNotOut: []string{"env-secret"}},
		{name: "prefix-too-long", reason: "a prefix that leaves no room for a name is refused",
			args: []string{"--prefix", strings.Repeat("p", 64), "--dry-run"}, wantCode: 2, wantErr: []string{"prefix"}},
		{name: "long-names", reason: "a mapped name over 64 characters is skipped naming the tool; with none left the import fails",
			args: []string{"--prefix", strings.Repeat("p", 60) + ".", "--dry-run"}, wantCode: 1, wantErr: []string{"skipped add_items:", "does not fit", "no tool to import"}},
		{name: "bad-url", reason: "only an http(s) URL reaches a streamable-HTTP upstream",
			args: []string{"--url", "ftp://127.0.0.1/mcp", "--dry-run"}, wantCode: 2, wantErr: []string{"--url"}},
		{name: "both-credentials", reason: "two credential references are ambiguous",
			args: []string{"--header-file", headerFile, "--credential-env", "X", "--dry-run"}, wantCode: 2, wantErr: []string{"at most one"}},
	}
	t.Setenv("FLOWDROP_TEST_UPSTREAM_TOKEN", "env-secret")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"tools", "import", "mcp", "--url", up.URL, "--addr", gw}, tc.args...)
			code, out, errOut := ctl(t, args...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d (%s)\nstdout %s\nstderr %s", code, tc.wantCode, tc.reason, out, errOut)
			}
			compact := out
			if strings.HasPrefix(out, "{") {
				var buf bytes.Buffer
				if err := json.Compact(&buf, []byte(out)); err != nil {
					t.Fatalf("output is not JSON: %v", err)
				}
				compact = buf.String()
			}
			for _, s := range tc.wantOut {
				if !strings.Contains(compact, s) {
					t.Errorf("stdout %s: want %q (%s)", compact, s, tc.reason)
				}
			}
			for _, s := range tc.wantNotOut {
				if strings.Contains(compact, s) {
					t.Errorf("stdout %s carries %q (%s)", compact, s, tc.reason)
				}
			}
			for _, s := range tc.wantErr {
				if !strings.Contains(errOut, s) {
					t.Errorf("stderr %q: want %q (%s)", errOut, s, tc.reason)
				}
			}
		})
	}
}

// stdioServeEnv makes the test binary serve mcpupstreamtest's tools over
// stdio (TestMain).
const stdioServeEnv = "FLOWDROP_TEST_STDIO_SERVE"

// TestToolsImportMCPStdio: --stdio NAME -- COMMAND runs the server here to
// list its tools and registers them naming stdio://NAME (what the
// gateway's policy file runs), never the command; misuse is exit 2.
func TestToolsImportMCPStdio(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(stdioServeEnv, "1") // this shell's environment reaches the listing's process
	gw := startRegistryGateway(t)
	code, out, errOut := ctl(t, "tools", "import", "mcp", "--stdio", "helper", "--prefix", "up.", "--addr", gw, "--", self, "-test.run", "^$")
	if code != 0 {
		t.Fatalf("import: exit %d\n%s", code, errOut)
	}
	if want := "up.add_items\nup.refuse\nup.say_hello\nup.wait\n"; out != want {
		t.Errorf("stdout %q, want %q", out, want)
	}
	code, got, errOut := ctl(t, "tools", "get", "up.say_hello", "--addr", gw)
	if code != 0 {
		t.Fatalf("get: exit %d\n%s", code, errOut)
	}
	if !strings.Contains(got, `"url": "stdio://helper"`) || !strings.Contains(got, `"tool": "say hello"`) || strings.Contains(got, self) {
		t.Errorf("stored tool %s: want stdio://helper and the upstream name, never the command", got)
	}
	for _, bad := range []struct {
		reason string
		args   []string
		want   string
	}{
		{"no command to list with", []string{"--stdio", "helper"}, "-- COMMAND"},
		{"a URL as well", []string{"--stdio", "helper", "--url", "http://127.0.0.1:1/mcp", "--", self}, "takes no --url"},
		{"a name tools cannot give", []string{"--stdio", "Helper Two", "--", self}, "--stdio"},
		{"a command without --stdio", []string{"--url", "http://127.0.0.1:1/mcp", "--", self}, "goes with --stdio"},
	} {
		code, _, errOut := ctl(t, append([]string{"tools", "import", "mcp", "--addr", gw}, bad.args...)...)
		if code != 2 || !strings.Contains(errOut, bad.want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 naming %q", bad.reason, code, errOut, bad.want)
		}
	}
}

// TestToolsImportMCPFollowsNoRedirect: an upstream that answers with a
// redirect — to another port, or within its origin, at the session's
// initialize or at tools/list — fails the import, and wherever it pointed
// receives nothing: not the credential, not a request.
func TestToolsImportMCPFollowsNoRedirect(t *testing.T) {
	up := mcpupstreamtest.Start(t)
	elsewhere := mcpupstreamtest.StartRecorder(t)
	const token = "tok-import-redirect-61b0"
	headerFile := writeTempFile(t, "up.token", []byte(token+"\n"))
	sameOrigin := strings.TrimSuffix(up.URL, "/mcp") + "/moved"
	cases := []struct {
		name, reason, to string
		methods          []string
	}{
		{name: "initialize-to-another-port", reason: "the first request, with the credential, redirected to another port",
			to: elsewhere.URL + "/mcp"},
		{name: "list-to-another-port", reason: "tools/list of a working session redirected to another port",
			to: elsewhere.URL + "/mcp", methods: []string{"tools/list"}},
		{name: "initialize-within-the-origin", reason: "a redirect within the origin is not followed either",
			to: sameOrigin},
		{name: "list-within-the-origin", reason: "nor a tools/list's",
			to: sameOrigin, methods: []string{"tools/list"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up.Redirect(tc.to, tc.methods...)
			defer up.Redirect("")
			code, out, errOut := ctl(t, "tools", "import", "mcp", "--url", up.URL, "--header-file", headerFile, "--dry-run")
			if code != 1 || out != "" || !strings.Contains(errOut, "answered with a redirect") || !strings.Contains(errOut, "only to --url") {
				t.Errorf("exit %d, stdout %q, stderr %q: want exit 1 saying the upstream redirected, which is not followed (%s)", code, out, errOut, tc.reason)
			}
			if strings.Contains(errOut, token) {
				t.Errorf("stderr %q carries the credential", errOut)
			}
		})
	}
	if reqs := elsewhere.Requests(); len(reqs) != 0 {
		t.Errorf("the other port received %d requests, the first %s %s with credential %q: the import followed the redirect",
			len(reqs), reqs[0].Method, reqs[0].Path, reqs[0].Header.Get("Authorization"))
	}
	if reqs := up.Stray(); len(reqs) != 0 {
		t.Errorf("the upstream received %d requests off its endpoint, the first %s %s: the import followed a redirect within the origin",
			len(reqs), reqs[0].Method, reqs[0].Path)
	}
	// Redirects stopped: the same import works.
	if code, _, errOut := ctl(t, "tools", "import", "mcp", "--url", up.URL, "--header-file", headerFile, "--dry-run"); code != 0 {
		t.Errorf("import after the redirects stopped: exit %d\n%s", code, errOut)
	}
}
