package repairstats

import (
	"cmp"
	"fmt"
	"slices"
)

// Thresholds say when a pattern is persistent enough to suggest a schema
// change (README, "Repair analytics", documents them).
type Thresholds struct {
	// MinCalls: no repair suggestion before a tool has this many calls
	// (default 20).
	MinCalls uint64
	// RepairShare: a repair at a field in at least this share of the
	// tool's calls is persistent (default 0.5).
	RepairShare float64
	// MinFailures: no validation suggestion before a tool has this many
	// failed calls (default 10).
	MinFailures uint64
	// KeywordShare: one (field, keyword) in at least this share of the
	// failed calls dominates them (default 0.8).
	KeywordShare float64
	// ClientShare: one client behind at least this share of a pattern's
	// calls is named as its source (default 0.8).
	ClientShare float64
}

// DefaultThresholds are the thresholds a zero Thresholds field takes.
var DefaultThresholds = Thresholds{MinCalls: 20, RepairShare: 0.5, MinFailures: 10, KeywordShare: 0.8, ClientShare: 0.8}

func (t Thresholds) withDefaults() Thresholds {
	d := DefaultThresholds
	if t.MinCalls > 0 {
		d.MinCalls = t.MinCalls
	}
	if t.RepairShare > 0 {
		d.RepairShare = t.RepairShare
	}
	if t.MinFailures > 0 {
		d.MinFailures = t.MinFailures
	}
	if t.KeywordShare > 0 {
		d.KeywordShare = t.KeywordShare
	}
	if t.ClientShare > 0 {
		d.ClientShare = t.ClientShare
	}
	return d
}

// Change kinds a Suggestion proposes.
const (
	// ChangeDocumentShape: a field arrives JSON-encoded as a string in most
	// calls: say the shape in its description (an example helps models),
	// or accept the string form explicitly.
	ChangeDocumentShape = "document-shape"
	// ChangeNoteClient: one client HTML-escapes a field's values: fix or
	// report that client; the schema is not at fault.
	ChangeNoteClient = "note-client"
	// ChangePlainText: a field's values arrive HTML-escaped from several
	// clients: describe it as plain text, not HTML.
	ChangePlainText = "plain-text"
	// ChangeAcceptNull: clients send null for a field when not giving it
	// (OpenAI strict mode does): make it nullable.
	ChangeAcceptNull = "accept-null"
	// ChangeRelaxOrDescribe: one keyword at one field fails most failed
	// calls: relax it, or describe the constraint in the field's
	// description so models meet it.
	ChangeRelaxOrDescribe = "relax-or-describe"
)

// Suggestion is a schema change a persistent pattern suggests.
type Suggestion struct {
	Change string // one of the Change… kinds
	Field  string
	Event  Event
	// Calls of Of calls had Event at Field (Of: the tool's calls for a
	// repair, its failed calls for a failure).
	Calls, Of uint64
	// Client is the client behind at least ClientShare of Calls ("" when
	// none is).
	Client string
	// Text says it in a line, for a person.
	Text string
}

// suggest reads ts's rows (totals per field and event over callers and
// clients) against the thresholds.
func (th Thresholds) suggest(ts Tool) []Suggestion {
	type fe struct {
		field string
		event Event
	}
	totals := map[fe]uint64{}
	byClient := map[fe]map[string]uint64{}
	for _, r := range ts.Rows {
		if r.Field == Other {
			continue // many fields: no one field to change
		}
		k := fe{r.Field, r.Event}
		totals[k] += r.Calls
		if byClient[k] == nil {
			byClient[k] = map[string]uint64{}
		}
		byClient[k][r.Client] += r.Calls
	}
	var out []Suggestion
	for k, n := range totals {
		var of uint64
		switch k.event.Kind {
		case Repaired:
			of = ts.Calls
			if of < th.MinCalls || float64(n) < th.RepairShare*float64(of) {
				continue
			}
		case Invalid:
			of = ts.FailedCalls
			if of < th.MinFailures || float64(n) < th.KeywordShare*float64(of) {
				continue
			}
		default:
			continue
		}
		sg := Suggestion{Field: k.field, Event: k.event, Calls: n, Of: of, Client: dominant(byClient[k], n, th.ClientShare)}
		pct := 100 * float64(n) / float64(of)
		where := fieldName(k.field)
		switch {
		case k.event == Event{Repaired, "json-decoded"}:
			sg.Change = ChangeDocumentShape
			sg.Text = fmt.Sprintf("%s arrived as a JSON-encoded string in %.0f%% of calls (%d of %d), repaired each time: say its shape in its description (an example helps), or accept the string form explicitly", where, pct, n, of)
		case k.event == Event{Repaired, "entities-decoded"} && sg.Client != "":
			sg.Change = ChangeNoteClient
			sg.Text = fmt.Sprintf("%s arrived HTML-escaped in %.0f%% of calls (%d of %d), from client %q: that client escapes values; fix or report it", where, pct, n, of, sg.Client)
		case k.event == Event{Repaired, "entities-decoded"}:
			sg.Change = ChangePlainText
			sg.Text = fmt.Sprintf("%s arrived HTML-escaped in %.0f%% of calls (%d of %d): describe it as plain text, not HTML", where, pct, n, of)
		case k.event == Event{Repaired, "null-dropped"}:
			sg.Change = ChangeAcceptNull
			sg.Text = fmt.Sprintf("%s arrived as null in %.0f%% of calls (%d of %d), dropped each time: clients send null for not given (OpenAI strict mode does); make it nullable", where, pct, n, of)
		case k.event.Kind == Invalid:
			sg.Change = ChangeRelaxOrDescribe
			sg.Text = fmt.Sprintf("%s failed `%s` in %.0f%% of failed calls (%d of %d): relax it, or describe the constraint in the field's description", where, k.event.Name, pct, n, of)
		default:
			continue
		}
		out = append(out, sg)
	}
	slices.SortFunc(out, func(a, b Suggestion) int {
		return cmp.Or(cmp.Compare(b.Calls, a.Calls), cmp.Compare(a.Field, b.Field), cmp.Compare(a.Event.Kind, b.Event.Kind), cmp.Compare(a.Event.Name, b.Event.Name))
	})
	return out
}

// dominant is the named client behind at least share of total, or "".
func dominant(by map[string]uint64, total uint64, share float64) string {
	for c, n := range by {
		if c != None && c != Other && float64(n) >= share*float64(total) {
			return c
		}
	}
	return ""
}

func fieldName(f string) string {
	if f == "" {
		return "the arguments"
	}
	return "`" + f + "`"
}
