package compat

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Kind says how a finding may break a caller.
type Kind string

// Finding kinds.
const (
	// Removed: a property the old schema declared is gone.
	Removed Kind = "removed"
	// NewlyRequired: a property callers could leave out is required.
	NewlyRequired Kind = "newly-required"
	// Narrowed: a keyword admits fewer values than before.
	Narrowed Kind = "narrowed"
	// TooComplex: the schemas could not be compared within the bounds;
	// breaking, since nothing was shown compatible.
	TooComplex Kind = "too-complex"
)

// Finding is one way the new schema may refuse a value the old accepted.
type Finding struct {
	// Path is a JSON Pointer into the schema as walked from the root
	// (through $ref as if inlined): the property for Removed and
	// NewlyRequired ("/properties/a"), the keyword for Narrowed
	// ("/properties/a/maximum") and for TooComplex found at one; "" when
	// the whole comparison was cut off by a bound.
	Path string
	// Keyword is the JSON Schema keyword that narrows ("maximum",
	// "required", "properties" for a removal, ...).
	Keyword string
	Kind    Kind
	Message string
}

// Bounds on the work one Compare does.
const (
	// MaxNodes bounds the JSON values in both documents together.
	MaxNodes = 100_000
	// MaxDepth bounds the nesting of the walk (schemas within schemas,
	// references followed).
	MaxDepth = 64
	// MaxSteps bounds the schema pairs compared, trial comparisons for
	// anyOf/oneOf and reference hops included.
	MaxSteps = 20_000
	// maxProbes bounds the old enum/const sets checked value by value
	// against the new schema, and maxProbeValues each set.
	maxProbes      = 64
	maxProbeValues = 512
)

// errTooComplex ends a comparison that crossed a bound.
type errTooComplex struct{ why string }

// Compare lists the changes from old to new that can refuse a value old
// accepted, sorted by path then keyword; none means every value old
// accepted, new accepts. Both are decoded JSON Schema documents (a nil map
// is the empty schema, which accepts everything).
func Compare(old, new map[string]any) []Finding {
	if reflect.DeepEqual(old, new) {
		return nil
	}
	if old == nil {
		old = map[string]any{}
	}
	if new == nil {
		new = map[string]any{}
	}
	for _, doc := range []map[string]any{old, new} {
		if why := unsupported(doc); why != "" {
			return []Finding{tooComplex(why)}
		}
	}
	if n := countNodes(old, MaxNodes) + countNodes(new, MaxNodes); n > MaxNodes {
		return []Finding{tooComplex(fmt.Sprintf("the schemas hold more than %d values", MaxNodes))}
	}
	c := &comparer{old: old, new: new, active: map[pair]bool{}}
	res := func() (r []Finding) {
		defer func() {
			if e := recover(); e != nil {
				// A bound crossed — or a shape no check expected: either
				// way nothing was shown compatible, so the answer is
				// breaking, never a crash of the registration.
				why := "an unexpected schema shape"
				if tc, ok := e.(errTooComplex); ok {
					why = tc.why
				}
				r = append(c.out, tooComplex(why))
			}
		}()
		c.compare(node{v: old, loc: "#"}, node{v: new, loc: "#"}, at{})
		return c.out
	}()
	slices.SortStableFunc(res, func(a, b Finding) int {
		if d := strings.Compare(a.Path, b.Path); d != 0 {
			return d
		}
		return strings.Compare(a.Keyword, b.Keyword)
	})
	return slices.CompactFunc(res, func(a, b Finding) bool { return a == b })
}

func tooComplex(why string) Finding {
	return Finding{Kind: TooComplex, Message: "breaking: too complex to compare (" + why + ")"}
}

// node is a schema value with its location in its own document, a URI
// fragment ("#", "#/properties/a"; "" when it has none: a merge of
// several schemas).
type node struct {
	v   any
	loc string
}

// pair identifies an old/new comparison by the locations of both sides.
type pair struct{ old, new string }

// comparer is the state of one Compare.
type comparer struct {
	old, new map[string]any
	out      []Finding
	steps    int
	probes   int
	// active holds the located pairs being compared (the current walk),
	// so that a reference cycle assumes itself compatible instead of
	// looping: a finite value descends the cycle only finitely often, so
	// the other pairs on the walk decide it.
	active map[pair]bool
}

func (c *comparer) add(path, keyword string, kind Kind, format string, args ...any) {
	p := path
	if kind == Narrowed || kind == TooComplex {
		p = path + "/" + escape(keyword)
	}
	c.out = append(c.out, Finding{Path: p, Keyword: keyword, Kind: kind, Message: fmt.Sprintf(format, args...)})
}

// step counts one unit of work and enforces the bounds.
func (c *comparer) step(depth int) {
	c.steps++
	if c.steps > MaxSteps {
		panic(errTooComplex{fmt.Sprintf("more than %d schema comparisons", MaxSteps)})
	}
	if depth > MaxDepth {
		panic(errTooComplex{fmt.Sprintf("nested deeper than %d", MaxDepth)})
	}
}

// try runs fn as a trial: it reports whether fn found nothing, and keeps
// none of its findings.
func (c *comparer) try(fn func()) bool {
	saved := c.out
	c.out = nil
	fn()
	ok := len(c.out) == 0
	c.out = saved
	return ok
}

// escape encodes one JSON Pointer reference token (RFC 6901).
func escape(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}

// countNodes counts the JSON values in v, stopping past limit.
func countNodes(v any, limit int) int {
	n := 0
	var walk func(any)
	walk = func(v any) {
		if n > limit {
			return
		}
		n++
		switch t := v.(type) {
		case map[string]any:
			for _, x := range t {
				walk(x)
			}
		case []any:
			for _, x := range t {
				walk(x)
			}
		}
	}
	walk(v)
	return n
}
