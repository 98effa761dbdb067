package registry

import (
	"testing"

	"google.golang.org/protobuf/types/known/structpb"
)

func entryAt(t *testing.T, name string, rev int64) *Entry {
	t.Helper()
	s, _ := structpb.NewStruct(map[string]any{"type": "object", "properties": map[string]any{}})
	e, err := Compile(Tool{Name: name, Backend: "127.0.0.1:7001", InputSchema: s})
	if err != nil {
		t.Fatal(err)
	}
	e.Tool.Revision = rev
	return e
}

// Events reach a replica late and interleaved with its own writes; the
// snapshot must only move forward per tool. Driven directly so the
// interleaving is exact rather than left to goroutine timing.
func TestApplyOrdering(t *testing.T) {
	r := New(nil, WithLogger(nil))
	r.mu.Lock()
	defer r.mu.Unlock()
	put := func(name string, rev int64) Event {
		return Event{Type: EventPut, Tool: entryAt(t, name, rev).Tool, Revision: rev}
	}
	steps := []struct {
		reason  string
		do      func()
		present bool
		rev     int64
	}{
		{"local Register publishes at once", func() { r.putLocked(entryAt(t, "b", 5)) }, true, 5},
		{"an older watch event is a no-op", func() { r.applyLocked(put("b", 3)) }, true, 5},
		{"the same revision from the watch is a no-op", func() { r.applyLocked(put("b", 5)) }, true, 5},
		{"local Delete publishes at once", func() { r.deleteLocked("b", 7) }, false, 0},
		{"a Put older than the local delete must not resurrect the tool", func() { r.applyLocked(put("b", 6)) }, false, 0},
		{"a re-list older than the local delete must not resurrect it", func() { r.replaceAllLocked([]Tool{entryAt(t, "b", 6).Tool}, 6) }, false, 0},
		{"the delete event arrives", func() { r.applyLocked(Event{Type: EventDelete, Tool: Tool{Name: "b"}, Revision: 7}) }, false, 0},
		{"a newer Put re-creates it", func() { r.applyLocked(put("b", 8)) }, true, 8},
		{"an older delete does not remove a newer tool", func() { r.applyLocked(Event{Type: EventDelete, Tool: Tool{Name: "b"}, Revision: 7}) }, true, 8},
	}
	for _, s := range steps {
		s.do()
		e, ok := r.snap.Load().Lookup("b")
		if ok != s.present || (ok && e.Tool.Revision != s.rev) {
			t.Fatalf("%s: present=%v rev=%v, want present=%v rev=%d", s.reason, ok, e, s.present, s.rev)
		}
	}
	if len(r.tombs) != 0 {
		t.Fatalf("tombstones not pruned after the watch passed them: %v", r.tombs)
	}
}

// An unchanged name+revision keeps its compiled entry across re-lists.
func TestReplaceAllReusesEntries(t *testing.T) {
	r := New(nil, WithLogger(nil))
	var compiles int
	r.compile = func(t Tool) (*Entry, error) { compiles++; return Compile(t) }
	a, b := entryAt(t, "a", 1).Tool, entryAt(t, "b", 2).Tool
	r.mu.Lock()
	defer r.mu.Unlock()
	r.replaceAllLocked([]Tool{a, b}, 2)
	first, _ := r.snap.Load().Lookup("a")
	b3 := b
	b3.Revision = 3
	r.replaceAllLocked([]Tool{a, b3}, 3)
	if compiles != 3 {
		t.Fatalf("compiled %d times, want 3 (a once, b twice)", compiles)
	}
	if again, _ := r.snap.Load().Lookup("a"); again != first {
		t.Fatal("entry for unchanged a was replaced")
	}
}
