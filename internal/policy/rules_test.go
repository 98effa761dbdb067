package policy

import (
	"strings"
	"testing"

	"github.com/flowdrop/gateway/normalize"
	"github.com/google/cel-go/common/types"
)

const shellSchema = `{"type":"object","properties":{"command":{"type":"string"},"env":{"type":"object"}},"required":["command"]}`

func TestPolicyRules(t *testing.T) {
	rs, err := NewRules([]Rule{
		{Name: "no-shell-chaining", Tools: []string{"shell.*"}, Expr: `!args.command.contains("&&")`, Message: "command chaining is not allowed"},
		{Name: "admins-only-prod", Tools: []string{"deploy"}, Expr: `args.env != "prod" || "admin" in caller.roles`},
		{Name: "tool-var", Expr: `tool != "forbidden.tool"`},
	})
	if err != nil {
		t.Fatal(err)
	}
	inv := Caller{Subject: "ci-bot", Method: MethodAPIKey, Roles: []string{RoleInvoker}}
	adm := Caller{Subject: "ops", Method: MethodJWT, Roles: []string{RoleInvoker, RoleAdmin}}
	cases := []struct {
		reason     string
		caller     Caller
		tool       string
		args       string
		wantReason string
		wantRule   string
	}{
		{"plain command allowed", inv, "shell.run", `{"command":"ls -l"}`, "", ""},
		{"chained command refused", inv, "shell.run", `{"command":"ls && rm -rf /"}`, ReasonRuleDenied, "no-shell-chaining"},
		{"rule scoped to shell.* ignores other tools", inv, "fs.read", `{"command":"a && b"}`, "", ""},
		{"missing argument fails closed", inv, "shell.run", `{}`, ReasonRuleError, "no-shell-chaining"},
		{"wrong type fails closed", inv, "shell.run", `{"command":42}`, ReasonRuleError, "no-shell-chaining"},
		{"caller roles reach the rule: invoker refused", inv, "deploy", `{"env":"prod"}`, ReasonRuleDenied, "admins-only-prod"},
		{"caller roles reach the rule: admin allowed", adm, "deploy", `{"env":"prod"}`, "", ""},
		{"tool variable", inv, "forbidden.tool", `{}`, ReasonRuleDenied, "tool-var"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			err := rs.Evaluate(t.Context(), tc.caller, tc.tool, mustStruct(t, tc.args))
			if tc.wantReason == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			pe := wantPolicyError(t, err, PermissionDenied, tc.wantReason)
			if pe.Rule != tc.wantRule || !strings.Contains(pe.Message, tc.wantRule) || !strings.Contains(pe.Message, tc.tool) {
				t.Fatalf("refusal does not name rule %q and tool %q: %+v", tc.wantRule, tc.tool, pe)
			}
			if n := strings.Count(pe.Message, tc.wantRule); pe.Reason == ReasonRuleDenied && n != 1 {
				t.Fatalf("refusal names rule %q %d times, want once: %q", tc.wantRule, n, pe.Message)
			}
			if strings.Contains(pe.Message, "rm -rf") {
				t.Fatalf("refusal echoes argument data: %q", pe.Message)
			}
		})
	}
}

// TestPolicyRuleSeesNormalizedArguments is the bypass test: an HTML-escaped
// "&&" passes the rule in its raw form, so the rule must be evaluated on the
// normalized arguments, where it is refused.
func TestPolicyRuleSeesNormalizedArguments(t *testing.T) {
	rs, err := NewRules([]Rule{{Name: "no-shell-chaining", Expr: `!args.command.contains("&&")`}})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := normalize.CompileJSON([]byte(shellSchema))
	if err != nil {
		t.Fatal(err)
	}
	caller := Caller{Subject: "agent", Method: MethodJWT, Roles: []string{RoleInvoker}}
	raw := mustStruct(t, `{"command":"ls &amp;&amp; rm -rf /"}`)

	if err := rs.Evaluate(t.Context(), caller, "shell.run", raw); err != nil {
		t.Fatalf("precondition: the raw escaped form should pass the rule (that is the bypass), got %v", err)
	}
	normalized, rep := plan.Apply(raw)
	if got := normalized.GetFields()["command"].GetStringValue(); got != "ls && rm -rf /" {
		t.Fatalf("normalize did not decode the entities: %q (report %+v)", got, rep)
	}
	err = rs.Evaluate(t.Context(), caller, "shell.run", normalized)
	wantPolicyError(t, err, PermissionDenied, ReasonRuleDenied)
}

func TestPolicyRuleConfigErrors(t *testing.T) {
	cases := []struct {
		reason string
		rules  []Rule
		want   string
	}{
		{"syntax error names the rule", []Rule{{Name: "broken", Expr: `args.command.contains(`}}, `rule "broken"`},
		{"non-bool expression", []Rule{{Name: "num", Expr: `1 + 2`}}, `rule "num": expression must be bool`},
		{"unknown variable", []Rule{{Name: "undeclared", Expr: `request.x == 1`}}, `rule "undeclared"`},
		{"bad tool glob", []Rule{{Name: "glob", Tools: []string{"["}, Expr: `true`}}, `rule "glob"`},
		{"duplicate names", []Rule{{Name: "a", Expr: `true`}, {Name: "a", Expr: `true`}}, "duplicate"},
	}
	for _, tc := range cases {
		t.Run(tc.reason, func(t *testing.T) {
			_, err := NewRules(tc.rules)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestPolicyRuleCostLimitFailsClosed(t *testing.T) {
	rs, err := NewRules([]Rule{{Name: "expensive", Expr: `args.items.all(a, args.items.all(b, a != b || a == b))`}}, WithRuleCostLimit(100))
	if err != nil {
		t.Fatal(err)
	}
	items := make([]string, 200)
	for i := range items {
		items[i] = `"x"`
	}
	err = rs.Evaluate(t.Context(), Caller{}, "t", mustStruct(t, `{"items":[`+strings.Join(items, ",")+`]}`))
	wantPolicyError(t, err, PermissionDenied, ReasonRuleError)
}

// TestRuleVarsAreTheMap: a rule sees through ruleVars exactly what it saw
// through the map of variables it was given before (args, tool, caller with
// its subject, method and roles, no roles as an empty list), for
// expressions over each, and a caller read twice in one expression.
func TestRuleVarsAreTheMap(t *testing.T) {
	t.Parallel()
	exprs := []string{
		`caller.subject`, `caller.method`, `caller.roles`, `size(caller.roles)`, `"admin" in caller.roles`,
		`tool`, `args`, `args.command`, `has(args.env)`, `caller.subject + "/" + tool`,
		`caller.roles.all(r, r != caller.subject)`, `caller`,
	}
	callers := []Caller{
		{Subject: "ci-bot", Method: MethodAPIKey, Roles: []string{RoleInvoker}},
		{Subject: "ops", Method: MethodJWT, Roles: []string{RoleInvoker, RoleAdmin}},
		{Subject: "anonymous", Method: MethodNone}, // nil roles
	}
	for _, expr := range exprs {
		env, err := newRuleEnv()
		if err != nil {
			t.Fatal(err)
		}
		ast, iss := env.Compile(expr)
		if iss.Err() != nil {
			t.Fatalf("%s: %v", expr, iss.Err())
		}
		prg, err := env.Program(ast)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range callers {
			args := mustStruct(t, `{"command":"ls","env":{"a":"b"}}`)
			roles := c.Roles
			if roles == nil {
				roles = []string{}
			}
			old := map[string]any{"args": args, "caller": map[string]any{"subject": c.Subject, "method": c.Method, "roles": roles}, "tool": "shell.run"}
			want, _, werr := prg.Eval(old)
			got, _, gerr := prg.Eval(&ruleVars{args: args, tool: "shell.run", c: c, adapter: env.CELTypeAdapter()})
			if (werr != nil) != (gerr != nil) || (werr == nil && got.Equal(want) != types.True) {
				t.Errorf("%s for %s: %v (%v), want %v (%v) as with the map", expr, c.Subject, got, gerr, want, werr)
			}
		}
	}
}
