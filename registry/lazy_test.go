package registry

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// lazyStore is an in-package Store of fixed tools (memstore imports
// registry, so tests inside the package cannot use it).
type lazyStore struct {
	tools []Tool
}

func (s *lazyStore) Get(_ context.Context, name string) (Tool, error) {
	for _, t := range s.tools {
		if t.Name == name {
			return t, nil
		}
	}
	return Tool{}, ErrNotFound
}
func (s *lazyStore) List(context.Context) ([]Tool, int64, error) {
	return slices.Clone(s.tools), 100, nil
}
func (s *lazyStore) Put(context.Context, Tool, *int64) (Tool, error) {
	return Tool{}, fmt.Errorf("read-only")
}
func (s *lazyStore) Delete(context.Context, string, *int64) (int64, error) {
	return 0, fmt.Errorf("read-only")
}
func (s *lazyStore) Watch(ctx context.Context, _ int64) (<-chan Event, error) {
	ch := make(chan Event)
	go func() { <-ctx.Done(); close(ch) }()
	return ch, nil
}
func (s *lazyStore) Close() error { return nil }
func (s *lazyStore) ListBundles(context.Context) ([]Bundle, int64, error) {
	return nil, 100, nil
}
func (s *lazyStore) PutBundle(context.Context, Bundle, *int64) (Bundle, error) {
	return Bundle{}, fmt.Errorf("read-only")
}
func (s *lazyStore) DeleteBundle(context.Context, string, *int64) (int64, error) {
	return 0, fmt.Errorf("read-only")
}

var _ Store = (*lazyStore)(nil)

func (s *lazyStore) GetBundle(context.Context, string) (Bundle, error) {
	return Bundle{}, ErrNotFound
}

// lazyTools: every kind of the test files, tools sharing a schema, and
// stored tools that do not compile (stores do not compile: another writer
// or another version's bounds can leave one).
func lazyTools(t *testing.T) []Tool {
	t.Helper()
	var tools []Tool
	for _, f := range []string{"testdata/tools.yaml", "testdata/tools_specs.yaml"} {
		ts, err := LoadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, ts...)
	}
	doc := func(js string) *structpb.Struct {
		var s structpb.Struct
		if err := protojson.Unmarshal([]byte(js), &s); err != nil {
			t.Fatal(err)
		}
		return &s
	}
	shared := doc(`{"type":"object","additionalProperties":false,"required":["title"],"properties":{
		"title":{"type":"string","minLength":1,"maxLength":20},"count":{"type":"integer","minimum":0},
		"tags":{"type":"array","items":{"type":"string"}},"due":{"type":["string","null"]},
		"owner":{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}}}`)
	out := doc(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`)
	for i := range 3 {
		tools = append(tools, Tool{Name: fmt.Sprintf("shared.%d", i), Backend: "127.0.0.1:7001", InputSchema: shared, OutputSchema: out})
	}
	tools = append(tools,
		Tool{Name: "bad.root", Backend: "127.0.0.1:7001", InputSchema: doc(`{"type":"array"}`)},
		Tool{Name: "bad.backend", Backend: "nope", InputSchema: shared},
		Tool{Name: "bad.pattern", Backend: "127.0.0.1:7001", InputSchema: doc(`{"type":"object","properties":{"a":{"type":"string","pattern":"("}}}`)})
	for i := range tools {
		tools[i].Revision = int64(i + 1)
	}
	slices.SortFunc(tools, func(a, b Tool) int { return strings.Compare(a.Name, b.Name) })
	return tools
}

// lazyArgs are arguments every tool is judged on: valid, invalid, and
// needing RT-TOOL-8 repairs.
var lazyArgs = []string{
	`{}`,
	`{"title":"t"}`,
	`{"title":""}`,
	`{"title":"t","count":"3"}`,
	`{"title":"t","count":-1}`,
	`{"title":"t","tags":"[\"a\",\"b\"]"}`,
	`{"title":"t","owner":"{\"id\":7}"}`,
	`{"title":"t","due":null,"extra":1}`,
	`{"title":5,"count":2.5}`,
	`{"q":"x","limit":"10","query":"notes"}`,
}

// A tool compiled lazily behaves as the same tool compiled eagerly: the
// same tools are served, with the same compiled parts, the same verdicts
// and messages, and the same repairs; and a lazy Start compiles nothing
// before publishing.
func TestLazyCompileMatchesEager(t *testing.T) {
	tools := lazyTools(t)
	store := &lazyStore{tools: tools}
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedBuf{b: &logs, mu: &mu}, nil))

	eager := New(store, WithLogger(logger))
	lazy := New(store, WithLogger(logger), WithLazyCompile())
	ctx := context.Background()
	// Held until Start has returned: the lazy load must not compile.
	gate := make(chan struct{})
	lazy.compile = func(t Tool) (*Entry, error) { <-gate; return lazy.compileOpts.Compile(t) }
	if err := eager.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer eager.Close()
	started := make(chan error, 1)
	go func() { started <- lazy.Start(ctx) }()
	failsafe := time.NewTimer(30 * time.Second) // a guard against hanging, not a timing
	defer failsafe.Stop()
	select {
	case err := <-started:
		if err != nil {
			t.Fatal(err)
		}
	case <-failsafe.C:
		t.Fatal("the lazy Start did not return while compiles were held: it compiles before publishing")
	}
	defer lazy.Close()
	if got, want := lazy.Snapshot().Len(), len(tools); got != want {
		t.Fatalf("lazy snapshot holds %d tools, want all %d stored (published before compiling)", got, want)
	}
	for _, e := range lazy.Snapshot().List() {
		if e.lazy == nil {
			t.Fatalf("%s was compiled before Start returned", e.Tool.Name)
		}
	}
	close(gate)

	for _, tool := range tools {
		ee, eok := eager.Lookup(tool.Name)
		le, lok := lazy.Lookup(tool.Name)
		if eok != lok {
			t.Fatalf("%s: served eagerly %v, lazily %v", tool.Name, eok, lok)
		}
		if !eok {
			continue
		}
		if listed, _ := lazy.Snapshot().entries[tool.Name].compiled(); listed != le {
			t.Errorf("%s: Lookup's entry is not the listed one (compiled in place)", tool.Name)
		}
		// Every compiled part is there lazily when it is eagerly: a field
		// added to Entry and not copied by compiled() fails here.
		ev, lv := reflect.ValueOf(ee).Elem(), reflect.ValueOf(le).Elem()
		for i := range ev.NumField() {
			f := ev.Type().Field(i)
			if !f.IsExported() || f.Name == "Tool" {
				continue
			}
			if ev.Field(i).IsZero() != lv.Field(i).IsZero() {
				t.Errorf("%s: %s set eagerly %v, lazily %v", tool.Name, f.Name, !ev.Field(i).IsZero(), !lv.Field(i).IsZero())
			}
		}
		for _, js := range lazyArgs {
			var a structpb.Struct
			if err := protojson.Unmarshal([]byte(js), &a); err != nil {
				t.Fatal(err)
			}
			eo, erep := ee.Plan.Apply(&a)
			lo, lrep := le.Plan.Apply(&a)
			if eb, lb := mustJSON(t, eo), mustJSON(t, lo); eb != lb || fmt.Sprint(erep) != fmt.Sprint(lrep) {
				t.Errorf("%s %s: repaired eagerly %s %v, lazily %s %v", tool.Name, js, eb, erep, lb, lrep)
			}
			if ev, lv := fmt.Sprint(ee.Validate(eo, &erep)), fmt.Sprint(le.Validate(lo, &lrep)); ev != lv {
				t.Errorf("%s %s: eagerly %q, lazily %q", tool.Name, js, ev, lv)
			}
			if ee.Output != nil {
				if ev, lv := fmt.Sprint(ee.Output.Validate(&a, nil)), fmt.Sprint(le.Output.Validate(&a, nil)); ev != lv {
					t.Errorf("%s %s: output eagerly %q, lazily %q", tool.Name, js, ev, lv)
				}
			}
		}
	}
	// The warm-up drops what does not compile: then the lists match too.
	if err := lazy.WaitCompiled(ctx); err != nil {
		t.Fatal(err)
	}
	names := func(r *Registry) []string {
		var out []string
		for _, e := range r.Snapshot().List() {
			out = append(out, e.Tool.Name)
		}
		return out
	}
	if e, l := names(eager), names(lazy); !slices.Equal(e, l) {
		t.Errorf("after warm-up lazily listed %q, eagerly %q", l, e)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, bad := range []string{"bad.root", "bad.backend", "bad.pattern"} {
		if n := strings.Count(logs.String(), "tool="+bad+" "); n != 2 { // once per registry
			t.Errorf("%s logged %d times, want once per registry:\n%s", bad, n, logs.String())
		}
	}
}

// A stub a warm-up is still to reach is compiled by its first Lookup, once
// however many ask at the same time.
func TestLazyCompileOnFirstUseOnce(t *testing.T) {
	tools := slices.DeleteFunc(lazyTools(t), func(t Tool) bool { return strings.HasPrefix(t.Name, "bad.") })
	r := New(&lazyStore{tools: tools}, WithLogger(slog.New(slog.DiscardHandler)), WithLazyCompile())
	var (
		mu       sync.Mutex
		compiles = map[string]int{}
	)
	hold := make(chan struct{})
	r.compile = func(t Tool) (*Entry, error) {
		if t.Name != tools[0].Name {
			<-hold // the warm-up waits: only Lookups compile tools[0]
		}
		mu.Lock()
		compiles[t.Name]++
		mu.Unlock()
		return r.compileOpts.Compile(t)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer close(hold)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if e, ok := r.Lookup(tools[0].Name); !ok || e.Schema == nil || e.Plan == nil {
				t.Errorf("Lookup(%s) = %v, %v: want the compiled entry", tools[0].Name, e, ok)
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if compiles[tools[0].Name] != 1 {
		t.Errorf("compiled %d times, want once", compiles[tools[0].Name])
	}
}

func mustJSON(t *testing.T, s *structpb.Struct) string {
	t.Helper()
	b, err := protojson.MarshalOptions{}.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type lockedBuf struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// One change costs no rebuild: a snapshot changed by with/without holds
// the same tools, in the same order, with the same export-name index, as
// one built from scratch, through adds, updates and deletes of names that
// are and are not provider-safe and whose export names collide.
func TestSnapshotChangeMatchesRebuild(t *testing.T) {
	names := []string{"a.b", "a_b", "1x", "_1x", "b", "c.d.e", "c_d_e", "zz", "a-b", "9", "_9", "x.y", "x_y"}
	s := newSnapshot(0, map[string]*Entry{}, nil)
	seed := uint64(1)
	next := func() uint64 { seed = seed*6364136223846793005 + 1442695040888963407; return seed >> 33 }
	for step := range 2000 {
		name := names[next()%uint64(len(names))]
		rev := int64(step + 1)
		var reason string
		if _, ok := s.entries[name]; ok && next()%3 == 0 {
			s = s.without(name, rev)
			reason = "delete " + name
		} else {
			reason = "put " + name
			s = s.with(&Entry{Tool: Tool{Name: name, Revision: rev}}, rev)
		}
		want := newSnapshot(rev, maps2(s.entries), nil)
		if !slices.Equal(s.sorted, want.sorted) {
			t.Fatalf("step %d (%s): sorted %v, rebuilt %v", step, reason, entryNames(s.sorted), entryNames(want.sorted))
		}
		if !reflect.DeepEqual(s.exported.exported, want.exported.exported) && (len(s.exported.exported) != 0 || len(want.exported.exported) != 0) {
			t.Fatalf("step %d (%s): export index %v, rebuilt %v", step, reason, s.exported.exported, want.exported.exported)
		}
		for _, n := range names {
			gn, gok := s.ExportName(n)
			wn, wok := want.ExportName(n)
			ge, _ := s.Resolve(n)
			we, _ := want.Resolve(n)
			if gn != wn || gok != wok || ge != we {
				t.Fatalf("step %d (%s): %s exported as %q %v resolving %v, rebuilt %q %v resolving %v", step, reason, n, gn, gok, ge, wn, wok, we)
			}
		}
	}
}

func maps2(m map[string]*Entry) map[string]*Entry {
	c := make(map[string]*Entry, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func entryNames(es []*Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Tool.Name
	}
	return out
}

// BenchmarkSnapshotChange: what one change costs a snapshot of n tools —
// "rebuild" is how a change was published before (a new map filled entry
// by entry, re-sorted, its export index rebuilt); "with" is the
// incremental copy. Allocation counts do not depend on the machine's load.
//
//	go test -run '^$' -bench BenchmarkSnapshotChange -benchmem ./registry/
func BenchmarkSnapshotChange(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		entries := make(map[string]*Entry, n)
		for i := range n {
			name := fmt.Sprintf("team%03d.tool-%06d", i%997, i)
			entries[name] = &Entry{Tool: Tool{Name: name, Revision: int64(i + 1)}}
		}
		s := newSnapshot(int64(n), entries, nil)
		changed := &Entry{Tool: Tool{Name: "team500.tool-050000", Revision: int64(n + 1)}}
		added := &Entry{Tool: Tool{Name: "team500.tool-new", Revision: int64(n + 1)}}
		b.Run(fmt.Sprintf("rebuild-%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				next := make(map[string]*Entry, len(s.entries)+1)
				for k, v := range s.entries {
					next[k] = v
				}
				next[changed.Tool.Name] = changed
				_ = newSnapshot(int64(n+1), next, nil)
			}
		})
		b.Run(fmt.Sprintf("with-update-%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = s.with(changed, int64(n+1))
			}
		})
		b.Run(fmt.Sprintf("with-add-%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = s.with(added, int64(n+1))
			}
		})
		b.Run(fmt.Sprintf("without-%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = s.without(changed.Tool.Name, int64(n+1))
			}
		})
	}
}

// WithoutWarmUp: a lazy Start compiles nothing, and nothing compiles later
// but what is looked up; a stub that does not compile is never served and
// stays listed.
func TestWithoutWarmUp(t *testing.T) {
	tools := lazyTools(t)
	r := New(&lazyStore{tools: tools}, WithLogger(slog.New(slog.DiscardHandler)), WithLazyCompile(), WithoutWarmUp())
	var (
		mu       sync.Mutex
		compiles []string
	)
	r.compile = func(t Tool) (*Entry, error) {
		mu.Lock()
		compiles = append(compiles, t.Name)
		mu.Unlock()
		return r.compileOpts.Compile(t)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.WaitCompiled(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(compiles) != 0 {
		t.Errorf("compiled %v with no call: want nothing compiled without a warm-up", compiles)
	}
	mu.Unlock()
	if e, ok := r.Lookup("shared.1"); !ok || e.Schema == nil {
		t.Fatalf("Lookup(shared.1) = %v, %v: want the compiled entry", e, ok)
	}
	if _, ok := r.Lookup("bad.root"); ok {
		t.Error("a stub that does not compile was served")
	}
	mu.Lock()
	if !slices.Equal(compiles, []string{"shared.1", "bad.root"}) {
		t.Errorf("compiled %v, want only the tools looked up", compiles)
	}
	mu.Unlock()
	if got := r.Snapshot().Len(); got != len(tools) {
		t.Errorf("%d tools listed, want all %d (the one that does not compile stays listed)", got, len(tools))
	}
}
