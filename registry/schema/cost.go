package schema

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/internal/structwire"
)

// The cost of a schema: how many subschema evaluations one argument value
// can cost, worst case. Combinators evaluate several subschemas against the
// same value (allOf, anyOf, oneOf, not, if/then/else, dependentSchemas) and
// a $ref evaluates its target there too, so branching multiplies along
// nesting: twenty levels of a two-way anyOf whose branches share a $ref to
// the next level cost 2^20 evaluations at the twentieth level of the
// arguments. jsonschema/v6 evaluates exactly that (it explores every branch
// of a failing anyOf to explain the failure, allocating as it goes), and it
// takes no budget and no context. So the work is bounded before it starts:
//
//   - Compile computes, from the compiled schema graph, E_j(s): the most
//     evaluations evaluating s against a value can cause at one value j
//     levels below it, with $ref, $dynamicRef and $recursiveRef expanded
//     (a dynamic reference counts as the costliest schema it may resolve
//     to). Recursion through properties or items consumes a level of the
//     arguments, so it is followed level by level; a cycle that stays on
//     the same value is cut where jsonschema cuts it (its scope check
//     stops at the first repeated schema), so it is unrolled at most once
//     around. The levels of the root, K_j = E_j(root), are the schema's
//     cost profile; registration refuses a schema whose largest K_j (to
//     the arguments' default nesting bound, structwire.MaxDepth) is over
//     the evaluation bound, naming the place where branching crosses it.
//   - Validate sums K over the arguments (a value at level j costs K_j,
//     and a container K_j more per member, for the loop each evaluation
//     makes over it) and refuses arguments whose sum is over the step
//     budget before evaluating anything (*BudgetError). The sum is an upper
//     bound on what either validator does, so jsonschema, which cannot be
//     stopped, is only ever started on work the budget allows; the fast
//     validator also counts its steps and watches the call's context
//     (eval.go), so a call that is cancelled stops within 1024 steps.
//
// A step is one subschema evaluated against one value, one member or item
// of a container visited by an evaluation, or 64 bytes of a string or a
// member's name an evaluation reads (a pattern, a length, a format);
// beyond that, the work within a step is bounded by the schema keyword's
// own size (an enum, a const).

// DefaultMaxEvaluations is the evaluation bound a schema is compiled with
// unless WithMaxEvaluations says otherwise: the most subschema evaluations
// one argument value may cost. Every schema in the repository's fixtures
// (tools files, provider-lint cases, OpenAPI and gRPC imports) costs at
// most 9 (TestCostOfRealSchemas); a schema over the bound is, in practice,
// one whose alternatives multiply along nesting.
const DefaultMaxEvaluations = 1000

// DefaultMaxSteps is the step budget of one validation unless the caller
// gives one. It admits any arguments within the default argument limits
// (50,000 list elements, 10,000 keys, 4 MiB) under a schema costing one or
// two evaluations per value, and bounds the worst case — every evaluation
// failing, so that jsonschema builds an error for each — to well under a
// second of one core and ~130 MB allocated (RELIABILITY.md).
const DefaultMaxSteps = 500_000

// stringSteps is what reading a string of n bytes costs beyond its step.
func stringSteps(n int) uint64 { return uint64(n) / 64 }

// maxSameValueCycle bounds a $ref cycle that never descends into the
// arguments: it is unrolled once around per level, so its size multiplies
// the compile work.
const maxSameValueCycle = 64

// costCap saturates costs: anything this large is over every bound.
const costCap = math.MaxUint64 / 2

func add(a, b uint64) uint64 {
	if a >= costCap-b {
		return costCap
	}
	return a + b
}

func mul(a, b uint64) uint64 {
	if a != 0 && b >= costCap/a {
		return costCap
	}
	return a * b
}

// costNode is one compiled schema in the cost graph. Indexes are into
// costGraph.nodes; -1 is absent.
type costNode struct {
	s *jsonschema.Schema
	// same are evaluated against the same value, each of them; alts are
	// groups of which one is (then/else, a dynamic reference's targets).
	same []int32
	alts [][]int32
	// A member's value: props (one of them, by name) or, for a name none
	// covers, addl; plus every pattern that matches, or unevalProps when
	// nothing evaluated it. names (propertyNames) is evaluated against
	// the member's name, charged to the member.
	props               []int32
	pats                []int32
	addl, unevalProps   int32
	names               int32
	prefix              []int32
	rest, contains      int32
	unevalItems         int32
	hasObject, hasArray bool
}

type costGraph struct {
	nodes []costNode
	// comps are the same-value graph's strongly connected components,
	// callees first; comp is each node's component.
	comps  [][]int32
	comp   []int32
	cyclic []bool
}

// newCostGraph builds the graph of root. anchors are the schemas a
// $dynamicRef or $recursiveRef may resolve to (see dynamicTargets).
func newCostGraph(root *jsonschema.Schema, anchors []*jsonschema.Schema) *costGraph {
	g := &costGraph{}
	index := map[*jsonschema.Schema]int32{}
	var queue []int32
	id := func(s *jsonschema.Schema) int32 {
		if s == nil {
			return -1
		}
		if i, ok := index[s]; ok {
			return i
		}
		i := int32(len(g.nodes))
		index[s] = i
		g.nodes = append(g.nodes, costNode{s: s, addl: -1, unevalProps: -1, names: -1, rest: -1, contains: -1, unevalItems: -1})
		queue = append(queue, i)
		return i
	}
	ids := func(ss []*jsonschema.Schema) []int32 {
		var out []int32
		for _, s := range ss {
			out = append(out, id(s))
		}
		return out
	}
	id(root)
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		s := g.nodes[i].s
		n := costNode{addl: -1, unevalProps: -1, names: -1, rest: -1, contains: -1, unevalItems: -1, s: s}
		if s.Bool != nil {
			continue
		}
		if s.Ref != nil {
			n.same = append(n.same, id(s.Ref))
			if s.DraftVersion < 2019 { // jsonschema evaluates nothing beside $ref
				g.nodes[i] = n
				continue
			}
		}
		if s.RecursiveRef != nil {
			n.alts = append(n.alts, ids(recursiveTargets(s.RecursiveRef, anchors)))
		}
		if s.DynamicRef != nil {
			n.alts = append(n.alts, ids(dynamicTargets(s.DynamicRef, anchors)))
		}
		n.same = append(n.same, ids(s.AllOf)...)
		n.same = append(n.same, ids(s.AnyOf)...)
		n.same = append(n.same, ids(s.OneOf)...)
		if s.Not != nil {
			n.same = append(n.same, id(s.Not))
		}
		if s.If != nil {
			n.same = append(n.same, id(s.If))
		}
		switch {
		case s.Then != nil && s.Else != nil:
			n.alts = append(n.alts, []int32{id(s.Then), id(s.Else)})
		case s.Then != nil:
			n.same = append(n.same, id(s.Then))
		case s.Else != nil:
			n.same = append(n.same, id(s.Else))
		}
		for _, k := range slices.Sorted(maps.Keys(s.DependentSchemas)) {
			n.same = append(n.same, id(s.DependentSchemas[k]))
		}
		for _, k := range slices.Sorted(maps.Keys(s.Dependencies)) {
			if d, ok := s.Dependencies[k].(*jsonschema.Schema); ok {
				n.same = append(n.same, id(d))
			}
		}

		for _, k := range slices.Sorted(maps.Keys(s.Properties)) {
			n.props = append(n.props, id(s.Properties[k]))
		}
		pats := make([]jsonschema.Regexp, 0, len(s.PatternProperties))
		for re := range s.PatternProperties {
			pats = append(pats, re)
		}
		slices.SortFunc(pats, func(a, b jsonschema.Regexp) int { return strings.Compare(a.String(), b.String()) })
		for _, re := range pats {
			n.pats = append(n.pats, id(s.PatternProperties[re]))
		}
		if a, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
			n.addl = id(a)
		}
		n.unevalProps = id(s.UnevaluatedProperties)
		n.names = id(s.PropertyNames)
		n.hasObject = len(n.props)+len(n.pats) > 0 || n.addl >= 0 || n.unevalProps >= 0 || n.names >= 0

		if s.DraftVersion < 2020 {
			switch items := s.Items.(type) {
			case *jsonschema.Schema:
				n.rest = id(items) // additionalItems never applies
			case []*jsonschema.Schema:
				n.prefix = ids(items)
				if a, ok := s.AdditionalItems.(*jsonschema.Schema); ok {
					n.rest = id(a)
				}
			case nil:
				if a, ok := s.AdditionalItems.(*jsonschema.Schema); ok {
					n.rest = id(a)
				}
			}
		} else {
			n.prefix = ids(s.PrefixItems)
			n.rest = id(s.Items2020)
		}
		n.contains = id(s.Contains)
		n.unevalItems = id(s.UnevaluatedItems)
		n.hasArray = len(n.prefix) > 0 || n.rest >= 0 || n.contains >= 0 || n.unevalItems >= 0
		// contentSchema is never evaluated: Compile does not assert content.
		g.nodes[i] = n
	}
	g.components()
	return g
}

// recursiveTargets are the schemas a $recursiveRef to target may evaluate:
// target, or, when it has $recursiveAnchor, any resource with one.
func recursiveTargets(target *jsonschema.Schema, anchors []*jsonschema.Schema) []*jsonschema.Schema {
	out := []*jsonschema.Schema{target}
	if target.RecursiveAnchor {
		for _, a := range anchors {
			if a.RecursiveAnchor && a != target {
				out = append(out, a)
			}
		}
	}
	return out
}

// dynamicTargets are the schemas a $dynamicRef may evaluate: its static
// target, or, when that has the matching $dynamicAnchor, any schema in the
// document with that anchor (which one depends on the dynamic scope).
func dynamicTargets(d *jsonschema.DynamicRef, anchors []*jsonschema.Schema) []*jsonschema.Schema {
	out := []*jsonschema.Schema{d.Ref}
	if d.Anchor != "" && d.Ref.DynamicAnchor == d.Anchor {
		for _, a := range anchors {
			if a.DynamicAnchor == d.Anchor && a != d.Ref {
				out = append(out, a)
			}
		}
	}
	return out
}

// anchorSchemas compiles (with c, which caches, so the schemas are the ones
// the validator uses) every subschema of doc declaring $dynamicAnchor or
// $recursiveAnchor: a dynamic reference may resolve to any of them, even one
// no static edge reaches. Values of enum, const, default and examples are
// data, not schemas, and are not searched.
func anchorSchemas(c *jsonschema.Compiler, doc any) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	var walk func(v any, ptr string)
	walk = func(v any, ptr string) {
		switch v := v.(type) {
		case map[string]any:
			_, dyn := v["$dynamicAnchor"]
			_, rec := v["$recursiveAnchor"]
			if dyn || rec {
				if s, err := c.Compile(schemaURL + "#" + ptr); err == nil {
					out = append(out, s)
				}
			}
			for _, k := range slices.Sorted(maps.Keys(v)) {
				switch k {
				case "enum", "const", "default", "examples":
					continue
				}
				walk(v[k], ptr+"/"+escapeToken(k))
			}
		case []any:
			for i, x := range v {
				walk(x, fmt.Sprintf("%s/%d", ptr, i))
			}
		}
	}
	walk(doc, "")
	return out
}

func escapeToken(t string) string {
	return strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
}

// components finds the same-value graph's strongly connected components
// (Tarjan), which come out callees first: the order costs are computed in.
func (g *costGraph) components() {
	n := len(g.nodes)
	g.comp = make([]int32, n)
	index := make([]int32, n)
	low := make([]int32, n)
	on := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var stack []int32
	next := int32(0)
	var visit func(v int32)
	visit = func(v int32) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		on[v] = true
		g.eachSame(v, func(w int32) {
			if index[w] < 0 {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if on[w] {
				low[v] = min(low[v], index[w])
			}
		})
		if low[v] != index[v] {
			return
		}
		var c []int32
		for {
			w := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			on[w] = false
			g.comp[w] = int32(len(g.comps))
			c = append(c, w)
			if w == v {
				break
			}
		}
		self := false
		g.eachSame(v, func(w int32) { self = self || w == v })
		g.comps = append(g.comps, c)
		g.cyclic = append(g.cyclic, len(c) > 1 || self)
	}
	for v := range int32(n) {
		if index[v] < 0 {
			visit(v)
		}
	}
}

func (g *costGraph) eachSame(v int32, f func(int32)) {
	n := &g.nodes[v]
	for _, w := range n.same {
		f(w)
	}
	for _, grp := range n.alts {
		for _, w := range grp {
			f(w)
		}
	}
}

// level computes cur = E_j from prev = E_{j-1} (unused for j = 0).
func (g *costGraph) level(j int, prev, cur []uint64) {
	for ci, c := range g.comps {
		if !g.cyclic[ci] {
			v := c[0]
			cur[v] = g.sameValue(v, g.own(v, j, prev), func(w int32) uint64 { return cur[w] })
			continue
		}
		// A cycle on the same value: jsonschema stops a path at its first
		// repeated schema (one evaluation, an error), so a path is at
		// most len(c) schemas long; count every walk that long, which
		// bounds the paths.
		pos := make(map[int32]int, len(c))
		for i, v := range c {
			pos[v] = i
		}
		w := make([]uint64, len(c))
		if j == 0 {
			for i := range w {
				w[i] = 1 // the repeated schema's one evaluation
			}
		}
		for range c {
			nw := make([]uint64, len(c))
			for i, v := range c {
				nw[i] = g.sameValue(v, g.own(v, j, prev), func(x int32) uint64 {
					if p, ok := pos[x]; ok {
						return w[p]
					}
					return cur[x]
				})
			}
			w = nw
		}
		for i, v := range c {
			cur[v] = w[i]
		}
	}
}

// sameValue adds to base what v's same-value subschemas cost (at).
func (g *costGraph) sameValue(v int32, base uint64, at func(int32) uint64) uint64 {
	n := &g.nodes[v]
	for _, w := range n.same {
		base = add(base, at(w))
	}
	for _, grp := range n.alts {
		var m uint64
		for _, w := range grp {
			m = max(m, at(w))
		}
		base = add(base, m)
	}
	return base
}

// own is what v costs at level j by itself: its own evaluation at level
// 0, and below that what its members' and items' subschemas cost at one
// member or item, the costliest (prev is E_{j-1}).
func (g *costGraph) own(v int32, j int, prev []uint64) uint64 {
	if j == 0 {
		return 1
	}
	n := &g.nodes[v]
	at := func(i int32) uint64 {
		if i < 0 {
			return 0
		}
		return prev[i]
	}
	var worst uint64
	if n.hasObject {
		var pats uint64
		for _, p := range n.pats {
			pats = add(pats, prev[p])
		}
		var name uint64
		if j == 1 { // a member's name is a string: nothing below it
			name = at(n.names)
		}
		for _, p := range n.props {
			worst = max(worst, add(add(prev[p], pats), name))
		}
		// A name no property covers: the patterns it matches, else
		// additionalProperties, else unevaluatedProperties.
		worst = max(worst, add(max(pats, at(n.addl), at(n.unevalProps)), name))
	}
	if n.hasArray {
		contains := at(n.contains)
		for _, p := range n.prefix {
			worst = max(worst, add(prev[p], contains))
		}
		worst = max(worst, add(max(at(n.rest), at(n.unevalItems)), contains))
	}
	return worst
}

// costTail says how a profile's levels go on past those computed.
type costTail uint8

const (
	tailOpen costTail = iota // compute more on demand
	tailZero                 // nothing below: every further level is 0
	tailSame                 // stationary: every further level equals the last
)

// costProfile is a compiled schema's K_j, the most evaluations one value j
// levels below the root can cost. Immutable except for levels past those
// computed at compile, which only a schema recursing without settling has.
type costProfile struct {
	levels []uint64
	tail   costTail

	mu   sync.Mutex
	g    *costGraph
	last []uint64 // E_j of every node for the last level computed
	more []uint64 // levels computed on demand, after levels
}

// newCostProfile computes levels 0..depth of root's profile, and returns
// with it each level's E (the evaluation bound's blame needs them).
func newCostProfile(g *costGraph, depth int) (*costProfile, [][]uint64) {
	p := &costProfile{}
	var all [][]uint64
	var prev []uint64
	for j := 0; j <= depth; j++ {
		cur := make([]uint64, len(g.nodes))
		g.level(j, prev, cur)
		all = append(all, cur)
		p.levels = append(p.levels, cur[0])
		switch {
		case j > 0 && !slices.ContainsFunc(cur, func(x uint64) bool { return x != 0 }):
			p.tail = tailZero
			return p, all
		case j > 1 && slices.Equal(cur, prev): // f is the same from level 2 on
			p.tail = tailSame
			return p, all
		}
		prev = cur
	}
	p.g, p.last = g, prev
	return p, all
}

// at is K_j.
func (p *costProfile) at(j int) uint64 {
	if j < len(p.levels) {
		return p.levels[j]
	}
	switch p.tail {
	case tailZero:
		return 0
	case tailSame:
		return p.levels[len(p.levels)-1]
	}
	return p.deeper(j)
}

// deeper computes levels past the compiled ones (arguments nested deeper
// than structwire.MaxDepth, which a policy's max_depth may allow).
func (p *costProfile) deeper(j int) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.levels)+len(p.more) <= j {
		cur := make([]uint64, len(p.g.nodes))
		p.g.level(len(p.levels)+len(p.more), p.last, cur)
		p.more = append(p.more, cur[0])
		p.last = cur
	}
	return p.more[j-len(p.levels)]
}

// worst is the largest level computed at compile.
func (p *costProfile) worst() (k uint64, level int) {
	for j, x := range p.levels {
		if x > k {
			k, level = x, j
		}
	}
	return k, level
}

// checkEvaluations refuses a schema whose profile is over limit, with a
// *CompileError at the place branching crosses it: from the root, follow
// a subschema that is itself over the limit as long as there is one; the
// schema where none is, is where alternatives add up past it.
func checkEvaluations(g *costGraph, p *costProfile, all [][]uint64, limit int) *CompileError {
	k, j := p.worst()
	if k <= uint64(limit) {
		return nil
	}
	over := func(j int, v int32) bool { return v >= 0 && all[j][v] > uint64(limit) }
	v := int32(0)
	seen := map[[2]int32]bool{}
	for !seen[[2]int32{int32(j), v}] {
		seen[[2]int32{int32(j), v}] = true
		next, nj := int32(-1), j
		g.eachSame(v, func(w int32) {
			if next < 0 && over(j, w) {
				next = w
			}
		})
		if next < 0 && j > 0 {
			nj = j - 1
			n := &g.nodes[v]
			for _, w := range slices.Concat(n.props, n.pats, []int32{n.addl, n.unevalProps, n.names},
				n.prefix, []int32{n.rest, n.contains, n.unevalItems}) {
				if next < 0 && over(nj, w) {
					next = w
				}
			}
		}
		if next < 0 {
			break
		}
		v, j = next, nj
	}
	s := g.nodes[v].s
	return &CompileError{Pointer: locationPointer(s.Location), Reason: fmt.Sprintf(
		"evaluating this schema can take %s subschema evaluations for one argument value (%s; alternatives multiply along nesting and through $ref), over the bound of %d (max_schema_evaluations)",
		countString(all[j][v]), branching(s), limit)}
}

// branching names what makes s evaluate several subschemas on one value.
func branching(s *jsonschema.Schema) string {
	var parts []string
	for _, b := range []struct {
		kw string
		n  int
	}{{"allOf", len(s.AllOf)}, {"anyOf", len(s.AnyOf)}, {"oneOf", len(s.OneOf)}} {
		if b.n > 0 {
			parts = append(parts, fmt.Sprintf("%s of %d", b.kw, b.n))
		}
	}
	for _, b := range []struct {
		kw string
		on bool
	}{{"not", s.Not != nil}, {"if/then/else", s.If != nil}, {"$ref", s.Ref != nil},
		{"$dynamicRef", s.DynamicRef != nil}, {"$recursiveRef", s.RecursiveRef != nil},
		{"dependentSchemas", len(s.DependentSchemas) > 0}} {
		if b.on {
			parts = append(parts, b.kw)
		}
	}
	if len(parts) == 0 {
		return "its members' and items' subschemas"
	}
	return strings.Join(parts, ", ")
}

func countString(n uint64) string {
	if n >= costCap {
		return "more than 2^62"
	}
	return fmt.Sprint(n)
}

// locationPointer is the JSON Pointer of a compiled schema's location in
// the tool's document.
func locationPointer(loc string) string {
	_, frag, _ := strings.Cut(loc, "#")
	return frag
}

// checkCycles refuses a $ref cycle on one value larger than
// maxSameValueCycle (see costGraph.level).
func checkCycles(g *costGraph) *CompileError {
	for ci, c := range g.comps {
		if g.cyclic[ci] && len(c) > maxSameValueCycle {
			v := slices.Min(c)
			return &CompileError{Pointer: locationPointer(g.nodes[v].s.Location), Reason: fmt.Sprintf(
				"a $ref cycle through %d schemas that never descends into the arguments (at most %d)", len(c), maxSameValueCycle)}
		}
	}
	return nil
}

// compileCost builds the cost profile of a compiled schema, refusing one
// over limit evaluations per value.
func compileCost(c *jsonschema.Compiler, doc map[string]any, root *jsonschema.Schema, limit int) (*costProfile, *CompileError) {
	g := newCostGraph(root, anchorSchemas(c, doc))
	if err := checkCycles(g); err != nil {
		return nil, err
	}
	p, all := newCostProfile(g, structwire.MaxDepth)
	if err := checkEvaluations(g, p, all, limit); err != nil {
		return nil, err
	}
	return p, nil
}

// BudgetError refuses arguments whose validation could take more steps
// than the budget allows (see the cost profile above). Nothing was
// evaluated.
type BudgetError struct {
	// MaxSteps is the budget.
	MaxSteps int
	// Pointer is the argument where the worst case crossed it.
	Pointer string
}

func (e *BudgetError) Error() string {
	at := e.Pointer
	if at == "" {
		at = `""`
	}
	return fmt.Sprintf("validating the arguments against the schema could take more than %d steps (crossed at %s)", e.MaxSteps, at)
}

// argsBound sums the profile over decoded arguments, stopping as soon as
// the sum passes max (then over is set and path holds the argument where
// it did, innermost first).
type argsBound struct {
	p     *costProfile
	steps uint64
	max   uint64
	path  []string
}

// value adds v at level j; false once over max.
func (b *argsBound) value(v *structpb.Value, j int) bool {
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		return b.add(mul(b.p.at(j), 1+stringSteps(len(k.StringValue))))
	case *structpb.Value_StructValue:
		return b.object(k.StructValue.GetFields(), j)
	case *structpb.Value_ListValue:
		items := k.ListValue.GetValues()
		if !b.add(mul(b.p.at(j), uint64(1+len(items)))) {
			return false
		}
		if b.p.tail == tailZero && j+1 >= len(b.p.levels) {
			return true
		}
		for i, x := range items {
			if !b.value(x, j+1) {
				b.path = append(b.path, fmt.Sprint(i))
				return false
			}
		}
		return true
	}
	return b.add(b.p.at(j))
}

func (b *argsBound) object(fields map[string]*structpb.Value, j int) bool {
	k := b.p.at(j)
	if !b.add(mul(k, uint64(1+len(fields)))) {
		return false
	}
	deeper := !(b.p.tail == tailZero && j+1 >= len(b.p.levels)) // else nothing evaluates anything below
	for name, x := range fields {
		if !b.add(mul(k, stringSteps(len(name)))) {
			b.path = append(b.path, name)
			return false
		}
		if deeper && !b.value(x, j+1) {
			b.path = append(b.path, name)
			return false
		}
	}
	return true
}

func (b *argsBound) add(n uint64) bool {
	b.steps = add(b.steps, n)
	return b.steps <= b.max
}

// checkBudget refuses args whose bound is over maxSteps.
func (p *costProfile) checkBudget(args *structpb.Struct, maxSteps int) *BudgetError {
	b := argsBound{p: p, max: uint64(maxSteps)}
	if b.object(args.GetFields(), 0) {
		return nil
	}
	slices.Reverse(b.path)
	return &BudgetError{MaxSteps: maxSteps, Pointer: pointer(b.path)}
}
