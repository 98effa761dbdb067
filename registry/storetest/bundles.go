package storetest

import (
	"errors"
	"slices"
	"testing"

	"github.com/flowdrop/gateway/registry"
)

// The bundles' part of the contract: stored, revisioned and watched like
// tools, in the same revision order.
var bundleCases = []struct {
	name   string
	reason string
	run    func(t *testing.T, s registry.Store)
}{
	{"bundle-round-trip", "a bundle that was Put must come back whole (every selection, description, discovery) from GetBundle and ListBundles with the revision PutBundle reported", testBundleRoundTrip},
	{"bundle-missing", "a bundle never Put (or deleted) must be ErrBundleNotFound, and a tool of the same name is not a bundle", testBundleMissing},
	{"bundle-expected-revision", "optimistic concurrency on bundles: a wrong expected revision fails naming the bundle and its actual revision, and changes nothing", testBundleExpected},
	{"bundle-shares-revisions", "bundle and tool writes share one increasing revision sequence, and List/ListBundles revisions cover both", testBundleSharesRevisions},
	{"bundle-watch", "Watch must deliver bundle puts and deletes (Bundle set, Tool zero) in order among the tools' events, replayed and live", testBundleWatch},
	{"bundle-caller-mutation", "mutating the caller's bundle after PutBundle must not change what the store holds", testBundleCallerMutation},
}

func sampleBundle(name string) registry.Bundle {
	return registry.Bundle{Name: name, Description: "bundle " + name, Tools: []string{"a", "b"}, Globs: []string{"notes.*"},
		LabelSelectors: []string{"team=boards,!beta"}, Discovery: registry.DiscoveryList}
}

func mustPutBundle(t *testing.T, s registry.Store, b registry.Bundle, expected *int64) registry.Bundle {
	t.Helper()
	got, err := s.PutBundle(ctx(t), b, expected)
	if err != nil {
		t.Fatalf("PutBundle(%q): %v", b.Name, err)
	}
	return got
}

func assertSameBundle(t *testing.T, got, want registry.Bundle, where string) {
	t.Helper()
	if got.Name != want.Name || got.Description != want.Description || got.Discovery != want.Discovery || got.Revision != want.Revision ||
		!slices.Equal(got.Tools, want.Tools) || !slices.Equal(got.Globs, want.Globs) || !slices.Equal(got.LabelSelectors, want.LabelSelectors) {
		t.Errorf("%s: got %+v, want %+v", where, got, want)
	}
}

func testBundleRoundTrip(t *testing.T, s registry.Store) {
	want := sampleBundle("ops")
	put := mustPutBundle(t, s, want, nil)
	want.Revision = put.Revision
	assertSameBundle(t, put, want, "PutBundle result")
	got, err := s.GetBundle(ctx(t), "ops")
	if err != nil {
		t.Fatalf("GetBundle: %v", err)
	}
	assertSameBundle(t, got, want, "GetBundle")
	mustPutBundle(t, s, registry.Bundle{Name: "alpha", Globs: []string{"*"}}, nil)
	list, lrev, err := s.ListBundles(ctx(t))
	if err != nil {
		t.Fatalf("ListBundles: %v", err)
	}
	if len(list) != 2 || list[0].Name != "alpha" || list[1].Name != "ops" {
		t.Fatalf("ListBundles = %+v, want alpha then ops", list)
	}
	assertSameBundle(t, list[1], want, "ListBundles")
	if lrev < list[0].Revision {
		t.Errorf("ListBundles revision %d older than a bundle it holds (%d)", lrev, list[0].Revision)
	}
	tools, _, err := s.List(ctx(t))
	if err != nil || len(tools) != 0 {
		t.Errorf("List after bundle writes = %d tools, %v; bundles are not tools", len(tools), err)
	}
}

func testBundleMissing(t *testing.T, s registry.Store) {
	mustPut(t, s, sampleTool("same"), nil)
	if _, err := s.GetBundle(ctx(t), "same"); !errors.Is(err, registry.ErrBundleNotFound) {
		t.Errorf("GetBundle of a tool's name: error = %v, want ErrBundleNotFound", err)
	}
	b := mustPutBundle(t, s, sampleBundle("gone"), nil)
	dr, err := s.DeleteBundle(ctx(t), "gone", nil)
	if err != nil || dr <= b.Revision {
		t.Fatalf("DeleteBundle = %d, %v; want a revision > %d", dr, err, b.Revision)
	}
	if _, err := s.GetBundle(ctx(t), "gone"); !errors.Is(err, registry.ErrBundleNotFound) {
		t.Errorf("GetBundle after delete: error = %v, want ErrBundleNotFound", err)
	}
	if _, err := s.DeleteBundle(ctx(t), "gone", nil); !errors.Is(err, registry.ErrBundleNotFound) {
		t.Errorf("second DeleteBundle: error = %v, want ErrBundleNotFound", err)
	}
	if _, err := s.Get(ctx(t), "same"); err != nil {
		t.Errorf("the tool of the bundle's name: %v", err)
	}
}

func wantBundleMismatch(t *testing.T, err error, bundle string, expected, actual int64, reason string) {
	t.Helper()
	var m *registry.RevisionMismatchError
	if !errors.As(err, &m) {
		t.Errorf("%s: error = %v, want *RevisionMismatchError", reason, err)
		return
	}
	if m.Bundle != bundle || m.Tool != "" || m.Expected != expected || m.Actual != actual {
		t.Errorf("%s: mismatch = %+v, want {Bundle:%s Expected:%d Actual:%d}", reason, *m, bundle, expected, actual)
	}
}

func testBundleExpected(t *testing.T, s registry.Store) {
	v1 := mustPutBundle(t, s, sampleBundle("x"), rev(0))
	for _, c := range []struct {
		reason   string
		expected int64
	}{
		{"expected 0 (must not exist) on an existing bundle", 0},
		{"expected a stale revision", v1.Revision - 1},
		{"expected a future revision", v1.Revision + 1000},
	} {
		changed := sampleBundle("x")
		changed.Description = "must not be stored"
		_, err := s.PutBundle(ctx(t), changed, rev(c.expected))
		wantBundleMismatch(t, err, "x", c.expected, v1.Revision, c.reason)
	}
	got, err := s.GetBundle(ctx(t), "x")
	if err != nil || got.Revision != v1.Revision || got.Description != v1.Description {
		t.Fatalf("after rejected PutBundles GetBundle = %+v, %v; want revision %d unchanged", got, err, v1.Revision)
	}
	_, err = s.DeleteBundle(ctx(t), "x", rev(v1.Revision-1))
	wantBundleMismatch(t, err, "x", v1.Revision-1, v1.Revision, "DeleteBundle with a stale revision")
	_, err = s.DeleteBundle(ctx(t), "missing", rev(5))
	wantBundleMismatch(t, err, "missing", 5, 0, "DeleteBundle with a revision of a missing bundle")
	v2 := mustPutBundle(t, s, sampleBundle("x"), rev(v1.Revision))
	if v2.Revision <= v1.Revision {
		t.Errorf("matching expected revision: new revision %d, want > %d", v2.Revision, v1.Revision)
	}
	if _, err := s.DeleteBundle(ctx(t), "x", rev(v2.Revision)); err != nil {
		t.Errorf("DeleteBundle with the matching revision: %v", err)
	}
}

func testBundleSharesRevisions(t *testing.T, s registry.Store) {
	t1 := mustPut(t, s, sampleTool("t"), nil)
	b1 := mustPutBundle(t, s, sampleBundle("b"), nil)
	t2 := mustPut(t, s, sampleTool("t"), nil)
	if !(t1.Revision < b1.Revision && b1.Revision < t2.Revision) {
		t.Fatalf("revisions tool %d, bundle %d, tool %d: want one increasing sequence", t1.Revision, b1.Revision, t2.Revision)
	}
	if _, r, err := s.ListBundles(ctx(t)); err != nil || r < t2.Revision {
		t.Errorf("ListBundles revision %d, %v; want >= the last write %d", r, err, t2.Revision)
	}
}

func testBundleWatch(t *testing.T, s registry.Store) {
	start := storeRevision(t, s)
	live, err := s.Watch(ctx(t), start)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	tool := mustPut(t, s, sampleTool("t"), nil)
	b := mustPutBundle(t, s, sampleBundle("b"), nil)
	dr, err := s.DeleteBundle(ctx(t), "b", nil)
	if err != nil {
		t.Fatalf("DeleteBundle: %v", err)
	}
	replay, err := s.Watch(ctx(t), start)
	if err != nil {
		t.Fatalf("Watch replay: %v", err)
	}
	for _, ch := range []<-chan registry.Event{live, replay} {
		ev := recv(t, ch)
		if ev.Bundle != nil || ev.Tool.Name != "t" || ev.Revision != tool.Revision {
			t.Fatalf("first event = %+v, want the tool's put at %d", ev, tool.Revision)
		}
		ev = recv(t, ch)
		if ev.Type != registry.EventPut || ev.Bundle == nil || ev.Tool.Name != "" || ev.Revision != b.Revision {
			t.Fatalf("second event = %+v, want the bundle's put at %d", ev, b.Revision)
		}
		assertSameBundle(t, *ev.Bundle, b, "watched bundle")
		ev = recv(t, ch)
		if ev.Type != registry.EventDelete || ev.Bundle == nil || ev.Bundle.Name != "b" || ev.Revision != dr {
			t.Fatalf("third event = %+v, want the bundle's delete at %d", ev, dr)
		}
	}
}

func testBundleCallerMutation(t *testing.T, s registry.Store) {
	b := sampleBundle("m")
	put := mustPutBundle(t, s, b, nil)
	b.Tools[0], b.Globs[0], b.LabelSelectors[0] = "changed", "changed", "changed"
	put.Tools[1] = "changed too"
	got, err := s.GetBundle(ctx(t), "m")
	if err != nil {
		t.Fatalf("GetBundle: %v", err)
	}
	want := sampleBundle("m")
	want.Revision = got.Revision
	assertSameBundle(t, got, want, "after the caller mutated its values")
}
