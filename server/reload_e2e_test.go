package server_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/pipeline"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
)

// noForbiddenTitles is the rule the reload tests add.
var noForbiddenTitles = policy.Rule{Name: "no-forbidden-titles", Tools: []string{"create_note"},
	Expr: `!args.title.startsWith("forbidden")`}

// invokeNote calls create_note with title as the invoker.
func invokeNote(t *testing.T, env *gatewaytest.Env, key, title, callID string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(withKey(key), 10*time.Second)
	defer cancel()
	_, err := env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: "create_note", CallId: callID,
		Arguments: gatewaytest.Args(t, map[string]any{"title": title})})
	return err
}

func readyzBody(t *testing.T, env *gatewaytest.Env) string {
	t.Helper()
	resp, err := http.Get(env.AdminURL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestReloadPolicy: a reload with a new deny rule is enforced on the next
// call over real gRPC; a broken policy (a CEL error, a bad file, a change a
// reload cannot make) is refused with an ERROR line naming the problem and
// counted, and the policy in force keeps serving; the active policy's hash
// is in flowdrop_policy_info and /readyz.
func TestReloadPolicy(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	p := testPolicy(nil)
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(p), gatewaytest.WithAdmin(), gatewaytest.WithLogOutput(logs))
	g := env.Gateway
	startHash := g.PolicySHA256()
	if !strings.Contains(readyzBody(t, env), "policy_sha256 "+startHash) {
		t.Errorf("/readyz = %q, want the policy's hash %s", readyzBody(t, env), startHash)
	}
	if err := invokeNote(t, env, keyInvoker, "forbidden plans", ""); err != nil {
		t.Fatalf("before the reload: %v", err)
	}

	next := testPolicy(nil)
	next.Rules = append(next.Rules, noForbiddenTitles)
	if err := g.ReloadPolicy(next); err != nil {
		t.Fatalf("ReloadPolicy: %v", err)
	}
	err := invokeNote(t, env, keyInvoker, "forbidden plans", "")
	if _, pr := policyReason(err); status.Code(err) != codes.PermissionDenied || pr != policy.ReasonRuleDenied {
		t.Fatalf("after the reload: %v, want PermissionDenied by the new rule", err)
	}
	if err := invokeNote(t, env, keyInvoker, "plans", ""); err != nil {
		t.Errorf("an allowed title after the reload: %v", err)
	}
	okHash := g.PolicySHA256()
	if okHash == startHash {
		t.Errorf("the hash did not change with the policy")
	}

	dir := t.TempDir()
	badFile := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(badFile, []byte("auth:\n  mode: on\n  api_kyes: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	brokenRule := testPolicy(nil)
	brokenRule.Rules = []policy.Rule{{Name: "half-typed", Expr: `args.title.startsWith(`}}
	auditMoved := next
	auditMoved.Audit = server.AuditConfig{Path: filepath.Join(dir, "audit.jsonl")}
	idemChanged := next
	idemChanged.Idempotency.TTL = time.Hour
	broken := []struct {
		name, reason string
		reload       func() error
		want         string // in the error and the ERROR line
	}{
		{name: "cel", reason: "a rule that does not compile is refused, naming the rule",
			reload: func() error { return g.ReloadPolicy(brokenRule) }, want: `rule "half-typed"`},
		{name: "unknown-key", reason: "a file with a typo is refused naming the field",
			reload: func() error { return g.ReloadPolicyFile(badFile, nil) }, want: "api_kyes"},
		{name: "missing-file", reason: "a file that cannot be read is refused",
			reload: func() error { return g.ReloadPolicyFile(filepath.Join(dir, "gone.yaml"), nil) }, want: "gone.yaml"},
		{name: "audit-path", reason: "the audit log cannot change without a restart: refused loudly, not ignored",
			reload: func() error { return g.ReloadPolicy(auditMoved) }, want: "audit (path, rotate_bytes, keep_rotated, keep_rotated_for, on_failure) cannot change without a restart"},
		{name: "idempotency", reason: "the idempotency store is built at start: a changed ttl is refused, not silently ignored",
			reload: func() error { return g.ReloadPolicy(idemChanged) }, want: "idempotency cannot change without a restart"},
	}
	for _, tc := range broken {
		err := tc.reload()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: ReloadPolicy = %v, want an error naming %q (%s)", tc.name, err, tc.want, tc.reason)
		}
		if g.PolicySHA256() != okHash {
			t.Errorf("%s: the policy in force changed (%s)", tc.name, tc.reason)
		}
	}
	var errorLines int
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "level=ERROR") && strings.Contains(line, "policy reload refused") {
			errorLines++
		}
	}
	if errorLines != len(broken) {
		t.Errorf("%d ERROR lines for %d refused reloads; log:\n%s", errorLines, len(broken), logs)
	}
	// The policy in force still serves: the rule of the good reload holds.
	err = invokeNote(t, env, keyInvoker, "forbidden plans", "")
	if status.Code(err) != codes.PermissionDenied {
		t.Errorf("after the refused reloads: %v, want the reloaded rule still enforced", err)
	}
	fams := scrape(t, env.AdminURL)
	if got := sample(fams, "flowdrop_policy_reload_total", map[string]string{"result": "ok"}); got != 1 {
		t.Errorf(`flowdrop_policy_reload_total{result="ok"} = %v, want 1`, got)
	}
	if got := sample(fams, "flowdrop_policy_reload_total", map[string]string{"result": "error"}); got != float64(len(broken)) {
		t.Errorf(`flowdrop_policy_reload_total{result="error"} = %v, want %d`, got, len(broken))
	}
	info := fams["flowdrop_policy_info"]
	if info == nil || len(info.GetMetric()) != 1 || info.GetMetric()[0].GetLabel()[0].GetValue() != okHash {
		t.Errorf("flowdrop_policy_info = %v, want one series for %s", info, okHash)
	}
	if body := readyzBody(t, env); !strings.Contains(body, "policy_sha256 "+okHash) {
		t.Errorf("/readyz = %q, want the reloaded policy's hash", body)
	}
}

// TestReloadCallsInFlightKeepTheirPolicy: a call that began before a reload
// finishes under the policy it began with, wherever it is — held before
// its rules stage (the new rule would refuse it), or in its backend (the
// reload removed its caller's key) — while calls that begin after the
// reload get the new policy.
func TestReloadCallsInFlightKeepTheirPolicy(t *testing.T) {
	t.Parallel()
	atRules, releaseRules := make(chan struct{}), make(chan struct{})
	inBackend, releaseBackend := make(chan struct{}), make(chan struct{})
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(testPolicy(nil)),
		gatewaytest.WithConfig(func(c *server.Config) {
			c.StageHook = func(stage string, c *pipeline.Call) {
				if stage == "rules" && c.CallID == "held-at-rules" {
					close(atRules)
					<-releaseRules
				}
			}
		}),
		gatewaytest.WithBackendHandler("create_note", func(_ context.Context, req *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
			if req.GetCallId() == "held-in-backend" {
				close(inBackend)
				<-releaseBackend
			}
			return &gatewayv1.InvokeResponse{Result: structpb.NewStringValue("ok")}, nil
		}))
	g := env.Gateway

	heldAtRules, heldInBackend := make(chan error, 1), make(chan error, 1)
	go func() { heldAtRules <- invokeNote(t, env, keyInvoker, "forbidden plans", "held-at-rules") }()
	go func() { heldInBackend <- invokeNote(t, env, keyLimited, "plans", "held-in-backend") }()
	<-atRules
	<-inBackend

	next := testPolicy(nil)
	next.Rules = append(next.Rules, noForbiddenTitles)
	next.Auth.APIKeys = next.Auth.APIKeys[:2] // the limited caller's key is gone
	if err := g.ReloadPolicy(next); err != nil {
		t.Fatalf("ReloadPolicy: %v", err)
	}
	if err := invokeNote(t, env, keyInvoker, "forbidden plans", ""); status.Code(err) != codes.PermissionDenied {
		t.Errorf("a call begun after the reload: %v, want the new rule's PermissionDenied", err)
	}
	if err := invokeNote(t, env, keyLimited, "plans", ""); status.Code(err) != codes.Unauthenticated {
		t.Errorf("the removed key after the reload: %v, want Unauthenticated", err)
	}
	close(releaseRules)
	close(releaseBackend)
	if err := <-heldAtRules; err != nil {
		t.Errorf("the call held before its rules stage: %v, want OK under the policy it began with", err)
	}
	if err := <-heldInBackend; err != nil {
		t.Errorf("the call held in its backend: %v, want OK", err)
	}
}
