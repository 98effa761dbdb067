package compat_test

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/flowdrop/gateway/registry/compat"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestCompatibleNeverRefusesOldValues is the engine's promise as a
// property: for random old schemas and random edits of them, whenever
// Compare finds nothing, every value generated from the old schema that
// the old schema accepts (jsonschema decides) the new one accepts too.
// Keys the old schema leaves undeclared under an absent
// additionalProperties are outside its contract (doc.go), so generated
// extra keys ("x0", ...) are never names the generator declares.
func TestCompatibleNeverRefusesOldValues(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 4))
	const pairs = 2500
	compatible, checked := 0, 0
	for i := range pairs {
		g := &schemaGen{r: r}
		old := g.root()
		new := deepCopy(old).(map[string]any)
		for range 1 + r.IntN(3) {
			mutate(r, new, 0)
		}
		if fs := compat.Compare(old, new); len(fs) > 0 {
			continue
		}
		compatible++
		ov, nv := mustCompile(t, old), mustCompile(t, new)
		vg := &valueGen{r: r, root: old}
		for range 40 {
			v := vg.value(old, 0)
			if ov.Validate(v) != nil {
				continue
			}
			checked++
			if err := nv.Validate(v); err != nil {
				ob, _ := json.Marshal(old)
				nb, _ := json.Marshal(new)
				vb, _ := json.Marshal(v)
				t.Fatalf("pair %d reported compatible, but the new schema refuses a value the old accepted:\n old %s\n new %s\n value %s\n %v", i, ob, nb, vb, err)
			}
		}
	}
	// The property is only as good as its coverage: most edits must be
	// judged compatible sometimes, and many old values checked.
	if compatible < pairs/10 || checked < 10*compatible {
		t.Fatalf("only %d of %d pairs compatible with %d values checked: the generators no longer exercise the engine", compatible, pairs, checked)
	}
	t.Logf("%d of %d pairs compatible, %d accepted old values checked against the new schema", compatible, pairs, checked)
}

func mustCompile(t *testing.T, s map[string]any) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("urn:t", deepCopy(s)); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("urn:t")
	if err != nil {
		b, _ := json.Marshal(s)
		t.Fatalf("compiling %s: %v", b, err)
	}
	return sch
}

func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = deepCopy(x)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, x := range t {
			l[i] = deepCopy(x)
		}
		return l
	}
	return v
}

var (
	propNames = []string{"a", "b", "c"}
	patterns  = []string{"^[a-z]*$", "^a", "b$"}
	strVals   = []any{"", "a", "ab", "abc", "b", "ba", "A-1"}
	numVals   = []any{-2.0, -1.0, 0.0, 0.5, 1.0, 2.0, 3.0, 7.5, 10.0}
)

// schemaGen draws small random schemas over the keywords the engine judges.
type schemaGen struct {
	r    *rand.Rand
	defs map[string]any
}

func (g *schemaGen) root() map[string]any {
	g.defs = map[string]any{}
	s := g.object(0)
	if len(g.defs) > 0 {
		s["$defs"] = g.defs
	}
	return s
}

func (g *schemaGen) schema(depth int) any {
	r := g.r
	if depth > 2 {
		return g.scalar()
	}
	switch r.IntN(10) {
	case 0:
		return g.object(depth + 1)
	case 1:
		return g.array(depth + 1)
	case 2:
		return map[string]any{"anyOf": []any{g.schema(depth + 1), g.schema(depth + 1)}}
	case 3:
		return map[string]any{"oneOf": []any{g.scalar(), g.scalar()}}
	case 4:
		name := "d" + strconv.Itoa(len(g.defs))
		g.defs[name] = g.schema(depth + 1)
		return map[string]any{"$ref": "#/$defs/" + name}
	case 5:
		return map[string]any{"allOf": []any{g.scalar(), g.scalar()}}
	}
	return g.scalar()
}

func (g *schemaGen) scalar() map[string]any {
	r := g.r
	switch r.IntN(6) {
	case 0, 1:
		s := map[string]any{"type": "string"}
		if r.IntN(2) == 0 {
			s["minLength"] = float64(r.IntN(2))
		}
		if r.IntN(2) == 0 {
			s["maxLength"] = float64(1 + r.IntN(3))
		}
		if r.IntN(4) == 0 {
			s["pattern"] = patterns[r.IntN(len(patterns))]
		}
		if r.IntN(4) == 0 {
			s["enum"] = pick(r, strVals, 1+r.IntN(3))
		}
		return s
	case 2, 3:
		s := map[string]any{"type": []string{"integer", "number"}[r.IntN(2)]}
		for _, kw := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} {
			if r.IntN(3) == 0 {
				s[kw] = numVals[r.IntN(len(numVals))]
			}
		}
		if r.IntN(4) == 0 {
			s["multipleOf"] = []float64{0.5, 1, 2, 5}[r.IntN(4)]
		}
		if r.IntN(5) == 0 {
			s["enum"] = pick(r, numVals, 1+r.IntN(3))
		}
		return s
	case 4:
		return map[string]any{"type": []any{"boolean", "null"}[:1+r.IntN(2)]}
	}
	if r.IntN(2) == 0 {
		return map[string]any{"const": strVals[r.IntN(len(strVals))]}
	}
	return map[string]any{}
}

func (g *schemaGen) object(depth int) map[string]any {
	r := g.r
	props := map[string]any{}
	var req []any
	for _, k := range propNames {
		if r.IntN(3) > 0 {
			props[k] = g.schema(depth)
			if r.IntN(3) == 0 {
				req = append(req, k)
			}
		}
	}
	s := map[string]any{"type": "object", "properties": props}
	if len(req) > 0 {
		s["required"] = req
	}
	switch r.IntN(4) {
	case 0:
		s["additionalProperties"] = false
	case 1:
		s["additionalProperties"] = g.scalar()
	}
	return s
}

func (g *schemaGen) array(depth int) map[string]any {
	r := g.r
	s := map[string]any{"type": "array", "items": g.schema(depth)}
	if r.IntN(3) == 0 {
		s["prefixItems"] = []any{g.scalar()}
	}
	if r.IntN(3) == 0 {
		s["minItems"] = float64(r.IntN(2))
	}
	if r.IntN(3) == 0 {
		s["maxItems"] = float64(1 + r.IntN(3))
	}
	if r.IntN(4) == 0 {
		s["uniqueItems"] = true
	}
	return s
}

func pick(r *rand.Rand, from []any, n int) []any {
	var out []any
	for _, i := range r.Perm(len(from))[:n] {
		out = append(out, from[i])
	}
	return out
}

// mutate edits one random place of schema s: widenings and narrowings
// alike, so the engine's verdicts go both ways.
func mutate(r *rand.Rand, s map[string]any, depth int) {
	// Descend sometimes.
	var kids []map[string]any
	var collect func(v any)
	collect = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			kids = append(kids, t)
		case []any:
			for _, x := range t {
				collect(x)
			}
		}
	}
	for k, v := range s {
		switch k {
		case "properties", "$defs":
			if m, ok := v.(map[string]any); ok {
				for _, x := range m {
					collect(x)
				}
			}
		case "items", "additionalProperties", "anyOf", "oneOf", "allOf", "prefixItems":
			collect(v)
		}
	}
	if len(kids) > 0 && depth < 6 && r.IntN(3) > 0 {
		mutate(r, kids[r.IntN(len(kids))], depth+1)
		return
	}
	num := func() float64 { return numVals[r.IntN(len(numVals))].(float64) }
	switch r.IntN(16) {
	case 0:
		s["minimum"] = num()
	case 1:
		s["maximum"] = num()
	case 2:
		s["exclusiveMinimum"] = num()
	case 3:
		s["exclusiveMaximum"] = num()
	case 4:
		delete(s, []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}[r.IntN(5)])
	case 5:
		s["minLength"], s["maxLength"] = float64(r.IntN(3)), float64(1+r.IntN(4))
	case 6:
		delete(s, []string{"minLength", "maxLength", "pattern", "minItems", "maxItems", "uniqueItems"}[r.IntN(6)])
	case 7:
		if e, ok := s["enum"].([]any); ok && len(e) > 1 {
			s["enum"] = e[:len(e)-1]
		} else if ok {
			s["enum"] = append(e, strVals[r.IntN(len(strVals))])
		} else {
			delete(s, "const")
		}
	case 8:
		s["type"] = []any{"string", "integer", "number", "object", "array", "boolean"}[r.IntN(6)]
	case 9:
		delete(s, "type")
	case 10:
		if p, ok := s["properties"].(map[string]any); ok {
			k := propNames[r.IntN(len(propNames))]
			if _, has := p[k]; has && r.IntN(2) == 0 {
				delete(p, k)
			} else {
				p[k] = (&schemaGen{r: r, defs: map[string]any{}}).scalar()
			}
		}
	case 11:
		switch r.IntN(3) {
		case 0:
			delete(s, "additionalProperties")
		case 1:
			s["additionalProperties"] = false
		default:
			s["additionalProperties"] = map[string]any{"type": "integer"}
		}
	case 12:
		if l, ok := s["anyOf"].([]any); ok && len(l) > 1 {
			s["anyOf"] = l[1:]
		} else if ok {
			s["anyOf"] = append(l, map[string]any{"type": "boolean"})
		} else if l, ok := s["oneOf"].([]any); ok {
			s["oneOf"] = append(l, (&schemaGen{r: r}).scalar())
		}
	case 13:
		if req, ok := s["required"].([]any); ok && len(req) > 0 {
			s["required"] = req[1:]
		} else if p, ok := s["properties"].(map[string]any); ok && len(p) > 0 {
			for k := range p {
				s["required"] = []any{k}
				break
			}
		}
	case 14:
		s["multipleOf"] = []float64{0.5, 1, 2, 5}[r.IntN(4)]
	case 15:
		s["minItems"], s["maxItems"], s["uniqueItems"] = float64(r.IntN(2)), float64(1+r.IntN(3)), r.IntN(2) == 0
	}
}

// valueGen draws values near a schema's edges: bounds, enum members,
// required and optional properties, branch choices.
type valueGen struct {
	r    *rand.Rand
	root map[string]any
}

func (g *valueGen) value(s any, depth int) any {
	r := g.r
	m, ok := s.(map[string]any)
	if !ok || depth > 8 {
		return g.any(depth)
	}
	if ref, ok := m["$ref"].(string); ok {
		return g.value(g.root["$defs"].(map[string]any)[strings.TrimPrefix(ref, "#/$defs/")], depth+1)
	}
	if c, ok := m["const"]; ok && r.IntN(4) > 0 {
		return c
	}
	if e, ok := m["enum"].([]any); ok && r.IntN(4) > 0 {
		return e[r.IntN(len(e))]
	}
	for _, kw := range []string{"anyOf", "oneOf", "allOf"} {
		if l, ok := m[kw].([]any); ok && r.IntN(4) > 0 {
			return g.value(l[r.IntN(len(l))], depth+1)
		}
	}
	t := ""
	switch ty := m["type"].(type) {
	case string:
		t = ty
	case []any:
		t, _ = ty[r.IntN(len(ty))].(string)
	}
	switch t {
	case "string":
		if r.IntN(2) == 0 {
			return strVals[r.IntN(len(strVals))]
		}
		n := r.IntN(5)
		if v, ok := m["minLength"].(float64); ok && r.IntN(2) == 0 {
			n = int(v)
		}
		if v, ok := m["maxLength"].(float64); ok && r.IntN(2) == 0 {
			n = int(v)
		}
		return strings.Repeat("ab"[r.IntN(2):][:1], n)
	case "integer", "number":
		var edges []float64
		for _, kw := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"} {
			if v, ok := m[kw].(float64); ok {
				edges = append(edges, v, v+1, v-1, v+0.5, v-0.5)
			}
		}
		if len(edges) > 0 && r.IntN(3) > 0 {
			return edges[r.IntN(len(edges))]
		}
		return numVals[r.IntN(len(numVals))]
	case "boolean":
		return r.IntN(2) == 0
	case "null":
		return nil
	case "array":
		n := r.IntN(4)
		out := []any{}
		pre, _ := m["prefixItems"].([]any)
		for i := range n {
			if i < len(pre) {
				out = append(out, g.value(pre[i], depth+1))
			} else {
				out = append(out, g.value(m["items"], depth+1))
			}
		}
		if n > 1 && r.IntN(3) == 0 {
			out[1] = out[0]
		}
		return out
	case "object":
		out := map[string]any{}
		props, _ := m["properties"].(map[string]any)
		for k, ps := range props {
			if r.IntN(3) > 0 {
				out[k] = g.value(ps, depth+1)
			}
		}
		if add, ok := m["additionalProperties"]; ok && r.IntN(2) == 0 {
			out["x"+strconv.Itoa(r.IntN(2))] = g.value(add, depth+1)
		} else if !ok && r.IntN(4) == 0 {
			out["x0"] = g.any(depth + 1)
		}
		return out
	}
	return g.any(depth)
}

func (g *valueGen) any(depth int) any {
	r := g.r
	switch r.IntN(6) {
	case 0:
		return strVals[r.IntN(len(strVals))]
	case 1, 2:
		return numVals[r.IntN(len(numVals))]
	case 3:
		return r.IntN(2) == 0
	case 4:
		return nil
	}
	if depth > 6 {
		return 0.0
	}
	return []any{g.any(depth + 1)}
}
