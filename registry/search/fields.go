package search

import (
	"sort"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/registry"
)

// Field weights: a word in the name says most about what a tool does, a
// parameter name says what it works on, the description says both loosely.
const (
	weightName  = 3.0
	weightParam = 1.5
	weightDesc  = 1.0
)

// docTerms are a tool's weighted term frequencies and its weighted length.
func docTerms(t *registry.Tool) (tf map[string]float32, length float32) {
	tf = map[string]float32{}
	add := func(ts []string, w float32) {
		for _, s := range ts {
			tf[s] += w
			length += w
		}
	}
	var buf []string
	buf = tokens(buf[:0], t.Name, maxNameTokens, false)
	add(buf, weightName)
	params := paramNames(t.InputSchema)
	buf = buf[:0]
	for _, p := range params {
		buf = tokens(buf, p, maxParamTokens-len(buf), false)
		if len(buf) >= maxParamTokens {
			break
		}
	}
	add(buf, weightParam)
	buf = tokens(buf[:0], t.Description, maxDescTokens, true)
	add(buf, weightDesc)
	return tf, length
}

// paramNames are the property names of the input schema, nested ones too
// (under properties, items, anyOf/oneOf/allOf, $defs), at most
// maxParamNames of them within maxSchemaDepth, each once, in a stable
// order (sorted per object: structpb maps have none).
func paramNames(s *structpb.Struct) []string {
	var out []string
	seen := map[string]bool{}
	var walk func(f map[string]*structpb.Value, depth int)
	walk = func(f map[string]*structpb.Value, depth int) {
		if depth > maxSchemaDepth || len(out) >= maxParamNames {
			return
		}
		props := f["properties"].GetStructValue().GetFields()
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if len(out) >= maxParamNames {
				return
			}
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
		for _, k := range keys {
			walk(props[k].GetStructValue().GetFields(), depth+1)
		}
		if it := f["items"].GetStructValue(); it != nil {
			walk(it.GetFields(), depth+1)
		}
		for _, kw := range [...]string{"anyOf", "oneOf", "allOf"} {
			for _, v := range f[kw].GetListValue().GetValues() {
				walk(v.GetStructValue().GetFields(), depth+1)
			}
		}
		for _, kw := range [...]string{"$defs", "definitions"} {
			defs := f[kw].GetStructValue().GetFields()
			dk := make([]string, 0, len(defs))
			for k := range defs {
				dk = append(dk, k)
			}
			sort.Strings(dk)
			for _, k := range dk {
				walk(defs[k].GetStructValue().GetFields(), depth+1)
			}
		}
	}
	walk(s.GetFields(), 0)
	return out
}
