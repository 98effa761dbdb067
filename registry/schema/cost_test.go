package schema

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"pgregory.net/rapid"
)

// chain is a schema whose argument x nests `levels` deep, each level an
// anyOf of `ways` object branches that all $ref the next level: the shape
// that made validation exponential (ways^levels evaluations at the
// innermost value).
func chain(levels, ways int) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{"x":{"$ref":"#/$defs/l0"}},"$defs":{`)
	for i := range levels {
		if i > 0 {
			b.WriteString(",")
		}
		next := fmt.Sprintf(`{"$ref":"#/$defs/l%d"}`, i+1)
		if i == levels-1 {
			next = `{"type":"integer"}`
		}
		branches := make([]string, ways)
		for w := range ways {
			branches[w] = fmt.Sprintf(`{"type":"object","properties":{"x":%s,"w%d":{"type":"string"}}}`, next, w)
		}
		fmt.Fprintf(&b, `"l%d":{"anyOf":[%s]}`, i, strings.Join(branches, ","))
	}
	b.WriteString("}}")
	return b.String()
}

// nested is arguments {"x":{"x":…{"x":leaf}}} levels+1 deep.
func nested(levels int, leaf string) string {
	return strings.Repeat(`{"x":`, levels+1) + leaf + strings.Repeat("}", levels+1)
}

func compileDoc(t testing.TB, js string, opts ...Option) (*Schema, error) {
	t.Helper()
	var s structpb.Struct
	if err := s.UnmarshalJSON([]byte(js)); err != nil {
		t.Fatalf("schema %s: %v", js, err)
	}
	return Compile(&s, opts...)
}

// TestEvaluationBound: the bound is the most subschema evaluations one
// value can cost, jsonschema's way of evaluating: combinators add up on one
// value, $ref is followed, members and items take the costliest slot, and
// recursion that descends costs per level.
func TestEvaluationBound(t *testing.T) {
	cases := []struct {
		reason string
		schema string
		want   uint64
	}{
		{"a flat object: one evaluation per value", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}}}`, 1},
		{"anyOf of three at a member: the member's schema and its three branches", `{"type":"object","properties":{"a":{"anyOf":[{"type":"string"},{"type":"integer"},{"type":"null"}]}}}`, 4},
		{"a $ref chain on one value counts every schema on it", `{"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/b"},"b":{"type":"object"}}}`, 3},
		{"properties are alternatives per member, not a sum", `{"type":"object","properties":{"a":{"$ref":"#/$defs/o"},"b":{"$ref":"#/$defs/o"},"c":{"$ref":"#/$defs/o"}},"$defs":{"o":{"type":"object","properties":{"p":{"type":"string"}}}}}`, 2},
		{"patterns add to the property a name may also match", `{"type":"object","properties":{"a":{"type":"string"}},"patternProperties":{"^a":{"type":"string"},"b":{"type":"string"}}}`, 3},
		{"if counts, then and else are alternatives", `{"type":"object","if":{"required":["a"]},"then":{"allOf":[{},{}]},"else":{}}`, 5},
		{"a recursive tree costs the same at every level", `{"$ref":"#/$defs/node","$defs":{"node":{"type":"object","properties":{"children":{"type":"array","items":{"$ref":"#/$defs/node"}}}}}}`, 2},
		{"a cycle on one value is cut at the first repeat, as jsonschema does", `{"type":"object","$defs":{"a":{"anyOf":[{"$ref":"#/$defs/a"},{"type":"string"}]}},"properties":{"x":{"$ref":"#/$defs/a"}}}`, 5},
		{"draft-07: $ref ignores its siblings", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"$ref":"#/definitions/s","anyOf":[{},{},{}]}},"definitions":{"s":{"type":"string"}}}`, 2},
		{"a two-way anyOf chain doubles per level: the $ref and its target, then two branches at each", chain(5, 2), 64},
		{"a $dynamicRef costs its costliest target", `{"type":"object","$dynamicAnchor":"n","properties":{"a":{"$dynamicRef":"#n"}},"$defs":{"x":{"$id":"urn:x","$dynamicAnchor":"n","allOf":[{},{},{}]}}}`, 5},
	}
	for _, c := range cases {
		s, err := compileDoc(t, c.schema)
		if err != nil {
			t.Errorf("%s: %v", c.reason, err)
			continue
		}
		if got := s.EvaluationBound(); got != c.want {
			t.Errorf("%s: bound %d, want %d", c.reason, got, c.want)
		}
	}
}

// TestEvaluationBoundRefuses: Compile refuses a schema over the bound with
// a *CompileError at the place the alternatives cross it, whatever makes
// them multiply; a schema at the bound is admitted.
func TestEvaluationBoundRefuses(t *testing.T) {
	wide := `{"type":"object","properties":{"a":{"$ref":"#/$defs/w3"}},"$defs":{` +
		`"w3":{"allOf":[{"$ref":"#/$defs/w2"},{"$ref":"#/$defs/w2"},{"$ref":"#/$defs/w2"},{"$ref":"#/$defs/w2"},{"$ref":"#/$defs/w2"},{"$ref":"#/$defs/w2"},{"$ref":"#/$defs/w2"},{"$ref":"#/$defs/w2"},{"$ref":"#/$defs/w2"},{"$ref":"#/$defs/w2"}]},` +
		`"w2":{"oneOf":[{"$ref":"#/$defs/w1"},{"$ref":"#/$defs/w1"},{"$ref":"#/$defs/w1"},{"$ref":"#/$defs/w1"},{"$ref":"#/$defs/w1"},{"$ref":"#/$defs/w1"},{"$ref":"#/$defs/w1"},{"$ref":"#/$defs/w1"},{"$ref":"#/$defs/w1"},{"$ref":"#/$defs/w1"}]},` +
		`"w1":{"anyOf":[{},{},{},{},{},{},{},{},{},{}]}}}`
	recursive := `{"type":"object","properties":{"t":{"$ref":"#/$defs/t"}},"$defs":{"t":{"anyOf":[` +
		`{"type":"object","properties":{"l":{"$ref":"#/$defs/t"}}},{"type":"object","properties":{"l":{"$ref":"#/$defs/t"},"r":{}}}]}}}`
	dynamic := `{"type":"object","$dynamicAnchor":"n","properties":{"a":{"$ref":"#/$defs/d"}},"$defs":{` +
		`"d":{"anyOf":[{"$dynamicRef":"#n"},{"$dynamicRef":"#n"}]}}}`
	var ring strings.Builder
	ring.WriteString(`{"type":"object","properties":{"a":{"$ref":"#/$defs/r0"}},"$defs":{`)
	for i := range 70 {
		if i > 0 {
			ring.WriteString(",")
		}
		fmt.Fprintf(&ring, `"r%d":{"$ref":"#/$defs/r%d"}`, i, (i+1)%70)
	}
	ring.WriteString("}}")
	cases := []struct {
		reason, schema string
		limit          int
		wantPointer    string // "" admitted
		wantInReason   string
	}{
		{reason: "the issue's shape: two-way anyOf over shared $refs, ten levels", schema: chain(10, 2), wantPointer: "/$defs/l1", wantInReason: "anyOf of 2"},
		{reason: "three ways, seven levels", schema: chain(7, 3), wantPointer: "/$defs/l1", wantInReason: "anyOf of 3"},
		{reason: "eight levels of two ways cost at most 512: admitted", schema: chain(8, 2)},
		{reason: "allOf × oneOf × anyOf on one value: 1,221 evaluations", schema: wide, wantPointer: "/$defs/w3", wantInReason: "allOf of 10"},
		{reason: "the same schema under a raised bound", schema: wide, limit: 2000},
		{reason: "recursion through $ref doubling per level of the arguments", schema: recursive, wantPointer: "/$defs/t", wantInReason: "anyOf of 2"},
		{reason: "the bound follows the arguments' depth: one level of that recursion costs little", schema: recursive, limit: math.MaxInt, wantPointer: ""},
		{reason: "$dynamicRef resolving to a schema that recurses through both branches", schema: dynamic, wantPointer: "/$defs/d", wantInReason: "anyOf of 2"},
		{reason: "a $ref cycle on one value through 70 schemas", schema: ring.String(), wantPointer: "/$defs/r0", wantInReason: "cycle through 70"},
	}
	for _, c := range cases {
		var opts []Option
		if c.limit != 0 {
			opts = append(opts, WithMaxEvaluations(c.limit))
		}
		s, err := compileDoc(t, c.schema, opts...)
		if c.wantPointer == "" {
			if err != nil {
				t.Errorf("%s: %v, want admitted", c.reason, err)
			} else if c.limit == 0 && s.EvaluationBound() > DefaultMaxEvaluations {
				t.Errorf("%s: admitted with bound %d over the default", c.reason, s.EvaluationBound())
			}
			continue
		}
		var ce *CompileError
		if !errors.As(err, &ce) {
			t.Errorf("%s: %v, want a *CompileError", c.reason, err)
			continue
		}
		if ce.Pointer != c.wantPointer || !strings.Contains(ce.Reason, c.wantInReason) {
			t.Errorf("%s: refused at %q: %s; want at %q, naming %q", c.reason, ce.Pointer, ce.Reason, c.wantPointer, c.wantInReason)
		}
		if !strings.Contains(ce.Reason, "cycle") && !strings.Contains(ce.Reason, "max_schema_evaluations") {
			t.Errorf("%s: %q does not name the bound", c.reason, ce.Reason)
		}
	}
}

// fastSteps runs the fast validator alone over args with a budget and
// returns the steps it took and why it stopped.
func fastSteps(s *Schema, ctx context.Context, args *structpb.Struct, maxSteps int) (steps int, halt haltReason) {
	e := eval[structRep]{maxDepth: math.MaxInt, maxSteps: maxSteps, ctx: ctx}
	root := value[structRep]{kind: tObject, r: structRep{fields: args.GetFields()}}
	e.check(s.fast.root, &root, 0)
	return e.steps, e.halt
}

// TestValidationBudget: a schema just under the evaluation bound with an
// adversarial argument — the innermost value of the wrong type, so every
// branch at every level fails — either validates (with its violations)
// within the budget or is refused before anything is evaluated, naming the
// budget and the argument where the worst case crosses it; which one
// depends only on the bound, the same with fast paths on and off. Work is
// asserted in steps: the bound, and the fast validator's own count, which
// never exceeds it.
func TestValidationBudget(t *testing.T) {
	doc := chain(8, 2) // 512 evaluations at the costliest value: just under the default bound
	on, off := compileJSON(t, doc), compileJSON(t, doc, WithoutFastPaths())
	if b := on.EvaluationBound(); b != 512 {
		t.Fatalf("bound %d, want 512", b)
	}
	deep, shallow := fastArgs(t, nested(8, `"bad"`)), fastArgs(t, nested(3, `"bad"`))
	cases := []struct {
		reason      string
		args        *structpb.Struct
		maxSteps    int
		wantPointer string // "" a *ValidationError
	}{
		{reason: "within the default budget: judged, with violations", args: deep, maxSteps: DefaultMaxSteps},
		{reason: "a budget below the worst case: refused where the sum crosses it", args: deep, maxSteps: 1000, wantPointer: "/x/x/x/x/x/x/x"},
		{reason: "shallower arguments cost less: judged within the same budget", args: shallow, maxSteps: 1000},
	}
	for _, c := range cases {
		bound := argsBound{p: on.cost, max: math.MaxUint64}
		bound.object(c.args.GetFields(), 0)
		for _, s := range []*Schema{on, off} {
			err := s.ValidateWithin(context.Background(), c.args, nil, c.maxSteps)
			var be *BudgetError
			var ve *ValidationError
			switch {
			case c.wantPointer == "" && !errors.As(err, &ve):
				t.Errorf("%s (fast paths %v): %T %v, want a *ValidationError", c.reason, s.FastPaths(), err, err)
			case c.wantPointer != "" && (!errors.As(err, &be) || be.Pointer != c.wantPointer || be.MaxSteps != c.maxSteps):
				t.Errorf("%s (fast paths %v): %T %v, want a *BudgetError at %s", c.reason, s.FastPaths(), err, err, c.wantPointer)
			case c.wantPointer == "" && bound.steps > uint64(c.maxSteps):
				t.Errorf("%s: judged with a bound of %d steps, over the budget %d", c.reason, bound.steps, c.maxSteps)
			}
		}
		if steps, halt := fastSteps(on, context.Background(), c.args, math.MaxInt); uint64(steps) > bound.steps || halt != running {
			t.Errorf("%s: the fast validator took %d steps (halt %d), over the bound %d", c.reason, steps, halt, bound.steps)
		}
	}
}

// TestBoundCoversFastSteps: for random schemas and near-valid instances
// (fast_test.go's generators), the fast validator never takes more steps
// than the cost bound Validate checks first, so a budget the bound admits
// never stops it.
func TestBoundCoversFastSteps(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		root, draft := rootSchema(rt)
		doc, err := structpb.NewStruct(root)
		if err != nil {
			rt.Fatalf("schema to structpb: %v", err)
		}
		s, err := Compile(doc)
		if err != nil || s.fast == nil {
			return // TestFastAgreesWithJsonschema's concern
		}
		ig := newInstGen(rt, root, draft)
		for range 10 {
			args := ig.args(root)
			bound := argsBound{p: s.cost, max: math.MaxUint64}
			bound.object(args.GetFields(), 0)
			if steps, _ := fastSteps(s, context.Background(), args, math.MaxInt); uint64(steps) > bound.steps {
				rt.Fatalf("%d fast steps over the bound %d for %s on %v", steps, bound.steps, mustJSON(root), args)
			}
			b, err := proto.Marshal(args)
			if err != nil {
				rt.Fatal(err)
			}
			wb := wireBound{p: s.cost, max: math.MaxUint64}
			if wb.wellFormed(value[wireRep]{kind: tObject, str: str(b)}, 0) && wb.steps < bound.steps {
				rt.Fatalf("wire bound %d under the decoded bound %d", wb.steps, bound.steps)
			}
		}
	})
}

// cancelAfter is a context whose Err turns non-nil after n calls, so a test
// can cancel an evaluation at a known point without timing.
type cancelAfter struct {
	context.Context
	n int
}

func (c *cancelAfter) Err() error {
	if c.n--; c.n < 0 {
		return context.Canceled
	}
	return nil
}

// TestValidationStopsWithItsContext: the fast validator looks at the call's
// context every 1024 steps and stops within that many once it has ended;
// Validate returns the context's error, and the wire path leaves the
// call undecided. An ended context stops a validation before it starts.
func TestValidationStopsWithItsContext(t *testing.T) {
	s := compileJSON(t, chain(8, 2))
	args := fastArgs(t, nested(8, `"bad"`)) // thousands of steps
	if steps, halt := fastSteps(s, context.Background(), args, math.MaxInt); halt != running || steps <= 1024 {
		t.Fatalf("%d steps (halt %d) without a deadline; the case needs more than 1024", steps, halt)
	}
	steps, halt := fastSteps(s, &cancelAfter{Context: context.Background(), n: 0}, args, math.MaxInt)
	if halt != haltContext || steps != 1024 {
		t.Errorf("stopped after %d steps (halt %d); want at the first look, step 1024", steps, halt)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.ValidateWithin(ctx, args, nil, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("Validate with an ended context: %v, want context.Canceled", err)
	}
	list := compileJSON(t, `{"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"}}}}`)
	b, err := proto.Marshal(fastArgs(t, `{"a":[`+strings.Repeat(`1,`, 2999)+`1]}`))
	if err != nil {
		t.Fatal(err)
	}
	if !list.FastValidWireWithin(context.Background(), b, 0) {
		t.Fatal("valid arguments not accepted on the wire")
	}
	if list.FastValidWireWithin(&cancelAfter{Context: context.Background(), n: 0}, b, 0) {
		t.Error("the wire path accepted arguments after its context ended")
	}
}

// TestBudgetAllocationFree: the budget and the context cost the fast paths
// no allocation.
func TestBudgetAllocationFree(t *testing.T) {
	s := compileJSON(t, chain(4, 2))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	args := fastArgs(t, nested(4, `1`))
	b, err := proto.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() {
		if !s.FastValidWireWithin(ctx, b, 1000) {
			t.Fatal("not accepted on the wire")
		}
	}); n != 0 {
		t.Errorf("FastValidWireWithin allocates %v times per call, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() {
		if err := s.ValidateWithin(ctx, args, nil, 1000); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("ValidateWithin of valid arguments allocates %v times per call, want 0", n)
	}
}

// BenchmarkAdversarialValidation is the worst case the default budget
// admits: items of a schema just under the evaluation bound, each item
// failing every branch at every level (so jsonschema builds an error for
// every evaluation), as many as keep the cost bound under DefaultMaxSteps.
// ns/op and B/op are what one such call costs; RELIABILITY.md quotes them.
func BenchmarkAdversarialValidation(b *testing.B) {
	doc := strings.Replace(chain(8, 2), `"properties":{"x":{"$ref":"#/$defs/l0"}}`,
		`"properties":{"a":{"type":"array","items":{"$ref":"#/$defs/l0"}}}`, 1)
	for _, opts := range [][]Option{nil, {WithoutFastPaths()}} {
		s := compileJSON(b, doc, opts...)
		items := []string{}
		var args *structpb.Struct
		var steps uint64
		for {
			next := fastArgs(b, `{"a":[`+strings.Join(append(items, nested(7, `"bad"`)), ",")+`]}`)
			bound := argsBound{p: s.cost, max: math.MaxUint64}
			bound.object(next.GetFields(), 0)
			if bound.steps > DefaultMaxSteps {
				break
			}
			items, args, steps = append(items, nested(7, `"bad"`)), next, bound.steps
		}
		b.Run(fmt.Sprintf("fast_paths=%v", s.FastPaths()), func(b *testing.B) {
			b.ReportAllocs()
			b.ReportMetric(float64(steps), "steps/op")
			for b.Loop() {
				var ve *ValidationError
				if err := s.ValidateWithin(context.Background(), args, nil, DefaultMaxSteps); !errors.As(err, &ve) {
					b.Fatalf("%T %v, want a *ValidationError within the budget", err, err)
				}
			}
		})
	}
}

// TestCostProfileBeyondItsLevels: a profile that neither ends nor settles
// within the levels Compile computes is extended on demand for arguments
// nested deeper (a policy's max_depth may allow them), by the same rule.
func TestCostProfileBeyondItsLevels(t *testing.T) {
	// At each level one more chain of t starts beside s's own: the cost
	// grows by one per level, forever.
	s := compileJSON(t, `{"$ref":"#/$defs/s","$defs":{"s":{"type":"object","properties":{"a":{"$ref":"#/$defs/s"}},"patternProperties":{"^a$":{"$ref":"#/$defs/t"}}},"t":{"type":"object","properties":{"a":{"$ref":"#/$defs/t"}}}}}`)
	p := s.cost
	if p.tail != tailOpen {
		t.Fatalf("tail %d, want open", p.tail)
	}
	last := len(p.levels) - 1
	step := p.levels[last] - p.levels[last-1]
	for j := last + 1; j <= last+50; j++ {
		if got, want := p.at(j), p.levels[last]+uint64(j-last)*step; got != want {
			t.Fatalf("level %d: %d, want %d (growing by %d per level)", j, got, want, step)
		}
	}
}
