package schema

import (
	"slices"
	"strconv"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/normalize"
)

// Optional nulls: an extension outside RT-TOOL-8, which the gateway runs
// only when its policy asks (normalize.optional_nulls: drop). OpenAI's
// strict mode makes every optional property required and nullable, so a
// model sends null for "not given"; against the tool's own schema such a
// null is a type error. DropOptionalNulls treats it as absent.
//
// A null member is removed only when the schema locates it and vouches for
// both halves, judged the way the validator will judge the arguments:
//   - null is refused there: a schema that certainly applies to the member
//     (properties, a matching patternProperties, or an additionalProperties
//     schema, of a schema that certainly applies to its object) admits no
//     null by its type, enum or const — through $ref and allOf, and anyOf /
//     oneOf when every branch refuses it;
//   - the member is optional: no schema that applies or may apply to its
//     object (anyOf/oneOf branches, if/then/else, dependentSchemas) lists
//     it in required, dependentRequired or dependencies.
//
// "Certainly applies" follows $ref (draft-07 and older: $ref alone, as the
// validator does), allOf, and the one anyOf/oneOf branch that can accept
// the value's JSON type (Optional[Model] is anyOf [Model, null]); other
// branches only may apply. Below a $recursiveRef or $dynamicRef, whose
// target is known only while validating, nothing is removed. A null list
// element is never removed (it is not a property). Validation then judges
// what is left, so the pass can only turn a refused call into one the
// schema accepts, never the other way.
//
// The schema is compiled for this on first use (the jsonschema graph the
// validator compiled, so drafts and $refs resolve as it resolves them);
// tools never asked pay nothing.

// JSON types as bits (fast.go's), with an instance number matching both
// number and integer.
const (
	tAll       = tNull | tBool | tNumber | tInteger | tString | tArray | tObject
	tAnyNumber = tNumber | tInteger
)

// nnode is one schema as the optional-nulls pass reads it.
type nnode struct {
	isBool, boolVal bool
	types           uint8 // 0: no type keyword
	hasEnum         bool
	enumTypes       uint8
	hasConst        bool
	constType       uint8
	ref             *nnode
	refOnly         bool // draft < 2019: siblings of $ref are ignored
	// opaque: a $recursiveRef or $dynamicRef, resolved only while validating.
	opaque bool

	allOf, anyOf, oneOf []*nnode
	// maybe may apply (if/then/else, dependentSchemas, dependencies' schemas).
	maybe []*nnode
	// required is every name this schema may require: required,
	// dependentRequired's and dependencies' lists.
	required []string

	props    map[string]*nnode
	patProps []npattern
	addl     *nnode // an additionalProperties schema (nil: absent or boolean)

	prefix []*nnode
	rest   *nnode // the schema for items past prefix (nil: none)

	// accepts is the JSON types the schema may accept (a superset).
	accepts              uint8
	acceptsDone, walking bool
}

type npattern struct {
	re jsonschema.Regexp
	n  *nnode
}

type nullsCompiler struct{ nodes map[*jsonschema.Schema]*nnode }

// nullsRoot is the schema compiled for the pass, built once.
func (s *Schema) nullsRoot() *nnode {
	s.nullsOnce.Do(func() {
		c := nullsCompiler{nodes: map[*jsonschema.Schema]*nnode{}}
		s.nulls = c.node(s.js)
		for _, n := range c.nodes {
			acceptsOf(n)
		}
	})
	return s.nulls
}

func (c *nullsCompiler) node(s *jsonschema.Schema) *nnode {
	if s == nil {
		return nil
	}
	if n, ok := c.nodes[s]; ok {
		return n
	}
	n := &nnode{}
	c.nodes[s] = n
	if s.Bool != nil {
		n.isBool, n.boolVal = true, *s.Bool
		return n
	}
	if s.Types != nil {
		for _, t := range s.Types.ToStrings() {
			n.types |= typeBit(t)
		}
	}
	if s.Enum != nil {
		n.hasEnum = true
		for _, v := range s.Enum.Values {
			n.enumTypes |= typeOfAny(v)
		}
	}
	if s.Const != nil {
		n.hasConst, n.constType = true, typeOfAny(*s.Const)
	}
	n.opaque = s.RecursiveRef != nil || s.DynamicRef != nil
	if s.Ref != nil {
		n.ref = c.node(s.Ref)
		if s.DraftVersion < 2019 {
			n.refOnly = true
			return n
		}
	}
	n.allOf, n.anyOf, n.oneOf = c.list(s.AllOf), c.list(s.AnyOf), c.list(s.OneOf)
	for _, m := range []*jsonschema.Schema{s.If, s.Then, s.Else} {
		if m != nil {
			n.maybe = append(n.maybe, c.node(m))
		}
	}
	for _, m := range s.DependentSchemas {
		n.maybe = append(n.maybe, c.node(m))
	}
	n.required = slices.Clone(s.Required)
	for _, names := range s.DependentRequired {
		n.required = append(n.required, names...)
	}
	for _, d := range s.Dependencies {
		switch d := d.(type) {
		case []string:
			n.required = append(n.required, d...)
		case *jsonschema.Schema:
			n.maybe = append(n.maybe, c.node(d))
		}
	}
	if len(s.Properties) > 0 {
		n.props = make(map[string]*nnode, len(s.Properties))
		for k, ps := range s.Properties {
			n.props[k] = c.node(ps)
		}
	}
	for re, ps := range s.PatternProperties {
		n.patProps = append(n.patProps, npattern{re, c.node(ps)})
	}
	if a, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
		n.addl = c.node(a)
	}
	// jsonschema's two item models, per draft (as fast.go folds them).
	if s.DraftVersion < 2020 {
		switch items := s.Items.(type) {
		case *jsonschema.Schema:
			n.rest = c.node(items)
		case []*jsonschema.Schema:
			n.prefix = c.list(items)
			if a, ok := s.AdditionalItems.(*jsonschema.Schema); ok {
				n.rest = c.node(a)
			}
		}
	} else {
		n.prefix, n.rest = c.list(s.PrefixItems), c.node(s.Items2020)
	}
	return n
}

func (c *nullsCompiler) list(ss []*jsonschema.Schema) []*nnode {
	if len(ss) == 0 {
		return nil
	}
	out := make([]*nnode, len(ss))
	for i, s := range ss {
		out[i] = c.node(s)
	}
	return out
}

// typeOfAny is the type bit of a compiled enum or const value; a Go type
// the schema compiler never produces counts as any type.
func typeOfAny(v any) uint8 {
	switch v.(type) {
	case nil:
		return tNull
	case bool:
		return tBool
	case float64, int, int64:
		return tAnyNumber
	case string:
		return tString
	case []any:
		return tArray
	case map[string]any:
		return tObject
	}
	return tAll
}

// acceptsOf computes (once) the JSON types n may accept. A reference cycle
// answers "any type" where it closes, which only widens the answer: the
// pass then removes less, never more.
func acceptsOf(n *nnode) uint8 {
	if n == nil {
		return tAll
	}
	if n.acceptsDone {
		return n.accepts
	}
	if n.walking {
		return tAll
	}
	n.walking = true
	a := uint8(tAll)
	switch {
	case n.isBool && !n.boolVal:
		a = 0
	case n.isBool:
	default:
		if n.types != 0 {
			t := n.types
			if t&tNumber != 0 {
				t |= tInteger // number accepts integers
			}
			a &= t
		}
		if n.hasEnum {
			a &= n.enumTypes
		}
		if n.hasConst {
			a &= n.constType
		}
		if n.ref != nil {
			a &= acceptsOf(n.ref)
		}
		if !n.refOnly {
			for _, m := range n.allOf {
				a &= acceptsOf(m)
			}
			for _, group := range [][]*nnode{n.anyOf, n.oneOf} {
				if len(group) == 0 {
					continue
				}
				var u uint8
				for _, m := range group {
					u |= acceptsOf(m)
				}
				a &= u
			}
		}
	}
	n.walking = false
	n.accepts, n.acceptsDone = a, true
	return a
}

// refusesNull: null is certainly invalid against n.
func (n *nnode) refusesNull() bool { return acceptsOf(n)&tNull == 0 }

// nscope is what applies to one place in the arguments: schemas that
// certainly apply and schemas that may.
type nscope struct {
	definite, possible []*nnode
	opaque             bool
	seen               map[*nnode]bool // true: added as definite
}

// add adds n, and what it applies in turn to a value of JSON type kind.
func (sc *nscope) add(n *nnode, definite bool, kind uint8) {
	if n == nil {
		return
	}
	if sc.seen == nil {
		sc.seen = map[*nnode]bool{}
	}
	if wasDefinite, ok := sc.seen[n]; ok && (wasDefinite || !definite) {
		return
	}
	sc.seen[n] = definite
	if definite {
		sc.definite = append(sc.definite, n)
	} else {
		sc.possible = append(sc.possible, n)
	}
	if n.isBool {
		return
	}
	if n.opaque {
		sc.opaque = true
	}
	sc.add(n.ref, definite, kind)
	if n.refOnly {
		return
	}
	for _, m := range n.allOf {
		sc.add(m, definite, kind)
	}
	for _, group := range [][]*nnode{n.anyOf, n.oneOf} {
		// A branch that cannot accept the value's type cannot be the one
		// that validates it; when one branch is left, it must hold.
		left := 0
		for _, m := range group {
			if acceptsOf(m)&kind != 0 {
				left++
			}
		}
		for _, m := range group {
			if acceptsOf(m)&kind != 0 {
				sc.add(m, definite && left == 1, kind)
			}
		}
	}
	for _, m := range n.maybe {
		sc.add(m, false, kind)
	}
}

// memberSchemas calls fn with each schema n applies to its member name.
func (n *nnode) memberSchemas(name string, fn func(*nnode)) {
	if n.isBool || n.refOnly {
		return
	}
	declared := false
	if ps, ok := n.props[name]; ok {
		fn(ps)
		declared = true
	}
	for _, pp := range n.patProps {
		if pp.re.MatchString(name) {
			fn(pp.n)
			declared = true
		}
	}
	if !declared && n.addl != nil {
		fn(n.addl)
	}
}

// itemSchema is the schema n applies to its array's element i (nil: none).
func (n *nnode) itemSchema(i int) *nnode {
	if n.isBool || n.refOnly {
		return nil
	}
	if i < len(n.prefix) {
		return n.prefix[i]
	}
	return n.rest
}

// member is the scope of sc's object's member name, holding a value of
// JSON type kind.
func (sc *nscope) member(name string, kind uint8) nscope {
	out := nscope{opaque: sc.opaque}
	for _, n := range sc.definite {
		n.memberSchemas(name, func(m *nnode) { out.add(m, true, kind) })
	}
	for _, n := range sc.possible {
		n.memberSchemas(name, func(m *nnode) { out.add(m, false, kind) })
	}
	return out
}

// item is the scope of sc's array's element i, of JSON type kind.
func (sc *nscope) item(i int, kind uint8) nscope {
	out := nscope{opaque: sc.opaque}
	for _, n := range sc.definite {
		out.add(n.itemSchema(i), true, kind)
	}
	for _, n := range sc.possible {
		out.add(n.itemSchema(i), false, kind)
	}
	return out
}

// drops reports whether a null sent for member name of sc's object is
// removed: nothing may require it and a schema that certainly applies to
// it refuses null.
func (sc *nscope) drops(name string) bool {
	if sc.opaque {
		return false
	}
	for _, list := range [][]*nnode{sc.definite, sc.possible} {
		for _, n := range list {
			if slices.Contains(n.required, name) {
				return false
			}
		}
	}
	refused := false
	for _, n := range sc.definite {
		n.memberSchemas(name, func(m *nnode) { refused = refused || m.refusesNull() })
	}
	return refused
}

// nplace is a place in the arguments whose scope is worked out only when
// a null below it asks (most places never need one).
type nplace struct {
	parent *nplace
	name   string // member name, or
	index  int    // element index when item
	item   bool
	kind   uint8
	done   bool
	sc     nscope
}

func (p *nplace) scope(root *nnode) *nscope {
	if !p.done {
		switch {
		case p.parent == nil:
			p.sc.add(root, true, p.kind)
		case p.item:
			p.sc = p.parent.scope(root).item(p.index, p.kind)
		default:
			p.sc = p.parent.scope(root).member(p.name, p.kind)
		}
		p.done = true
	}
	return &p.sc
}

// DropOptionalNulls removes from args every null member the schema says is
// an optional property that does not admit null (see the comment at the
// top of this file) and reports each as a normalize.NullDropped repair
// with its JSON Pointer, in key order, depth-first. args is never mutated:
// the result copies the objects and lists on the path to a removal and
// shares the rest. Without a null anywhere it returns args itself and
// allocates nothing.
func (s *Schema) DropOptionalNulls(args *structpb.Struct) (*structpb.Struct, []normalize.Repair) {
	if args == nil || !structHasNull(args) {
		return args, nil
	}
	w := nullsWalker{root: s.nullsRoot(), path: make([]byte, 0, 64)}
	out, changed := w.object(args, &nplace{kind: tObject})
	if !changed {
		return args, nil
	}
	return out, w.repairs
}

func structHasNull(s *structpb.Struct) bool {
	for _, v := range s.GetFields() {
		if valueHasNull(v) {
			return true
		}
	}
	return false
}

func valueHasNull(v *structpb.Value) bool {
	switch k := v.GetKind().(type) {
	case *structpb.Value_NullValue:
		return true
	case *structpb.Value_StructValue:
		return structHasNull(k.StructValue)
	case *structpb.Value_ListValue:
		for _, e := range k.ListValue.GetValues() {
			if valueHasNull(e) {
				return true
			}
		}
	}
	return false
}

type nullsWalker struct {
	root    *nnode
	path    []byte // the current RFC 6901 pointer
	repairs []normalize.Repair
}

func (w *nullsWalker) object(s *structpb.Struct, at *nplace) (*structpb.Struct, bool) {
	fields := s.GetFields()
	var names []string
	for k, v := range fields {
		if valueHasNull(v) {
			names = append(names, k)
		}
	}
	if len(names) == 0 {
		return s, false
	}
	slices.Sort(names)
	var out map[string]*structpb.Value // a copy, once something changes
	base := len(w.path)
	for _, k := range names {
		w.path = appendPointerToken(w.path[:base], k)
		var nv *structpb.Value
		switch v := fields[k].GetKind().(type) {
		case *structpb.Value_NullValue:
			if !at.scope(w.root).drops(k) {
				continue
			}
			w.repairs = append(w.repairs, normalize.Repair{Path: string(w.path), Kind: normalize.NullDropped})
		case *structpb.Value_StructValue:
			ns, changed := w.object(v.StructValue, &nplace{parent: at, name: k, kind: tObject})
			if !changed {
				continue
			}
			nv = structpb.NewStructValue(ns)
		case *structpb.Value_ListValue:
			nl, changed := w.list(v.ListValue, &nplace{parent: at, name: k, kind: tArray})
			if !changed {
				continue
			}
			nv = structpb.NewListValue(nl)
		}
		if out == nil {
			out = make(map[string]*structpb.Value, len(fields))
			for kk, vv := range fields {
				out[kk] = vv
			}
		}
		if nv == nil {
			delete(out, k)
		} else {
			out[k] = nv
		}
	}
	w.path = w.path[:base]
	if out == nil {
		return s, false
	}
	return &structpb.Struct{Fields: out}, true
}

func (w *nullsWalker) list(l *structpb.ListValue, at *nplace) (*structpb.ListValue, bool) {
	var out []*structpb.Value // a copy, once something changes
	base := len(w.path)
	for i, e := range l.GetValues() {
		if !valueHasNull(e) {
			continue
		}
		var nv *structpb.Value
		switch v := e.GetKind().(type) {
		case *structpb.Value_StructValue:
			w.path = appendIndexToken(w.path[:base], i)
			ns, changed := w.object(v.StructValue, &nplace{parent: at, index: i, item: true, kind: tObject})
			if !changed {
				continue
			}
			nv = structpb.NewStructValue(ns)
		case *structpb.Value_ListValue:
			w.path = appendIndexToken(w.path[:base], i)
			nl, changed := w.list(v.ListValue, &nplace{parent: at, index: i, item: true, kind: tArray})
			if !changed {
				continue
			}
			nv = structpb.NewListValue(nl)
		default:
			continue // a null element is not a property: never removed
		}
		if out == nil {
			out = slices.Clone(l.Values)
		}
		out[i] = nv
	}
	w.path = w.path[:base]
	if out == nil {
		return l, false
	}
	return &structpb.ListValue{Values: out}, true
}

// appendPointerToken appends "/" and tok escaped per RFC 6901.
func appendPointerToken(b []byte, tok string) []byte {
	b = append(b, '/')
	for i := 0; i < len(tok); i++ {
		switch c := tok[i]; c {
		case '~':
			b = append(b, '~', '0')
		case '/':
			b = append(b, '~', '1')
		default:
			b = append(b, c)
		}
	}
	return b
}

func appendIndexToken(b []byte, i int) []byte {
	return strconv.AppendInt(append(b, '/'), int64(i), 10)
}
