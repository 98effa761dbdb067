package mcpapi

import (
	"encoding/json"
	"testing"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/normalize"
)

// fuzzLimits are small, so the fuzzer reaches every limit.
var fuzzLimits = policy.Limits{MaxArgumentBytes: 1 << 20, MaxStringLength: 8, MaxDepth: 4, MaxListElements: 8, MaxObjectKeys: 8}.WithDefaults()

// FuzzArguments: the limit scan and the argument parser never panic, the
// scan agrees with the general decoder (arguments it passes and the parser
// accepts are within the same limits once decoded), and the parser accepts
// no text with a repeated key.
func FuzzArguments(f *testing.F) {
	for _, s := range []string{`{}`, `null`, `{"a":[1,2,{"b":"c"}]}`, `{"a":"\u00e9\ud83d\ude00"}`, `{"a":[[[[[1]]]]]}`,
		`{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9}`, `{"a":"0123456789"}`, `[1]`, `{"a":1e400}`,
		`{"a":1,"a":2}`, `{"a":[{"b":1,"\u0062":2}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		raw = raw[:min(len(raw), 512)] // bounded minimization (see normalize's maxFuzzInput)
		members, err := scanArgumentLimits("t", raw, fuzzLimits)
		if err != nil {
			return
		}
		args, err := parseMCPArguments(json.RawMessage(raw), members)
		_, strict := normalize.ParseArguments(string(raw), normalize.Limits{})
		if pe, ok := strict.(*normalize.ParseError); ok && pe.Reason == normalize.DuplicateKey && err == nil {
			t.Fatalf("%q: parsed, though the key at %s is repeated", raw, pe.Path)
		}
		if err != nil {
			return
		}
		if err := fuzzLimits.Check("t", args); err != nil {
			t.Fatalf("scan passed %q, decoded it crosses a limit: %v", raw, err)
		}
	})
}

// FuzzPeekToolCall: the unauthenticated request peek never panics on any
// (possibly truncated) body, and what it reads comes from the body.
func FuzzPeekToolCall(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"flowdrop/call_id":"c"}}}`,
		`{"method":"tools/list"}`, `{"params":{"name":"x"},"method":"tools/call"`, `[`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		body = body[:min(len(body), 512)]
		_, tool, callID := peekToolCall(body)
		if len(tool) > len(body) || len(callID) > len(body) {
			t.Fatalf("peek of %d bytes found a %d-byte tool name, %d-byte call id", len(body), len(tool), len(callID))
		}
	})
}
