package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
)

var updateApply = flag.Bool("update-apply", false, "rewrite testdata/apply/*.golden")

// applyDir copies testdata/apply/dir with the example backend's address
// in place of BACKEND.
func applyDir(t *testing.T, backend string) string {
	t.Helper()
	src := filepath.Join("testdata", "apply", "dir")
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), []byte(strings.ReplaceAll(string(b), "BACKEND", backend)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// checkGolden compares out with testdata/apply/NAME.golden (-update-apply
// rewrites it).
func checkGolden(t *testing.T, name, out string) {
	t.Helper()
	path := filepath.Join("testdata", "apply", name+".golden")
	if *updateApply {
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Errorf("output differs from %s (-update-apply rewrites it):\ngot:\n%s\nwant:\n%s", path, out, want)
	}
}

// TestApply: apply against a real gateway (the demo tools registered):
// the diff first, then the writes; again, nothing to do; --prune deletes
// the tools no file declares. Each step's output is a golden file.
func TestApply(t *testing.T) {
	env := gatewaytest.Start(t)
	dir := applyDir(t, env.BackendAddr)
	reg := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	steps := []struct {
		name, reason string
		args         []string
		check        func(t *testing.T)
	}{
		{name: "dry-run", reason: "the diff of create_note against its revision, the new tool whole, the plan; nothing written", args: []string{"--dry-run"},
			check: func(t *testing.T) {
				if _, err := reg.GetTool(context.Background(), &gatewayv1.GetToolRequest{Name: "notes.archive"}); err == nil {
					t.Error("--dry-run registered notes.archive")
				}
			}},
		{name: "apply", reason: "the same diff, then each write with the revision it was diffed at",
			check: func(t *testing.T) {
				got, err := reg.GetTool(context.Background(), &gatewayv1.GetToolRequest{Name: "create_note"})
				if err != nil || got.GetTool().GetDescription() != "Create a note (title and body)." {
					t.Errorf("create_note after apply: %v, %v", got, err)
				}
				if _, err := reg.GetTool(context.Background(), &gatewayv1.GetToolRequest{Name: "notes.archive"}); err != nil {
					t.Errorf("notes.archive not registered: %v", err)
				}
			}},
		{name: "again", reason: "what the files declare is what the registry serves: no diff, no write"},
		{name: "prune-dry-run", reason: "--prune lists the registered tools no file declares, whole", args: []string{"--prune", "--dry-run"}},
		{name: "prune", reason: "--prune deletes them, each at its revision", args: []string{"--prune"},
			check: func(t *testing.T) {
				var names []string
				for _, tl := range listTools(t, reg) {
					names = append(names, tl.GetName())
				}
				if !slices.Equal(names, []string{"create_note", "notes.archive"}) {
					t.Errorf("after --prune the registry holds %v, want the declared tools only", names)
				}
			}},
	}
	for _, s := range steps {
		code, out, errOut := ctl(t, append([]string{"apply", "-f", dir, "--addr", env.Addr}, s.args...)...)
		if code != 0 {
			t.Fatalf("%s: exit %d (%s)\nstdout: %s\nstderr: %s", s.name, code, s.reason, out, errOut)
		}
		out = strings.ReplaceAll(strings.ReplaceAll(out, env.BackendAddr, "BACKEND"), dir+string(filepath.Separator), "DIR/")
		checkGolden(t, s.name, out)
		if s.check != nil {
			s.check(t)
		}
	}
}

func listTools(t *testing.T, reg gatewayv1.ToolRegistryServiceClient) []*gatewayv1.Tool {
	t.Helper()
	resp, err := reg.ListTools(context.Background(), &gatewayv1.ListToolsRequest{PageSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetTools()
}

// applyAgainstAChange runs apply on dir with change made between its diff
// and its writes, and holds it to refusing the write that change beat
// (exit 1, the refused write named, "run apply again").
func applyAgainstAChange(t *testing.T, env *gatewaytest.Env, dir, refused string, change func() error) {
	t.Helper()
	applyBeforeWrites = func() {
		if err := change(); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() { applyBeforeWrites = nil })
	code, out, errOut := ctl(t, "apply", "-f", dir, "--addr", env.Addr)
	if code != exitCall {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, exitCall, out, errOut)
	}
	for _, w := range []string{refused, "run apply again"} {
		if !strings.Contains(errOut, w) {
			t.Errorf("stderr %q lacks %q", errOut, w)
		}
	}
}

// TestApplyRevisionConflict: a tool changed between apply's diff and its
// write is not overwritten: the write is conditional on the diffed
// revision, so the registry refuses it and apply stops, saying so.
func TestApplyRevisionConflict(t *testing.T) {
	env := gatewaytest.Start(t)
	dir := applyDir(t, env.BackendAddr)
	reg := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	applyAgainstAChange(t, env, dir, "update tool create_note (at revision", func() error {
		cur, err := reg.GetTool(context.Background(), &gatewayv1.GetToolRequest{Name: "create_note"})
		if err != nil {
			return err
		}
		other := proto.Clone(cur.GetTool()).(*gatewayv1.Tool)
		other.Description = "changed by someone else"
		_, err = reg.RegisterTool(context.Background(), &gatewayv1.RegisterToolRequest{Tool: other})
		return err
	})
	got, err := reg.GetTool(context.Background(), &gatewayv1.GetToolRequest{Name: "create_note"})
	if err != nil || got.GetTool().GetDescription() != "changed by someone else" {
		t.Errorf("create_note = %v, %v: the concurrent change must stand", got, err)
	}
}
