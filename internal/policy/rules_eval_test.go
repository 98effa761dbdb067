package policy

import (
	"context"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"google.golang.org/protobuf/types/known/structpb"
)

// TestRuleDecisionsMatchContextEval: Evaluate decides every rule as
// cel-go's ContextEval over a plain map of the variables does (the way
// rules were evaluated before comprehension-free rules skipped the context
// and args became a CEL value converted once) — allow, deny, an evaluation
// error, a cost-limit refusal — over a table of rules, callers and
// arguments.
func TestRuleDecisionsMatchContextEval(t *testing.T) {
	t.Parallel()
	many := make([]string, 200)
	for i := range many {
		many[i] = `"x"`
	}
	rules := []struct {
		reason string
		expr   string
		limit  uint64
	}{
		{"two members of args, the bench rule", `!args.title.contains("DROP TABLE") && size(args.labels) <= 20`, DefaultRuleCostLimit},
		{"args read whole", `size(args) < 4`, DefaultRuleCostLimit},
		{"a key not sent is an evaluation error", `args.missing == "x"`, DefaultRuleCostLimit},
		{"has() guard", `!has(args.title) || args.title != "forbidden"`, DefaultRuleCostLimit},
		{"nested member", `!has(args.env) || args.env.A != "evil"`, DefaultRuleCostLimit},
		{"caller and tool", `caller.subject != "blocked" && tool.startsWith("t") && "invoker" in caller.roles`, DefaultRuleCostLimit},
		{"a comprehension", `!has(args.labels) || args.labels.all(l, l != "prod")`, DefaultRuleCostLimit},
		{"a comprehension over the cost limit", `!has(args.labels) || args.labels.all(a, args.labels.all(b, a != b || a == b))`, 100},
		{"straight-line rule over a tiny cost limit", `args.title.size() > 0 && args.title.size() < 100 && args.title != "x"`, 1},
		{"not a bool", `args.title`, DefaultRuleCostLimit},
	}
	callers := []Caller{
		{Subject: "ci-bot", Method: MethodAPIKey, Roles: []string{RoleInvoker}},
		{Subject: "blocked", Method: MethodJWT, Roles: []string{RoleInvoker, RoleAdmin}},
		{Subject: "anonymous", Method: MethodNone},
	}
	argSets := []string{
		`{"title":"rotate keys","labels":["ops","weekly"]}`,
		`{"title":"DROP TABLE users","labels":[]}`,
		`{"title":"x","labels":["prod"],"env":{"A":"evil"}}`,
		`{"title":"forbidden","labels":[` + strings.Join(many, ",") + `]}`,
		`{"labels":"not a list"}`,
		`{}`,
	}
	for _, rc := range rules {
		env, err := newRuleEnv()
		if err != nil {
			t.Fatal(err)
		}
		ast, iss := env.Compile(rc.expr)
		if iss.Err() != nil {
			t.Fatalf("%s: %v", rc.reason, iss.Err())
		}
		ref, err := env.Program(ast, cel.CostLimit(rc.limit), cel.InterruptCheckFrequency(100))
		if err != nil {
			t.Fatal(err)
		}
		rs, err := NewRules([]Rule{{Name: "r", Expr: rc.expr}}, WithRuleCostLimit(rc.limit))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range callers {
			for _, js := range argSets {
				args := mustStruct(t, js)
				roles := c.Roles
				if roles == nil {
					roles = []string{}
				}
				vars := map[string]any{"args": args, "tool": "tool.x",
					"caller": map[string]any{"subject": c.Subject, "method": c.Method, "roles": roles}}
				val, _, werr := ref.ContextEval(t.Context(), vars)
				want := "error"
				if werr == nil {
					switch v, _ := val.Value().(bool); {
					case val.Type() != cel.BoolType:
						want = "error"
					case v:
						want = "allow"
					default:
						want = "deny"
					}
				}
				got := "allow"
				if err := rs.Evaluate(t.Context(), c, "tool.x", args); err != nil {
					pe, _ := AsError(err)
					switch {
					case pe == nil:
						t.Fatalf("%s: not a policy error: %v", rc.reason, err)
					case pe.Reason == ReasonRuleDenied:
						got = "deny"
					case pe.Reason == ReasonRuleError:
						got = "error"
					}
				}
				if got != want {
					t.Errorf("%s, %s, %s: %s, ContextEval over the map says %s (%v)", rc.reason, c.Subject, js, got, want, werr)
				}
			}
		}
	}
}

// TestRuleWithComprehensionIsInterrupted: a rule with a comprehension still
// runs under the call's context, so a cancelled call stops it and is
// refused as interrupted.
func TestRuleWithComprehensionIsInterrupted(t *testing.T) {
	t.Parallel()
	rs, err := NewRules([]Rule{{Name: "loop", Expr: `args.items.all(a, args.items.all(b, a == b))`}})
	if err != nil {
		t.Fatal(err)
	}
	items := make([]*structpb.Value, 300)
	for i := range items {
		items[i] = structpb.NewStringValue("x")
	}
	args := &structpb.Struct{Fields: map[string]*structpb.Value{"items": structpb.NewListValue(&structpb.ListValue{Values: items})}}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	pe := wantPolicyError(t, rs.Evaluate(ctx, Caller{}, "t", args), PermissionDenied, ReasonRuleError)
	if !strings.Contains(pe.Message, "interrupted") {
		t.Fatalf("message %q, want the rule interrupted", pe.Message)
	}
}

// TestRuleEvaluateAllocations bounds what judging the bench rule (two
// members of args, no comprehension) allocates: the context machinery is
// for comprehensions only, and args is converted to a CEL value once.
func TestRuleEvaluateAllocations(t *testing.T) {
	rs, err := NewRules([]Rule{{Name: "bench", Expr: `!args.title.contains("DROP TABLE") && size(args.labels) <= 20`}})
	if err != nil {
		t.Fatal(err)
	}
	args := mustStruct(t, `{"title":"rotate","labels":["ops","release","staging"]}`)
	c := Caller{Subject: "ci-bot", Method: MethodAPIKey, Roles: []string{RoleInvoker}}
	ctx := t.Context()
	n := testing.AllocsPerRun(200, func() {
		if err := rs.Evaluate(ctx, c, "bench_tool", args); err != nil {
			t.Fatal(err)
		}
	})
	const most = 20
	if n > most {
		t.Fatalf("Evaluate allocates %.0f times, want at most %d", n, most)
	}
	t.Logf("Evaluate allocates %.0f times", n)
}
