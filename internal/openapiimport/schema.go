package openapiimport

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// openAPIOnly are Schema Object keywords that are not JSON Schema (or are
// annotations a tool's input schema has no use for): left out.
var openAPIOnly = []string{"nullable", "discriminator", "xml", "externalDocs", "example", "readOnly", "writeOnly", "deprecated"}

const componentSchemas = "#/components/schemas/"

// schemaConverter turns OpenAPI Schema Objects into self-contained JSON
// Schema: references to the document's components inlined (a recursive
// one refused: a tool schema has no components), `nullable` as a "null"
// type, OpenAPI-only keywords and x- extensions dropped.
type schemaConverter struct {
	doc   *openapi3.T
	stack []string // components being inlined, for recursion
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
		c.stack = append(c.stack, name)
		defer func() { c.stack = c.stack[:len(c.stack)-1] }()
		return c.convert(&openapi3.SchemaRef{Value: comp.Value})
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
