package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/registry"
)

// waitLimit bounds every wait on a watch channel so a broken store fails the
// test instead of hanging it. It is a guard, not a speed assertion.
const waitLimit = 20 * time.Second

// Run runs the contract suite. open must return a fresh, empty store for each
// call and arrange its own cleanup (t.Cleanup); the suite also calls Close.
func Run(t *testing.T, open func(t *testing.T) registry.Store) {
	cases := []struct {
		name   string
		reason string
		run    func(t *testing.T, s registry.Store)
	}{
		{"create-get", "a tool that was Put must be returned by Get with the revision Put reported", testCreateGet},
		{"get-missing", "a tool that was never Put must be ErrNotFound, not a zero tool", testGetMissing},
		{"list-sorted", "List must return every tool sorted by name, and a revision covering them", testListSorted},
		{"update-bumps-revision", "replacing a tool must give it a new, higher revision and the new content", testUpdate},
		{"delete", "Delete must remove the tool, report a revision after its last write, and a second Delete is ErrNotFound", testDelete},
		{"put-expected-revision", "optimistic concurrency: Put with a stale or wrong expected revision must fail with the actual revision and change nothing", testPutExpected},
		{"delete-expected-revision", "optimistic concurrency: Delete with a wrong expected revision must fail with the actual revision and keep the tool", testDeleteExpected},
		{"watch-replay", "Watch from a past revision must replay Put and Delete events after it, in order, with increasing revisions", testWatchReplay},
		{"watch-live", "a Watch opened before writes must deliver them as they happen, in order", testWatchLive},
		{"watch-cancel", "cancelling the Watch context must close the channel so the watcher's goroutine ends", testWatchCancel},
		{"concurrent-puts", "concurrent Puts must each get a distinct revision and all be stored", testConcurrentPuts},
		{"concurrent-create-race", "of concurrent creates of one name with expected 0, exactly one must win", testCreateRace},
		{"schema-round-trip", "the input schema (nested, numbers, null, bool) must come back proto.Equal from Get, List and Watch", testSchemaRoundTrip},
		{"labels-timeout-round-trip", "labels and a sub-second timeout must round-trip exactly", testLabelsTimeout},
		{"caller-mutation", "mutating the caller's tool after Put must not change what the store holds", testCallerMutation},
		{"list-many", "a List large enough to be decoded on several CPUs, with shared and distinct schemas, must return each tool exactly as Get does", testListMany},
	}
	cases = append(cases, bundleCases...)
	cases = append(cases, historyCases...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() { _ = s.Close() })
			t.Logf("contract: %s", tc.reason)
			tc.run(t, s)
		})
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), waitLimit)
	t.Cleanup(cancel)
	return c
}

func rev(n int64) *int64 { return &n }

// Schema returns a realistic object schema with n parameters of mixed types,
// nested objects and arrays, and numeric constraints. Benchmarks use it too.
func Schema(n int) *structpb.Struct {
	props := map[string]any{}
	required := []any{}
	for i := range n {
		name := fmt.Sprintf("param_%02d", i)
		var p map[string]any
		switch i % 5 {
		case 0:
			p = map[string]any{"type": "string", "minLength": 1, "maxLength": 256, "description": "free text " + name}
		case 1:
			p = map[string]any{"type": "integer", "minimum": 0, "maximum": 10000, "default": 10}
		case 2:
			p = map[string]any{"type": "number", "exclusiveMinimum": -1.5, "multipleOf": 0.25}
		case 3:
			p = map[string]any{"type": "array", "maxItems": 50, "items": map[string]any{"type": "string", "enum": []any{"a", "b", "c"}}}
		default:
			p = map[string]any{
				"type":                 "object",
				"additionalProperties": false,
				"properties": map[string]any{
					"id":    map[string]any{"type": "string", "pattern": "^[a-z0-9-]+$"},
					"score": map[string]any{"type": []any{"number", "null"}, "default": nil},
				},
			}
		}
		props[name] = p
		if i%2 == 0 {
			required = append(required, name)
		}
	}
	s, err := structpb.NewStruct(map[string]any{"type": "object", "properties": props, "required": required})
	if err != nil {
		panic(err)
	}
	return s
}

func sampleTool(name string) registry.Tool {
	return registry.Tool{
		Name:        name,
		Description: "tool " + name,
		InputSchema: Schema(3),
		Backend:     "127.0.0.1:7000",
		Timeout:     2 * time.Second,
		Labels:      map[string]string{"owner": "storetest"},
	}
}

func mustPut(t *testing.T, s registry.Store, tool registry.Tool, expected *int64) registry.Tool {
	t.Helper()
	got, err := s.Put(ctx(t), tool, expected)
	if err != nil {
		t.Fatalf("Put(%q): %v", tool.Name, err)
	}
	return got
}

func assertSameTool(t *testing.T, got, want registry.Tool, where string) {
	t.Helper()
	if got.Name != want.Name || got.Description != want.Description || got.Backend != want.Backend ||
		got.Timeout != want.Timeout || got.Revision != want.Revision {
		t.Errorf("%s: got {%s %q %s %s rev %d}, want {%s %q %s %s rev %d}", where,
			got.Name, got.Description, got.Backend, got.Timeout, got.Revision,
			want.Name, want.Description, want.Backend, want.Timeout, want.Revision)
	}
	if (got.InputSchema == nil) != (want.InputSchema == nil) || !proto.Equal(got.InputSchema, want.InputSchema) {
		t.Errorf("%s: input schema differs:\n got %v\nwant %v", where, got.InputSchema, want.InputSchema)
	}
	if len(got.Labels) != len(want.Labels) {
		t.Errorf("%s: labels got %v, want %v", where, got.Labels, want.Labels)
	}
	for k, v := range want.Labels {
		if got.Labels[k] != v {
			t.Errorf("%s: label %q got %q, want %q", where, k, got.Labels[k], v)
		}
	}
}

func storeRevision(t *testing.T, s registry.Store) int64 {
	t.Helper()
	_, r, err := s.List(ctx(t))
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	return r
}

func testCreateGet(t *testing.T, s registry.Store) {
	before := storeRevision(t, s)
	want := sampleTool("alpha")
	put := mustPut(t, s, want, nil)
	if put.Revision <= before {
		t.Errorf("Put revision %d, want > store revision %d before the write", put.Revision, before)
	}
	want.Revision = put.Revision
	assertSameTool(t, put, want, "Put result")
	got, err := s.Get(ctx(t), "alpha")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	assertSameTool(t, got, want, "Get")
}

func testGetMissing(t *testing.T, s registry.Store) {
	mustPut(t, s, sampleTool("present"), nil)
	_, err := s.Get(ctx(t), "absent")
	if !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("Get(absent) error = %v, want ErrNotFound", err)
	}
}

func testListSorted(t *testing.T, s registry.Store) {
	tools, _, err := s.List(ctx(t))
	if err != nil || len(tools) != 0 {
		t.Fatalf("List of empty store = %d tools, %v; want none", len(tools), err)
	}
	names := []string{"delta", "Alpha", "charlie", "bravo", "a.b-c_d", "alpha"}
	var maxRev int64
	for _, n := range names {
		maxRev = max(maxRev, mustPut(t, s, sampleTool(n), nil).Revision)
	}
	tools, r, err := s.List(ctx(t))
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	var got []string
	for _, tool := range tools {
		got = append(got, tool.Name)
		if tool.Revision <= 0 {
			t.Errorf("listed tool %q has revision %d, want > 0", tool.Name, tool.Revision)
		}
	}
	want := slices.Clone(names)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("List names = %v, want %v", got, want)
	}
	if r < maxRev {
		t.Errorf("List revision %d is older than the last write %d", r, maxRev)
	}
}

func testUpdate(t *testing.T, s registry.Store) {
	v1 := mustPut(t, s, sampleTool("tool"), nil)
	next := sampleTool("tool")
	next.Description = "second version"
	next.Backend = "127.0.0.1:7001"
	v2 := mustPut(t, s, next, nil)
	if v2.Revision <= v1.Revision {
		t.Fatalf("update revision %d, want > %d", v2.Revision, v1.Revision)
	}
	got, err := s.Get(ctx(t), "tool")
	if err != nil {
		t.Fatal(err)
	}
	next.Revision = v2.Revision
	assertSameTool(t, got, next, "Get after update")
	tools, _, err := s.List(ctx(t))
	if err != nil || len(tools) != 1 {
		t.Fatalf("List after update = %d tools, %v; want exactly 1", len(tools), err)
	}
}

func testDelete(t *testing.T, s registry.Store) {
	put := mustPut(t, s, sampleTool("doomed"), nil)
	mustPut(t, s, sampleTool("kept"), nil)
	dr, err := s.Delete(ctx(t), "doomed", nil)
	if err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if dr <= put.Revision {
		t.Errorf("Delete revision %d, want > the tool's revision %d", dr, put.Revision)
	}
	if _, err := s.Get(ctx(t), "doomed"); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("Get after Delete error = %v, want ErrNotFound", err)
	}
	tools, r, err := s.List(ctx(t))
	if err != nil || len(tools) != 1 || tools[0].Name != "kept" {
		t.Errorf("List after Delete = %v, %v; want only \"kept\"", tools, err)
	}
	if r < dr {
		t.Errorf("List revision %d is older than the deletion %d", r, dr)
	}
	if _, err := s.Delete(ctx(t), "doomed", nil); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("second Delete error = %v, want ErrNotFound", err)
	}
}

func wantMismatch(t *testing.T, err error, tool string, expected, actual int64, reason string) {
	t.Helper()
	var m *registry.RevisionMismatchError
	if !errors.As(err, &m) {
		t.Errorf("%s: error = %v, want *RevisionMismatchError", reason, err)
		return
	}
	if m.Tool != tool || m.Expected != expected || m.Actual != actual {
		t.Errorf("%s: mismatch = %+v, want {Tool:%s Expected:%d Actual:%d}", reason, *m, tool, expected, actual)
	}
}

func testPutExpected(t *testing.T, s registry.Store) {
	v1 := mustPut(t, s, sampleTool("x"), rev(0))
	cases := []struct {
		reason   string
		expected int64
	}{
		{"expected 0 (must not exist) on an existing tool", 0},
		{"expected a stale revision", v1.Revision - 1},
		{"expected a future revision", v1.Revision + 1000},
	}
	for _, c := range cases {
		changed := sampleTool("x")
		changed.Description = "must not be stored"
		_, err := s.Put(ctx(t), changed, rev(c.expected))
		wantMismatch(t, err, "x", c.expected, v1.Revision, c.reason)
	}
	got, err := s.Get(ctx(t), "x")
	if err != nil || got.Revision != v1.Revision || got.Description != v1.Description {
		t.Fatalf("after rejected Puts Get = %+v, %v; want the unchanged revision %d", got, err, v1.Revision)
	}
	// A missing tool with a non-zero expectation reports Actual 0.
	_, err = s.Put(ctx(t), sampleTool("y"), rev(v1.Revision))
	wantMismatch(t, err, "y", v1.Revision, 0, "expected a revision for a tool that does not exist")
	if _, err := s.Get(ctx(t), "y"); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("a rejected create was stored: Get error = %v", err)
	}
	v2 := mustPut(t, s, sampleTool("x"), rev(v1.Revision))
	if v2.Revision <= v1.Revision {
		t.Errorf("matching expected revision: new revision %d, want > %d", v2.Revision, v1.Revision)
	}
}

func testDeleteExpected(t *testing.T, s registry.Store) {
	v1 := mustPut(t, s, sampleTool("x"), nil)
	_, err := s.Delete(ctx(t), "x", rev(v1.Revision-1))
	wantMismatch(t, err, "x", v1.Revision-1, v1.Revision, "Delete with a stale revision")
	_, err = s.Delete(ctx(t), "x", rev(0))
	wantMismatch(t, err, "x", 0, v1.Revision, "Delete expecting the tool not to exist")
	if _, err := s.Get(ctx(t), "x"); err != nil {
		t.Fatalf("rejected Delete removed the tool: %v", err)
	}
	_, err = s.Delete(ctx(t), "missing", rev(5))
	wantMismatch(t, err, "missing", 5, 0, "Delete with an expected revision of a missing tool")
	dr, err := s.Delete(ctx(t), "x", rev(v1.Revision))
	if err != nil || dr <= v1.Revision {
		t.Fatalf("Delete with matching revision = %d, %v; want a revision > %d", dr, err, v1.Revision)
	}
}

type expectedEvent struct {
	typ  registry.EventType
	name string
	rev  int64
}

func recv(t *testing.T, ch <-chan registry.Event) registry.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatalf("watch channel closed early")
		}
		return ev
	case <-time.After(waitLimit):
		t.Fatalf("no watch event within %s", waitLimit)
	}
	return registry.Event{}
}

func checkEvents(t *testing.T, ch <-chan registry.Event, want []expectedEvent, tools map[string]registry.Tool) {
	t.Helper()
	var last int64
	for i, w := range want {
		ev := recv(t, ch)
		if ev.Type != w.typ || ev.Tool.Name != w.name || ev.Revision != w.rev {
			t.Fatalf("event %d = {%s %s rev %d}, want {%s %s rev %d}", i, ev.Type, ev.Tool.Name, ev.Revision, w.typ, w.name, w.rev)
		}
		if ev.Revision <= last {
			t.Errorf("event %d revision %d not after previous %d", i, ev.Revision, last)
		}
		last = ev.Revision
		if ev.Type == registry.EventPut {
			if ev.Tool.Revision != ev.Revision {
				t.Errorf("event %d: tool revision %d != event revision %d", i, ev.Tool.Revision, ev.Revision)
			}
			if want, ok := tools[w.name+fmt.Sprint(w.rev)]; ok {
				assertSameTool(t, ev.Tool, want, fmt.Sprintf("event %d tool", i))
			}
		}
	}
}

// writeSequence performs put a, put b, update a, delete b and returns the
// events that must follow and the tools written.
func writeSequence(t *testing.T, s registry.Store) ([]expectedEvent, map[string]registry.Tool) {
	tools := map[string]registry.Tool{}
	var evs []expectedEvent
	put := func(name, desc string) {
		tool := sampleTool(name)
		tool.Description = desc
		got := mustPut(t, s, tool, nil)
		tools[name+fmt.Sprint(got.Revision)] = got
		evs = append(evs, expectedEvent{registry.EventPut, name, got.Revision})
	}
	put("a", "first")
	put("b", "first")
	put("a", "second")
	dr, err := s.Delete(ctx(t), "b", nil)
	if err != nil {
		t.Fatalf("Delete: %v", err)
	}
	evs = append(evs, expectedEvent{registry.EventDelete, "b", dr})
	return evs, tools
}

func testWatchReplay(t *testing.T, s registry.Store) {
	mustPut(t, s, sampleTool("before"), nil)
	start := storeRevision(t, s)
	want, tools := writeSequence(t, s)
	ch, err := s.Watch(ctx(t), start)
	if err != nil {
		t.Fatalf("Watch(%d): %v", start, err)
	}
	checkEvents(t, ch, want, tools)
	// Watching from the middle replays only what followed.
	ch2, err := s.Watch(ctx(t), want[1].rev)
	if err != nil {
		t.Fatalf("Watch(%d): %v", want[1].rev, err)
	}
	checkEvents(t, ch2, want[2:], tools)
}

func testWatchLive(t *testing.T, s registry.Store) {
	start := storeRevision(t, s)
	ch, err := s.Watch(ctx(t), start)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	want, tools := writeSequence(t, s)
	checkEvents(t, ch, want, tools)
}

func testWatchCancel(t *testing.T, s registry.Store) {
	wctx, cancel := context.WithCancel(context.Background())
	ch, err := s.Watch(wctx, storeRevision(t, s))
	if err != nil {
		cancel()
		t.Fatalf("Watch: %v", err)
	}
	mustPut(t, s, sampleTool("one"), nil)
	if ev := recv(t, ch); ev.Tool.Name != "one" {
		t.Fatalf("event for %q, want \"one\"", ev.Tool.Name)
	}
	cancel()
	deadline := time.After(waitLimit)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatalf("watch channel still open %s after cancel", waitLimit)
		}
	}
}

func testConcurrentPuts(t *testing.T, s registry.Store) {
	const workers, each = 8, 10
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		revs = map[int64]string{}
		errs []error
	)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				name := fmt.Sprintf("w%d-t%d", w, i)
				got, err := s.Put(context.Background(), sampleTool(name), nil)
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("Put(%s): %w", name, err))
				} else if prev, dup := revs[got.Revision]; dup {
					errs = append(errs, fmt.Errorf("%s and %s both got revision %d", prev, name, got.Revision))
				} else {
					revs[got.Revision] = name
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	tools, _, err := s.List(ctx(t))
	if err != nil || len(tools) != workers*each {
		t.Fatalf("List = %d tools, %v; want %d", len(tools), err, workers*each)
	}
	for _, tool := range tools {
		if revs[tool.Revision] != tool.Name {
			t.Errorf("stored %s at revision %d, but that Put reported %q", tool.Name, tool.Revision, revs[tool.Revision])
		}
	}
}

func testCreateRace(t *testing.T, s registry.Store) {
	const n = 8
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		won      []registry.Tool
		mismatch int
		other    []error
	)
	for i := range n {
		wg.Go(func() {
			tool := sampleTool("contended")
			tool.Description = fmt.Sprintf("writer %d", i)
			got, err := s.Put(context.Background(), tool, rev(0))
			var m *registry.RevisionMismatchError
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won = append(won, got)
			case errors.As(err, &m):
				mismatch++
			default:
				other = append(other, err)
			}
		})
	}
	wg.Wait()
	if len(won) != 1 || mismatch != n-1 || len(other) != 0 {
		t.Fatalf("winners %d, mismatches %d, other errors %v; want 1, %d, none", len(won), mismatch, other, n-1)
	}
	got, err := s.Get(ctx(t), "contended")
	if err != nil || got.Description != won[0].Description || got.Revision != won[0].Revision {
		t.Errorf("stored %+v, %v; want the winner %q at %d", got, err, won[0].Description, won[0].Revision)
	}
}

func testSchemaRoundTrip(t *testing.T, s registry.Store) {
	schema, err := structpb.NewStruct(map[string]any{
		"type":     "object",
		"required": []any{"items"},
		"properties": map[string]any{
			"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": 1e6, "default": 25},
			"ratio": map[string]any{"type": "number", "minimum": -0.125, "multipleOf": 0.001},
			"flag":  map[string]any{"type": "boolean", "default": false},
			"items": map[string]any{
				"type": "array",
				"items": map[string]any{
					"type":                 "object",
					"additionalProperties": false,
					"properties": map[string]any{
						"tags": map[string]any{"type": []any{"array", "null"}, "default": nil},
						"note": map[string]any{"type": "string", "examples": []any{"Ember &amp; Oak", "\u00e9\u2014\U0001F600"}},
					},
				},
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	start := storeRevision(t, s)
	ch, err := s.Watch(ctx(t), start)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	tool := sampleTool("schema")
	tool.InputSchema = schema
	put := mustPut(t, s, tool, nil)
	got, err := s.Get(ctx(t), "schema")
	if err != nil {
		t.Fatal(err)
	}
	listed, _, err := s.List(ctx(t))
	if err != nil || len(listed) != 1 {
		t.Fatalf("List = %v, %v", listed, err)
	}
	ev := recv(t, ch)
	for where, g := range map[string]*structpb.Struct{"Put": put.InputSchema, "Get": got.InputSchema, "List": listed[0].InputSchema, "Watch": ev.Tool.InputSchema} {
		if !proto.Equal(g, schema) {
			t.Errorf("%s schema differs:\n got %v\nwant %v", where, g, schema)
		}
	}
}

func testLabelsTimeout(t *testing.T, s registry.Store) {
	cases := []struct {
		reason string
		tool   registry.Tool
	}{
		{"labels and a sub-second timeout", registry.Tool{Name: "lt", Backend: "b:1", Timeout: 1500*time.Millisecond + 3*time.Nanosecond, Labels: map[string]string{"team": "x", "tier": "gold", "empty": ""}}},
		{"no labels, no timeout, no schema", registry.Tool{Name: "bare", Backend: "b:2"}},
	}
	for _, c := range cases {
		put := mustPut(t, s, c.tool, nil)
		got, err := s.Get(ctx(t), c.tool.Name)
		if err != nil {
			t.Fatalf("%s: Get: %v", c.reason, err)
		}
		want := c.tool
		want.Revision = put.Revision
		assertSameTool(t, got, want, c.reason)
	}
}

func testCallerMutation(t *testing.T, s registry.Store) {
	tool := sampleTool("m")
	tool.Labels = map[string]string{"k": "v"}
	mustPut(t, s, tool, nil)
	tool.Labels["k"] = "changed"
	tool.InputSchema.Fields["type"] = structpb.NewStringValue("array")
	got, err := s.Get(ctx(t), "m")
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["k"] != "v" || got.InputSchema.Fields["type"].GetStringValue() != "object" {
		t.Errorf("store shares the caller's maps: labels %v, type %v", got.Labels, got.InputSchema.Fields["type"])
	}
}

// testListMany: 300 tools (a durable store decodes a list of this size on
// several workers, sharing identical schemas), every third with a schema
// of its own; List must return each exactly as Get does.
func testListMany(t *testing.T, s registry.Store) {
	const n = 300
	shared := Schema(4)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				tool := sampleTool(fmt.Sprintf("many-%03d", i))
				tool.InputSchema = shared
				if i%3 == 0 {
					tool.InputSchema = Schema(1 + i%7)
					tool.InputSchema.Fields["description"] = structpb.NewStringValue(tool.Name)
				}
				if _, err := s.Put(ctx(t), tool, nil); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Put: %v", err)
	}
	list, _, err := s.List(ctx(t))
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(list) != n {
		t.Fatalf("List returned %d tools, want %d", len(list), n)
	}
	for i, got := range list {
		want, err := s.Get(ctx(t), fmt.Sprintf("many-%03d", i))
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		assertSameTool(t, got, want, fmt.Sprintf("List[%d]", i))
	}
}
