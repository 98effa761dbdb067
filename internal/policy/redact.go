package policy

import (
	"regexp"
	"strconv"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
)

// Redacted replaces sensitive argument values in the audit log.
const Redacted = "[REDACTED]"

// Redactor knows which argument values a tool's input schema marks
// sensitive: writeOnly: true, format: "password" or x-sensitive: true. It
// resolves subschemas the way normalize does — properties,
// patternProperties, additionalProperties, items/prefixItems, local $ref and
// allOf/anyOf/oneOf (a value is sensitive if ANY applicable branch says so).
//
// It fails closed: a $ref it cannot resolve or a pattern Go cannot compile
// counts as sensitive. A string sent where the schema expects an object or
// array holding a sensitive field is redacted whole, because it may be that
// object as JSON text (normalize would decode it).
type Redactor struct {
	root     *structpb.Struct
	patterns map[string]*regexp.Regexp // nil value: pattern did not compile
	deep     map[*structpb.Struct]bool // schema node -> has a sensitive node at or under it
}

// NewRedactor prepares a Redactor for schema (nil: nothing is sensitive).
func NewRedactor(schema *structpb.Struct) *Redactor {
	r := &Redactor{root: schema, patterns: map[string]*regexp.Regexp{}, deep: map[*structpb.Struct]bool{}}
	if schema != nil {
		r.containsSensitive(schema, map[*structpb.Struct]bool{})
	}
	return r
}

// Redact returns a copy of args with sensitive values replaced by Redacted.
// args is not modified.
func (r *Redactor) Redact(args *structpb.Struct) *structpb.Struct {
	if args == nil {
		return nil
	}
	var nodes []*structpb.Struct
	if r != nil && r.root != nil {
		nodes = []*structpb.Struct{r.root}
	}
	return r.object(args, nodes)
}

func (r *Redactor) object(s *structpb.Struct, nodes []*structpb.Struct) *structpb.Struct {
	out := &structpb.Struct{Fields: make(map[string]*structpb.Value, len(s.GetFields()))}
	for k, v := range s.GetFields() {
		out.Fields[k] = r.value(v, r.childrenForKey(nodes, k))
	}
	return out
}

func (r *Redactor) value(v *structpb.Value, nodes []*structpb.Struct) *structpb.Value {
	for _, n := range nodes {
		if r.sensitiveHere(n) {
			return structpb.NewStringValue(Redacted)
		}
	}
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		for _, n := range nodes {
			if r.deep[n] {
				return structpb.NewStringValue(Redacted)
			}
		}
		return v
	case *structpb.Value_StructValue:
		return structpb.NewStructValue(r.object(k.StructValue, nodes))
	case *structpb.Value_ListValue:
		vals := k.ListValue.GetValues()
		out := make([]*structpb.Value, len(vals))
		for i, e := range vals {
			out[i] = r.value(e, r.childrenForIndex(nodes, i))
		}
		return structpb.NewListValue(&structpb.ListValue{Values: out})
	}
	return v
}

// expand follows $ref and allOf/anyOf/oneOf, returning every schema node
// that applies to the same value (cycle-safe).
func (r *Redactor) expand(nodes []*structpb.Struct) []*structpb.Struct {
	var out []*structpb.Struct
	seen := map[*structpb.Struct]bool{}
	var walk func(n *structpb.Struct)
	walk = func(n *structpb.Struct) {
		if n == nil || seen[n] {
			return
		}
		seen[n] = true
		out = append(out, n)
		if ref, ok := str(n, "$ref"); ok {
			if t := r.resolve(ref); t != nil {
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

func (r *Redactor) childrenForKey(nodes []*structpb.Struct, key string) []*structpb.Struct {
	var out []*structpb.Struct
	for _, n := range r.expand(nodes) {
		matched := false
		if p := n.GetFields()["properties"].GetStructValue(); p != nil {
			if s, ok := p.GetFields()[key]; ok {
				matched = true
				out = appendSchema(out, s)
			}
		}
		for pat, s := range n.GetFields()["patternProperties"].GetStructValue().GetFields() {
			re := r.pattern(pat)
			if re == nil || re.MatchString(key) {
				matched = true
				out = appendSchema(out, s)
			}
		}
		if !matched {
			out = appendSchema(out, n.GetFields()["additionalProperties"])
		}
	}
	return out
}

func (r *Redactor) childrenForIndex(nodes []*structpb.Struct, i int) []*structpb.Struct {
	var out []*structpb.Struct
	for _, n := range r.expand(nodes) {
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

func appendSchema(out []*structpb.Struct, v *structpb.Value) []*structpb.Struct {
	if s := v.GetStructValue(); s != nil {
		return append(out, s)
	}
	return out
}

// sensitiveHere reports whether n (through $ref and combinators) marks the value itself sensitive.
func (r *Redactor) sensitiveHere(n *structpb.Struct) bool {
	for _, e := range r.expand([]*structpb.Struct{n}) {
		if markedSensitive(e) {
			return true
		}
		if ref, ok := str(e, "$ref"); ok && r.resolve(ref) == nil {
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
	format, _ := str(n, "format")
	return format == "password"
}

// containsSensitive precomputes deep[n] for every node reachable from n.
func (r *Redactor) containsSensitive(n *structpb.Struct, onPath map[*structpb.Struct]bool) bool {
	if v, ok := r.deep[n]; ok {
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
			if r.containsSensitive(k.StructValue, onPath) {
				res = true
			}
		case *structpb.Value_ListValue:
			for _, e := range k.ListValue.GetValues() {
				if s := e.GetStructValue(); s != nil && r.containsSensitive(s, onPath) {
					res = true
				}
			}
		}
	}
	f := n.GetFields()
	if ref, ok := str(n, "$ref"); ok {
		if t := r.resolve(ref); t == nil {
			res = true
		} else if r.containsSensitive(t, onPath) {
			res = true
		}
	}
	for _, kw := range []string{"items", "additionalProperties", "additionalItems", "prefixItems", "allOf", "anyOf", "oneOf"} {
		visit(f[kw])
	}
	for p := range f["patternProperties"].GetStructValue().GetFields() {
		if _, ok := r.patterns[p]; !ok {
			r.patterns[p], _ = regexp.Compile(p) // nil on error: treated as matching (fail closed)
		}
	}
	for _, kw := range []string{"properties", "patternProperties"} {
		for _, s := range f[kw].GetStructValue().GetFields() {
			visit(s)
		}
	}
	r.deep[n] = res
	return res
}

// resolve follows a local JSON Pointer $ref ("#", "#/$defs/x"); others give nil.
func (r *Redactor) resolve(ref string) *structpb.Struct {
	if !strings.HasPrefix(ref, "#") {
		return nil
	}
	ptr := ref[1:]
	cur := structpb.NewStructValue(r.root)
	if ptr == "" {
		return r.root
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

// pattern returns the compiled pattern (the map is filled by NewRedactor and
// only read afterwards, so a Redactor is safe for concurrent use).
func (r *Redactor) pattern(p string) *regexp.Regexp {
	if re, ok := r.patterns[p]; ok {
		return re
	}
	re, _ := regexp.Compile(p)
	return re
}

func str(n *structpb.Struct, key string) (string, bool) {
	v, ok := n.GetFields()[key].GetKind().(*structpb.Value_StringValue)
	if !ok {
		return "", false
	}
	return v.StringValue, true
}
