package policy

import (
	"encoding/json"
	"testing"
	"time"
)

// TestAuditLineMatchesEncodingJSON holds the hand-written line encoder to
// json.Marshal of the same record, byte for byte.
func TestAuditLineMatchesEncodingJSON(t *testing.T) {
	full := AuditRecord{
		Time: time.Date(2026, 12, 3, 13, 0, 0, 123456789, time.FixedZone("x", 3600)), CallerSubject: "agent <a&b>", CallerMethod: "api-key",
		CallerRoles: []string{"invoker", "r<&>"}, Client: "con<sole>", Tool: "create_note", CallID: "c\"1\\\n", Decision: DecisionDeny, Reason: ReasonRuleDenied, Rule: "no-<shell>",
		Repairs: []AuditRepair{{Path: "/title", Kind: "entities"}, {Path: "/tags", Kind: "json"}}, Validation: "failed",
		Violations: []string{"/a: bad \u2028", "/b: é"}, BackendCode: "OK", IdentityMode: "gateway-signed", IdentitySubject: "alice", LatencyMS: 0.123,
		ArgsSent: json.RawMessage(`{"a":"\u003cx\u003e"}`), ArgsRepaired: json.RawMessage(`{"a":1}`),
		ShadowDenials:  []ShadowDenial{{Reason: "r", Rule: "n", Message: "m"}, {Reason: "r2", Message: "m2"}},
		IdempotencyKey: "k", Replayed: true, RecordsDropped: 7, Operation: "RegisterTool", Revision: 12,
		InputRound: 2, InputAsked: []string{"elicitation", "sampling"}, InputAnswered: 1,
	}
	cases := []struct {
		name, reason string
		rec          AuditRecord
	}{
		{"empty", "every omitempty member omitted, the zero time", AuditRecord{}},
		{"full", "every member set, strings needing escapes", full},
		{"gap", "an audit-gap line", AuditRecord{Time: time.Unix(1_700_000_000, 5), Decision: DecisionError, Reason: ReasonAuditGap, RecordsDropped: 3}},
		{"invalid utf-8", "a bounded prefix cut inside a rune is written as encoding/json writes it", AuditRecord{Tool: "ab\xe2\x82", CallerSubject: "\xff"}},
		{"registry write", "a registry write's line: operation and revision", AuditRecord{Time: time.Unix(1_700_000_000, 0), CallerSubject: "ops",
			CallerMethod: "api-key", Tool: "create_note", Decision: DecisionAllow, Operation: "RegisterTool", Revision: 3}},
		{"latency", "large and tiny latencies take the e format", AuditRecord{LatencyMS: 1e21}},
		{"latency small", "", AuditRecord{LatencyMS: 1e-7}},
	}
	for _, tc := range cases {
		tc.rec.argsEncoded = true // the arguments go in as they are (valid compact JSON here)
		want, err := json.Marshal(tc.rec)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tc.rec.line()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if string(got) != string(want)+"\n" {
			t.Errorf("%s (%s):\n got %s\nwant %s", tc.name, tc.reason, got, want)
		}
	}
}

// TestAuditLineAllocations: a record whose arguments are already encoded
// costs its line's buffer and nothing more (the time formats in place).
func TestAuditLineAllocations(t *testing.T) {
	rec := AuditRecord{Time: time.Now(), CallerSubject: "bench-agent", CallerMethod: "api-key", Tool: "bench_tool",
		CallID: "bench", Decision: DecisionAllow, Validation: "ok", BackendCode: "OK", LatencyMS: 0.42,
		ArgsSent: json.RawMessage(`{"title":"x"}`), argsEncoded: true}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := rec.line(); err != nil {
			t.Fatal(err)
		}
	}); n != 1 {
		t.Fatalf("line allocates %.0f times, want 1 (its buffer)", n)
	}
}

// TestAuditLineSizeHintHoldsTheLine: the size hint holds a call's whole
// line, so encoding it is one allocation (a short buffer would double
// and copy the line on the hot path).
func TestAuditLineSizeHintHoldsTheLine(t *testing.T) {
	rec := AuditRecord{Time: time.Date(2026, 12, 5, 9, 0, 0, 123456789, time.UTC), CallerSubject: "bench-agent-with-a-longer-name",
		CallerMethod: MethodAPIKey, CallerRoles: []string{RoleInvoker, "notes-writer"}, Tool: "bench_tool", CallID: "call_7bK2mQ9xR4tZ1vY8wE3nP6sL", Decision: DecisionAllow,
		Repairs:    []AuditRepair{{Path: "/tags", Kind: "json-decoded"}, {Path: "/title", Kind: "entities-decoded"}},
		Validation: "passed", BackendCode: "OK", IdentityMode: "gateway-signed", IdentitySubject: "bench-agent-with-a-longer-name",
		LatencyMS: 1.234, IdempotencyKey: "key-0123456789abcdef", Operation: "InvokeTool", argsEncoded: true,
		ArgsSent: []byte(`{"title":"Ember &amp; Oak","tags":"[\"a\",\"b\"]"}`), ArgsRepaired: []byte(`{"title":"Ember & Oak","tags":["a","b"]}`)}
	line, err := rec.line()
	if err != nil {
		t.Fatal(err)
	}
	if hint := rec.lineSizeHint(); len(line) > hint {
		t.Errorf("line of %d bytes over the size hint %d: it is encoded into a second, larger buffer", len(line), hint)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = rec.line() }); n > 1 && !raceEnabled {
		t.Errorf("%v allocations to encode a line, want 1", n)
	}
}
