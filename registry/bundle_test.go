package registry_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/memstore"
)

func TestCompileBundleRefuses(t *testing.T) {
	many := func(n int, f func(int) string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = f(i)
		}
		return out
	}
	cases := []struct {
		reason string
		b      registry.Bundle
		field  string
	}{
		{"a name outside the tool-name pattern", registry.Bundle{Name: "a/b", Globs: []string{"*"}}, "name"},
		{"an empty name", registry.Bundle{Globs: []string{"*"}}, "name"},
		{"a name that is a relative path segment (/mcp/..)", registry.Bundle{Name: "..", Globs: []string{"*"}}, "name"},
		{"a name longer than 64 bytes", registry.Bundle{Name: strings.Repeat("a", 65), Globs: []string{"*"}}, "name"},
		{"no selection at all", registry.Bundle{Name: "b"}, "tools"},
		{"a listed tool name outside the pattern", registry.Bundle{Name: "b", Tools: []string{"ok", "not ok"}}, "tools[1]"},
		{"an invalid glob", registry.Bundle{Name: "b", Globs: []string{"[a-"}}, "globs[0]"},
		{"an empty glob", registry.Bundle{Name: "b", Globs: []string{""}}, "globs[0]"},
		{"an empty label selector", registry.Bundle{Name: "b", LabelSelectors: []string{" "}}, "label_selectors[0]"},
		{"a selector requirement without a key", registry.Bundle{Name: "b", LabelSelectors: []string{"=x"}}, "label_selectors[0]"},
		{"a selector value holding '='", registry.Bundle{Name: "b", LabelSelectors: []string{"a=b=c"}}, "label_selectors[0]"},
		{"a discovery mode this build does not serve fails closed", registry.Bundle{Name: "b", Globs: []string{"*"}, Discovery: "ranked"}, "discovery"},
		{"more names than the bound", registry.Bundle{Name: "b", Tools: many(registry.MaxBundleTools+1, func(i int) string { return fmt.Sprint("t", i) })}, "tools"},
		{"more globs than the bound", registry.Bundle{Name: "b", Globs: many(registry.MaxBundleGlobs+1, func(int) string { return "*" })}, "globs"},
		{"more selectors than the bound", registry.Bundle{Name: "b", LabelSelectors: many(registry.MaxBundleLabelSelectors+1, func(int) string { return "a" })}, "label_selectors"},
		{"a selector with too many requirements", registry.Bundle{Name: "b", LabelSelectors: []string{strings.Repeat("a,", 40) + "a"}}, "label_selectors[0]"},
		{"a description over the tools' bound", registry.Bundle{Name: "b", Globs: []string{"*"}, Description: strings.Repeat("x", registry.MaxDescriptionBytes+1)}, "description"},
	}
	for _, c := range cases {
		_, err := registry.CompileBundle(c.b)
		var be *registry.BundleError
		if !errors.As(err, &be) || be.Field != c.field {
			t.Errorf("%s: error = %v, want a *BundleError on %q", c.reason, err, c.field)
		}
	}
}

func TestBundleSelects(t *testing.T) {
	tool := func(name string, labels ...string) *registry.Tool {
		t := &registry.Tool{Name: name, Labels: map[string]string{}}
		for _, l := range labels {
			k, v, _ := strings.Cut(l, "=")
			t.Labels[k] = v
		}
		return t
	}
	cases := []struct {
		reason string
		b      registry.Bundle
		tool   *registry.Tool
		want   bool
	}{
		{"a listed name", registry.Bundle{Tools: []string{"a", "b"}}, tool("b"), true},
		{"a name not listed", registry.Bundle{Tools: []string{"a"}}, tool("ab"), false},
		{"a glob match", registry.Bundle{Globs: []string{"notes.*"}}, tool("notes.Create"), true},
		{"a glob that does not match", registry.Bundle{Globs: []string{"notes.*"}}, tool("notesCreate"), false},
		{"key=value holds", registry.Bundle{LabelSelectors: []string{"team=boards"}}, tool("x", "team=boards"), true},
		{"key==value is key=value", registry.Bundle{LabelSelectors: []string{"team==boards"}}, tool("x", "team=boards"), true},
		{"key=value with another value", registry.Bundle{LabelSelectors: []string{"team=boards"}}, tool("x", "team=ops"), false},
		{"every requirement of a selector must hold", registry.Bundle{LabelSelectors: []string{"team=boards, tier!=beta"}}, tool("x", "team=boards", "tier=beta"), false},
		{"key!=value holds for an absent key", registry.Bundle{LabelSelectors: []string{"tier!=beta"}}, tool("x"), true},
		{"key (present)", registry.Bundle{LabelSelectors: []string{"pii"}}, tool("x", "pii="), true},
		{"!key (absent) with the key present", registry.Bundle{LabelSelectors: []string{"!pii"}}, tool("x", "pii=yes"), false},
		{"any one selection is enough (union)", registry.Bundle{Tools: []string{"z"}, Globs: []string{"q*"}, LabelSelectors: []string{"nope", "team=boards"}}, tool("x", "team=boards"), true},
		{"no selection matches", registry.Bundle{Tools: []string{"z"}, Globs: []string{"q*"}, LabelSelectors: []string{"team=ops"}}, tool("x", "team=boards"), false},
	}
	for _, c := range cases {
		c.b.Name = "b"
		e, err := registry.CompileBundle(c.b)
		if err != nil {
			t.Fatalf("%s: %v", c.reason, err)
		}
		if got := e.Selects(c.tool); got != c.want {
			t.Errorf("%s: Selects(%s %v) = %v, want %v", c.reason, c.tool.Name, c.tool.Labels, got, c.want)
		}
	}
}

// TestRegistryBundles: a bundle written through one registry is served by
// it at once (read-your-writes) and by another registry on the same store
// through the watch; LookupIn answers from the bundle's selection; a
// deletion is seen by both.
func TestRegistryBundles(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	defer s.Close()
	a, b := start(t, s), start(t, s)
	for _, name := range []string{"notes.Create", "notes.List", "files.Get"} {
		if _, err := a.Register(ctx, mkTool(t, name, `{}`), registry.RegisterOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.PutBundle(ctx, registry.Bundle{Name: "bad", Globs: []string{"[x"}}, nil); err == nil {
		t.Fatal("PutBundle stored an invalid bundle")
	}
	res, err := a.PutBundle(ctx, registry.Bundle{Name: "notes", Globs: []string{"notes.*"}}, nil)
	if err != nil || !res.Created || res.Bundle.Revision == 0 {
		t.Fatalf("PutBundle = %+v, %v; want created with a revision", res, err)
	}
	if _, ok := a.LookupIn("notes", "notes.Create"); !ok {
		t.Error("the writing registry does not serve the bundle at once")
	}
	waitFor(t, b, "the other registry to see the bundle", func() bool { _, ok := b.Snapshot().Bundle("notes"); return ok })
	for _, c := range []struct {
		reason, bundle, tool string
		want                 bool
	}{
		{"a selected tool", "notes", "notes.List", true},
		{"a tool outside the bundle", "notes", "files.Get", false},
		{"an unknown bundle selects nothing", "nope", "notes.List", false},
		{"no bundle is the whole registry", "", "files.Get", true},
		{"a selected name that is not registered", "notes", "notes.Gone", false},
	} {
		if _, ok := b.LookupIn(c.bundle, c.tool); ok != c.want {
			t.Errorf("%s: LookupIn(%q, %q) = %v, want %v", c.reason, c.bundle, c.tool, ok, c.want)
		}
	}
	if _, err := a.PutBundle(ctx, registry.Bundle{Name: "notes", Globs: []string{"notes.*"}}, i64(0)); err == nil {
		t.Error("PutBundle expecting no bundle replaced one")
	}
	if err := b.DeleteBundle(ctx, "notes", nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, a, "the deletion to reach the first registry", func() bool { _, ok := a.Snapshot().Bundle("notes"); return !ok })
	if _, err := a.GetBundle(ctx, "notes"); !errors.Is(err, registry.ErrBundleNotFound) {
		t.Errorf("GetBundle after delete: %v", err)
	}
}

// TestRegistryBundlesAtStart: Start loads the stored bundles, and one this
// build cannot compile is not served.
func TestRegistryBundlesAtStart(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	defer s.Close()
	if _, err := s.PutBundle(ctx, registry.Bundle{Name: "pre", Tools: []string{"x"}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutBundle(ctx, registry.Bundle{Name: "unservable", Tools: []string{"x"}, Discovery: "future-mode"}, nil); err != nil {
		t.Fatal(err)
	}
	r := start(t, s)
	if _, ok := r.Snapshot().Bundle("pre"); !ok {
		t.Error("a stored bundle is not served after Start")
	}
	if _, ok := r.Snapshot().Bundle("unservable"); ok {
		t.Error("a stored bundle this build cannot compile is served (must fail closed)")
	}
}
