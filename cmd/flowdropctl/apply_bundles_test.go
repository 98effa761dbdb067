package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
)

// bundlesFile is a bundles: list as bundles put -f takes it.
const bundlesFile = `bundles:
  - name: notes
    description: Note taking
    tools: [create_note]
    globs: ["notes.*"]
  - name: ops
    label_selectors: ["team=ops"]
    discovery: search
`

// applyBundlesDir is a directory declaring the tools the gateway serves
// now (so --prune leaves them) and bundlesFile.
func applyBundlesDir(t *testing.T, reg gatewayv1.ToolRegistryServiceClient) string {
	t.Helper()
	dir := t.TempDir()
	tools, err := protoNames.Marshal(&gatewayv1.ListToolsResponse{Tools: listTools(t, reg)})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tools.json"), tools, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bundles.yaml"), []byte(bundlesFile), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func bundleNames(t *testing.T, reg gatewayv1.ToolRegistryServiceClient) []string {
	t.Helper()
	resp, err := reg.ListBundles(context.Background(), &gatewayv1.ListBundlesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range resp.GetBundles() {
		names = append(names, b.GetName())
	}
	slices.Sort(names)
	return names
}

// TestApplyBundles: apply reconciles bundles as it does tools — a
// bundles: list is diffed against what the registry serves (a new bundle
// whole, a changed one as a unified diff against its revision), written
// unless --dry-run, found unchanged the second time, and with --prune a
// served bundle no file declares is deleted.
func TestApplyBundles(t *testing.T) {
	env := gatewaytest.Start(t)
	reg := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	for _, b := range []*gatewayv1.Bundle{
		{Name: "notes", Description: "old", Tools: []string{"create_note"}},
		{Name: "stale", Tools: []string{"run_command"}},
	} {
		if _, err := reg.PutBundle(context.Background(), &gatewayv1.PutBundleRequest{Bundle: b}); err != nil {
			t.Fatal(err)
		}
	}
	dir := applyBundlesDir(t, reg)
	steps := []struct {
		name, reason string
		args, want   []string
		bundles      []string // served after the step
	}{
		{name: "dry-run", reason: "the new bundle whole, the changed one against its revision; nothing written", args: []string{"--dry-run"},
			want: []string{"--- /dev/null", "+++ DIR/bundles.yaml bundle ops", `+  "discovery": "search",`,
				"--- registry/bundles/notes (revision ", `-  "description": "old",`, `+  "description": "Note taking",`,
				"plan: 1 to create, 1 to update, 0 to delete"},
			bundles: []string{"notes", "stale"}},
		{name: "apply", reason: "the writes, each at the revision it was diffed at",
			want:    []string{"created bundle ops (revision ", "updated bundle notes (revision "},
			bundles: []string{"notes", "ops", "stale"}},
		{name: "again", reason: "what the file declares is what the registry serves: no diff, no write",
			want:    []string{"plan: 0 to create, 0 to update, 0 to delete"},
			bundles: []string{"notes", "ops", "stale"}},
		{name: "prune", reason: "--prune deletes the bundle no file declares, and no tool (every tool is declared)", args: []string{"--prune"},
			want:    []string{"--- registry/bundles/stale (revision ", "plan: 0 to create, 0 to update, 1 to delete", "deleted bundle stale"},
			bundles: []string{"notes", "ops"}},
	}
	for _, s := range steps {
		code, out, errOut := ctl(t, append([]string{"apply", "-f", dir, "--addr", env.Addr}, s.args...)...)
		if code != 0 {
			t.Fatalf("%s: exit %d (%s)\nstdout: %s\nstderr: %s", s.name, code, s.reason, out, errOut)
		}
		out = strings.ReplaceAll(out, dir+string(filepath.Separator), "DIR/")
		for _, w := range s.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: stdout lacks %q (%s):\n%s", s.name, w, s.reason, out)
			}
		}
		if got := bundleNames(t, reg); !slices.Equal(got, s.bundles) {
			t.Errorf("%s: the registry serves bundles %v, want %v (%s)", s.name, got, s.bundles, s.reason)
		}
	}
	got, err := reg.GetBundle(context.Background(), &gatewayv1.GetBundleRequest{Name: "ops"})
	if err != nil || got.GetBundle().GetDiscovery() != "search" || !slices.Equal(got.GetBundle().GetLabelSelectors(), []string{"team=ops"}) {
		t.Errorf("bundle ops = %v, %v; want the file's selection and discovery", got, err)
	}
	if n := len(listTools(t, reg)); n == 0 {
		t.Error("--prune deleted the declared tools")
	}
}

// TestApplyBundleRevisionConflict: a bundle changed between apply's diff
// and its write is not overwritten: the write is conditional on the
// diffed revision, so the registry refuses it and apply stops, saying so.
func TestApplyBundleRevisionConflict(t *testing.T) {
	env := gatewaytest.Start(t)
	reg := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	if _, err := reg.PutBundle(context.Background(), &gatewayv1.PutBundleRequest{Bundle: &gatewayv1.Bundle{Name: "notes", Description: "old", Tools: []string{"create_note"}}}); err != nil {
		t.Fatal(err)
	}
	dir := applyBundlesDir(t, reg)
	applyAgainstAChange(t, env, dir, "update bundle notes (at revision", func() error {
		cur, err := reg.GetBundle(context.Background(), &gatewayv1.GetBundleRequest{Name: "notes"})
		if err != nil {
			return err
		}
		other := proto.Clone(cur.GetBundle()).(*gatewayv1.Bundle)
		other.Description = "changed by someone else"
		_, err = reg.PutBundle(context.Background(), &gatewayv1.PutBundleRequest{Bundle: other})
		return err
	})
	got, err := reg.GetBundle(context.Background(), &gatewayv1.GetBundleRequest{Name: "notes"})
	if err != nil || got.GetBundle().GetDescription() != "changed by someone else" {
		t.Errorf("notes = %v, %v: the concurrent change must stand", got, err)
	}
}

// TestApplyRefusesABadBundleFile: a bundles: file is checked as bundles
// put -f checks it, before anything is written (exit 2).
func TestApplyRefusesABadBundleFile(t *testing.T) {
	env := gatewaytest.Start(t)
	reg := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	for _, c := range []struct{ name, reason, file, want string }{
		{"unknown-field", "a misspelt field is refused, not dropped", "bundles:\n  - name: a\n    tool: [create_note]\n", "unknown field"},
		{"selects-nothing", "the registry's own check: a bundle must select something", "bundles:\n  - name: a\n", "none is given"},
		{"twice", "a bundle declared twice", "bundles:\n  - {name: a, tools: [create_note]}\n  - {name: a, tools: [run_command]}\n", "appears twice"},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "b.yaml"), []byte(c.file), 0o600); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := ctl(t, "apply", "-f", dir, "--addr", env.Addr)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q (%s)\nstdout: %s", c.name, code, errOut, c.want, c.reason, out)
		}
		if got := bundleNames(t, reg); len(got) != 0 {
			t.Errorf("%s: bundles %v were written (%s)", c.name, got, c.reason)
		}
	}
}

// TestRegistryGuideBundlesFileApplies: the bundles.yaml docs/registry.md
// shows (an indented block, which the guides' fenced-example test does not
// read) is a file apply takes as written, and it registers what it says.
func TestRegistryGuideBundlesFileApplies(t *testing.T) {
	b, err := os.ReadFile("../../docs/registry.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n    # bundles.yaml\n")
	if !ok {
		t.Fatal(`docs/registry.md has no indented "# bundles.yaml" example`)
	}
	var example strings.Builder
	for _, line := range strings.SplitAfter(rest, "\n") {
		if !strings.HasPrefix(line, "    ") {
			break
		}
		example.WriteString(strings.TrimPrefix(line, "    "))
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bundles.yaml"), []byte(example.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	env := gatewaytest.Start(t)
	reg := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	code, out, errOut := ctl(t, "apply", "-f", dir, "--addr", env.Addr)
	if code != 0 {
		t.Fatalf("apply of the guide's bundles.yaml: exit %d\nexample:\n%s\nstdout: %s\nstderr: %s", code, &example, out, errOut)
	}
	if got := bundleNames(t, reg); !slices.Equal(got, []string{"boards", "notes"}) {
		t.Errorf("the guide's bundles.yaml registered %v, want [boards notes]", got)
	}
}

// TestApplyPrunesOnlyDeclaredKinds: --prune deletes only kinds some file
// declares — a directory of tool files leaves every bundle (a tools-only
// directory applied with --prune must not wipe the bundles), a directory
// holding only a bundles: list leaves every tool.
func TestApplyPrunesOnlyDeclaredKinds(t *testing.T) {
	env := gatewaytest.Start(t)
	reg := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	if _, err := reg.PutBundle(context.Background(), &gatewayv1.PutBundleRequest{Bundle: &gatewayv1.Bundle{Name: "notes", Tools: []string{"create_note"}}}); err != nil {
		t.Fatal(err)
	}
	tools := len(listTools(t, reg))
	write := func(name, body string) string {
		t.Helper()
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	toolsJSON, err := protoNames.Marshal(&gatewayv1.ListToolsResponse{Tools: listTools(t, reg)})
	if err != nil {
		t.Fatal(err)
	}
	rows := []struct {
		name, reason string
		dir          string
		tools        int
		bundles      []string
	}{
		{name: "tool files", reason: "no file declares bundles: none is pruned", dir: write("tools.json", string(toolsJSON)),
			tools: tools, bundles: []string{"notes"}},
		{name: "a bundles: list", reason: "no file declares tools: none is pruned", dir: write("bundles.yaml", bundlesFile),
			tools: tools, bundles: []string{"notes", "ops"}},
	}
	for _, r := range rows {
		code, out, errOut := ctl(t, "apply", "-f", r.dir, "--addr", env.Addr, "--prune")
		if code != 0 {
			t.Fatalf("%s: exit %d\nstdout: %s\nstderr: %s", r.name, code, out, errOut)
		}
		if n := len(listTools(t, reg)); n != r.tools {
			t.Errorf("%s: %d tools served after --prune, want %d (%s)", r.name, n, r.tools, r.reason)
		}
		if got := bundleNames(t, reg); !slices.Equal(got, r.bundles) {
			t.Errorf("%s: bundles %v after --prune, want %v (%s)", r.name, got, r.bundles, r.reason)
		}
	}
}
