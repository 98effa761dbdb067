package archtest

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/flowdrop/gateway"

// goList runs `go list` with args in the module and returns its output
// lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", args, err, stderr.String())
	}
	return strings.Fields(string(out))
}

// TestImportBoundaries enforces the layering docs/development.md's layout table and
// each package's doc.go state: the pure libraries import no gRPC, the
// schema and normalization libraries no HTTP, and the transport-neutral
// pipeline neither.
func TestImportBoundaries(t *testing.T) {
	t.Parallel()
	cases := []struct {
		pkg, reason string
		forbidden   []string // import path prefixes
	}{
		{pkg: "normalize", reason: "RT-TOOL-8 is a pure library", forbidden: []string{"google.golang.org/grpc", "net/http"}},
		{pkg: "registry", reason: "the tool domain knows no transport", forbidden: []string{"google.golang.org/grpc", "net/http"}},
		{pkg: "registry/schema", reason: "the JSON Schema engine knows no transport", forbidden: []string{"google.golang.org/grpc", "net/http"}},
		{pkg: "registry/lint", reason: "provider lint is offline", forbidden: []string{"google.golang.org/grpc", "net/http"}},
		{pkg: "registry/compat", reason: "the compatibility engine is pure", forbidden: []string{"google.golang.org/grpc", "net/http"}},
		{pkg: "registry/search", reason: "the search index serves both faces, so it is neither", forbidden: []string{"google.golang.org/grpc", "net/http", "github.com/modelcontextprotocol/"}},
		{pkg: "registry/memstore", reason: "an in-process store", forbidden: []string{"google.golang.org/grpc", "net/http"}},
		{pkg: "registry/boltstore", reason: "a file store", forbidden: []string{"google.golang.org/grpc", "net/http"}},
		{pkg: "internal/policy", reason: "policy decisions are transport-neutral", forbidden: []string{"google.golang.org/grpc"}},
		{pkg: "server/pipeline", reason: "the call pipeline drives both faces, so it is neither",
			forbidden: []string{"google.golang.org/grpc", module + "/gen/", module + "/server/grpcapi", module + "/server/mcpapi",
				module + "/server/backend", module + "/server/observe", "github.com/modelcontextprotocol/"}},
		{pkg: "server/backend", reason: "backend kinds plug into the pipeline, not into a face",
			forbidden: []string{module + "/server/grpcapi", module + "/server/mcpapi"}},
		{pkg: "server/grpcapi", reason: "the gRPC face does not reach into the MCP face",
			forbidden: []string{module + "/server/mcpapi", "github.com/modelcontextprotocol/"}},
		{pkg: "server/mcpapi", reason: "the MCP face does not reach into the gRPC face", forbidden: []string{module + "/server/grpcapi"}},
		{pkg: "server/mcpfollow", reason: "the MCP follower writes the registry, not through a face",
			forbidden: []string{module + "/server/grpcapi", module + "/server/mcpapi", module + "/server/observe"}},
		{pkg: "server/replay", reason: "policy replay runs the pipeline's stages offline: no face, no backend",
			forbidden: []string{"google.golang.org/grpc", module + "/server/grpcapi", module + "/server/mcpapi", module + "/server/backend"}},
		{pkg: "server/console", reason: "the console reads the registry and the pipeline's stages, and calls tools only through the pipeline the gateway hands it; it imports no backend and no face",
			forbidden: []string{module + "/server/grpcapi", module + "/server/mcpapi", module + "/server/backend"}},
		{pkg: "server/policyreload", reason: "the reloader knows how a policy changes, not the faces or backends it reaches",
			forbidden: []string{module + "/server/grpcapi", module + "/server/mcpapi", module + "/server/backend"}},
	}
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(tc.pkg, "/", "_"), func(t *testing.T) {
			t.Parallel()
			for _, dep := range goList(t, "-deps", "./"+tc.pkg) {
				for _, f := range tc.forbidden {
					if dep == f || strings.HasPrefix(dep, f+"/") || (strings.HasSuffix(f, "/") && strings.HasPrefix(dep, f)) {
						t.Errorf("%s depends on %s (%s)", tc.pkg, dep, tc.reason)
					}
				}
			}
		})
	}
}

// TestOnlyCommandsImportTheCompositionRoot: the server package assembles
// the gateway; libraries below it never import it, only the binaries (and
// the test helper that starts a gateway for tests).
func TestOnlyCommandsImportTheCompositionRoot(t *testing.T) {
	t.Parallel()
	root := module + "/server"
	type pkg struct {
		ImportPath string
		Imports    []string
	}
	out := goList(t, "-json=ImportPath,Imports", "./...")
	dec := json.NewDecoder(strings.NewReader(strings.Join(out, " ")))
	allowed := func(p string) bool {
		return strings.HasPrefix(p, module+"/cmd/") || p == module+"/internal/gatewaytest"
	}
	seen := 0
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		seen++
		if slices.Contains(p.Imports, root) && !allowed(p.ImportPath) {
			t.Errorf("%s imports the composition root %s: only cmd/ and internal/gatewaytest may", p.ImportPath, root)
		}
	}
	if seen < 10 {
		t.Fatalf("go list saw %d packages; the check would be vacuous", seen)
	}
}

// TestOnlyInvokewireEncodesInvocationsByHand: the invocation messages'
// field numbers live in one package (internal/invokewire), so protowire is
// imported there and only by the packages below, which read other
// messages' wire bytes; a face, the pipeline or a backend kind importing it
// again would be a second owner of the invocation formats. An entry that
// no longer imports protowire is reported too, so the list stays true.
func TestOnlyInvokewireEncodesInvocationsByHand(t *testing.T) {
	t.Parallel()
	const protowire = "google.golang.org/protobuf/encoding/protowire"
	allowed := map[string]string{
		module + "/internal/invokewire":      "the owner of the invocation messages' wire formats",
		module + "/internal/structwire":      "google.protobuf.Struct's wire bytes, read for the hot path's checks",
		module + "/normalize":                "RT-TOOL-8 repairs applied to a Struct's wire bytes (wire.go)",
		module + "/internal/protoschema":     "a request message's descriptor, walked to a JSON Schema",
		module + "/internal/policy":          "the argument limits checked on a Struct's wire bytes (limits.go)",
		module + "/cmd/flowdrop-adversarial": "hostile arguments built on the wire, bigger than proto.Marshal would take",
	}
	type pkg struct {
		ImportPath string
		Imports    []string
	}
	out := goList(t, "-json=ImportPath,Imports", "./...")
	dec := json.NewDecoder(strings.NewReader(strings.Join(out, " ")))
	seen, importers := 0, map[string]bool{}
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		seen++
		if !slices.Contains(p.Imports, protowire) {
			continue
		}
		importers[p.ImportPath] = true
		if _, ok := allowed[p.ImportPath]; !ok {
			t.Errorf("%s imports protowire: only internal/invokewire encodes invocation messages by hand (use its functions), and the packages allowed here read other messages", p.ImportPath)
		}
	}
	if seen < 10 {
		t.Fatalf("go list saw %d packages; the check would be vacuous", seen)
	}
	for p, why := range allowed {
		if !importers[p] {
			t.Errorf("%s is allowed protowire (%s) but no longer imports it: drop it from the list", p, why)
		}
	}
}
