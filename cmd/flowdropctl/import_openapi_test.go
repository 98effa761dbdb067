package main

import (
	"encoding/json"
	"flag"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateOpenAPI = flag.Bool("update-openapi", false, "rewrite testdata/openapi/*.golden")

// TestToolsImportOpenAPIDryRun holds --dry-run's JSON to golden files: an
// OpenAPI 3 document and a Swagger 2.0 one (converted by kin-openapi's
// openapi2conv). Run with -update-openapi to rewrite them.
func TestToolsImportOpenAPIDryRun(t *testing.T) {
	for _, r := range []struct {
		name, reason string
		args         []string
		wantSkipped  string
	}{
		{name: "petstore", reason: "path, query, header and body properties mapped; $ref and nullable inlined; the octet-stream body skipped",
			args: []string{"--spec", "testdata/openapi/petstore.yaml", "--prefix", "pets."}, wantSkipped: "skipped upload: request body is not JSON (application/octet-stream)"},
		{name: "swagger2", reason: "Swagger 2.0 converted (basePath belongs in --base-url): the body parameter's properties as arguments, a name mapped from todo/update and one derived from GET /todos",
			args: []string{"--spec", "testdata/openapi/swagger2.json"}},
	} {
		t.Run(r.name, func(t *testing.T) {
			args := append([]string{"tools", "import", "openapi", "--base-url", "http://127.0.0.1:8080/api", "--dry-run"}, r.args...)
			code, out, errOut := ctl(t, args...)
			if code != 0 {
				t.Fatalf("reason: %s\nexit %d\n%s", r.reason, code, errOut)
			}
			if r.wantSkipped != "" && !strings.Contains(errOut, r.wantSkipped) {
				t.Errorf("reason: %s\nstderr %q does not contain %q", r.reason, errOut, r.wantSkipped)
			}
			var pretty map[string]any
			if err := json.Unmarshal([]byte(out), &pretty); err != nil {
				t.Fatalf("stdout is not JSON: %v\n%s", err, out)
			}
			b, _ := json.MarshalIndent(pretty, "", "  ")
			got := string(b) + "\n"
			golden := filepath.Join("testdata", "openapi", r.name+".golden")
			if *updateOpenAPI {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update-openapi to create it)", err)
			}
			if got != string(want) {
				t.Errorf("reason: %s\nstdout differs from %s\n--- got\n%s--- want\n%s", r.reason, golden, got, want)
			}
		})
	}
}

func TestToolsImportOpenAPI(t *testing.T) {
	gw := startRegistryGateway(t)
	// The document from a URL (a loopback server), registered: names on stdout.
	lis := listenLoopback(t)
	doc, err := os.ReadFile("testdata/openapi/petstore.yaml")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(doc) })}
	go hs.Serve(lis)
	t.Cleanup(func() { hs.Close() })
	url := "http://" + lis.Addr().String() + "/openapi.yaml"

	code, out, errOut := ctl(t, "tools", "import", "openapi", "--spec", url, "--base-url", "http://127.0.0.1:9/", "--prefix", "pets.", "--addr", gw)
	if code != 0 {
		t.Fatalf("import: exit %d\n%s", code, errOut)
	}
	if want := "pets.broken\npets.createPet\npets.getPet\n"; out != want {
		t.Errorf("stdout %q, want %q", out, want)
	}
	code, out, _ = ctl(t, "tools", "import", "openapi", "--spec", url, "--base-url", "http://127.0.0.1:9/", "--operation", "getPet", "--prefix", "json.", "--output", "json", "--addr", gw)
	var res struct {
		Registered []string `json:"registered"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || len(res.Registered) != 1 || res.Registered[0] != "json.getPet" {
		t.Errorf("--operation getPet --output json: exit %d, %q; want {\"registered\": [\"json.getPet\"], ...}", code, out)
	}

	for _, r := range []struct {
		name, reason string
		args         []string
		wantErr      string
	}{
		{name: "base-url", reason: "the base URL must be http(s): refused before reading anything",
			args: []string{"--spec", "testdata/openapi/petstore.yaml", "--base-url", "ftp://x"}, wantErr: "--base-url must be an http:// or https:// URL"},
		{name: "credentials", reason: "credentials in the base URL would be stored and shown to operators: refused",
			args: []string{"--spec", "testdata/openapi/petstore.yaml", "--base-url", "http://u:p@x"}, wantErr: "must not carry credentials"},
		{name: "operation", reason: "an unknown --operation is named",
			args: []string{"--spec", "testdata/openapi/petstore.yaml", "--base-url", "http://x", "--operation", "nope"}, wantErr: `no operation has operationId "nope"`},
		{name: "not-openapi", reason: "a document that is neither OpenAPI 3 nor Swagger 2.0",
			args: []string{"--spec", "testdata/openapi/swagger2.golden", "--base-url", "http://x"}, wantErr: "neither"},
	} {
		code, _, errOut := ctl(t, append([]string{"tools", "import", "openapi", "--dry-run"}, r.args...)...)
		if code != 2 || !strings.Contains(errOut, r.wantErr) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q (%s)", r.name, code, errOut, r.wantErr, r.reason)
		}
	}
}

func listenLoopback(t *testing.T) net.Listener {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lis.Close() })
	return lis
}
