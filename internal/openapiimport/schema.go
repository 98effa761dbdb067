package openapiimport

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// openAPIOnly are Schema Object keywords that are not JSON Schema (or are
// annotations a tool's input schema has no use for): left out.
var openAPIOnly = []string{"nullable", "discriminator", "xml", "externalDocs", "example", "readOnly", "writeOnly", "deprecated"}

const componentSchemas = "#/components/schemas/"

// MaxInlineNodes bounds the schema objects one operation's schemas may
// expand to when the components they reference are inlined. A document
// whose components reference each other many times (a DAG: A uses B
// twice, B uses C twice, ...) doubles per level, so 30 levels of a 3.8 KB
// document would be 2^30 objects; past this bound its components are kept
// shared instead ($defs), once each.
const MaxInlineNodes = 10000

// errOverBudget ends an inlining that crossed MaxInlineNodes.
var errOverBudget = errors.New("the inlined schema is over the node budget")

// schemaConverter turns OpenAPI Schema Objects into self-contained JSON
// Schema: references to the document's components inlined (a recursive
// one refused), `nullable` as a "null" type, OpenAPI-only keywords and x-
// extensions dropped. Shared, the components referenced below the top
// schema are in defs once each, referenced as "#/$defs/<name>" (defs goes
// into the tool schema's root).
type schemaConverter struct {
	doc   *openapi3.T
	stack []string // components being inlined or defined, for recursion
	nodes int      // schema objects produced (inlining only)
	depth int      // below a top schema when > 0
	share bool
	defs  map[string]any
}

// newSchemaConverter converts by inlining, or sharing when share is set.
func newSchemaConverter(doc *openapi3.T, share bool) *schemaConverter {
	c := &schemaConverter{doc: doc, share: share}
	if share {
		c.defs = map[string]any{}
	}
	return c
}

func (c *schemaConverter) convert(ref *openapi3.SchemaRef) (map[string]any, error) {
	if ref == nil {
		return map[string]any{}, nil
	}
	b, err := json.Marshal(ref)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return c.schema(m)
}

// schema converts one schema (as JSON) in place and returns it.
func (c *schemaConverter) schema(m map[string]any) (map[string]any, error) {
	if !c.share {
		if c.nodes++; c.nodes > MaxInlineNodes {
			return nil, errOverBudget
		}
	}
	if r, ok := m["$ref"].(string); ok {
		name, ok := strings.CutPrefix(r, componentSchemas)
		if !ok {
			return nil, fmt.Errorf("reference %q is not to #/components/schemas", r)
		}
		for _, s := range c.stack {
			if s == name {
				return nil, fmt.Errorf("schema %q is recursive", name)
			}
		}
		comp := c.doc.Components.Schemas[name]
		if comp == nil || comp.Value == nil {
			return nil, fmt.Errorf("reference %q does not resolve", r)
		}
		ref := map[string]any{"$ref": "#/$defs/" + name}
		if c.share && c.depth > 0 {
			if _, done := c.defs[name]; done {
				return ref, nil
			}
		}
		c.stack = append(c.stack, name)
		defer func() { c.stack = c.stack[:len(c.stack)-1] }()
		if !c.share || c.depth == 0 {
			return c.convert(&openapi3.SchemaRef{Value: comp.Value})
		}
		// Defined at depth 0 of its own, so its own top is inlined into it.
		depth := c.depth
		c.depth = 0
		def, err := c.convert(&openapi3.SchemaRef{Value: comp.Value})
		c.depth = depth
		if err != nil {
			return nil, err
		}
		c.defs[name] = def
		return ref, nil
	}
	if m["nullable"] == true {
		if t, ok := m["type"].(string); ok {
			m["type"] = []any{t, "null"}
		}
	}
	for _, k := range openAPIOnly {
		delete(m, k)
	}
	for k := range m {
		if strings.HasPrefix(k, "x-") {
			delete(m, k)
		}
	}
	sub := func(v any) (any, error) {
		if s, ok := v.(map[string]any); ok {
			c.depth++
			defer func() { c.depth-- }()
			return c.schema(s)
		}
		return v, nil // a boolean additionalProperties
	}
	for _, k := range []string{"items", "not", "additionalProperties"} {
		if v, ok := m[k]; ok {
			s, err := sub(v)
			if err != nil {
				return nil, err
			}
			m[k] = s
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if l, ok := m[k].([]any); ok {
			for i, v := range l {
				s, err := sub(v)
				if err != nil {
					return nil, err
				}
				l[i] = s
			}
		}
	}
	if props, ok := m["properties"].(map[string]any); ok {
		for name, v := range props {
			s, err := sub(v)
			if err != nil {
				return nil, err
			}
			props[name] = s
		}
	}
	return m, nil
}
