package server_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/replay"
	"google.golang.org/protobuf/types/known/structpb"
)

var updateReplay = flag.Bool("update-replay", false, "rewrite testdata/replay/audit.jsonl and the report goldens")

// Volatile members of an audit line: when it was written and how long the
// call took. The golden audit holds them fixed.
var (
	auditTime    = regexp.MustCompile(`"time":"[^"]*"`)
	auditLatency = regexp.MustCompile(`"latency_ms":[0-9.e+-]+`)
)

const keyRetired = "fd_e2e_retired_9d3e7a51"

// TestReplayAuditIsTheGatewaysOwn: testdata/replay/audit.jsonl is what
// the gateway writes today for the calls below (its time and latency
// aside), so the replay tests read the real format, not a hand-written
// one. A change to the audit line fails here first; -update-replay
// rewrites the file.
func TestReplayAuditIsTheGatewaysOwn(t *testing.T) {
	t.Parallel()
	signer := newJWTSigner(t)
	p := testPolicy(signer)
	p.Auth.APIKeys = append(p.Auth.APIKeys, policy.APIKey{Name: "retired", SHA256: policy.HashAPIKey(keyRetired), Roles: []string{policy.RoleInvoker}})
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	p.Audit = server.AuditConfig{Path: path}
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(p), gatewaytest.WithTool(sensitiveTool),
		gatewaytest.WithBackendHandler("signup", func(context.Context, *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
			return &gatewayv1.InvokeResponse{Result: structpb.NewBoolValue(true)}, nil
		}))
	calls := []struct {
		key, id, tool string
		args          map[string]any
	}{
		{keyInvoker, "c-note-long", "create_note", map[string]any{"title": "Weekly plan", "tags": `["a","b"]`}},
		{keyInvoker, "c-note-short", "create_note", map[string]any{"title": "Hi"}},
		{keyInvoker, "c-chain", "run_command", map[string]any{"command": "ls && rm -rf /"}},
		{keyInvoker, "c-sudo", "run_command", map[string]any{"command": "sudo ls"}},
		{keyLimited, "c-limited-run", "run_command", map[string]any{"command": "ls"}},
		{keyLimited, "c-limited-note", "create_note", map[string]any{"title": "x"}},
		{keyInvoker, "c-invalid", "create_note", map[string]any{"title": ""}},
		{keyInvoker, "c-signup", "signup", map[string]any{"title": "t", "password": "pw-SECRET"}},
		{"fd_unknown_key_0000", "c-unauth", "create_note", map[string]any{"title": "x"}},
		{keyInvoker, "c-missing", "no_such_tool", map[string]any{"a": 1}},
		{keyAdmin, "c-admin", "create_note", map[string]any{"title": "x"}},
		{keyRetired, "c-retired", "create_note", map[string]any{"title": "x"}},
	}
	for _, c := range calls {
		env.Client.InvokeTool(withKey(c.key), &gatewayv1.InvokeToolRequest{Tool: c.tool, CallId: c.id, Arguments: gatewaytest.Args(t, c.args)})
	}
	// A JWT caller: its roles are its token's, recorded on its line.
	tok := signer.token(t, jwtAud, time.Now().Add(time.Hour), policy.RoleInvoker)
	env.Client.InvokeTool(withBearer(tok), &gatewayv1.InvokeToolRequest{Tool: "create_note", CallId: "c-jwt", Arguments: gatewaytest.Args(t, map[string]any{"title": "From a token"})})
	_, raw := auditLines(t, env, path)
	got := auditLatency.ReplaceAll(auditTime.ReplaceAll([]byte(raw), []byte(`"time":"2026-12-01T10:00:00Z"`)), []byte(`"latency_ms":1`))
	golden := filepath.Join("testdata", "replay", "audit.jsonl")
	if *updateReplay {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the gateway's audit lines differ from %s (run with -update-replay if the change is meant):\ngot:\n%s\nwant:\n%s", golden, got, want)
	}
}

// TestReplay: the recorded audit replayed against the candidate policy and
// tools (testdata/replay/*.candidate.yaml) reports each decision that
// changes — a rule no longer refusing, a new rule refusing, an allow list
// narrowed, a schema now refusing — and counts what it cannot replay
// (redacted arguments, a caller the candidate does not know,
// authentication); a JWT caller is judged with the roles its line
// recorded. Text and JSON reports are golden files.
func TestReplay(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("testdata", "replay")
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			f, err := os.Open(filepath.Join(dir, "audit.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			rep, err := server.ReplayAudit(t.Context(), filepath.Join(dir, "policy.candidate.yaml"), filepath.Join(dir, "tools.candidate.yaml"), f, replay.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			golden := filepath.Join(dir, "report.txt")
			if format == "json" {
				err, golden = rep.WriteJSON(&out), filepath.Join(dir, "report.json")
			} else {
				err = rep.WriteText(&out)
			}
			if err != nil {
				t.Fatal(err)
			}
			if *updateReplay {
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Errorf("report differs from %s (-update-replay rewrites it):\ngot:\n%s\nwant:\n%s", golden, out.Bytes(), want)
			}
		})
	}
}
