package normalize

import (
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
)

// CompilationError reports a schema that cannot be compiled into a Plan.
type CompilationError struct {
	// Pointer is the JSON Pointer into the schema where the problem is.
	Pointer string
	Reason  string
}

func (e *CompilationError) Error() string {
	ptr := e.Pointer
	if ptr == "" {
		ptr = "(root)"
	}
	return fmt.Sprintf("normalize: schema %s: %s", ptr, e.Reason)
}

// typeSet is the union of JSON Schema types a parameter's schema declares.
type typeSet uint8

const (
	tArray typeSet = 1 << iota
	tObject
	tString
	tOther // number, integer, boolean, null
	// tUnknown: the schema reaches a $ref we cannot follow (not local), so
	// the declared types are unknown and the parameter is never decoded.
	tUnknown
)

// candidate returns the shapes a string argument may be decoded into:
// array and/or object, or 0 when the parameter must never be decoded.
func (t typeSet) candidate() typeSet {
	if t&(tString|tUnknown) != 0 {
		return 0
	}
	return t & (tArray | tObject)
}

func (t typeSet) declared() string {
	switch t & (tArray | tObject) {
	case tArray:
		return "array"
	case tObject:
		return "object"
	case tArray | tObject:
		return "array or object"
	}
	return ""
}

type pattern struct {
	re    *regexp.Regexp
	types typeSet
}

// Plan is a tool schema compiled into per-parameter decisions. It is
// immutable and safe for concurrent use.
type Plan struct {
	opts options
	// props holds every name the schema lists under properties (at the root
	// or in a root allOf/anyOf/oneOf/$ref branch), with its declared types.
	props    map[string]typeSet
	patterns []pattern
	// additional is the union of additionalProperties schemas' types;
	// hasAdditional is false when no branch gives a schema there.
	additional    typeSet
	hasAdditional bool
	// anyCandidate is false when no parameter can ever be JSON-decoded,
	// which lets Apply skip the per-key lookup entirely.
	anyCandidate bool
	// candNames lists the candidate parameters when they are few and only
	// properties can make a name a candidate: a length-checked scan of a
	// handful of names beats hashing the key on the no-repair hot path.
	candNames []string
	useNames  bool
}

// Compile walks a tool's input schema once and records, for each parameter,
// whether a string argument may be JSON-decoded and into which shape.
// A nil schema compiles to a plan that only decodes character references.
// Errors are *CompilationError.
func Compile(schema *structpb.Struct, opts ...Option) (*Plan, error) {
	p := &Plan{opts: defaultOptions(), props: map[string]typeSet{}}
	for _, o := range opts {
		o(&p.opts)
	}
	if schema == nil {
		return p, nil
	}
	c := &compiler{root: schema, anchors: map[string]*structpb.Struct{}}
	c.findAnchors(schema, map[*structpb.Struct]bool{})
	if err := c.gatherRoot(schema, "", map[*structpb.Struct]bool{}, p); err != nil {
		return nil, err
	}
	for _, t := range p.props {
		if t.candidate() != 0 {
			p.anyCandidate = true
		}
	}
	for _, pt := range p.patterns {
		if pt.types.candidate() != 0 {
			p.anyCandidate = true
		}
	}
	if p.hasAdditional && p.additional.candidate() != 0 {
		p.anyCandidate = true
	}
	if len(p.patterns) == 0 && !p.hasAdditional {
		var names []string
		for name, t := range p.props {
			if t.candidate() != 0 {
				names = append(names, name)
			}
		}
		if len(names) <= 8 {
			sort.Strings(names)
			p.candNames, p.useNames = names, true
		}
	}
	return p, nil
}

// CompileJSON is Compile for a schema given as JSON text.
func CompileJSON(schema []byte, opts ...Option) (*Plan, error) {
	var s structpb.Struct
	if err := s.UnmarshalJSON(schema); err != nil {
		return nil, &CompilationError{Pointer: "", Reason: "not a JSON object: " + err.Error()}
	}
	return Compile(&s, opts...)
}

// Declared returns the shapes a string argument for param may be decoded
// into ("array", "object" or "array or object"), or "" when it is never decoded.
func (p *Plan) Declared(param string) string {
	return p.lookup(param).declared()
}

// isCandidate reports whether a string argument named name may be JSON-decoded.
func (p *Plan) isCandidate(name string) bool {
	if !p.anyCandidate {
		return false
	}
	if p.useNames {
		for _, n := range p.candNames {
			if len(n) == len(name) && n == name {
				return true
			}
		}
		return false
	}
	return p.lookup(name) != 0
}

// lookup applies JSON Schema's applicability for a top-level name:
// properties, else every matching patternProperties, else additionalProperties.
// It returns the candidate shapes (0 = never decode).
func (p *Plan) lookup(name string) typeSet {
	if t, ok := p.props[name]; ok {
		return t.candidate()
	}
	var t typeSet
	matched := false
	for _, pt := range p.patterns {
		if pt.re.MatchString(name) {
			t |= pt.types
			matched = true
		}
	}
	if matched {
		return t.candidate()
	}
	if p.hasAdditional {
		return p.additional.candidate()
	}
	return 0
}

type compiler struct {
	root    *structpb.Struct
	anchors map[string]*structpb.Struct
}

func escapeToken(s string) string {
	if strings.IndexByte(s, '~') < 0 && strings.IndexByte(s, '/') < 0 {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func unescapeToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

// findAnchors records "$anchor" names so "#name" references resolve.
func (c *compiler) findAnchors(s *structpb.Struct, seen map[*structpb.Struct]bool) {
	if s == nil || seen[s] {
		return
	}
	seen[s] = true
	if a, ok := s.Fields["$anchor"]; ok {
		if name := a.GetStringValue(); name != "" {
			if _, dup := c.anchors[name]; !dup {
				c.anchors[name] = s
			}
		}
	}
	for _, v := range s.Fields {
		c.findAnchorsValue(v, seen)
	}
}

func (c *compiler) findAnchorsValue(v *structpb.Value, seen map[*structpb.Struct]bool) {
	switch k := v.GetKind().(type) {
	case *structpb.Value_StructValue:
		c.findAnchors(k.StructValue, seen)
	case *structpb.Value_ListValue:
		for _, e := range k.ListValue.GetValues() {
			c.findAnchorsValue(e, seen)
		}
	}
}

// resolve follows a $ref. local=false means it points outside this schema
// document, which we cannot follow.
func (c *compiler) resolve(ref, at string) (target *structpb.Value, targetPtr string, local bool, err error) {
	if !strings.HasPrefix(ref, "#") {
		return nil, "", false, nil
	}
	frag, uerr := url.PathUnescape(ref[1:])
	if uerr != nil {
		return nil, "", true, &CompilationError{Pointer: at, Reason: fmt.Sprintf("$ref %q: bad percent-encoding", ref)}
	}
	if frag != "" && !strings.HasPrefix(frag, "/") {
		a, ok := c.anchors[frag]
		if !ok {
			return nil, "", true, &CompilationError{Pointer: at, Reason: fmt.Sprintf("$ref %q: no $anchor %q in this schema", ref, frag)}
		}
		return structpb.NewStructValue(a), "#" + frag, true, nil
	}
	cur := structpb.NewStructValue(c.root)
	if frag == "" {
		return cur, "", true, nil
	}
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = unescapeToken(tok)
		switch k := cur.GetKind().(type) {
		case *structpb.Value_StructValue:
			next, ok := k.StructValue.GetFields()[tok]
			if !ok {
				return nil, "", true, &CompilationError{Pointer: at, Reason: fmt.Sprintf("$ref %q does not resolve: no member %q", ref, tok)}
			}
			cur = next
		case *structpb.Value_ListValue:
			i, perr := strconv.Atoi(tok)
			if perr != nil || i < 0 || i >= len(k.ListValue.GetValues()) || (len(tok) > 1 && tok[0] == '0') {
				return nil, "", true, &CompilationError{Pointer: at, Reason: fmt.Sprintf("$ref %q does not resolve: bad index %q", ref, tok)}
			}
			cur = k.ListValue.GetValues()[i]
		default:
			return nil, "", true, &CompilationError{Pointer: at, Reason: fmt.Sprintf("$ref %q does not resolve: %q is inside a scalar", ref, tok)}
		}
	}
	return cur, frag, true, nil
}

// subschemas returns the members of an allOf/anyOf/oneOf keyword.
func subschemas(s *structpb.Struct, kw, at string) ([]*structpb.Value, error) {
	v, ok := s.GetFields()[kw]
	if !ok {
		return nil, nil
	}
	l, ok := v.GetKind().(*structpb.Value_ListValue)
	if !ok {
		return nil, &CompilationError{Pointer: at + "/" + kw, Reason: kw + " must be an array of schemas"}
	}
	return l.ListValue.GetValues(), nil
}

var combinators = [...]string{"allOf", "anyOf", "oneOf"}

// typesOf collects the types a (sub)schema declares through type, local
// $ref and allOf/anyOf/oneOf. visited makes reference cycles terminate.
func (c *compiler) typesOf(v *structpb.Value, at string, visited map[*structpb.Struct]bool) (typeSet, error) {
	s, ok := v.GetKind().(*structpb.Value_StructValue)
	if !ok {
		if _, isBool := v.GetKind().(*structpb.Value_BoolValue); isBool {
			return 0, nil // true/false schemas declare no type
		}
		return 0, &CompilationError{Pointer: at, Reason: "a schema must be an object or a boolean"}
	}
	st := s.StructValue
	if visited[st] {
		return 0, nil
	}
	visited[st] = true
	var t typeSet
	if tv, ok := st.GetFields()["type"]; ok {
		switch k := tv.GetKind().(type) {
		case *structpb.Value_StringValue:
			t |= typeBit(k.StringValue)
		case *structpb.Value_ListValue:
			for i, e := range k.ListValue.GetValues() {
				name, ok := e.GetKind().(*structpb.Value_StringValue)
				if !ok {
					return 0, &CompilationError{Pointer: fmt.Sprintf("%s/type/%d", at, i), Reason: "type list members must be strings"}
				}
				t |= typeBit(name.StringValue)
			}
		default:
			return 0, &CompilationError{Pointer: at + "/type", Reason: "type must be a string or an array of strings"}
		}
	}
	if rv, ok := st.GetFields()["$ref"]; ok {
		ref, ok := rv.GetKind().(*structpb.Value_StringValue)
		if !ok {
			return 0, &CompilationError{Pointer: at + "/$ref", Reason: "$ref must be a string"}
		}
		target, tptr, local, err := c.resolve(ref.StringValue, at+"/$ref")
		if err != nil {
			return 0, err
		}
		if !local {
			t |= tUnknown
		} else {
			tt, err := c.typesOf(target, tptr, visited)
			if err != nil {
				return 0, err
			}
			t |= tt
		}
	}
	for _, kw := range combinators {
		subs, err := subschemas(st, kw, at)
		if err != nil {
			return 0, err
		}
		for i, sub := range subs {
			tt, err := c.typesOf(sub, fmt.Sprintf("%s/%s/%d", at, kw, i), visited)
			if err != nil {
				return 0, err
			}
			t |= tt
		}
	}
	return t, nil
}

func typeBit(name string) typeSet {
	switch name {
	case "array":
		return tArray
	case "object":
		return tObject
	case "string":
		return tString
	}
	return tOther
}

// gatherRoot collects properties, patternProperties and additionalProperties
// from the root schema and from the branches its own allOf/anyOf/oneOf/$ref
// lead to (a root "$ref": "#/$defs/Args" is common). A name declared in
// several branches gets the union of their types, so "string" in any of them
// wins.
func (c *compiler) gatherRoot(s *structpb.Struct, at string, visited map[*structpb.Struct]bool, p *Plan) error {
	if visited[s] {
		return nil
	}
	visited[s] = true
	f := s.GetFields()
	if pv, ok := f["properties"]; ok {
		props, ok := pv.GetKind().(*structpb.Value_StructValue)
		if !ok {
			return &CompilationError{Pointer: at + "/properties", Reason: "properties must be an object"}
		}
		for _, name := range sortedKeys(props.StructValue) {
			ptr := at + "/properties/" + escapeToken(name)
			t, err := c.typesOf(props.StructValue.Fields[name], ptr, map[*structpb.Struct]bool{})
			if err != nil {
				return err
			}
			p.props[name] |= t
		}
	}
	if pv, ok := f["patternProperties"]; ok {
		pats, ok := pv.GetKind().(*structpb.Value_StructValue)
		if !ok {
			return &CompilationError{Pointer: at + "/patternProperties", Reason: "patternProperties must be an object"}
		}
		for _, expr := range sortedKeys(pats.StructValue) {
			ptr := at + "/patternProperties/" + escapeToken(expr)
			re, err := regexp.Compile(expr)
			if err != nil {
				return &CompilationError{Pointer: ptr, Reason: "pattern does not compile (Go regexp syntax): " + err.Error()}
			}
			t, err := c.typesOf(pats.StructValue.Fields[expr], ptr, map[*structpb.Struct]bool{})
			if err != nil {
				return err
			}
			p.patterns = append(p.patterns, pattern{re: re, types: t})
		}
	}
	if av, ok := f["additionalProperties"]; ok {
		if _, isBool := av.GetKind().(*structpb.Value_BoolValue); !isBool {
			t, err := c.typesOf(av, at+"/additionalProperties", map[*structpb.Struct]bool{})
			if err != nil {
				return err
			}
			p.additional |= t
			p.hasAdditional = true
		}
	}
	if rv, ok := f["$ref"]; ok {
		ref, ok := rv.GetKind().(*structpb.Value_StringValue)
		if !ok {
			return &CompilationError{Pointer: at + "/$ref", Reason: "$ref must be a string"}
		}
		target, tptr, local, err := c.resolve(ref.StringValue, at+"/$ref")
		if err != nil {
			return err
		}
		if local {
			if ts, ok := target.GetKind().(*structpb.Value_StructValue); ok {
				if err := c.gatherRoot(ts.StructValue, tptr, visited, p); err != nil {
					return err
				}
			}
		}
		// A non-local root $ref declares parameters we cannot see; they get
		// no decision and so are never decoded.
	}
	for _, kw := range combinators {
		subs, err := subschemas(s, kw, at)
		if err != nil {
			return err
		}
		for i, sub := range subs {
			if ss, ok := sub.GetKind().(*structpb.Value_StructValue); ok {
				if err := c.gatherRoot(ss.StructValue, fmt.Sprintf("%s/%s/%d", at, kw, i), visited, p); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func sortedKeys(s *structpb.Struct) []string {
	keys := make([]string, 0, len(s.GetFields()))
	for k := range s.GetFields() {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
