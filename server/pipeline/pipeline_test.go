package pipeline_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowdrop/gateway/registry/schema"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/internal/demotools"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/memstore"
	"github.com/flowdrop/gateway/server/pipeline"
)

// demoRegistry is a started registry holding the demo tools (their
// backend address is never dialled: these tests use a local Backend).
func demoRegistry(t *testing.T) *registry.Registry {
	t.Helper()
	tools, err := registry.ParseTools(demotools.ToolsYAML("127.0.0.1:1"), "demo")
	if err != nil {
		t.Fatal(err)
	}
	store := memstore.New()
	t.Cleanup(func() { store.Close() })
	if err := registry.Seed(t.Context(), store, tools); err != nil {
		t.Fatal(err)
	}
	reg := registry.New(store)
	if err := reg.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	return reg
}

// echoBackend answers every call with its (normalized) arguments and
// remembers what it was given.
type echoBackend struct {
	mu    sync.Mutex
	calls []*structpb.Struct
	err   error
}

func (b *echoBackend) Invoke(_ context.Context, c *pipeline.Call) (pipeline.Result, error) {
	args, err := c.Args()
	if err != nil {
		return pipeline.Result{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, args)
	if b.err != nil {
		return pipeline.Result{}, b.err
	}
	return pipeline.Result{Value: structpb.NewStructValue(args)}, nil
}

// recorder keeps every outcome.
type recorder struct {
	mu       sync.Mutex
	outcomes []pipeline.Outcome
	backend  []string
}

func (r *recorder) RecordCall(_ context.Context, _ *pipeline.Call, o pipeline.Outcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.outcomes = append(r.outcomes, o)
}

func (r *recorder) RecordBackend(tool, code string, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.backend = append(r.backend, tool+":"+code)
}

func args(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func unitPolicy(t *testing.T) pipeline.Config {
	t.Helper()
	authz, err := policy.NewAuthorizer(policy.AuthzConfig{
		Default: policy.ToolAccess{Allow: []string{"*"}},
		Callers: map[string]policy.ToolAccess{"limited": {Allow: []string{"*"}, Deny: []string{"run_*"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	rules, err := policy.NewRules([]policy.Rule{{Name: "no-shell-chaining", Tools: []string{"run_command"}, Expr: `!args.command.contains("&&")`}})
	if err != nil {
		t.Fatal(err)
	}
	return pipeline.Config{RequireCaller: true, Authz: authz, Rules: rules, Limits: policy.Limits{MaxDepth: 4}}
}

var (
	invoker = policy.Caller{Subject: "invoker", Method: policy.MethodAPIKey, Roles: []string{policy.RoleInvoker}}
	admin   = policy.Caller{Subject: "admin", Method: policy.MethodAPIKey, Roles: []string{policy.RoleAdmin}}
	both    = policy.Caller{Subject: "both", Method: policy.MethodAPIKey, Roles: []string{policy.RoleAdmin, policy.RoleInvoker}}
	limited = policy.Caller{Subject: "limited", Method: policy.MethodAPIKey, Roles: []string{policy.RoleInvoker}}
)

// TestInvokeAppliesThePolicy: the transport-free entry point (MCP) runs the
// stages in order and records exactly one outcome per call.
func TestInvokeAppliesThePolicy(t *testing.T) {
	t.Parallel()
	be, rec := &echoBackend{}, &recorder{}
	cfg := unitPolicy(t)
	cfg.Registry, cfg.Backend, cfg.Recorders = demoRegistry(t), be, []pipeline.Recorder{rec}
	p := pipeline.New(cfg)
	cases := []struct {
		name, reason string
		ctx          context.Context
		tool         string
		args         map[string]any
		refusal      string // "" : passes every check and reaches the backend
	}{
		{name: "unauthenticated", reason: "no caller in ctx is refused", ctx: context.Background(),
			tool: "create_note", args: map[string]any{"title": "x"}, refusal: policy.ReasonCredentialsMissing},
		{name: "admin-only", reason: "role check for InvokeTool", ctx: policy.WithCaller(context.Background(), admin),
			tool: "create_note", args: map[string]any{"title": "x"}, refusal: policy.ReasonRoleMissing},
		{name: "tool-denied", reason: "per-caller deny list", ctx: policy.WithCaller(context.Background(), limited),
			tool: "run_command", args: map[string]any{"command": "ls"}, refusal: policy.ReasonToolDenied},
		{name: "bypass", reason: "the rule sees the normalized command", ctx: policy.WithCaller(context.Background(), invoker),
			tool: "run_command", args: map[string]any{"command": "ls &amp;&amp; rm -rf /"}, refusal: policy.ReasonRuleDenied},
		{name: "depth-after-decoding", reason: "limits run on the normalized arguments too", ctx: policy.WithCaller(context.Background(), invoker),
			tool: "update_settings", args: map[string]any{"settings": `{"a":{"b":{"c":{"d":1}}}}`}, refusal: policy.ReasonLimitDepth},
		{name: "allowed", reason: "a harmless call passes every check and reaches the backend", ctx: policy.WithCaller(context.Background(), invoker),
			tool: "run_command", args: map[string]any{"command": "ls &amp; pwd"}},
	}
	ran := 0
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ran++
			c := pipeline.NewCall(tc.tool, "", args(t, tc.args))
			res, err := p.Invoke(tc.ctx, c)
			if tc.refusal == "" {
				if err != nil {
					t.Fatalf("err = %v, want success (%s)", err, tc.reason)
				}
				if got := res.Value.GetStructValue().GetFields()["command"].GetStringValue(); got != "ls & pwd" {
					t.Errorf("backend got command %q, want the normalized %q", got, "ls & pwd")
				}
				return
			}
			if err == nil || err.Kind != pipeline.KindPolicy || string(err.Reason) != tc.refusal {
				t.Fatalf("err = %+v, want policy refusal %s (%s)", err, tc.refusal, tc.reason)
			}
		})
	}
	if len(rec.outcomes) != ran {
		t.Errorf("%d outcomes recorded for %d calls", len(rec.outcomes), ran)
	}
	if len(be.calls) > 1 || len(rec.backend) != len(be.calls) || len(be.calls) == 1 && rec.backend[0] != "run_command:OK" {
		t.Errorf("backend calls %d, recorded %v; want at most the allowed call", len(be.calls), rec.backend)
	}
}

// TestStageHookSeesTheStagesInOrder: StageHook runs before each stage, in
// the one list's order, then dispatch ends the call.
func TestStageHookSeesTheStagesInOrder(t *testing.T) {
	t.Parallel()
	var seen []string
	p := pipeline.New(pipeline.Config{Registry: demoRegistry(t), Backend: &echoBackend{},
		StageHook: func(stage string, _ *pipeline.Call) { seen = append(seen, stage) }})
	if _, err := p.Invoke(context.Background(), pipeline.NewCall("create_note", "", args(t, map[string]any{"title": "x"}))); err != nil {
		t.Fatal(err)
	}
	want := p.StageNames()
	if !slices.Equal(append(seen, "dispatch"), want) {
		t.Errorf("stages ran %v, want %v", seen, want)
	}
	at := func(name string) int { return slices.Index(want, name) }
	if !(at("normalize") >= 0 && at("normalize") < at("validate") && at("validate") < at("rules")) {
		t.Errorf("stage order %v: normalization must come before validation and before the rules", want)
	}
	if !(at("identifiers") >= 0 && at("identifiers") < at("rate-limit")) {
		t.Errorf("stage order %v: the tool name must be checked before a rate-limit bucket is keyed by it", want)
	}
}

// TestVisibleIsInvocability: a caller sees a tool exactly when it could
// invoke it, whatever its other roles.
func TestVisibleIsInvocability(t *testing.T) {
	t.Parallel()
	cfg := unitPolicy(t)
	cfg.Registry, cfg.Backend = demoRegistry(t), &echoBackend{}
	p := pipeline.New(cfg)
	cases := []struct {
		name, reason string
		caller       *policy.Caller
		tool         string
		want         bool
	}{
		{name: "invoker", reason: "an invoker sees an allowed tool", caller: &invoker, tool: "create_note", want: true},
		{name: "admin-only", reason: "admin does not imply invoker: no tool is visible", caller: &admin, tool: "create_note", want: false},
		{name: "both-roles", reason: "admin and invoker sees what it may invoke", caller: &both, tool: "create_note", want: true},
		{name: "denied", reason: "a denied tool is hidden", caller: &limited, tool: "run_command", want: false},
		{name: "unauthenticated", reason: "no caller sees nothing", tool: "create_note", want: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.caller != nil {
				ctx = policy.WithCaller(ctx, *tc.caller)
			}
			if got := p.Visible(ctx, tc.tool); got != tc.want {
				t.Errorf("Visible = %v, want %v (%s)", got, tc.want, tc.reason)
			}
			// Visible must agree with what Invoke would do up to the tool lists.
			_, err := p.Invoke(ctx, pipeline.NewCall(tc.tool, "", args(t, map[string]any{"title": "x", "command": "ls"})))
			refusedByAccess := err != nil && err.Kind == pipeline.KindPolicy &&
				(err.Code == pipeline.Unauthenticated || err.Reason == policy.ReasonRoleMissing ||
					err.Reason == policy.ReasonToolDenied || err.Reason == policy.ReasonToolNotAllowed)
			if refusedByAccess == tc.want {
				t.Errorf("Invoke err %v disagrees with Visible = %v (%s)", err, tc.want, tc.reason)
			}
		})
	}
}

// TestClassify: every error a call can end with becomes one *Error with a
// code, a kind and a caller-safe message.
func TestClassify(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, reason string
		err          error
		code         pipeline.Code
		kind         pipeline.Kind
		msg          string
	}{
		{name: "policy", reason: "a policy refusal keeps its reason and code",
			err:  &policy.Error{Code: policy.ResourceExhausted, Reason: policy.ReasonRateLimited, Message: "slow down", RetryAfter: time.Second},
			code: pipeline.ResourceExhausted, kind: pipeline.KindPolicy, msg: "slow down"},
		{name: "validation", reason: "schema violations are InvalidArgument",
			err:  &schema.ValidationError{Tool: "t", Violations: []schema.Violation{{Pointer: "/a", Message: "bad"}}},
			code: pipeline.InvalidArgument, kind: pipeline.KindValidation},
		{name: "wrapped", reason: "errors are found when wrapped",
			err:  errors.Join(errors.New("ctx"), &policy.Error{Code: policy.PermissionDenied, Reason: policy.ReasonToolDenied, Message: "no"}),
			code: pipeline.PermissionDenied, kind: pipeline.KindPolicy, msg: "no"},
		{name: "canceled", reason: "cancellation is Canceled", err: context.Canceled, code: pipeline.Canceled, msg: "call canceled"},
		{name: "deadline", reason: "a deadline is DeadlineExceeded", err: context.DeadlineExceeded, code: pipeline.DeadlineExceeded, msg: "deadline exceeded"},
		{name: "internal", reason: "anything else is our fault, and its text stays out of the message",
			err: errors.New("open /srv/secret/path: denied"), code: pipeline.Internal, msg: "internal error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := pipeline.Classify(tc.err)
			if e.Code != tc.code || e.Kind != tc.kind {
				t.Fatalf("Classify = code %v kind %v, want %v %v (%s)", e.Code, e.Kind, tc.code, tc.kind, tc.reason)
			}
			if tc.msg != "" && e.Message != tc.msg {
				t.Errorf("message %q, want %q (%s)", e.Message, tc.msg, tc.reason)
			}
			if strings.Contains(e.Message, "/srv/secret") {
				t.Errorf("message %q leaks a server path", e.Message)
			}
		})
	}
	if pipeline.Classify(nil) != nil {
		t.Error("Classify(nil) != nil")
	}
}

// TestOutcomeLabelNamesRegisteredToolsRefusedEarly: a call refused before
// the normalize stage (role, allow-list) is counted under its tool when the
// tool is registered, and under "_unknown" only when it is not, so the
// per-tool denial metrics see allow-list refusals.
func TestOutcomeLabelNamesRegisteredToolsRefusedEarly(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	cfg := unitPolicy(t)
	cfg.Registry, cfg.Backend, cfg.Recorders = demoRegistry(t), &echoBackend{}, []pipeline.Recorder{rec}
	p := pipeline.New(cfg)
	cases := []struct {
		name, reason, tool, label string
		caller                    policy.Caller
	}{
		{name: "allow-list", reason: "denied by the caller's deny list before normalize", tool: "run_command", label: "run_command", caller: limited},
		{name: "role", reason: "refused by the role check before normalize", tool: "create_note", label: "create_note", caller: admin},
		{name: "unregistered", reason: "a name the registry does not hold never becomes a label", tool: "no_such_tool", label: "_unknown", caller: invoker},
	}
	for _, tc := range cases {
		rec.mu.Lock()
		rec.outcomes = nil
		rec.mu.Unlock()
		c := pipeline.NewCall(tc.tool, "", args(t, map[string]any{"command": "ls"}))
		ctx := policy.WithCaller(context.Background(), tc.caller)
		_, err := p.Invoke(ctx, c)
		if err == nil {
			t.Fatalf("%s: call succeeded, want a refusal (%s)", tc.name, tc.reason)
		}
		rec.mu.Lock()
		got := rec.outcomes
		rec.mu.Unlock()
		if len(got) != 1 || got[0].Label != tc.label {
			t.Errorf("%s: outcomes %+v, want one labelled %q (%s)", tc.name, got, tc.label, tc.reason)
		}
	}
}
