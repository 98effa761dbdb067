package storetest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/flowdrop/gateway/registry"
)

// The history's part of the contract, for stores that keep one
// (registry.Historian; the others skip it).
var historyCases = []struct {
	name   string
	reason string
	run    func(t *testing.T, s registry.Store)
}{
	{"history-bounded-newest-first", "History must give each write's definition, revision and writer newest first, keep only the last HistoryDepth, and honour limit", testHistoryBounded},
	{"history-refused-write", "a write refused for its expected revision must add no history entry", testHistoryRefused},
	{"history-delete-forgets", "deleting a tool must drop its history, and a re-created tool starts a new one without the old entries; other tools keep theirs", testHistoryDelete},
	{"history-concurrent", "concurrent unpinned writes of one tool must each leave exactly one entry with the revision it got", testHistoryConcurrent},
}

func historian(t *testing.T, s registry.Store) registry.Historian {
	t.Helper()
	h, ok := s.(registry.Historian)
	if !ok {
		t.Skip("the store keeps no revision history")
	}
	return h
}

func history(t *testing.T, h registry.Historian, name string, limit int) []registry.ToolRevision {
	t.Helper()
	got, err := h.History(ctx(t), name, limit)
	if err != nil {
		t.Fatalf("History(%q, %d): %v", name, limit, err)
	}
	return got
}

func testHistoryBounded(t *testing.T, s registry.Store) {
	h := historian(t, s)
	if got := history(t, h, "never", 0); len(got) != 0 {
		t.Fatalf("History of a tool never written: %d entries, want none", len(got))
	}
	const writes = registry.HistoryDepth + 5
	var revs []int64
	for i := range writes {
		tool := sampleTool("hist")
		tool.Description = fmt.Sprintf("v%d", i)
		c := ctx(t)
		if i%2 == 0 {
			c = registry.WithWriter(c, fmt.Sprintf("admin-%d", i))
		}
		got, err := s.Put(c, tool, nil)
		if err != nil {
			t.Fatal(err)
		}
		revs = append(revs, got.Revision)
	}
	got := history(t, h, "hist", 0)
	if len(got) != registry.HistoryDepth {
		t.Fatalf("History after %d writes: %d entries, want the last %d", writes, len(got), registry.HistoryDepth)
	}
	for j, e := range got {
		i := writes - 1 - j // newest first
		if e.Revision != revs[i] || e.Tool.Revision != revs[i] {
			t.Errorf("entry %d: revision %d (tool %d), want %d", j, e.Revision, e.Tool.Revision, revs[i])
		}
		if want := fmt.Sprintf("v%d", i); e.Tool.Description != want || e.Tool.Name != "hist" {
			t.Errorf("entry %d: tool %q %q, want hist %q", j, e.Tool.Name, e.Tool.Description, want)
		}
		want := ""
		if i%2 == 0 {
			want = fmt.Sprintf("admin-%d", i)
		}
		if e.Writer != want {
			t.Errorf("entry %d: writer %q, want %q", j, e.Writer, want)
		}
		if e.Time.IsZero() {
			t.Errorf("entry %d: no time", j)
		}
		if e.Tool.InputSchema == nil || len(e.Tool.InputSchema.GetFields()) == 0 {
			t.Errorf("entry %d: the definition's schema is missing", j)
		}
	}
	if got := history(t, h, "hist", 3); len(got) != 3 || got[0].Revision != revs[writes-1] || got[2].Revision != revs[writes-3] {
		t.Fatalf("History limit 3: %d entries, want the newest 3", len(got))
	}
}

func testHistoryRefused(t *testing.T, s registry.Store) {
	h := historian(t, s)
	first := mustPut(t, s, sampleTool("pinned"), rev(0))
	if _, err := s.Put(ctx(t), sampleTool("pinned"), rev(first.Revision+100)); err == nil {
		t.Fatal("Put with a wrong expected revision succeeded")
	}
	if _, err := s.Put(ctx(t), sampleTool("pinned"), rev(0)); err == nil {
		t.Fatal("Put with expected 0 over an existing tool succeeded")
	}
	got := history(t, h, "pinned", 0)
	if len(got) != 1 || got[0].Revision != first.Revision {
		t.Fatalf("History after one write and two refused ones: %+v, want only revision %d", revisions(got), first.Revision)
	}
}

func testHistoryDelete(t *testing.T, s registry.Store) {
	h := historian(t, s)
	mustPut(t, s, sampleTool("gone"), nil)
	mustPut(t, s, sampleTool("gone"), nil)
	kept := mustPut(t, s, sampleTool("gone-not"), nil) // a name the deleted one is a prefix of
	if _, err := s.Delete(ctx(t), "gone", nil); err != nil {
		t.Fatal(err)
	}
	if got := history(t, h, "gone", 0); len(got) != 0 {
		t.Fatalf("History of a deleted tool: %v, want none", revisions(got))
	}
	again := mustPut(t, s, sampleTool("gone"), rev(0))
	if got := history(t, h, "gone", 0); len(got) != 1 || got[0].Revision != again.Revision {
		t.Fatalf("History of a re-created tool: %v, want only %d", revisions(got), again.Revision)
	}
	if got := history(t, h, "gone-not", 0); len(got) != 1 || got[0].Revision != kept.Revision {
		t.Fatalf("History of another tool after a delete: %v, want %d", revisions(got), kept.Revision)
	}
}

func testHistoryConcurrent(t *testing.T, s registry.Store) {
	h := historian(t, s)
	const n = 8
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		revs = map[int64]bool{}
	)
	for i := range n {
		wg.Go(func() {
			tool := sampleTool("busy")
			tool.Description = fmt.Sprint(i)
			got, err := s.Put(ctx(t), tool, nil)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			revs[got.Revision] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	got := history(t, h, "busy", 0)
	if len(got) != n {
		t.Fatalf("History after %d concurrent writes: %v", n, revisions(got))
	}
	for i, e := range got {
		if !revs[e.Revision] || (i > 0 && e.Revision >= got[i-1].Revision) {
			t.Fatalf("History after concurrent writes: %v, want the revisions %v newest first", revisions(got), revs)
		}
	}
}

func revisions(h []registry.ToolRevision) []int64 {
	out := make([]int64, len(h))
	for i, e := range h {
		out[i] = e.Revision
	}
	return out
}
