package repairstats

import (
	"fmt"
	"strings"
	"testing"

	"github.com/flowdrop/gateway/normalize"
	"github.com/flowdrop/gateway/registry/schema"
)

// calls makes n calls to tool "t": the first k carry what with, spread
// over clients in turn; the rest are clean (or, for failures, fail with
// other).
func calls(n, k int, with func(i int) call, other func(i int) call) []call {
	out := make([]call, n)
	for i := range out {
		switch {
		case i < k:
			out[i] = with(i)
		case other != nil:
			out[i] = other(i)
		default:
			out[i] = call{tool: "t", subject: "a", reached: true}
		}
		out[i].tool, out[i].reached = "t", true
	}
	return out
}

func repairing(kind normalize.RepairKind, clients ...string) func(int) call {
	return func(i int) call {
		return call{subject: "a", client: clients[i%len(clients)], repairs: []normalize.Repair{repair("/ops", kind)}}
	}
}

func failing(ptr, kw string) func(int) call {
	return func(int) call {
		return call{subject: "a", violations: []schema.Violation{{Pointer: ptr, Keyword: kw}}}
	}
}

func TestSuggestions(t *testing.T) {
	tests := []struct {
		name, reason string
		calls        []call
		want         []string // change field event calls/of client
	}{
		{name: "stringified array in most calls", reason: "the issue's example: a field arriving stringified in most calls",
			calls: calls(30, 24, repairing(normalize.JSONDecoded, "a", "b"), nil),
			want:  []string{"document-shape /ops repair:json-decoded 24/30 "}},
		{name: "stringified below the share", reason: "RepairShare 0.5: 14 of 30 is not persistent",
			calls: calls(30, 14, repairing(normalize.JSONDecoded, "a"), nil)},
		{name: "too few calls", reason: "MinCalls 20: 10 of 10 is not yet a pattern",
			calls: calls(10, 10, repairing(normalize.JSONDecoded, "a"), nil)},
		{name: "escaped by one client", reason: "one client behind ≥ 80% of the escapes: note the client",
			calls: calls(20, 20, repairing(normalize.EntitiesDecoded, "x", "x", "x", "x", "x", "x", "x", "x", "x", "y"), nil),
			want:  []string{"note-client /ops repair:entities-decoded 20/20 x"}},
		{name: "escaped by many clients", reason: "no one client: the field's description is at fault",
			calls: calls(20, 20, repairing(normalize.EntitiesDecoded, "x", "y"), nil),
			want:  []string{"plain-text /ops repair:entities-decoded 20/20 "}},
		{name: "nulls for not given", reason: "OpenAI strict mode's nulls",
			calls: calls(20, 20, repairing(normalize.NullDropped, "x", "y"), nil),
			want:  []string{"accept-null /ops repair:null-dropped 20/20 "}},
		{name: "failures dominated by one keyword", reason: "KeywordShare 0.8 of failed calls",
			calls: calls(12, 10, failing("/limit", "maximum"), failing("/q", "minLength")),
			want:  []string{"relax-or-describe /limit invalid:maximum 10/12 "}},
		{name: "failures spread over keywords", reason: "no keyword dominates",
			calls: calls(12, 6, failing("/limit", "maximum"), failing("/q", "minLength"))},
		{name: "too few failures", reason: "MinFailures 10",
			calls: calls(9, 9, failing("/limit", "maximum"), nil)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newStats(t, Config{})
			for _, c := range tc.calls {
				c.record(s)
			}
			var got []string
			for _, tool := range s.Snapshot("t").Tools {
				for _, sg := range tool.Suggestions {
					got = append(got, fmt.Sprintf("%s %s %s %d/%d %s", sg.Change, sg.Field, sg.Event, sg.Calls, sg.Of, sg.Client))
					if sg.Text == "" {
						t.Errorf("suggestion %s has no text", sg.Change)
					}
				}
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("%s: got %q, want %q", tc.reason, got, tc.want)
			}
		})
	}
}
