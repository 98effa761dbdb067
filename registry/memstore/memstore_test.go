package memstore_test

import (
	"context"
	"errors"
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/memstore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func tool(name string) registry.Tool {
	s, _ := structpb.NewStruct(map[string]any{"type": "object"})
	return registry.Tool{Name: name, Backend: "127.0.0.1:7001", InputSchema: s, Labels: map[string]string{"k": "v"}}
}

func i64(v int64) *int64 { return &v }

func TestPutGetListDelete(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	defer s.Close()

	a, err := s.Put(ctx, tool("b"), i64(0))
	if err != nil || a.Revision != 1 {
		t.Fatalf("create: %v rev %d", err, a.Revision)
	}
	if _, err := s.Put(ctx, tool("a"), nil); err != nil {
		t.Fatal(err)
	}
	var mm *registry.RevisionMismatchError
	if _, err := s.Put(ctx, tool("b"), i64(0)); !errors.As(err, &mm) || mm.Actual != 1 || mm.Expected != 0 {
		t.Fatalf("create over existing: got %v", err)
	}
	if _, err := s.Put(ctx, tool("c"), i64(5)); !errors.As(err, &mm) || mm.Actual != 0 {
		t.Fatalf("update of missing: got %v", err)
	}
	b2, err := s.Put(ctx, tool("b"), i64(1))
	if err != nil || b2.Revision != 3 {
		t.Fatalf("update: %v rev %d", err, b2.Revision)
	}
	list, rev, err := s.List(ctx)
	if err != nil || rev != 3 || len(list) != 2 || list[0].Name != "a" || list[1].Name != "b" {
		t.Fatalf("list: %v rev %d %+v", err, rev, list)
	}
	if _, err := s.Delete(ctx, "b", i64(1)); !errors.As(err, &mm) || mm.Actual != 3 {
		t.Fatalf("delete stale: got %v", err)
	}
	drev, err := s.Delete(ctx, "b", i64(3))
	if err != nil || drev != 4 {
		t.Fatalf("delete: %v rev %d", err, drev)
	}
	if _, err := s.Get(ctx, "b"); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("get deleted: %v", err)
	}
	if _, err := s.Delete(ctx, "b", nil); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("delete missing: %v", err)
	}
}

func TestPutCopiesInput(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	defer s.Close()
	in := tool("a")
	if _, err := s.Put(ctx, in, nil); err != nil {
		t.Fatal(err)
	}
	in.InputSchema.Fields["type"] = structpb.NewStringValue("string")
	in.Labels["k"] = "changed"
	got, _ := s.Get(ctx, "a")
	if got.InputSchema.Fields["type"].GetStringValue() != "object" || got.Labels["k"] != "v" {
		t.Fatalf("store shares the caller's schema or labels: %v %v", got.InputSchema, got.Labels)
	}
}

func TestWatchReplayThenLive(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := memstore.New()
	defer s.Close()
	for _, n := range []string{"a", "b", "c"} {
		if _, err := s.Put(ctx, tool(n), nil); err != nil {
			t.Fatal(err)
		}
	}
	ch, err := s.Watch(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Delete(ctx, "a", nil); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		typ  registry.EventType
		name string
		rev  int64
	}{{registry.EventPut, "b", 2}, {registry.EventPut, "c", 3}, {registry.EventDelete, "a", 4}}
	for _, w := range want {
		ev, ok := <-ch
		if !ok || ev.Type != w.typ || ev.Tool.Name != w.name || ev.Revision != w.rev {
			t.Fatalf("event: got %+v ok=%v, want %+v", ev, ok, w)
		}
	}
	cancel()
	for range ch { // closes once ctx ends
	}
}

func TestWatchCompacted(t *testing.T) {
	ctx := context.Background()
	s := memstore.New(memstore.WithHistory(2))
	defer s.Close()
	for _, n := range []string{"a", "b", "c", "d"} {
		if _, err := s.Put(ctx, tool(n), nil); err != nil {
			t.Fatal(err)
		}
	}
	// Revisions 3 and 4 are retained; 1 and 2 are gone.
	if _, err := s.Watch(ctx, 1); !errors.Is(err, registry.ErrCompacted) {
		t.Fatalf("watch after 1: got %v, want ErrCompacted", err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := s.Watch(wctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if ev := <-ch; ev.Revision != 3 {
		t.Fatalf("first replayed revision %d, want 3", ev.Revision)
	}
}

func TestSlowWatcherIsDropped(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := memstore.New(memstore.WithWatchBuffer(2))
	defer s.Close()
	ch, err := s.Watch(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Never read: the third write overflows the buffer; writers must not block.
	for _, n := range []string{"a", "b", "c", "d"} {
		if _, err := s.Put(ctx, tool(n), nil); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	for range ch {
		n++
	}
	if n != 2 {
		t.Fatalf("buffered events before close: %d, want 2", n)
	}
}

func TestCloseEndsWatches(t *testing.T) {
	s := memstore.New()
	ch, err := s.Watch(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, ok := <-ch; ok {
		t.Fatal("channel still open after Close")
	}
	if _, err := s.Put(context.Background(), tool("a"), nil); !errors.Is(err, registry.ErrClosed) {
		t.Fatalf("put after close: %v", err)
	}
}
