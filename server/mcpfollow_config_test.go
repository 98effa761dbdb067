package server

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flowdrop/gateway/internal/mcpimport"
	"github.com/flowdrop/gateway/internal/mcpupstream"
)

// TestPolicyMCPUpstreams: mcp_upstreams.relist_interval loads as written,
// a sub-second interval and a misspelt key are refused.
func TestPolicyMCPUpstreams(t *testing.T) {
	cases := []struct {
		name, reason, doc string
		want              time.Duration
		wantErr           string
	}{
		{name: "default", reason: "unset keeps the default (the follower applies DefaultMCPRelistInterval)",
			doc: "auth: {mode: off}\n", want: 0},
		{name: "set", reason: "the interval loads as written",
			doc: "auth: {mode: off}\nmcp_upstreams: {relist_interval: 2m}\n", want: 2 * time.Minute},
		{name: "too-short", reason: "a sub-second re-list would hammer every upstream",
			doc: "auth: {mode: off}\nmcp_upstreams: {relist_interval: 100ms}\n", wantErr: "mcp_upstreams.relist_interval"},
		{name: "misspelt", reason: "a typo must not leave the default silently",
			doc: "auth: {mode: off}\nmcp_upstreams: {relist: 5s}\n", wantErr: "relist"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParsePolicy([]byte(tc.doc), "inline")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("ParsePolicy: %v, want an error naming %q (%s)", err, tc.wantErr, tc.reason)
				}
				return
			}
			if err != nil || p.MCPUpstreams.RelistInterval != tc.want {
				t.Errorf("ParsePolicy: %+v, %v; want relist_interval %v (%s)", p.MCPUpstreams, err, tc.want, tc.reason)
			}
		})
	}
}

// TestPolicyMCPStdio: mcp_upstreams.stdio loads each server's command,
// environment and pass_env as written; a relative
// executable, a bad name or environment name, a missing command are
// refused naming the entry.
func TestPolicyMCPStdio(t *testing.T) {
	const ok = `auth: {mode: off}
mcp_upstreams:
  stdio:
    files:
      command: [/usr/local/bin/mcp-files, --root, /srv/shared]
      env: {LOG_LEVEL: warn, A_FIRST: "1"}
      pass_env: [FILES_TOKEN]
      dir: /srv
`
	p, err := ParsePolicy([]byte(ok), "inline")
	if err != nil {
		t.Fatal(err)
	}
	want := mcpupstream.Command{Path: "/usr/local/bin/mcp-files", Args: []string{"--root", "/srv/shared"},
		Env: map[string]string{"A_FIRST": "1", "LOG_LEVEL": "warn"}, PassEnv: []string{"FILES_TOKEN"}, Dir: "/srv"}
	if got := p.MCPUpstreams.Stdio["files"]; !reflect.DeepEqual(got, want) || len(p.MCPUpstreams.Stdio) != 1 {
		t.Errorf("stdio %+v; want files: %+v", p.MCPUpstreams.Stdio, want)
	}
	cases := []struct{ name, reason, entry, wantErr string }{
		{"relative", "no search of the gateway's PATH: what runs is exactly what is written",
			"x: {command: [mcp-files]}", "mcp_upstreams.stdio.x.command"},
		{"no-command", "a server with nothing to run", "x: {env: {A: b}}", "mcp_upstreams.stdio.x.command"},
		{"bad-name", "tools name it as stdio://NAME", "Files.Server: {command: [/bin/true]}", "must match"},
		{"bad-env", "an environment name with '=' would set another variable", `x: {command: [/bin/true], env: {"A=B": c}}`, "mcp_upstreams.stdio.x.env"},
		{"bad-pass-env", "likewise for pass_env", `x: {command: [/bin/true], pass_env: ["1X"]}`, "mcp_upstreams.stdio.x.pass_env"},
		{"relative-dir", "a working directory relative to the gateway's", "x: {command: [/bin/true], dir: srv}", "mcp_upstreams.stdio.x.dir"},
		{"misspelt", "a typo must not be dropped silently", "x: {cmd: [/bin/true]}", "cmd"},
	}
	for _, tc := range cases {
		_, err := ParsePolicy([]byte("auth: {mode: off}\nmcp_upstreams:\n  stdio:\n    "+tc.entry+"\n"), "inline")
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: %v; want an error naming %q (%s)", tc.name, err, tc.wantErr, tc.reason)
		}
	}
}

// TestStdioServersAreNotReloaded: a reload that changes mcp_upstreams.stdio
// is refused naming it (the processes' commands are set up at start); one
// that keeps it is not.
func TestStdioServersAreNotReloaded(t *testing.T) {
	parse := func(cmd string) *PolicyConfig {
		t.Helper()
		p, err := ParsePolicy([]byte("auth: {mode: off}\nmcp_upstreams: {stdio: {files: {command: ["+cmd+"]}}}\n"), "inline")
		if err != nil {
			t.Fatal(err)
		}
		return &p
	}
	if err := unswappable(parse("/bin/a"), parse("/bin/a")); err != nil {
		t.Errorf("the same stdio servers: %v; want reloadable", err)
	}
	if err := unswappable(parse("/bin/a"), parse("/bin/b")); err == nil || !strings.Contains(err.Error(), "mcp_upstreams.stdio") {
		t.Errorf("a changed stdio command: %v; want refused naming mcp_upstreams.stdio", err)
	}
}

// TestPolicyMCPUpstreamBounds: the listing bounds load as written, unset
// ones keep their defaults, and a bound above the registry's own or
// negative is refused naming it.
func TestPolicyMCPUpstreamBounds(t *testing.T) {
	cases := []struct {
		name, reason, doc string
		want              mcpimport.Bounds
		wantErr           string
	}{
		{name: "default", reason: "unset: the follower applies mcpimport.DefaultBounds",
			doc: "auth: {mode: off}\n", want: mcpimport.Bounds{}},
		{name: "set", reason: "each bound loads as written",
			doc:  "auth: {mode: off}\nmcp_upstreams: {max_list_bytes: 1048576, max_tools: 50, max_description_bytes: 2048, max_schema_bytes: 65536}\n",
			want: mcpimport.Bounds{ListBytes: 1 << 20, Tools: 50, DescriptionBytes: 2048, SchemaBytes: 64 << 10}},
		{name: "over-the-registry", reason: "a tool the listing keeps must still be admitted by the registry",
			doc: "auth: {mode: off}\nmcp_upstreams: {max_description_bytes: 1000000}\n", wantErr: "max_description_bytes 1000000: at most 65536"},
		{name: "negative", reason: "a negative bound is a mistake, not a default",
			doc: "auth: {mode: off}\nmcp_upstreams: {max_tools: -1}\n", wantErr: "must not be negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParsePolicy([]byte(tc.doc), "inline")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("ParsePolicy: %v, want an error containing %q (%s)", err, tc.wantErr, tc.reason)
				}
				return
			}
			if err != nil || p.MCPUpstreams.Bounds != tc.want {
				t.Errorf("ParsePolicy: %+v, %v; want %+v (%s)", p.MCPUpstreams.Bounds, err, tc.want, tc.reason)
			}
		})
	}
}
