package schema

import (
	"fmt"
	"math"
	"math/big"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The fast validator accepts valid arguments without allocating. It is
// compiled from the *jsonschema.Schema that jsonschema/v6 itself compiled —
// not from the raw document — so drafts, keyword parsing and ignored
// keywords are exactly what the authoritative validator evaluates. It
// mirrors jsonschema's validate() for a subset of keywords; a schema that
// reaches anything outside the subset gets no fast validator, and Validate
// falls back to jsonschema, which also produces the messages for invalid
// arguments. Within the subset the evaluation is exact (it rejects exactly
// what jsonschema rejects), which oneOf needs to stay sound.
//
// The evaluation (eval.go) exists once, generic over the representation it
// reads: decoded arguments (a *structpb.Struct, fast_struct.go) or their
// wire bytes (fast_wire.go).

// JSON types as bits, mirroring jsonschema's Types.
const (
	tNull uint8 = 1 << iota
	tBool
	tNumber
	tInteger
	tString
	tArray
	tObject
)

// fastSchema is the compiled fast validator of one tool schema.
type fastSchema struct{ root *fnode }

// addlKind says what happens to properties (items) no other keyword covers.
type addlKind uint8

const (
	addlNone   addlKind = iota // not constrained
	addlFalse                  // forbidden
	addlSchema                 // validated by a schema
)

type patternProp struct {
	re jsonschema.Regexp
	n  *fnode
}

// fnode is one compiled schema. Absent numeric limits are -1 / NaN-free
// flags; see compileFast for how each field maps to jsonschema's.
type fnode struct {
	isBool, boolVal bool

	types   uint8 // 0: no type keyword
	safeInt bool  // the ±2^53 extension (safeIntVocab)
	hasCnst bool
	cnst    any
	hasEnum bool
	enum    []any

	ref     *fnode
	refOnly bool // draft < 2019: $ref ends evaluation (siblings ignored)

	allOf, anyOf, oneOf []*fnode

	// object
	props              map[string]*fnode
	patProps           []patternProp
	addl               addlKind
	addlNode           *fnode
	required           []string
	minProps, maxProps int

	// array
	prefix             []*fnode
	rest               addlKind
	restNode           *fnode
	minItems, maxItems int
	unique             bool

	// string
	minLen, maxLen int
	pattern        jsonschema.Regexp

	// number
	hasMin, hasMax, hasExMin, hasExMax bool
	min, max, exMin, exMax             float64
}

// errUnsupported marks a schema the fast validator does not cover.
type errUnsupported struct{ what, at string }

func (e errUnsupported) Error() string { return e.what + " at " + e.at }

// compileFast returns the fast validator for s, or nil (with the reason)
// when s uses anything outside the supported subset.
func compileFast(s *jsonschema.Schema) (*fastSchema, error) {
	c := fastCompiler{nodes: map[*jsonschema.Schema]*fnode{}}
	root, err := c.node(s)
	if err != nil {
		return nil, err
	}
	// jsonschema reports a reference cycle that does not descend into the
	// instance as an error at validation time; rather than mirror that,
	// such schemas are unsupported (and evaluation can never loop).
	if loc := c.sameInstanceCycle(); loc != "" {
		return nil, errUnsupported{"reference cycle without descent", loc}
	}
	return &fastSchema{root: root}, nil
}

type fastCompiler struct {
	nodes map[*jsonschema.Schema]*fnode
	order []*jsonschema.Schema
}

func (c *fastCompiler) node(s *jsonschema.Schema) (*fnode, error) {
	if n, ok := c.nodes[s]; ok {
		return n, nil // shared or recursive: filled in (or being filled) already
	}
	n := &fnode{minProps: -1, maxProps: -1, minItems: -1, maxItems: -1, minLen: -1, maxLen: -1}
	c.nodes[s] = n
	c.order = append(c.order, s)
	return n, c.fill(n, s)
}

func (c *fastCompiler) list(ss []*jsonschema.Schema) ([]*fnode, error) {
	if len(ss) == 0 {
		return nil, nil
	}
	out := make([]*fnode, len(ss))
	for i, s := range ss {
		n, err := c.node(s)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

func (c *fastCompiler) fill(n *fnode, s *jsonschema.Schema) error {
	bad := func(what string) error { return errUnsupported{what, s.Location} }
	if s.Bool != nil {
		n.isBool, n.boolVal = true, *s.Bool
		return nil
	}
	if s.Types != nil && !s.Types.IsEmpty() {
		for _, t := range s.Types.ToStrings() {
			n.types |= typeBit(t)
		}
	}
	if s.Const != nil {
		if !plainJSON(*s.Const) {
			return bad("const value of an unexpected Go type")
		}
		n.hasCnst, n.cnst = true, *s.Const
	}
	if s.Enum != nil {
		for _, v := range s.Enum.Values {
			if !plainJSON(v) {
				return bad("enum value of an unexpected Go type")
			}
		}
		n.hasEnum, n.enum = true, s.Enum.Values
	}
	if s.Format != nil {
		return bad("asserted format")
	}
	if s.Ref != nil {
		r, err := c.node(s.Ref)
		if err != nil {
			return err
		}
		n.ref = r
		if s.DraftVersion < 2019 {
			// jsonschema's validate() returns right after $ref for these
			// drafts: only type/const/enum/format (checked above, and set
			// only when compiled) and the ref count.
			n.refOnly = true
			return nil
		}
	}

	// Keywords outside the subset.
	switch {
	case s.Not != nil:
		return bad("not")
	case s.If != nil || s.Then != nil || s.Else != nil:
		return bad("if/then/else")
	case s.RecursiveRef != nil:
		return bad("$recursiveRef")
	case s.DynamicRef != nil:
		return bad("$dynamicRef")
	case s.PropertyNames != nil:
		return bad("propertyNames")
	case len(s.Dependencies) > 0:
		return bad("dependencies")
	case len(s.DependentRequired) > 0:
		return bad("dependentRequired")
	case len(s.DependentSchemas) > 0:
		return bad("dependentSchemas")
	case s.UnevaluatedProperties != nil || s.UnevaluatedItems != nil:
		return bad("unevaluated*")
	case s.Contains != nil || s.MinContains != nil || s.MaxContains != nil:
		return bad("contains")
	case s.MultipleOf != nil:
		return bad("multipleOf")
	case s.ContentEncoding != nil || s.ContentMediaType != nil || s.ContentSchema != nil:
		return bad("content assertion")
	}
	for _, ext := range s.Extensions {
		if _, ok := ext.(safeInt); !ok {
			return bad(fmt.Sprintf("keyword extension %T", ext))
		}
		n.safeInt = true
	}

	var err error
	if n.allOf, err = c.list(s.AllOf); err != nil {
		return err
	}
	if n.anyOf, err = c.list(s.AnyOf); err != nil {
		return err
	}
	if n.oneOf, err = c.list(s.OneOf); err != nil {
		return err
	}

	// object
	if len(s.Properties) > 0 {
		n.props = make(map[string]*fnode, len(s.Properties))
		for k, ps := range s.Properties {
			if n.props[k], err = c.node(ps); err != nil {
				return err
			}
		}
	}
	for re, ps := range s.PatternProperties {
		pn, err := c.node(ps)
		if err != nil {
			return err
		}
		n.patProps = append(n.patProps, patternProp{re, pn})
	}
	if n.addl, n.addlNode, err = c.additional(s.AdditionalProperties); err != nil {
		return err
	}
	n.required = s.Required
	if n.minProps, err = limit(s.MinProperties); err != nil {
		return bad(err.Error())
	}
	if n.maxProps, err = limit(s.MaxProperties); err != nil {
		return bad(err.Error())
	}

	// array: jsonschema's two item models, per draft, folded into
	// prefix + rest.
	if s.DraftVersion < 2020 {
		switch items := s.Items.(type) {
		case nil:
			if n.rest, n.restNode, err = c.additional(s.AdditionalItems); err != nil {
				return err
			}
		case *jsonschema.Schema:
			// additionalItems never applies: every item is evaluated.
			if n.restNode, err = c.node(items); err != nil {
				return err
			}
			n.rest = addlSchema
		case []*jsonschema.Schema:
			if n.prefix, err = c.list(items); err != nil {
				return err
			}
			if n.rest, n.restNode, err = c.additional(s.AdditionalItems); err != nil {
				return err
			}
		default:
			return bad(fmt.Sprintf("items of Go type %T", items))
		}
	} else {
		if n.prefix, err = c.list(s.PrefixItems); err != nil {
			return err
		}
		if s.Items2020 != nil {
			if n.restNode, err = c.node(s.Items2020); err != nil {
				return err
			}
			n.rest = addlSchema
		}
	}
	if n.minItems, err = limit(s.MinItems); err != nil {
		return bad(err.Error())
	}
	if n.maxItems, err = limit(s.MaxItems); err != nil {
		return bad(err.Error())
	}
	n.unique = s.UniqueItems

	// string
	if n.minLen, err = limit(s.MinLength); err != nil {
		return bad(err.Error())
	}
	if n.maxLen, err = limit(s.MaxLength); err != nil {
		return bad(err.Error())
	}
	n.pattern = s.Pattern

	// number
	for _, b := range []struct {
		r   *big.Rat
		has *bool
		f   *float64
	}{{s.Minimum, &n.hasMin, &n.min}, {s.Maximum, &n.hasMax, &n.max}, {s.ExclusiveMinimum, &n.hasExMin, &n.exMin}, {s.ExclusiveMaximum, &n.hasExMax, &n.exMax}} {
		if b.r == nil {
			continue
		}
		f, ok := ratAsFloat(b.r)
		if !ok {
			return bad("numeric bound not exactly a float64's shortest form: " + b.r.RatString())
		}
		*b.has, *b.f = true, f
	}
	return nil
}

func (c *fastCompiler) additional(a any) (addlKind, *fnode, error) {
	switch a := a.(type) {
	case nil:
		return addlNone, nil, nil
	case bool:
		if a {
			return addlNone, nil, nil
		}
		return addlFalse, nil, nil
	case *jsonschema.Schema:
		n, err := c.node(a)
		return addlSchema, n, err
	}
	return 0, nil, errUnsupported{fmt.Sprintf("additional* of Go type %T", a), ""}
}

// sameInstanceCycle finds a cycle through edges that evaluate the same
// instance ($ref, allOf, anyOf, oneOf) and returns a location on it.
func (c *fastCompiler) sameInstanceCycle() string {
	const (
		unseen = iota
		active
		done
	)
	state := map[*fnode]int{}
	loc := map[*fnode]string{}
	for s, n := range c.nodes {
		loc[n] = s.Location
	}
	var visit func(n *fnode) string
	visit = func(n *fnode) string {
		switch state[n] {
		case active:
			return loc[n]
		case done:
			return ""
		}
		state[n] = active
		next := append(append(append([]*fnode{n.ref}, n.allOf...), n.anyOf...), n.oneOf...)
		for _, m := range next {
			if m == nil {
				continue
			}
			if l := visit(m); l != "" {
				return l
			}
		}
		state[n] = done
		return ""
	}
	for _, s := range c.order {
		if l := visit(c.nodes[s]); l != "" {
			return l
		}
	}
	return ""
}

func typeBit(t string) uint8 {
	switch t {
	case "null":
		return tNull
	case "boolean":
		return tBool
	case "number":
		return tNumber
	case "integer":
		return tInteger
	case "string":
		return tString
	case "array":
		return tArray
	case "object":
		return tObject
	}
	return 0
}

// limit converts a jsonschema count limit; -1 when absent.
func limit(p *int) (int, error) {
	if p == nil {
		return -1, nil
	}
	if *p < 0 {
		return 0, fmt.Errorf("negative limit %d", *p)
	}
	return *p, nil
}

// ratAsFloat returns the float64 whose shortest decimal form is exactly r.
// jsonschema compares numbers as big.Rat of fmt.Sprint(float64), i.e. of
// shortest forms; that order equals float64 order only when the bound is
// itself such a form, which holds for bounds read from a structpb schema.
func ratAsFloat(r *big.Rat) (float64, bool) {
	f, _ := r.Float64()
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	back, ok := new(big.Rat).SetString(fmt.Sprint(f))
	return f, ok && back.Cmp(r) == 0
}

// plainJSON reports whether v holds only the Go types structToMap produces.
func plainJSON(v any) bool {
	switch v := v.(type) {
	case nil, bool, string:
		return true
	case float64:
		return !math.IsNaN(v) && !math.IsInf(v, 0)
	case []any:
		for _, x := range v {
			if !plainJSON(x) {
				return false
			}
		}
		return true
	case map[string]any:
		for _, x := range v {
			if !plainJSON(x) {
				return false
			}
		}
		return true
	}
	return false
}
