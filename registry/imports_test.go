package registry_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImports holds the layering: the tool domain, its schema engine, its
// lint and the pure libraries under it import no gRPC and no net/http (the
// etcd store is the exception: its client speaks gRPC).
func TestImports(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	// Relative to this package's directory, where go test runs.
	pkgs := []string{".", "./schema", "./lint", "./memstore", "./boltstore", "../normalize", "../internal/structwire"}
	for _, p := range pkgs {
		out, err := exec.Command(goTool, "list", "-deps", p).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", p, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, "google.golang.org/grpc") || dep == "net/http" {
				t.Errorf("%s imports %s", p, dep)
			}
		}
	}
}
