package policy

import (
	"slices"
	"testing"
)

// TestRulesArgFields: a rule that only selects named members of args
// reads those; any other use of args needs the whole arguments.
func TestRulesArgFields(t *testing.T) {
	cases := []struct {
		expr, reason string
		want         []string // nil with all
		all          bool
	}{
		{`!args.title.contains("x") && size(args.labels) <= 20`, "member selects, one a size of a member", []string{"title", "labels"}, false},
		{`!has(args.count) || args.count < 3`, "has() is a test-only select of the same member", []string{"count"}, false},
		{`args.a.b == 1 && args.a.c == 2`, "nested selects read the top-level member", []string{"a"}, false},
		{`tool == "x" && caller.subject != ""`, "no args at all", nil, false},
		{`size(args) < 8`, "the arguments as a whole", nil, true},
		{`"title" in args`, "membership on args itself", nil, true},
		{`args["title"] == "x"`, "an index is not a select: whole", nil, true},
		{`args.exists(k, k == "title")`, "a macro over args", nil, true},
		{`[1].all(args, args > 0) && args.title == ""`, "a comprehension variable named args shadows it", nil, true},
	}
	for _, tc := range cases {
		rs, err := NewRules([]Rule{{Name: "r", Expr: tc.expr}})
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		got, ok := rs.ArgFields("any")
		if ok == tc.all || (!tc.all && !slices.Equal(got, tc.want)) {
			t.Errorf("%s (%s): fields %v ok %v; want %v all %v", tc.expr, tc.reason, got, ok, tc.want, tc.all)
		}
	}
	// Per tool: a whole-arguments rule on another tool does not stop
	// picking for this one.
	rs, err := NewRules([]Rule{{Name: "a", Tools: []string{"t1"}, Expr: `args.x == 1`}, {Name: "b", Tools: []string{"t2"}, Expr: `size(args) > 0`}})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := rs.ArgFields("t1"); !ok || !slices.Equal(got, []string{"x"}) {
		t.Errorf("t1: %v %v; want [x] true", got, ok)
	}
	if _, ok := rs.ArgFields("t2"); ok {
		t.Errorf("t2: ok; want the whole arguments")
	}
}
