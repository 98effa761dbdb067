package registry_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/memstore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func mkTool(t testing.TB, name, props string) registry.Tool {
	return registry.Tool{Name: name, Backend: "127.0.0.1:7001", InputSchema: schema(t, `{"type":"object","properties":`+props+`}`)}
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)) }

func start(t *testing.T, s registry.Store, opts ...registry.Option) *registry.Registry {
	t.Helper()
	r := registry.New(s, append([]registry.Option{registry.WithLogger(quietLogger()), registry.WithBackoff(time.Millisecond, 10*time.Millisecond)}, opts...)...)
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// waitFor waits on the registry's change notifications until cond holds.
// The deadline is a failsafe against hanging, not a timing assertion.
func waitFor(t *testing.T, r *registry.Registry, what string, cond func() bool) {
	t.Helper()
	ch, cancel := r.Changes()
	defer cancel()
	failsafe := time.NewTimer(20 * time.Second)
	defer failsafe.Stop()
	for !cond() {
		select {
		case <-ch:
		case <-failsafe.C:
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

func i64(v int64) *int64 { return &v }

func TestRegistryStartRegisterLookupDelete(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	defer s.Close()
	if _, err := s.Put(ctx, mkTool(t, "pre", `{}`), nil); err != nil {
		t.Fatal(err)
	}
	r := start(t, s)
	if _, ok := r.Lookup("pre"); !ok {
		t.Fatal("tool stored before Start is not served")
	}

	res, err := r.Register(ctx, mkTool(t, "b", `{"x":{"type":"string"}}`), registry.RegisterOptions{ExpectedRevision: i64(0)})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created || res.Tool.Revision == 0 {
		t.Fatalf("register result %+v", res)
	}
	// Read-your-writes: no waiting for the watch.
	e, ok := r.Lookup("b")
	if !ok || e.Tool.Revision != res.Tool.Revision || e.Schema == nil || e.Plan == nil {
		t.Fatalf("Lookup after Register: %v %+v", ok, e)
	}
	if got := r.Snapshot().List(); len(got) != 2 || got[0].Tool.Name != "b" || got[1].Tool.Name != "pre" {
		t.Fatalf("List not sorted by name: %v", got)
	}

	// Optimistic concurrency.
	_, err = r.Register(ctx, mkTool(t, "b", `{"x":{"type":"string"}}`), registry.RegisterOptions{ExpectedRevision: i64(res.Tool.Revision - 1)})
	var mm *registry.RevisionMismatchError
	if !errors.As(err, &mm) || mm.Actual != res.Tool.Revision {
		t.Fatalf("stale expected revision: %v", err)
	}
	res2, err := r.Register(ctx, mkTool(t, "b", `{"x":{"type":"string"},"y":{}}`), registry.RegisterOptions{ExpectedRevision: &res.Tool.Revision})
	if err != nil || res2.Created {
		t.Fatalf("update: %v %+v", err, res2)
	}

	// A bad definition is refused before it reaches the store.
	_, err = r.Register(ctx, registry.Tool{Name: "bad", Backend: "127.0.0.1:7001", InputSchema: schema(t, `{"type":"string"}`)}, registry.RegisterOptions{})
	var te *registry.ToolError
	if !errors.As(err, &te) {
		t.Fatalf("bad tool: %v", err)
	}
	if _, err := s.Get(ctx, "bad"); !errors.Is(err, registry.ErrNotFound) {
		t.Fatal("refused tool reached the store")
	}

	if err := r.Delete(ctx, "b", i64(res.Tool.Revision)); !errors.As(err, &mm) {
		t.Fatalf("delete with stale revision: %v", err)
	}
	if err := r.Delete(ctx, "b", &res2.Tool.Revision); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Lookup("b"); ok {
		t.Fatal("deleted tool still served")
	}
	if _, err := r.Get(ctx, "b"); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("Get after delete: %v", err)
	}
	// The watch later delivers the puts and the delete: the tool must stay deleted.
	waitFor(t, r, "watch to catch up", func() bool { return r.Snapshot().Revision >= s.Revision() })
	if _, ok := r.Lookup("b"); ok {
		t.Fatal("watch resurrected a deleted tool")
	}
}

// Two registries on one store behave like two gateway replicas.
func TestRegistryReplicaSeesWatchUpdates(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	defer s.Close()
	r1, r2 := start(t, s), start(t, s)

	res, err := r1.Register(ctx, mkTool(t, "shared", `{"a":{"type":"string"}}`), registry.RegisterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, r2, "replica to see the new tool", func() bool {
		e, ok := r2.Lookup("shared")
		return ok && e.Tool.Revision == res.Tool.Revision
	})
	if err := r1.Delete(ctx, "shared", nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, r2, "replica to see the deletion", func() bool {
		_, ok := r2.Lookup("shared")
		return !ok
	})
}

func TestRegistrySkipsBadStoredTool(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	defer s.Close()
	// Stores do not compile: a definition written by another writer can be bad.
	if _, err := s.Put(ctx, registry.Tool{Name: "bad", Backend: "127.0.0.1:7001", InputSchema: schema(t, `{"type":"array"}`)}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, mkTool(t, "good", `{}`), nil); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	var mu sync.Mutex
	r := registry.New(s, registry.WithLogger(slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &mu}, nil))))
	if err := r.Start(ctx); err != nil {
		t.Fatalf("a bad stored tool made Start fail: %v", err)
	}
	defer r.Close()
	if _, ok := r.Lookup("bad"); ok {
		t.Fatal("bad tool served")
	}
	if _, ok := r.Lookup("good"); !ok {
		t.Fatal("good tool not served")
	}
	// The same through the watch: a good tool replaced by a bad revision stops being served.
	if _, err := s.Put(ctx, registry.Tool{Name: "good", Backend: "nope", InputSchema: schema(t, `{"type":"object"}`)}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, r, "bad revision to be applied", func() bool { _, ok := r.Lookup("good"); return !ok })
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), "tool=bad") || !strings.Contains(logs.String(), "tool=good") {
		t.Fatalf("skipped tools not logged:\n%s", logs.String())
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// flakyStore is a real memstore whose watches the test can cut, as a
// network partition or etcd compaction would.
type flakyStore struct {
	*memstore.Store
	lists    atomic.Int32
	watching chan struct{} // one value per Watch call
	mu       sync.Mutex
	cut      chan struct{}
}

func newFlaky(opts ...memstore.Option) *flakyStore {
	return &flakyStore{Store: memstore.New(opts...), cut: make(chan struct{}), watching: make(chan struct{}, 64)}
}

// awaitWatch waits until the registry has a watch open (failsafe-bounded).
func (f *flakyStore) awaitWatch(t *testing.T) {
	t.Helper()
	select {
	case <-f.watching:
	case <-time.After(20 * time.Second):
		t.Fatal("registry never opened a watch")
	}
}

func (f *flakyStore) List(ctx context.Context) ([]registry.Tool, int64, error) {
	f.lists.Add(1)
	return f.Store.List(ctx)
}

func (f *flakyStore) Watch(ctx context.Context, after int64) (<-chan registry.Event, error) {
	ctx, cancel := context.WithCancel(ctx)
	in, err := f.Store.Watch(ctx, after)
	if err != nil {
		cancel()
		return nil, err
	}
	f.mu.Lock()
	cut := f.cut
	f.mu.Unlock()
	out := make(chan registry.Event)
	select {
	case f.watching <- struct{}{}:
	default:
	}
	go func() {
		defer close(out)
		defer cancel()
		for {
			select {
			case ev, ok := <-in:
				if !ok {
					return
				}
				// A cut wins over an event that arrived after it: select
				// picks randomly among ready cases, so check it first.
				select {
				case <-cut:
					return
				default:
				}
				select {
				case out <- ev:
				case <-cut:
					return
				}
			case <-cut:
				return
			}
		}
	}()
	return out, nil
}

// cutWatches ends every current watch; later watches work.
func (f *flakyStore) cutWatches() {
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.cut)
	f.cut = make(chan struct{})
}

func TestRegistryRelistReusesCompiledEntries(t *testing.T) {
	ctx := context.Background()
	s := newFlaky()
	defer s.Close()
	for _, n := range []string{"keep", "change"} {
		if _, err := s.Put(ctx, mkTool(t, n, `{}`), nil); err != nil {
			t.Fatal(err)
		}
	}
	r := start(t, s)
	keep, _ := r.Lookup("keep")
	change, _ := r.Lookup("change")

	// Cut the watch, then change a tool: only a re-list can bring it.
	s.awaitWatch(t)
	listsBefore := s.lists.Load()
	s.cutWatches()
	updated, err := s.Put(ctx, mkTool(t, "change", `{"n":{"type":"integer"}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, r, "re-list after a lost watch", func() bool {
		e, ok := r.Lookup("change")
		return ok && e.Tool.Revision == updated.Revision
	})
	if s.lists.Load() == listsBefore {
		t.Fatal("the update arrived without a re-list; the test did not exercise the cache")
	}
	if e, _ := r.Lookup("keep"); e != keep {
		t.Fatal("unchanged tool was recompiled on re-list (entry not reused)")
	}
	if e, _ := r.Lookup("change"); e == change {
		t.Fatal("changed tool kept its old entry")
	}
	// And the watch resumed after the re-list.
	if _, err := s.Put(ctx, mkTool(t, "later", `{}`), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, r, "watch to resume", func() bool { _, ok := r.Lookup("later"); return ok })
}

func TestRegistryRecoversFromCompaction(t *testing.T) {
	ctx := context.Background()
	s := newFlaky(memstore.WithHistory(1))
	defer s.Close()
	r := start(t, s)
	s.awaitWatch(t)
	s.cutWatches()
	// Several writes while the watch is down: the history (1 event) no
	// longer covers the registry's revision, so re-watching needs a re-list.
	for _, n := range []string{"a", "b", "c"} {
		if _, err := s.Put(ctx, mkTool(t, n, `{}`), nil); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, r, "all tools after compaction", func() bool { return r.Snapshot().Len() == 3 })
}

func TestRegistryCompatibility(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	defer s.Close()
	r := start(t, s)
	v1 := mkTool(t, "c", `{"ops":{"type":"array"},"note":{"type":"string"}}`)
	if _, err := r.Register(ctx, v1, registry.RegisterOptions{}); err != nil {
		t.Fatal(err)
	}
	v2 := mkTool(t, "c", `{"ops":{"type":"string"}}`)
	_, err := r.Register(ctx, v2, registry.RegisterOptions{RequireCompatible: true})
	var ie *registry.IncompatibleError
	if !errors.As(err, &ie) || len(ie.Notes) != 2 {
		t.Fatalf("incompatible update with RequireCompatible: %v", err)
	}
	if e, _ := r.Lookup("c"); e.Tool.InputSchema.Fields["properties"].GetStructValue().Fields["note"] == nil {
		t.Fatal("refused update was published")
	}
	res, err := r.Register(ctx, v2, registry.RegisterOptions{})
	if err != nil || len(res.Notes) != 2 {
		t.Fatalf("incompatible update without RequireCompatible: %v %+v", err, res.Notes)
	}
	// A compatible widening passes RequireCompatible.
	v3 := mkTool(t, "c", `{"ops":{"type":["string","array"]},"extra":{}}`)
	if res, err := r.Register(ctx, v3, registry.RegisterOptions{RequireCompatible: true}); err != nil || len(res.Notes) != 0 {
		t.Fatalf("compatible update: %v %+v", err, res.Notes)
	}
}

func TestRegistryConcurrentLookupDuringRegister(t *testing.T) {
	ctx := context.Background()
	s := memstore.New()
	defer s.Close()
	r := start(t, s)
	const writes = 200
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if e, ok := r.Lookup("hot"); ok && e.Schema == nil {
					panic("entry without validator")
				}
				_ = r.Snapshot().List()
			}
		}()
	}
	for i := range writes {
		name := "hot"
		if i%2 == 1 {
			name = "other"
		}
		if _, err := r.Register(ctx, mkTool(t, name, `{}`), registry.RegisterOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	waitFor(t, r, "watch to catch up", func() bool { return r.Snapshot().Revision >= s.Revision() })
	if e, _ := r.Lookup("hot"); e.Tool.Revision != s.Revision()-1 {
		t.Fatalf("hot at revision %d, store at %d", e.Tool.Revision, s.Revision())
	}
}

func TestRegistryChangesAndClose(t *testing.T) {
	s := memstore.New()
	defer s.Close()
	r := registry.New(s, registry.WithLogger(quietLogger()))
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err == nil {
		t.Fatal("second Start succeeded")
	}
	ch, cancel := r.Changes()
	defer cancel()
	if _, err := r.Register(context.Background(), mkTool(t, "x", `{}`), registry.RegisterOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-ch; !ok {
		t.Fatal("no change notification")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	for range ch { // Close closes subscriber channels
	}
	if err := r.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	// Lookups keep serving the last snapshot after Close.
	if _, ok := r.Lookup("x"); !ok {
		t.Fatal("snapshot lost on Close")
	}
}

// listFailsOnce is a store whose first List fails as an unreachable store's would.
type listFailsOnce struct {
	registry.Store
	failed bool
}

func (s *listFailsOnce) List(ctx context.Context) ([]registry.Tool, int64, error) {
	if !s.failed {
		s.failed = true
		return nil, 0, registry.ErrUnavailable
	}
	return s.Store.List(ctx)
}

// TestRegistryStartAgainAfterAFailedLoad: a Start whose initial list failed
// leaves the registry unstarted, so the caller can try again once the
// store answers (server.Run does, while etcd is down).
func TestRegistryStartAgainAfterAFailedLoad(t *testing.T) {
	ms := memstore.New()
	if _, err := ms.Put(context.Background(), mkTool(t, "a", `{}`), nil); err != nil {
		t.Fatal(err)
	}
	r := registry.New(&listFailsOnce{Store: ms}, registry.WithLogger(quietLogger()))
	defer r.Close()
	if err := r.Start(context.Background()); !errors.Is(err, registry.ErrUnavailable) {
		t.Fatalf("first Start = %v, want ErrUnavailable", err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatalf("second Start, the store answering: %v", err)
	}
	if _, ok := r.Lookup("a"); !ok {
		t.Error("the stored tool is not served after the second Start")
	}
	if err := r.Start(context.Background()); err == nil {
		t.Error("a third Start on a started registry: want an error")
	}
}
