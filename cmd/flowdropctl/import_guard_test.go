package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowdrop/gateway/internal/notestest"
)

// TestImportsReplaceOnlyTheirOwnTools (issue 28 item 12): a gRPC or OpenAPI
// import never replaces a tool it did not create — an admin's
// ToolBackendService tool, another backend's — unless --replace; its own
// earlier import (the same target or base URL) it updates.
func TestImportsReplaceOnlyTheirOwnTools(t *testing.T) {
	notes, other := notestest.Start(t, true), notestest.Start(t, true)
	gw := startRegistryGateway(t)
	admin := filepath.Join(t.TempDir(), "admin.yaml")
	if err := os.WriteFile(admin, []byte(`tools:
  - {name: x.NotesService.Ping, backend: "127.0.0.1:7001", input_schema: {type: object}}
  - {name: y.getPet, backend: "127.0.0.1:7001", input_schema: {type: object}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errb := ctl(t, "tools", "register", "-f", admin, "--addr", gw); code != 0 {
		t.Fatalf("register the admin's tools: %s", errb)
	}
	grpcImport := func(target string, extra ...string) (int, string) {
		code, _, errb := ctl(t, append([]string{"tools", "import", "grpc", "--target", target, "--method", "Ping", "--prefix", "x.", "--addr", gw}, extra...)...)
		return code, errb
	}
	openapiImport := func(base string, extra ...string) (int, string) {
		code, _, errb := ctl(t, append([]string{"tools", "import", "openapi", "--spec", "testdata/openapi/petstore.yaml", "--base-url", base,
			"--operation", "getPet", "--prefix", "y.", "--addr", gw}, extra...)...)
		return code, errb
	}
	for _, tc := range []struct {
		name, reason string
		run          func() (int, string)
		wantCode     int
		wantErr      string
	}{
		{"grpc-over-admin-tool", "the admin's ToolBackendService tool is not the import's", func() (int, string) { return grpcImport(notes.Addr) },
			1, "tool x.NotesService.Ping exists and was not imported from this backend (backend 127.0.0.1:7001); not replaced (--replace replaces it)"},
		{"openapi-over-admin-tool", "likewise for an HTTP operation", func() (int, string) { return openapiImport("http://127.0.0.1:9/") },
			1, "tool y.getPet exists and was not imported from this backend"},
		{"grpc-replace", "--replace says the operator means it", func() (int, string) { return grpcImport(notes.Addr, "--replace") }, 0, ""},
		{"grpc-reimport", "its own earlier import is updated", func() (int, string) { return grpcImport(notes.Addr) }, 0, ""},
		{"grpc-other-target", "another target's tool of that name is not the import's", func() (int, string) { return grpcImport(other.Addr) },
			1, "was not imported from this backend"},
		{"openapi-replace", "--replace", func() (int, string) { return openapiImport("http://127.0.0.1:9/", "--replace") }, 0, ""},
		{"openapi-other-base", "another base URL's tool is not the import's", func() (int, string) { return openapiImport("http://127.0.0.1:10/") },
			1, "was not imported from this backend"},
	} {
		code, errb := tc.run()
		if code != tc.wantCode || !strings.Contains(errb, tc.wantErr) {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q (%s)", tc.name, code, errb, tc.wantCode, tc.wantErr, tc.reason)
		}
	}
}
