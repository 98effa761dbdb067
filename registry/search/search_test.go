package search_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/protobuf/types/known/structpb"
	"sigs.k8s.io/yaml"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/memstore"
	"github.com/flowdrop/gateway/registry/search"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// catalog starts a registry holding testdata/catalog.yaml and an index
// over it.
func catalog(t testing.TB) (*registry.Registry, *search.Index) {
	t.Helper()
	tools, err := registry.LoadFile("testdata/catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return withTools(t, tools)
}

func withTools(t testing.TB, tools []registry.Tool) (*registry.Registry, *search.Index) {
	t.Helper()
	ctx := context.Background()
	st := memstore.New()
	// Put, not Seed: the registry compiles each tool as it starts anyway,
	// and at 100k tools a second compilation is most of the setup.
	for _, tool := range tools {
		if _, err := st.Put(ctx, tool, nil); err != nil {
			t.Fatal(err)
		}
	}
	reg := registry.New(st, registry.WithLogger(slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))))
	if err := reg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	idx := search.New(reg)
	t.Cleanup(func() {
		idx.Close()
		reg.Close()
		st.Close()
	})
	return reg, idx
}

func names(hits []search.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Entry.Tool.Name
	}
	return out
}

// TestRelevance: each query of testdata/queries.yaml finds its tool in
// the top 3 of the fixed catalog.
func TestRelevance(t *testing.T) {
	_, idx := catalog(t)
	raw, err := os.ReadFile("testdata/queries.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var queries []struct{ Query, Want string }
	if err := yaml.UnmarshalStrict(raw, &queries); err != nil {
		t.Fatal(err)
	}
	if len(queries) < 20 {
		t.Fatalf("%d queries; the relevance bar is at least 20", len(queries))
	}
	for _, q := range queries {
		hits, err := idx.Search(q.Query, 3, nil)
		if err != nil {
			t.Fatalf("%q: %v", q.Query, err)
		}
		got := names(hits)
		found := false
		for _, n := range got {
			found = found || n == q.Want
		}
		if !found {
			t.Errorf("%q: top 3 %v, want %s among them", q.Query, got, q.Want)
		}
	}
}

// TestVisibility: a tool the caller may not see is never returned, and
// does not take a place: the next visible tools fill the limit.
func TestVisibility(t *testing.T) {
	_, idx := catalog(t)
	denied := func(name string) bool { return !strings.HasPrefix(name, "github.") }
	for _, q := range []string{"github", "github.create_issue", "create issue", "pull request", "open a bug report on github"} {
		hits, err := idx.Search(q, search.MaxLimit, denied)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names(hits) {
			if strings.HasPrefix(n, "github.") {
				t.Errorf("%q: denied tool %s returned", q, n)
			}
		}
	}
	all, _ := idx.Search("create", 3, nil)
	if names(all)[0] != "calendar.create_event" && !strings.HasPrefix(names(all)[0], "github.") {
		t.Logf("ranking of create: %v", names(all))
	}
	none := func(string) bool { return false }
	if hits, _ := idx.Search("github issue", 10, none); len(hits) != 0 {
		t.Errorf("nothing visible: got %v", names(hits))
	}
	// The place a denied tool would have taken goes to the next one.
	some, _ := idx.Search("list", 2, func(n string) bool { return n != "github.list_pull_requests" })
	if len(some) != 2 {
		t.Errorf("list with one denied, limit 2: %v", names(some))
	}
}

// TestFollowsRegistry: tools added, changed and removed in the registry
// are found, re-ranked and gone on the next query.
func TestFollowsRegistry(t *testing.T) {
	reg, idx := catalog(t)
	ctx := context.Background()
	if hits, _ := idx.Search("zeppelin", 5, nil); len(hits) != 0 {
		t.Fatalf("before: %v", names(hits))
	}
	add := registry.Tool{Name: "airship.book_zeppelin", Description: "Book a seat on a zeppelin flight.", Backend: "127.0.0.1:7001",
		InputSchema: mustStruct(t, map[string]any{"type": "object", "properties": map[string]any{"flightNumber": map[string]any{"type": "string"}}})}
	if _, err := reg.Register(ctx, add, registry.RegisterOptions{}); err != nil {
		t.Fatal(err)
	}
	hits, _ := idx.Search("zeppelin", 5, nil)
	if got := names(hits); len(got) != 1 || got[0] != add.Name {
		t.Fatalf("after add: %v", got)
	}
	if hits, _ := idx.Search("flight number", 5, nil); len(hits) == 0 || hits[0].Entry.Tool.Name != add.Name {
		t.Fatalf("by parameter name: %v", names(hits))
	}
	add.Description = "Reserve a balloon ride."
	if _, err := reg.Register(ctx, add, registry.RegisterOptions{}); err != nil {
		t.Fatal(err)
	}
	if hits, _ := idx.Search("balloon", 5, nil); len(hits) != 1 || hits[0].Entry.Tool.Description != add.Description {
		t.Fatalf("after update, new words: %v", names(hits))
	}
	if hits, _ := idx.Search("seat flight", 5, nil); len(hits) != 1 || hits[0].Entry.Tool.Name != add.Name {
		// "flight" is still a parameter word; "seat" is gone with the old description.
		t.Fatalf("after update: %v", names(hits))
	}
	if err := reg.Delete(ctx, add.Name, nil); err != nil {
		t.Fatal(err)
	}
	if hits, _ := idx.Search("zeppelin balloon flight", 5, nil); len(hits) != 0 {
		t.Fatalf("after delete: %v", names(hits))
	}
	if idx.Len() != 42 {
		t.Fatalf("Len %d after add and delete, want the catalog's 42", idx.Len())
	}
}

// TestChurnCompacts: many more updates than tools keep the index right
// (removed tools' postings are compacted away, not matched).
func TestChurnCompacts(t *testing.T) {
	reg, idx := withTools(t, nil)
	ctx := context.Background()
	for i := range 600 {
		tool := registry.Tool{Name: fmt.Sprintf("t%d", i%3), Description: "common " + letters(i), Backend: "127.0.0.1:7001",
			InputSchema: mustStruct(t, map[string]any{"type": "object"})}
		if _, err := reg.Register(ctx, tool, registry.RegisterOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := idx.Search("common", 1, nil); err != nil { // sync after every change
			t.Fatal(err)
		}
	}
	if idx.Len() != 3 {
		t.Fatalf("Len %d, want 3", idx.Len())
	}
	for i := range 600 {
		hits, _ := idx.Search(letters(i), 5, nil)
		want := i >= 597
		if (len(hits) == 1) != want || len(hits) > 1 {
			t.Fatalf("%s (update %d): %v (live: %v)", letters(i), i, names(hits), want)
		}
	}
}

func TestQueryRefused(t *testing.T) {
	_, idx := catalog(t)
	for _, c := range []struct {
		reason, query string
		limit         int
		field         string
	}{
		{"an empty query has nothing to rank", "", 5, "query"},
		{"blank is empty", "  \t ", 5, "query"},
		{"longer than the bound", strings.Repeat("a", search.MaxQueryBytes+1), 5, "query"},
		{"more terms than the bound", strings.Repeat("w ", search.MaxQueryTerms+1), 5, "query"},
		{"a negative limit", "github", -1, "limit"},
	} {
		_, err := idx.Search(c.query, c.limit, nil)
		qe, ok := err.(*search.QueryError)
		if !ok || qe.Field != c.field {
			t.Errorf("%s: error %v, want a QueryError on %s", c.reason, err, c.field)
		}
	}
	for _, c := range []struct {
		reason, query string
		limit, want   int
	}{
		{"stop words only match nothing", "the of and", 5, 0},
		{"0 is the default limit", "a", 0, 0},
		{"above the maximum is the maximum", "string", search.MaxLimit + 50, 0},
	} {
		if _, err := idx.Search(c.query, c.limit, nil); err != nil {
			t.Errorf("%s: %v", c.reason, err)
		}
	}
}

func TestShort(t *testing.T) {
	for _, c := range []struct{ reason, in, want string }{
		{"first sentence", "Does a thing. Then more.", "Does a thing."},
		{"first line", "Line one\nline two", "Line one"},
		{"cut on a rune boundary", strings.Repeat("é", 150), strings.Repeat("é", 100) + "…"},
		{"short stays", "Short", "Short"},
	} {
		if got := search.Short(c.in); got != c.want {
			t.Errorf("%s: %q, want %q", c.reason, got, c.want)
		}
	}
}

// letters is a distinct word of letters only for each i (digits would be
// words of their own).
func letters(i int) string {
	b := []byte("zz")
	for ; i > 0 || len(b) == 2; i /= 26 {
		b = append(b, byte('a'+i%26))
	}
	return string(b)
}

func mustStruct(t testing.TB, m map[string]any) *structpb.Struct {
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
