package replay_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/replay"
)

// goldenLines are the audit lines the real gateway wrote
// (server/testdata/replay/audit.jsonl, held to the gateway by
// TestReplayAuditIsTheGatewaysOwn), by call id.
func goldenLines(t *testing.T) map[string][]byte {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "testdata", "replay", "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]byte{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r struct {
			CallID string `json:"call_id"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		out[r.CallID] = append([]byte(nil), sc.Bytes()...)
	}
	return out
}

// line is an audit line the gateway's own encoder writes for rec
// (AuditRecord.MarshalJSON, which the sink's line is held equal to).
func line(t *testing.T, rec policy.AuditRecord) []byte {
	t.Helper()
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// candidate is the recorded policy of the golden audit (invoker, limited,
// admin API keys; the chaining rule) over create_note, run_command and
// signup.
func candidate(t *testing.T, auth policy.AuthConfig) replay.Candidate {
	t.Helper()
	obj := func(props string) registry.Tool {
		tools, err := registry.ParseTools([]byte(`tools:
  - name: x
    backend: 127.0.0.1:1
    input_schema: {type: object, additionalProperties: false, properties: `+props+`}
`), "test")
		if err != nil {
			t.Fatal(err)
		}
		return tools[0]
	}
	note, run := obj(`{title: {type: string, minLength: 1}, tags: {type: array, items: {type: string}}}`), obj(`{command: {type: string}}`)
	signup := obj(`{title: {type: string}, password: {type: string, format: password}}`)
	note.Name, run.Name, signup.Name = "create_note", "run_command", "signup"
	tools, err := replay.CompileTools([]registry.Tool{note, run, signup}, registry.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	az, err := policy.NewAuthorizer(policy.AuthzConfig{Default: policy.ToolAccess{Allow: []string{"*"}},
		Callers: map[string]policy.ToolAccess{"limited": {Allow: []string{"create_note", "run_*"}, Deny: []string{"run_*"}}}})
	if err != nil {
		t.Fatal(err)
	}
	rules, err := policy.NewRules([]policy.Rule{{Name: "no-shell-chaining", Tools: []string{"run_command"}, Expr: `!args.command.contains("&&")`}})
	if err != nil {
		t.Fatal(err)
	}
	return replay.Candidate{Tools: tools, Authz: az, Rules: rules, Callers: replay.CallersFromAuth(auth)}
}

var recordedAuth = policy.AuthConfig{Mode: policy.AuthOn, APIKeys: []policy.APIKey{
	{Name: "invoker", Roles: []string{policy.RoleInvoker}},
	{Name: "limited", Roles: []string{policy.RoleInvoker}},
	{Name: "admin", Roles: []string{policy.RoleAdmin}},
}}

func TestRun(t *testing.T) {
	t.Parallel()
	g := goldenLines(t)
	// A line written before caller_roles was: the JWT caller's roles unknown.
	oldJWT := regexp.MustCompile(`,"caller_roles":\[[^\]]*\]`).ReplaceAll(g["c-jwt"], nil)
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		name, reason string
		lines        [][]byte
		auth         *policy.AuthConfig // default recordedAuth
		want         replay.Report      // the counts (Changes are not compared)
	}{
		{name: "unchanged", reason: "under the policy they were recorded with, every replayable call comes out as it did",
			lines: [][]byte{g["c-note-long"], g["c-note-short"], g["c-chain"], g["c-limited-run"], g["c-limited-note"], g["c-invalid"], g["c-missing"], g["c-admin"]},
			want:  replay.Report{Lines: 8, Calls: 8, Replayed: 8, Unchanged: 8}},
		{name: "redacted", reason: "a call whose arguments were redacted is not replayable",
			lines: [][]byte{g["c-signup"]},
			want:  replay.Report{Lines: 1, Calls: 1, NotReplayable: map[string]int64{replay.NotReplayableRedacted: 1}}},
		{name: "jwt", reason: "a JWT caller is judged with the roles its line recorded (its token's)",
			lines: [][]byte{g["c-jwt"]},
			want:  replay.Report{Lines: 1, Calls: 1, Replayed: 1, Unchanged: 1}},
		{name: "jwt-roles-not-recorded", reason: "a JWT caller's line without caller_roles (written before them): its roles are not known",
			lines: [][]byte{oldJWT},
			want:  replay.Report{Lines: 1, Calls: 1, NotReplayable: map[string]int64{replay.NotReplayableCallerUnknown: 1}}},
		{name: "auth-off", reason: "with authentication off every caller is the anonymous one: limited's denied tool is allowed",
			lines: [][]byte{g["c-limited-run"]}, auth: &policy.AuthConfig{Mode: policy.AuthOff},
			want: replay.Report{Lines: 1, Calls: 1, NotReplayable: map[string]int64{replay.NotReplayableNotRecorded: 1}}},
		{name: "access-without-arguments", reason: "a refusal made before the arguments were recorded is replayed when the access checks alone decide it (role, allow lists, no such tool)",
			lines: [][]byte{g["c-admin"], g["c-limited-run"], g["c-missing"]},
			want:  replay.Report{Lines: 3, Calls: 3, Replayed: 3, Unchanged: 3}},
		{name: "not-tool-calls", reason: "registry writes, federated requests, audit-gap lines and later input rounds are skipped, not counted as calls",
			lines: [][]byte{
				line(t, policy.AuditRecord{Time: t0, CallerSubject: "admin", CallerMethod: "api-key", Tool: "create_note", Decision: "allow", Operation: "RegisterTool", Revision: 3}),
				line(t, policy.AuditRecord{Time: t0, CallerSubject: "invoker", CallerMethod: "api-key", Tool: "flowdrop-mcp://docs/a", Decision: "allow", Operation: "resources/read"}),
				line(t, policy.AuditRecord{Time: t0, Decision: "error", Reason: policy.ReasonAuditGap, RecordsDropped: 4}),
				line(t, policy.AuditRecord{Time: t0, CallerSubject: "invoker", CallerMethod: "api-key", Tool: "create_note", Decision: "allow", InputRound: 2}),
			},
			want: replay.Report{Lines: 4, Skipped: map[string]int64{replay.SkipNotToolCall: 2, replay.SkipAuditGap: 1, replay.SkipInputRound: 1}}},
		{name: "state", reason: "a rate-limited call stopped before the argument checks, on limiter state: not replayable",
			lines: [][]byte{line(t, policy.AuditRecord{Time: t0, CallerSubject: "invoker", CallerMethod: "api-key", Tool: "create_note", Decision: "deny", Reason: policy.ReasonRateLimited})},
			want:  replay.Report{Lines: 1, Calls: 1, NotReplayable: map[string]int64{replay.NotReplayableRateLimited: 1}}},
		{name: "backend-error", reason: "a call its backend failed passed the policy: replayed as allowed",
			lines: [][]byte{line(t, policy.AuditRecord{Time: t0, CallerSubject: "invoker", CallerMethod: "api-key", Tool: "run_command", Decision: "error", Reason: "FailedPrecondition",
				Validation: "ok", BackendCode: "FailedPrecondition", ArgsSent: json.RawMessage(`{"command":"a && b"}`)})},
			want: replay.Report{Lines: 1, Calls: 1, Replayed: 1, AllowedToRefused: 1}},
		{name: "unreadable", reason: "a line that is not JSON is counted, and the next line is still replayed",
			lines: [][]byte{[]byte(`{"time":`), g["c-note-short"]},
			want:  replay.Report{Lines: 2, Calls: 2, Replayed: 1, Unchanged: 1, NotReplayable: map[string]int64{replay.NotReplayableUnreadable: 1}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			auth := recordedAuth
			if tc.auth != nil {
				auth = *tc.auth
			}
			rep, err := replay.Run(t.Context(), bytes.NewReader(append(bytes.Join(tc.lines, []byte("\n")), '\n')), candidate(t, auth), replay.Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkCounts(t, rep, tc.want, tc.reason)
		})
	}
}

func checkCounts(t *testing.T, got *replay.Report, want replay.Report, reason string) {
	t.Helper()
	if want.NotReplayable == nil {
		want.NotReplayable = map[string]int64{}
	}
	if want.Skipped == nil {
		want.Skipped = map[string]int64{}
	}
	g, w := *got, want
	g.Changes, w.Changes = nil, nil
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if !bytes.Equal(gb, wb) {
		t.Errorf("counts\n got %s\nwant %s\n(%s)", gb, wb, reason)
	}
}

// TestRunIsBounded: the audit is streamed — a line over MaxLineBytes is
// read past and counted, not buffered — and the report lists at most
// MaxChanges changes, counting the rest.
func TestRunIsBounded(t *testing.T) {
	t.Parallel()
	g := goldenLines(t)
	huge := io.MultiReader(strings.NewReader(`{"args_sent":"`), io.LimitReader(repeat('a'), 8<<20), strings.NewReader("\"}\n"))
	var changes []io.Reader
	for range 50 {
		changes = append(changes, bytes.NewReader(append(bytes.Clone(g["c-chain"]), '\n')))
	}
	in := io.MultiReader(append([]io.Reader{huge}, changes...)...)
	cand := candidate(t, recordedAuth)
	cand.Rules = nil // the chained command is allowed now: 50 changes
	rep, err := replay.Run(t.Context(), in, cand, replay.Options{MaxLineBytes: 1 << 20, MaxChanges: 3})
	if err != nil {
		t.Fatal(err)
	}
	checkCounts(t, rep, replay.Report{Lines: 51, Calls: 51, Replayed: 50, RefusedToAllowed: 50, ChangesOmitted: 47,
		NotReplayable: map[string]int64{replay.NotReplayableUnreadable: 1}}, "one line over the bound, 50 changes, 3 listed")
	if len(rep.Changes) != 3 || rep.Changes[0].Line != 2 || rep.Changes[2].Line != 4 {
		t.Errorf("changes %+v, want lines 2 to 4", rep.Changes)
	}
}

type repeat byte

func (r repeat) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}
