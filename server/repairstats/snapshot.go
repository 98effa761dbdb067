package repairstats

import (
	"cmp"
	"slices"
	"time"
)

// Snapshot is the analytics at one moment (Stats.Snapshot): what the admin
// API, flowdropctl and the console show.
type Snapshot struct {
	// Since is when this replica started counting.
	Since  time.Time
	Limits Limits
	// Thresholds are those the suggestions were made with.
	Thresholds Thresholds
	// Overflow counts what was kept under Other, by dimension (DimTool, …).
	Overflow map[string]uint64
	Tools    []Tool
}

// Tool is one tool's analytics.
type Tool struct {
	Name string
	// Since is when these counts began: the tool's first call on this
	// replica, or the last change of its input schema.
	Since time.Time
	// Calls is how many calls reached normalization; FailedCalls how many
	// of them failed validation.
	Calls, FailedCalls uint64
	// Rows are the counts, most calls first.
	Rows        []Row
	Suggestions []Suggestion
}

// Row is how many calls had Event at Field, from Caller through Client.
type Row struct {
	Field, Caller, Client string
	Event                 Event
	Calls                 uint64
}

// Snapshot copies the analytics of tool (all tools when ""), tools by
// name, with their suggestions.
func (s *Stats) Snapshot(tool string) Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := Snapshot{Since: s.since, Limits: s.lim, Thresholds: s.th, Overflow: make(map[string]uint64, len(s.overflow))}
	for k, v := range s.overflow {
		snap.Overflow[k] = v
	}
	for name, t := range *s.tools.Load() {
		if tool != "" && name != tool {
			continue
		}
		ts := Tool{Name: name, Since: t.since, Calls: t.calls.Load(), FailedCalls: t.failed, Rows: make([]Row, 0, len(t.rows))}
		for k, r := range t.rows {
			ts.Rows = append(ts.Rows, Row{Field: k.field, Caller: k.caller, Client: k.client, Event: k.event, Calls: r.n})
		}
		slices.SortFunc(ts.Rows, func(a, b Row) int {
			return cmp.Or(cmp.Compare(b.Calls, a.Calls), cmp.Compare(a.Field, b.Field), cmp.Compare(a.Event.Kind, b.Event.Kind),
				cmp.Compare(a.Event.Name, b.Event.Name), cmp.Compare(a.Caller, b.Caller), cmp.Compare(a.Client, b.Client))
		})
		ts.Suggestions = s.th.suggest(ts)
		snap.Tools = append(snap.Tools, ts)
	}
	slices.SortFunc(snap.Tools, func(a, b Tool) int { return cmp.Compare(a.Name, b.Name) })
	return snap
}
