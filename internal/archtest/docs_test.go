package archtest

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/flowdrop/gateway/server/pipeline"
)

// doc reads a Markdown file by its path from the module root.
func doc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile("../../" + path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPolicyGuideStageOrder: the policy guide's stage line is the
// pipeline's one list, so the docs cannot drift from the code.
func TestPolicyGuideStageOrder(t *testing.T) {
	t.Parallel()
	s := doc(t, "docs/policy.md")
	_, rest, ok := strings.Cut(s, "<!-- stages -->")
	block, _, ok2 := strings.Cut(rest, "<!-- /stages -->")
	if !ok || !ok2 {
		t.Fatal("docs/policy.md has no <!-- stages --> … <!-- /stages --> block")
	}
	var got []string
	for _, f := range strings.Split(block, "→") {
		if f = strings.TrimSpace(f); f != "" {
			got = append(got, f)
		}
	}
	want := pipeline.New(pipeline.Config{}).StageNames()
	if !slices.Equal(got, want) {
		t.Errorf("docs/policy.md stage order %v, pipeline runs %v", got, want)
	}
}

// TestLayoutCoversEveryPackage: every package of the module is named
// in the layout table of docs/development.md (itself, or a directory row above it, or by
// its last element in the row of its parent), and every path the table
// names exists.
func TestLayoutCoversEveryPackage(t *testing.T) {
	t.Parallel()
	s := doc(t, "docs/development.md")
	_, table, ok := strings.Cut(s, "## Layout")
	table, _, _ = strings.Cut(table, "\n\n`")
	if !ok {
		t.Fatal("docs/development.md has no Layout section")
	}
	tick := regexp.MustCompile("`([^`]+)`")
	type row struct{ paths, names []string }
	var rows []row
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			continue
		}
		var r row
		for _, m := range tick.FindAllStringSubmatch(cells[1], -1) {
			r.paths = append(r.paths, m[1])
		}
		for _, m := range tick.FindAllStringSubmatch(cells[2], -1) {
			r.names = append(r.names, m[1])
		}
		rows = append(rows, r)
	}
	for _, r := range rows {
		for _, p := range r.paths {
			if _, err := os.Stat("../../" + strings.TrimSuffix(p, "/")); err != nil {
				t.Errorf("layout table names %s, which does not exist", p)
			}
		}
	}
	covered := func(pkg string) bool {
		for _, r := range rows {
			for _, p := range r.paths {
				if pkg == strings.TrimSuffix(p, "/") || strings.HasSuffix(p, "/") && strings.HasPrefix(pkg, p) {
					return true
				}
				dir, last, _ := cutLast(pkg)
				if dir == strings.TrimSuffix(p, "/") && slices.Contains(r.names, last) {
					return true
				}
			}
		}
		return false
	}
	for _, pkg := range goList(t, "./...") {
		rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
		if rel == "" || strings.HasPrefix(rel, "gen/") {
			continue
		}
		if !covered(rel) {
			t.Errorf("package %s is not in the layout table of docs/development.md", rel)
		}
	}
}

func cutLast(p string) (dir, last string, ok bool) {
	i := strings.LastIndex(p, "/")
	if i < 0 {
		return "", p, false
	}
	return p[:i], p[i+1:], true
}
