package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/mcpupstreamtest"
)

// TestImportDryRunIsAnApplyFile: for every importer, what "import ...
// --dry-run" prints is a file apply takes unchanged — the diff creates
// its tools, apply registers them, and applying it again finds nothing to
// change (the registry serves exactly what the file says: lossless).
func TestImportDryRunIsAnApplyFile(t *testing.T) {
	env := gatewaytest.Start(t)
	up := mcpupstreamtest.Start(t)
	rows := []struct {
		importer, reason string
		args             []string
		want             []string // in the dry run's output: the flags' TLS and annotations
	}{
		{importer: "grpc", reason: "a gRPC method's tool carries its binary descriptors; the TLS flags set spec.tls",
			args: []string{"--target", "127.0.0.1:7003", "--protoset", "../../internal/protoschema/testdata/notes.binpb", "--prefix", "rt.grpc.",
				"--tls-require", "--tls-server-name", "notes.internal", "--annotation", "idempotent_hint=true"},
			want: []string{`"tls":{`, `"require":true`, `"server_name":"notes.internal"`, `"idempotent_hint":true`}},
		{importer: "openapi", reason: "HTTP operations with their parameters' placement",
			args: []string{"--spec", "testdata/openapi/petstore.yaml", "--base-url", "http://127.0.0.1:8080/api", "--prefix", "rt.pets.", "--annotation", "read_only_hint=false"},
			want: []string{`"read_only_hint":false`}},
		{importer: "mcp", reason: "upstream MCP tools with their origin, input and output schemas and annotations",
			args: []string{"--url", up.URL, "--prefix", "rt.mcp.", "--annotation", "open_world_hint=false"},
			want: []string{`"open_world_hint":false`}},
	}
	created := regexp.MustCompile(`plan: ([1-9][0-9]*) to create, 0 to update, 0 to delete`)
	for _, r := range rows {
		t.Run(r.importer, func(t *testing.T) {
			code, out, errOut := ctl(t, append([]string{"tools", "import", r.importer, "--dry-run"}, r.args...)...)
			if code != 0 {
				t.Fatalf("import --dry-run: exit %d\n%s", code, errOut)
			}
			var compact bytes.Buffer // protojson's spacing is deliberately unstable
			if err := json.Compact(&compact, []byte(out)); err != nil {
				t.Fatalf("dry run is not JSON: %v\n%s", err, out)
			}
			for _, w := range r.want {
				if !strings.Contains(compact.String(), w) {
					t.Errorf("dry run lacks %s (%s):\n%s", w, r.reason, out)
				}
			}
			file := filepath.Join(t.TempDir(), r.importer+".json")
			if err := os.WriteFile(file, []byte(out), 0o600); err != nil {
				t.Fatal(err)
			}
			code, plan, errOut := ctl(t, "apply", "-f", file, "--addr", env.Addr)
			if code != 0 || !created.MatchString(plan) {
				t.Fatalf("apply of the import's output: exit %d, want its tools created (%s)\nstdout: %s\nstderr: %s", code, r.reason, plan, errOut)
			}
			code, again, errOut := ctl(t, "apply", "-f", file, "--addr", env.Addr, "--dry-run")
			if code != 0 || !strings.Contains(again, "plan: 0 to create, 0 to update, 0 to delete") {
				t.Errorf("apply again: exit %d, want nothing to change (%s): the registry does not serve what the file says\nstdout: %s\nstderr: %s", code, r.reason, again, errOut)
			}
		})
	}
}
