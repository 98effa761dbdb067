package schema

import (
	"regexp"
	"strconv"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
)

// Sensitivity is THE notion of a sensitive argument value: one a tool's
// input schema marks writeOnly: true, format: "password" or x-sensitive:
// true. Validation messages never show such a value (validate.go) and the
// audit log redacts it (policy.Redactor); both read this type.
//
// It resolves subschemas the way normalize does — properties,
// patternProperties, additionalProperties, items/prefixItems, local $ref
// and allOf/anyOf/oneOf (a value is sensitive if ANY applicable branch says
// so) — and it fails closed: a $ref it cannot resolve or a pattern Go cannot
// compile counts as sensitive. Immutable after NewSensitivity, so safe for
// concurrent use.
type Sensitivity struct {
	root     *structpb.Struct
	patterns map[string]*regexp.Regexp // nil value: pattern did not compile
	deep     map[*structpb.Struct]bool // schema node -> has a sensitive node at or under it
}

// Nodes are the schema nodes that apply to one value.
type Nodes []*structpb.Struct

// NewSensitivity prepares the sensitivity of schema (nil: nothing is
// sensitive).
func NewSensitivity(schema *structpb.Struct) *Sensitivity {
	s := &Sensitivity{root: schema, patterns: map[string]*regexp.Regexp{}, deep: map[*structpb.Struct]bool{}}
	if schema != nil {
		s.containsSensitive(schema, map[*structpb.Struct]bool{})
	}
	return s
}

// Any reports whether the schema marks anything sensitive at all.
func (s *Sensitivity) Any() bool { return s != nil && s.root != nil && s.deep[s.root] }

// Root is the nodes of the arguments object itself.
func (s *Sensitivity) Root() Nodes {
	if s == nil || s.root == nil {
		return nil
	}
	return Nodes{s.root}
}

// Marked reports whether the value the nodes apply to is itself sensitive.
func (s *Sensitivity) Marked(nodes Nodes) bool {
	for _, n := range nodes {
		if s.sensitiveHere(n) {
			return true
		}
	}
	return false
}

// Holds reports whether a sensitive value may sit at or under the value
// the nodes apply to (so a string there may be it, as JSON text).
func (s *Sensitivity) Holds(nodes Nodes) bool {
	for _, n := range nodes {
		if s.deep[n] {
			return true
		}
	}
	return false
}

// At reports whether a message about the value at the instance location
// tokens (isArr[i]: token i indexes an array) could reveal a sensitive
// value: the value or one of its ancestors is marked, or the value may hold
// one.
func (s *Sensitivity) At(tokens []string, isArr []bool) bool {
	if !s.Any() {
		return false
	}
	nodes := s.Root()
	for i, t := range tokens {
		if s.Marked(nodes) {
			return true
		}
		if i < len(isArr) && isArr[i] {
			n, err := strconv.Atoi(t)
			if err != nil {
				return true // not an index after all: fail closed
			}
			nodes = s.Index(nodes, n)
		} else {
			nodes = s.Key(nodes, t)
		}
	}
	return s.Marked(nodes) || s.Holds(nodes)
}

// Key is the nodes that apply to the member key of an object the nodes
// apply to.
func (s *Sensitivity) Key(nodes Nodes, key string) Nodes {
	var out Nodes
	for _, n := range s.expand(nodes) {
		matched := false
		if p := n.GetFields()["properties"].GetStructValue(); p != nil {
			if sub, ok := p.GetFields()[key]; ok {
				matched = true
				out = appendSchema(out, sub)
			}
		}
		for pat, sub := range n.GetFields()["patternProperties"].GetStructValue().GetFields() {
			re := s.pattern(pat)
			if re == nil || re.MatchString(key) {
				matched = true
				out = appendSchema(out, sub)
			}
		}
		if !matched {
			out = appendSchema(out, n.GetFields()["additionalProperties"])
		}
	}
	return out
}

// Index is the nodes that apply to element i of an array the nodes apply
// to.
func (s *Sensitivity) Index(nodes Nodes, i int) Nodes {
	var out Nodes
	for _, n := range s.expand(nodes) {
		f := n.GetFields()
		if pi := f["prefixItems"].GetListValue().GetValues(); i < len(pi) {
			out = appendSchema(out, pi[i])
			continue
		}
		switch it := f["items"].GetKind().(type) {
		case *structpb.Value_StructValue:
			out = append(out, it.StructValue)
		case *structpb.Value_ListValue: // draft-04 tuple form
			if vs := it.ListValue.GetValues(); i < len(vs) {
				out = appendSchema(out, vs[i])
			} else {
				out = appendSchema(out, f["additionalItems"])
			}
		}
	}
	return out
}

// expand follows $ref and allOf/anyOf/oneOf, returning every schema node
// that applies to the same value (cycle-safe).
func (s *Sensitivity) expand(nodes Nodes) Nodes {
	var out Nodes
	seen := map[*structpb.Struct]bool{}
	var walk func(n *structpb.Struct)
	walk = func(n *structpb.Struct) {
		if n == nil || seen[n] {
			return
		}
		seen[n] = true
		out = append(out, n)
		if ref, ok := stringMember(n, "$ref"); ok {
			if t := s.resolve(ref); t != nil {
				walk(t)
			}
		}
		for _, kw := range []string{"allOf", "anyOf", "oneOf"} {
			for _, e := range n.GetFields()[kw].GetListValue().GetValues() {
				walk(e.GetStructValue())
			}
		}
	}
	for _, n := range nodes {
		walk(n)
	}
	return out
}

func appendSchema(out Nodes, v *structpb.Value) Nodes {
	if sub := v.GetStructValue(); sub != nil {
		return append(out, sub)
	}
	return out
}

// sensitiveHere reports whether n (through $ref and combinators) marks the
// value itself sensitive.
func (s *Sensitivity) sensitiveHere(n *structpb.Struct) bool {
	for _, e := range s.expand(Nodes{n}) {
		if markedSensitive(e) {
			return true
		}
		if ref, ok := stringMember(e, "$ref"); ok && s.resolve(ref) == nil {
			return true // unresolvable: fail closed
		}
	}
	return false
}

func markedSensitive(n *structpb.Struct) bool {
	f := n.GetFields()
	if f["writeOnly"].GetBoolValue() || f["x-sensitive"].GetBoolValue() {
		return true
	}
	format, _ := stringMember(n, "format")
	return format == "password"
}

// containsSensitive precomputes deep[n] for every node reachable from n.
func (s *Sensitivity) containsSensitive(n *structpb.Struct, onPath map[*structpb.Struct]bool) bool {
	if v, ok := s.deep[n]; ok {
		return v
	}
	if onPath[n] {
		return false // a cycle adds nothing new; other paths decide
	}
	onPath[n] = true
	defer delete(onPath, n)
	res := markedSensitive(n)
	visit := func(v *structpb.Value) {
		switch k := v.GetKind().(type) {
		case *structpb.Value_StructValue:
			if s.containsSensitive(k.StructValue, onPath) {
				res = true
			}
		case *structpb.Value_ListValue:
			for _, e := range k.ListValue.GetValues() {
				if sub := e.GetStructValue(); sub != nil && s.containsSensitive(sub, onPath) {
					res = true
				}
			}
		}
	}
	f := n.GetFields()
	if ref, ok := stringMember(n, "$ref"); ok {
		if t := s.resolve(ref); t == nil {
			res = true
		} else if s.containsSensitive(t, onPath) {
			res = true
		}
	}
	for _, kw := range []string{"items", "additionalProperties", "additionalItems", "prefixItems", "allOf", "anyOf", "oneOf"} {
		visit(f[kw])
	}
	for p := range f["patternProperties"].GetStructValue().GetFields() {
		if _, ok := s.patterns[p]; !ok {
			s.patterns[p], _ = regexp.Compile(p) // nil on error: treated as matching (fail closed)
		}
	}
	for _, kw := range []string{"properties", "patternProperties"} {
		for _, sub := range f[kw].GetStructValue().GetFields() {
			visit(sub)
		}
	}
	s.deep[n] = res
	return res
}

// resolve follows a local JSON Pointer $ref ("#", "#/$defs/x"); others give nil.
func (s *Sensitivity) resolve(ref string) *structpb.Struct {
	if !strings.HasPrefix(ref, "#") {
		return nil
	}
	ptr := ref[1:]
	cur := structpb.NewStructValue(s.root)
	if ptr == "" {
		return s.root
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch k := cur.GetKind().(type) {
		case *structpb.Value_StructValue:
			next, ok := k.StructValue.GetFields()[tok]
			if !ok {
				return nil
			}
			cur = next
		case *structpb.Value_ListValue:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(k.ListValue.GetValues()) {
				return nil
			}
			cur = k.ListValue.GetValues()[i]
		default:
			return nil
		}
	}
	return cur.GetStructValue()
}

// pattern returns the compiled pattern (the map is filled by
// NewSensitivity and only read afterwards).
func (s *Sensitivity) pattern(p string) *regexp.Regexp {
	if re, ok := s.patterns[p]; ok {
		return re
	}
	re, _ := regexp.Compile(p)
	return re
}

func stringMember(n *structpb.Struct, key string) (string, bool) {
	v, ok := n.GetFields()[key].GetKind().(*structpb.Value_StringValue)
	if !ok {
		return "", false
	}
	return v.StringValue, true
}
