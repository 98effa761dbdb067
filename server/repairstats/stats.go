package repairstats

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/pipeline"
)

// EventKind says what happened at a field.
type EventKind uint8

const (
	// Repaired: normalization repaired the value (Event.Name is the
	// normalize.RepairKind: json-decoded, entities-decoded, null-dropped).
	Repaired EventKind = iota + 1
	// Invalid: the value failed validation (Event.Name is the keyword).
	Invalid
)

// String returns "repair" or "invalid".
func (k EventKind) String() string {
	switch k {
	case Repaired:
		return "repair"
	case Invalid:
		return "invalid"
	}
	return "unknown"
}

// Event is one thing analytics count at a field.
type Event struct {
	Kind EventKind
	Name string
}

func (e Event) String() string { return e.Kind.String() + ":" + e.Name }

// CallerBy chooses what identifies a caller in the counts.
type CallerBy string

const (
	// BySubject: the authenticated subject (an API key's name, a JWT sub,
	// a certificate's name). The default.
	BySubject CallerBy = "subject"
	// ByRole: the caller's roles, sorted, joined with "+": a fleet with a
	// subject per user keeps a few labels.
	ByRole CallerBy = "role"
	// ByNone: every caller is None.
	ByNone CallerBy = "none"
)

// ParseCallerBy reads a --repair-stats-caller value.
func ParseCallerBy(s string) (CallerBy, error) {
	switch c := CallerBy(s); c {
	case BySubject, ByRole, ByNone:
		return c, nil
	case "":
		return BySubject, nil
	}
	return "", fmt.Errorf("repair analytics caller %q: want subject, role or none", s)
}

// Config configures New.
type Config struct {
	Limits     Limits
	Thresholds Thresholds
	CallerBy   CallerBy
	// Registerer receives the metrics (nil: none).
	Registerer prometheus.Registerer
}

// Stats is repair analytics (see the package doc). Safe for concurrent use.
type Stats struct {
	lim      Limits
	th       Thresholds
	callerBy CallerBy
	since    time.Time

	// tools is copied on write (a new tool, Prune), so a call finds its
	// tool with one atomic load and a map read, never a lock.
	tools atomic.Pointer[map[string]*toolStats]

	mu       sync.Mutex // guards what follows and every toolStats' maps
	callers  map[string]struct{}
	clients  map[string]struct{}
	rows     int // rows counted against lim.MaxRows
	overflow map[string]uint64

	repairs, invalid, calls, overflowC *prometheus.CounterVec
}

type rowKey struct {
	field, caller, client string
	event                 Event
}

type row struct {
	n uint64
	c prometheus.Counter // nil without metrics
	// capped: an overflow row, not counted against MaxRows.
	capped bool
}

type toolStats struct {
	name  string
	calls atomic.Uint64 // calls that reached normalization (or failed validation)
	cc    prometheus.Counter
	// entry is the newest registry entry (revision) a call was counted
	// under: a call under another one checks whether the input schema
	// changed (sawEntry).
	entry atomic.Pointer[registry.Entry]

	// under Stats.mu:
	since  time.Time
	failed uint64 // calls that failed validation
	fields map[string]struct{}
	rows   map[rowKey]*row
}

// New returns empty analytics, registering the metrics with
// cfg.Registerer when given.
func New(cfg Config) (*Stats, error) {
	by, err := ParseCallerBy(string(cfg.CallerBy))
	if err != nil {
		return nil, err
	}
	s := &Stats{lim: cfg.Limits.withDefaults(), th: cfg.Thresholds.withDefaults(), callerBy: by, since: time.Now(),
		callers: map[string]struct{}{}, clients: map[string]struct{}{}, overflow: map[string]uint64{}}
	s.tools.Store(&map[string]*toolStats{})
	if r := cfg.Registerer; r != nil {
		s.repairs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flowdrop_repair_field_calls_total",
			Help: "Calls whose argument at field (a JSON Pointer, array indices as *) normalization repaired, by tool, field, caller, client and repair kind. Fields, callers and clients over their caps count as _other."},
			[]string{"tool", "field", "caller", "client", "kind"})
		s.invalid = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flowdrop_validation_field_failures_total",
			Help: "Calls whose arguments failed validation at field (a JSON Pointer, array indices as *), by tool, field, caller, client and JSON Schema keyword. Fields, callers and clients over their caps count as _other."},
			[]string{"tool", "field", "caller", "client", "keyword"})
		s.calls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flowdrop_repair_analytics_calls_total",
			Help: "Calls that reached normalization, by tool: the denominator of the repair and validation-failure shares."},
			[]string{"tool"})
		s.overflowC = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flowdrop_repair_analytics_overflow_total",
			Help: "Repair analytics counts kept under _other because a cap was reached, by dimension (tool, field, caller, client, rows)."},
			[]string{"dimension"})
		for _, d := range dims {
			s.overflowC.WithLabelValues(d)
		}
		for _, c := range []prometheus.Collector{s.repairs, s.invalid, s.calls, s.overflowC} {
			if err := r.Register(c); err != nil {
				return nil, fmt.Errorf("repair analytics metrics: %w", err)
			}
		}
	}
	return s, nil
}

// Limits are the limits in force.
func (s *Stats) Limits() Limits { return s.lim }

// RecordBackend is a no-op: analytics count arguments, not backends.
func (*Stats) RecordBackend(string, string, time.Duration) {}

// RecordCall counts the call's repairs and validation failures. A call
// with neither (nearly every call) costs an atomic map load and two atomic
// adds, no lock and no allocation; a call refused before normalization,
// or naming no registered tool, is not counted.
func (s *Stats) RecordCall(ctx context.Context, c *pipeline.Call, o pipeline.Outcome) {
	failed := o.Validation == "failed" && o.Err != nil
	if o.Label == registry.LabelUnregistered || (c.Entry == nil && !failed) {
		return
	}
	t := (*s.tools.Load())[o.Label]
	if t == nil {
		t = s.addTool(o.Label)
	}
	if e := c.Entry; e != nil && t.entry.Load() != e {
		s.sawEntry(t, e)
	}
	t.calls.Add(1)
	if t.cc != nil {
		t.cc.Inc()
	}
	if len(c.Report.Repairs) == 0 && !failed {
		return
	}
	caller := s.callerLabel(c)
	client := textLabel(c.Client(ctx))
	s.mu.Lock()
	defer s.mu.Unlock()
	if (*s.tools.Load())[t.name] != t {
		return // pruned meanwhile
	}
	caller = s.admit(s.callers, caller, s.lim.MaxCallers, DimCaller)
	client = s.admit(s.clients, client, s.lim.MaxClients, DimClient)
	// A call counts once per field and event, however many values (list
	// items) at that field were repaired.
	vs := violations(o, failed)
	var counted map[rowKey]struct{}
	if n := len(c.Report.Repairs) + len(vs); n > 1 {
		counted = make(map[rowKey]struct{}, n)
	}
	for _, r := range c.Report.Repairs {
		s.bump(t, rowKey{field: s.field(t, r.Path), caller: caller, client: client, event: Event{Repaired, r.Kind.String()}}, counted)
	}
	if failed {
		t.failed++
		for _, v := range vs {
			s.bump(t, rowKey{field: s.field(t, v.Pointer), caller: caller, client: client, event: Event{Invalid, keywordLabel(v.Keyword)}}, counted)
		}
	}
}

type violation = struct{ Pointer, Keyword string }

// violations are the failed call's violations (pointer and keyword); a
// failure without any (a backend's own refusal) counts as one at the
// root with keyword "other".
func violations(o pipeline.Outcome, failed bool) []violation {
	if !failed {
		return nil
	}
	vs := o.Err.Violations
	if len(vs) == 0 {
		return []violation{{}}
	}
	out := make([]violation, len(vs))
	for i, v := range vs {
		out[i] = violation{v.Pointer, v.Keyword}
	}
	return out
}

// sawEntry starts t's counts afresh when e is a newer revision whose input
// schema differs from the one counted so far: the suggestions are about
// the schema in force, and a change the operator made on their account
// must not keep being suggested. An older revision (a call still in flight
// across the change) changes nothing.
func (s *Stats) sawEntry(t *toolStats, e *registry.Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := t.entry.Load()
	if prev == e || (prev != nil && e.Tool.Revision < prev.Tool.Revision) {
		return
	}
	t.entry.Store(e)
	if prev == nil || proto.Equal(prev.Tool.InputSchema, e.Tool.InputSchema) {
		return
	}
	s.forgetRows(t)
	t.calls.Store(0)
	t.failed, t.since = 0, time.Now()
	clear(t.fields)
	// The calls counter goes on (a rate over it is the same either way);
	// the rows' series go with the rows.
}

// forgetRows drops t's rows and their series (under s.mu).
func (s *Stats) forgetRows(t *toolStats) {
	for _, r := range t.rows {
		if !r.capped {
			s.rows--
		}
	}
	clear(t.rows)
	for _, v := range []*prometheus.CounterVec{s.repairs, s.invalid} {
		if v != nil {
			v.DeletePartialMatch(prometheus.Labels{"tool": t.name})
		}
	}
}

// callerLabel is the call's caller as CallerBy says (before its cap).
func (s *Stats) callerLabel(c *pipeline.Call) string {
	if !c.HasCaller {
		return None
	}
	switch s.callerBy {
	case ByRole:
		if len(c.Caller.Roles) == 0 {
			return None
		}
		roles := slices.Clone(c.Caller.Roles)
		slices.Sort(roles)
		return textLabel(strings.Join(slices.Compact(roles), "+"))
	case ByNone:
		return None
	}
	return textLabel(c.Caller.Subject)
}

// addTool makes the tool's entry (Other when MaxTools are taken).
func (s *Stats) addTool(name string) *toolStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := *s.tools.Load()
	if t := cur[name]; t != nil {
		return t
	}
	if name != Other && len(cur) >= s.lim.MaxTools+boolInt(cur[Other] != nil) {
		s.over(DimTool)
		if t := cur[Other]; t != nil {
			return t
		}
		name = Other
	}
	t := &toolStats{name: name, since: time.Now(), fields: map[string]struct{}{}, rows: map[rowKey]*row{}}
	if s.calls != nil {
		t.cc = s.calls.WithLabelValues(name)
	}
	next := make(map[string]*toolStats, len(cur)+1)
	for k, v := range cur {
		next[k] = v
	}
	next[name] = t
	s.tools.Store(&next)
	return t
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// admit is label if set holds it or has room for it, else Other.
func (s *Stats) admit(set map[string]struct{}, label string, limit int, dim string) string {
	if _, ok := set[label]; ok || label == Other {
		return label
	}
	if len(set) >= limit {
		s.over(dim)
		return Other
	}
	set[label] = struct{}{}
	return label
}

// field is ptr's label for tool t, within its MaxFieldsPerTool.
func (s *Stats) field(t *toolStats, ptr string) string {
	return s.admit(t.fields, fieldLabel(ptr), s.lim.MaxFieldsPerTool, DimField)
}

// bump counts one call for key (once per call: counted), in an overflow
// row when MaxRows are taken.
func (s *Stats) bump(t *toolStats, key rowKey, counted map[rowKey]struct{}) {
	r := t.rows[key]
	if r == nil && s.rows >= s.lim.MaxRows {
		s.over(DimRows)
		key.field, key.caller, key.client = Other, Other, Other
		r = t.rows[key]
	}
	if counted != nil {
		if _, done := counted[key]; done {
			return
		}
		counted[key] = struct{}{}
	}
	if r == nil {
		r = &row{capped: s.rows >= s.lim.MaxRows}
		if !r.capped {
			s.rows++
		}
		r.c = s.counter(t.name, key)
		t.rows[key] = r
	}
	r.n++
	if r.c != nil {
		r.c.Inc()
	}
}

func (s *Stats) counter(tool string, key rowKey) prometheus.Counter {
	switch {
	case key.event.Kind == Repaired && s.repairs != nil:
		return s.repairs.WithLabelValues(tool, key.field, key.caller, key.client, key.event.Name)
	case key.event.Kind == Invalid && s.invalid != nil:
		return s.invalid.WithLabelValues(tool, key.field, key.caller, key.client, key.event.Name)
	}
	return nil
}

func (s *Stats) over(dim string) {
	s.overflow[dim]++
	if s.overflowC != nil {
		s.overflowC.WithLabelValues(dim).Inc()
	}
}

// Prune forgets the tools no longer registered (call it on each registry
// change): their counts, fields and series go, and their rows free room
// under MaxRows. Callers and clients once admitted stay admitted.
func (s *Stats) Prune(live []*registry.Entry) {
	keep := make(map[string]bool, len(live))
	for _, e := range live {
		keep[e.Tool.Name] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := *s.tools.Load()
	next := make(map[string]*toolStats, len(cur))
	for name, t := range cur {
		if keep[name] || name == Other {
			next[name] = t
			continue
		}
		s.forgetRows(t)
		if s.calls != nil {
			s.calls.DeleteLabelValues(name)
		}
	}
	if len(next) != len(cur) {
		s.tools.Store(&next)
	}
}

var _ pipeline.Recorder = (*Stats)(nil)
