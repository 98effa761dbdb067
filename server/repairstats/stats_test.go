package repairstats

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/normalize"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/schema"
	"github.com/flowdrop/gateway/server/pipeline"
)

// call is one call's facts as a face and the stages leave them.
type call struct {
	tool, subject, client string
	roles                 []string
	reached               bool // the normalize stage ran (Entry set)
	repairs               []normalize.Repair
	violations            []schema.Violation // non-nil: validation failed
}

func (tc call) record(s *Stats) {
	c := pipeline.NewCall(tc.tool, "", nil)
	if tc.subject != "" {
		c.Caller, c.HasCaller = policy.Caller{Subject: tc.subject, Roles: tc.roles}, true
	}
	c.SetClient(tc.client)
	if tc.reached {
		c.Entry = &registry.Entry{}
	}
	c.Report.Repairs = tc.repairs
	o := pipeline.Outcome{Label: tc.tool}
	if tc.tool == "" {
		o.Label = "_unknown"
	}
	if tc.violations != nil {
		o.Validation = "failed"
		o.Err = &pipeline.Error{Kind: pipeline.KindValidation, Violations: tc.violations}
	}
	s.RecordCall(context.Background(), c, o)
}

func repair(path string, k normalize.RepairKind) normalize.Repair {
	return normalize.Repair{Path: path, Kind: k}
}

func newStats(t *testing.T, cfg Config) (*Stats, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg.Registerer = reg
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, reg
}

func rowsOf(snap Snapshot) []string {
	var out []string
	for _, t := range snap.Tools {
		out = append(out, fmt.Sprintf("%s calls=%d failed=%d", t.Name, t.Calls, t.FailedCalls))
		for _, r := range t.Rows {
			out = append(out, fmt.Sprintf("  %s %s %s %s %d", r.Field, r.Event, r.Caller, r.Client, r.Calls))
		}
	}
	return out
}

func TestRecordCounts(t *testing.T) {
	tests := []struct {
		name, reason string
		by           CallerBy
		calls        []call
		want         []string
	}{
		{name: "clean calls count only as calls", reason: "the denominator of every share",
			calls: []call{{tool: "t", subject: "a", reached: true}, {tool: "t", subject: "a", reached: true}},
			want:  []string{"t calls=2 failed=0"}},
		{name: "repair by field, caller, client", reason: "the brief's dimensions",
			calls: []call{{tool: "t", subject: "a", client: "claude-ai", reached: true, repairs: []normalize.Repair{repair("/ops", normalize.JSONDecoded)}}},
			want:  []string{"t calls=1 failed=0", "  /ops repair:json-decoded a claude-ai 1"}},
		{name: "list items are one field, one call", reason: "array indices become * and a call counts once per field and event",
			calls: []call{{tool: "t", subject: "a", reached: true, repairs: []normalize.Repair{
				repair("/ops/0/title", normalize.EntitiesDecoded), repair("/ops/1/title", normalize.EntitiesDecoded), repair("/ops/12/title", normalize.EntitiesDecoded)}}},
			want: []string{"t calls=1 failed=0", "  /ops/*/title repair:entities-decoded a _none 1"}},
		{name: "validation failure by keyword", reason: "keyword + pointer; an unknown keyword is other",
			calls: []call{{tool: "t", subject: "a", client: "c", reached: true, violations: []schema.Violation{
				{Pointer: "/n", Keyword: "type"}, {Pointer: "/m", Keyword: "x-vendor"}}}},
			want: []string{"t calls=1 failed=1", "  /m invalid:other a c 1", "  /n invalid:type a c 1"}},
		{name: "arguments text not JSON", reason: "refused before normalization, still the tool's failure",
			calls: []call{{tool: "t", subject: "a", violations: []schema.Violation{{Pointer: "", Keyword: "json"}}}},
			want:  []string{"t calls=1 failed=1", "   invalid:json a _none 1"}},
		{name: "unknown tool and refusals before normalization", reason: "no label for a name nobody registered; a denied call has no arguments judged",
			calls: []call{{tool: "", subject: "a", reached: true, repairs: []normalize.Repair{repair("/x", normalize.JSONDecoded)}}, {tool: "t", subject: "a"}},
			want:  nil},
		{name: "by role", reason: "a fleet with a subject per user keeps a few labels", by: ByRole,
			calls: []call{{tool: "t", subject: "u1", roles: []string{"invoker", "admin", "invoker"}, reached: true, repairs: []normalize.Repair{repair("/x", normalize.NullDropped)}}},
			want:  []string{"t calls=1 failed=0", "  /x repair:null-dropped admin+invoker _none 1"}},
		{name: "hostile labels", reason: "control characters and invalid UTF-8 never become labels",
			calls: []call{{tool: "t", subject: "a\x1b[2J", client: "c\xff", reached: true, repairs: []normalize.Repair{repair("/x\n", normalize.JSONDecoded)}}},
			want:  []string{"t calls=1 failed=0", "  _other repair:json-decoded _other _other 1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newStats(t, Config{CallerBy: tc.by})
			for _, c := range tc.calls {
				c.record(s)
			}
			got := rowsOf(s.Snapshot(""))
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("%s:\ngot\n%s\nwant\n%s", tc.reason, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// seriesCount is how many series the registry holds for name.
func seriesCount(t *testing.T, reg *prometheus.Registry, name string) int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return len(mf.GetMetric())
		}
	}
	return 0
}

// A flood of distinct field names, subjects and clients keeps within the
// caps: rows, series and labels stop growing, and the totals stay right
// under _other.
func TestCapsHoldUnderFlood(t *testing.T) {
	lim := Limits{MaxTools: 2, MaxFieldsPerTool: 8, MaxCallers: 4, MaxClients: 3, MaxRows: 50}
	s, reg := newStats(t, Config{Limits: lim})
	const n = 20000
	for i := range n {
		call{tool: fmt.Sprintf("t%d", i%5), subject: fmt.Sprintf("s%d", i%7), client: fmt.Sprintf("c%d", i%11), reached: true,
			violations: []schema.Violation{{Pointer: fmt.Sprintf("/f%d", i), Keyword: "additionalProperties"}},
			repairs:    []normalize.Repair{repair(fmt.Sprintf("/g%d", i), normalize.JSONDecoded)}}.record(s)
	}
	snap := s.Snapshot("")
	if len(snap.Tools) != lim.MaxTools+1 {
		t.Errorf("%d tools kept, want %d and _other", len(snap.Tools), lim.MaxTools)
	}
	var calls, failed, rows, repaired uint64
	for _, tool := range snap.Tools {
		calls += tool.Calls
		failed += tool.FailedCalls
		fields := map[string]bool{}
		for _, r := range tool.Rows {
			rows++
			fields[r.Field] = true
			if r.Event.Kind == Repaired {
				repaired += r.Calls
			}
		}
		if len(fields) > lim.MaxFieldsPerTool+1 {
			t.Errorf("tool %s has %d fields, over the cap %d (+ _other)", tool.Name, len(fields), lim.MaxFieldsPerTool)
		}
	}
	if calls != n || failed != n || repaired != n {
		t.Errorf("totals calls=%d failed=%d repaired=%d, want %d each: overflow must still be counted", calls, failed, repaired, n)
	}
	// Past MaxRows only (tool, _other, _other, _other, event) rows are
	// added: at most tools × events of them.
	if bound := uint64(lim.MaxRows + (lim.MaxTools+1)*2); rows > bound {
		t.Errorf("%d rows kept, over %d", rows, bound)
	}
	series := seriesCount(t, reg, "flowdrop_repair_field_calls_total") + seriesCount(t, reg, "flowdrop_validation_field_failures_total")
	if uint64(series) != rows {
		t.Errorf("%d series exported for %d rows", series, rows)
	}
	for _, d := range dims {
		if snap.Overflow[d] == 0 {
			t.Errorf("no overflow counted for %s", d)
		}
	}
}

func TestPruneForgetsDeletedTools(t *testing.T) {
	s, reg := newStats(t, Config{Limits: Limits{MaxRows: 1}})
	call{tool: "gone", subject: "a", reached: true, repairs: []normalize.Repair{repair("/x", normalize.JSONDecoded)}}.record(s)
	call{tool: "kept", subject: "a", reached: true}.record(s)
	s.Prune([]*registry.Entry{{Tool: registry.Tool{Name: "kept"}}})
	if got := rowsOf(s.Snapshot("")); strings.Join(got, "|") != "kept calls=1 failed=0" {
		t.Errorf("after Prune: %q", got)
	}
	if n := seriesCount(t, reg, "flowdrop_repair_field_calls_total"); n != 0 {
		t.Errorf("%d series left for a deleted tool", n)
	}
	// Its row's place under MaxRows is free again.
	call{tool: "kept", subject: "a", reached: true, repairs: []normalize.Repair{repair("/y", normalize.JSONDecoded)}}.record(s)
	if got := rowsOf(s.Snapshot("kept")); len(got) != 2 || got[1] != "  /y repair:json-decoded a _none 1" {
		t.Errorf("after Prune the row cap still counts the deleted tool's row: %q", got)
	}
}

// A call with nothing repaired and nothing failed (nearly every call)
// allocates nothing in the recorder.
func TestCleanCallAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts vary under the race detector; .ci/run checks them without -race")
	}
	s, _ := newStats(t, Config{})
	c := pipeline.NewCall("t", "", nil)
	c.Caller, c.HasCaller = policy.Caller{Subject: "a"}, true
	c.Entry = &registry.Entry{}
	o := pipeline.Outcome{Label: "t"}
	ctx := context.Background()
	s.RecordCall(ctx, c, o) // the tool's first call makes its entry
	if n := testing.AllocsPerRun(1000, func() { s.RecordCall(ctx, c, o) }); n != 0 {
		t.Errorf("a clean call allocates %.1f times in the recorder, want 0", n)
	}
}

// Calls recorded while snapshots are read and tools pruned: no race (run
// under -race), and a pruned tool's late calls are not counted under it.
func TestConcurrentRecordSnapshotPrune(t *testing.T) {
	s, _ := newStats(t, Config{Limits: Limits{MaxRows: 64}})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 500 {
				call{tool: fmt.Sprintf("t%d", i%3), subject: fmt.Sprintf("s%d", g), client: "c", reached: true,
					repairs: []normalize.Repair{repair(fmt.Sprintf("/f%d", i%7), normalize.JSONDecoded)}}.record(s)
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			s.Snapshot("")
			s.Prune([]*registry.Entry{{Tool: registry.Tool{Name: "t0"}}, {Tool: registry.Tool{Name: "t1"}}})
		}
	})
	wg.Wait()
	s.Prune([]*registry.Entry{{Tool: registry.Tool{Name: "t0"}}})
	for _, tool := range s.Snapshot("").Tools {
		if tool.Name != "t0" {
			t.Errorf("tool %s kept after Prune", tool.Name)
		}
	}
}

// A new revision with another input schema starts the tool's counts
// afresh (the suggestions are about the schema in force); one with the
// same schema, or a call still under an older revision, does not.
func TestSchemaChangeStartsAfresh(t *testing.T) {
	s, reg := newStats(t, Config{})
	entry := func(rev int64, typ string) *registry.Entry {
		return &registry.Entry{Tool: registry.Tool{Name: "t", Revision: rev,
			InputSchema: &structpb.Struct{Fields: map[string]*structpb.Value{"type": structpb.NewStringValue(typ)}}}}
	}
	rec := func(e *registry.Entry) {
		c := pipeline.NewCall("t", "", nil)
		c.Caller, c.HasCaller, c.Entry = policy.Caller{Subject: "a"}, true, e
		c.Report.Repairs = []normalize.Repair{repair("/x", normalize.JSONDecoded)}
		s.RecordCall(context.Background(), c, pipeline.Outcome{Label: "t"})
	}
	calls := func() uint64 {
		tools := s.Snapshot("t").Tools
		if len(tools) != 1 {
			return 0
		}
		return tools[0].Calls
	}
	r1, r2, r3 := entry(1, "object"), entry(2, "object"), entry(3, "array")
	steps := []struct {
		reason string
		e      *registry.Entry
		want   uint64
	}{
		{"first revision", r1, 1},
		{"a new revision, same schema: counts go on", r2, 2},
		{"a new schema: afresh", r3, 1},
		{"a call in flight under the older revision: no reset back", r2, 2},
		{"and the newer again: still counting", r3, 3},
	}
	for _, st := range steps {
		rec(st.e)
		if got := calls(); got != st.want {
			t.Errorf("%s: %d calls, want %d", st.reason, got, st.want)
		}
	}
	if n := seriesCount(t, reg, "flowdrop_repair_field_calls_total"); n != 1 {
		t.Errorf("%d repair series, want the one row since the schema change", n)
	}
}
