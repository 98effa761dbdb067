package mcptasks_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/flowdrop/gateway/internal/mcptasks"
)

func TestParseHeldKey(t *testing.T) {
	long := strings.Repeat("a", 65)
	cases := []struct {
		reason, key       string
		replica, instance string
		ok                bool
	}{
		{"a key HeldKey made", mcptasks.HeldKey("0a1b", "c2d3"), "0a1b", "c2d3", true},
		{"an upstream's HTTP session id", "3f2a-session", "", "", false},
		{"no instance", "held:0a1b", "", "", false},
		{"an empty replica", "held:.c2d3", "", "", false},
		{"not the gateway's hex", "held:0A1B.c2d3", "", "", false},
		{"a part over its bound", "held:" + long + ".c2d3", "", "", false},
		{"a third part", "held:0a1b.c2d3.e4", "", "", false},
	}
	for _, tc := range cases {
		replica, instance, ok := mcptasks.ParseHeldKey(tc.key)
		if replica != tc.replica || instance != tc.instance || ok != tc.ok {
			t.Errorf("%s: ParseHeldKey(%q) = %q, %q, %v; want %q, %q, %v", tc.reason, tc.key, replica, instance, ok, tc.replica, tc.instance, tc.ok)
		}
	}
}

func TestRelayRequestCheck(t *testing.T) {
	good := mcptasks.RelayRequest{Method: "tasks/result", URL: "stdio://everything", Instance: "c2d3", TaskID: "t1", Limit: 1 << 20}
	with := func(f func(*mcptasks.RelayRequest)) mcptasks.RelayRequest { r := good; f(&r); return r }
	answer := mcptasks.RelayRequest{Method: mcptasks.RelayAnswerMethod, URL: "stdio://everything", Instance: "c2d3",
		AnswerID: json.RawMessage(`7`), AnswerResult: json.RawMessage(`{"action":"accept"}`)}
	withAnswer := func(f func(*mcptasks.RelayRequest)) mcptasks.RelayRequest { r := answer; f(&r); return r }
	cases := []struct {
		reason string
		req    mcptasks.RelayRequest
		ok     bool
	}{
		{"a task request", good, true},
		{"not a task method", with(func(r *mcptasks.RelayRequest) { r.Method = "tools/call" }), false},
		{"no connection", with(func(r *mcptasks.RelayRequest) { r.Instance = "" }), false},
		{"no task id", with(func(r *mcptasks.RelayRequest) { r.TaskID = "" }), false},
		{"a negative limit", with(func(r *mcptasks.RelayRequest) { r.Limit = -1 }), false},
		{"over the size bound", with(func(r *mcptasks.RelayRequest) { r.TaskID = strings.Repeat("x", mcptasks.MaxRelayRequestBytes) }), false},
		{"a task request carrying an answer", with(func(r *mcptasks.RelayRequest) { r.AnswerResult = json.RawMessage(`{}`) }), false},
		{"an answer", answer, true},
		{"an answer's error", withAnswer(func(r *mcptasks.RelayRequest) { r.AnswerResult, r.AnswerCode, r.AnswerMessage = nil, -32601, "no" }), true},
		{"an answer with both a result and an error", withAnswer(func(r *mcptasks.RelayRequest) { r.AnswerCode = -32601 }), false},
		{"an answer with neither", withAnswer(func(r *mcptasks.RelayRequest) { r.AnswerResult = nil }), false},
		{"an answer to no request id", withAnswer(func(r *mcptasks.RelayRequest) { r.AnswerID = nil }), false},
		{"an answer to an id that is not JSON", withAnswer(func(r *mcptasks.RelayRequest) { r.AnswerID = json.RawMessage(`"x`) }), false},
		{"an answer over its bound", withAnswer(func(r *mcptasks.RelayRequest) {
			r.AnswerResult = json.RawMessage(`"` + strings.Repeat("x", mcptasks.MaxRelayAnswerBytes) + `"`)
		}), false},
		{"an answer with no connection", withAnswer(func(r *mcptasks.RelayRequest) { r.Instance = "" }), false},
	}
	for _, tc := range cases {
		if err := tc.req.Check(); (err == nil) != tc.ok {
			t.Errorf("%s: Check = %v; want ok %v", tc.reason, err, tc.ok)
		}
	}
}
