package lint

import (
	"slices"
	"sort"
)

// Fit rewrites schema (decoded by AsMap; changed in place) the way an
// export in profile p sends it (registry/export): the OpenAI strict-mode
// rewrite for openai-strict, the Gemini rewrite for gemini, nothing for
// the others. The rewrites change only what the provider cannot take and
// never what the gateway checks: the tool's registered schema still
// validates every call. nulled reports that the strict rewrite made an
// optional property nullable that did not accept null as registered.
func Fit(p Profile, schema map[string]any) (nulled bool) {
	switch p {
	case OpenAIStrict:
		return strictRewrite(schema)
	case Gemini:
		geminiRewrite(schema)
	}
	return false
}

// subschemas calls fn on every schema directly below s (booleans are not
// schemas fn can change).
func subschemas(s map[string]any, fn func(map[string]any)) {
	for _, kw := range []string{"properties", "$defs", "definitions", "patternProperties", "dependentSchemas"} {
		if m, ok := s[kw].(map[string]any); ok {
			for _, v := range m {
				if sub, ok := v.(map[string]any); ok {
					fn(sub)
				}
			}
		}
	}
	for _, kw := range []string{"anyOf", "oneOf", "allOf", "prefixItems"} {
		if l, ok := s[kw].([]any); ok {
			for _, v := range l {
				if sub, ok := v.(map[string]any); ok {
					fn(sub)
				}
			}
		}
	}
	for _, kw := range []string{"items", "additionalProperties", "not", "if", "then", "else", "contains"} {
		if sub, ok := s[kw].(map[string]any); ok {
			fn(sub)
		}
	}
}

// isObject reports whether s describes objects: "type": "object" (or a
// type list holding it), or properties without a type.
func isObject(s map[string]any) bool {
	switch t := s["type"].(type) {
	case string:
		return t == "object"
	case []any:
		for _, x := range t {
			if x == "object" {
				return true
			}
		}
		return false
	}
	_, has := s["properties"]
	return has
}

// strictRewrite is the OpenAI strict-mode rewrite (Structured Outputs,
// "Supported schemas": every object has "additionalProperties": false and
// lists every property in "required"):
//   - an object without additionalProperties gets false: the model then
//     sends only the declared properties, each of which the tool accepts.
//     An explicit true or a schema is left for the lint to refuse: the
//     tool asked for keys strict mode cannot offer.
//   - an optional property becomes required and nullable (null added to
//     its type, or anyOf with {"type": "null"}): strict mode's way of
//     saying optional; the model sends null for "not given".
//
// It reports whether it made a property nullable that did not accept null
// as registered: the gateway refuses that null unless its policy drops
// optional nulls for the tool (normalize.optional_nulls).
func strictRewrite(s map[string]any) (nulled bool) {
	if isObject(s) {
		if _, has := s["additionalProperties"]; !has {
			s["additionalProperties"] = false
		}
		if props, ok := s["properties"].(map[string]any); ok {
			required := map[string]bool{}
			var req []any
			if l, ok := s["required"].([]any); ok {
				req = l
			}
			for _, r := range req {
				if name, ok := r.(string); ok {
					required[name] = true
				}
			}
			var added []string
			for name := range props {
				if !required[name] {
					added = append(added, name)
				}
			}
			sort.Strings(added)
			for _, name := range added {
				req = append(req, name)
				var changed bool
				props[name], changed = nullable(props[name])
				nulled = nulled || changed
			}
			if len(req) > 0 {
				s["required"] = req
			}
		}
	}
	subschemas(s, func(sub map[string]any) { nulled = strictRewrite(sub) || nulled })
	return nulled
}

// nullable is schema v also accepting null; changed is false when v
// already visibly accepted it (a type list with null, an anyOf branch
// {"type": "null"}, {} or true).
func nullable(v any) (_ any, changed bool) {
	s, ok := v.(map[string]any)
	if !ok {
		return v, false // a boolean schema: true already accepts null; false stays
	}
	switch t := s["type"].(type) {
	case string:
		if t == "null" {
			return s, false
		}
		s["type"] = []any{t, "null"}
	case []any:
		for _, x := range t {
			if x == "null" {
				return s, false
			}
		}
		s["type"] = append(t, "null")
	default:
		if len(s) == 0 {
			return s, false // {} accepts null
		}
		if l, ok := s["anyOf"].([]any); ok && len(s) == 1 {
			for _, b := range l {
				if bm, ok := b.(map[string]any); ok && len(bm) == 1 && bm["type"] == "null" {
					return s, false
				}
			}
			s["anyOf"] = append(l, map[string]any{"type": "null"})
			return s, true
		}
		return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}, true
	}
	if e, ok := s["enum"].([]any); ok {
		s["enum"] = append(e, nil)
	}
	return s, true
}

// geminiAnnotations are keywords that constrain nothing (JSON Schema's
// annotations and identifiers; contentEncoding and contentMediaType are
// annotations in 2020-12, which the gateway does not assert) and that
// Gemini's Schema message lacks.
var geminiAnnotations = []string{"$schema", "$id", "$comment", "examples", "deprecated", "readOnly", "writeOnly", "contentEncoding", "contentMediaType"}

// geminiTypeKeywords are the keywords that apply to one JSON type only,
// by type: a type list split into anyOf branches takes each to its branch.
var geminiTypeKeywords = map[string][]string{
	"string":  {"format", "maxLength", "minLength", "pattern"},
	"integer": {"maximum", "minimum"},
	"number":  {"maximum", "minimum"},
	"array":   {"items", "maxItems", "minItems"},
	"object":  {"maxProperties", "minProperties", "properties", "propertyOrdering", "required"},
}

// geminiRewrite fits a schema to Gemini's Schema subset where nothing the
// tool depends on is lost:
//   - annotation keywords are dropped;
//   - "additionalProperties": false is dropped: Gemini generates the
//     declared properties only, and the gateway still refuses any other
//     key on every call;
//   - a string "const" becomes a one-value "enum";
//   - a type list [T, "null"] becomes "type": T with "nullable": true;
//   - any other type list becomes anyOf, one branch per type, each with
//     the keywords of its type ("nullable" for null): the same values.
//
// Anything else Gemini lacks (additionalProperties schemas, exclusive
// bounds, $ref, oneOf, ...) is a constraint: left for the lint to refuse.
func geminiRewrite(s map[string]any) {
	for _, kw := range geminiAnnotations {
		delete(s, kw)
	}
	if ap, ok := s["additionalProperties"].(bool); ok && !ap {
		delete(s, "additionalProperties")
	}
	if c, ok := s["const"].(string); ok {
		if _, has := s["enum"]; !has {
			delete(s, "const")
			s["enum"] = []any{c}
		}
	}
	if t, ok := s["type"].([]any); ok && len(t) == 2 {
		for i, x := range t {
			other, isStr := t[1-i].(string)
			if x == "null" && isStr && other != "null" {
				s["type"] = other
				s["nullable"] = true
				break
			}
		}
	}
	if t, ok := s["type"].([]any); ok && len(t) > 1 {
		splitTypes(s, t)
	}
	subschemas(s, geminiRewrite)
}

// splitTypes turns s's type list into anyOf branches, one per type with
// that type's keywords, when s has no anyOf of its own (two would need a
// conjunction Gemini lacks: left for the lint) and every keyword left
// beside the branches applies to any type. "enum" and "const" stay beside
// them; so does "nullable" for a "null" member.
func splitTypes(s map[string]any, types []any) {
	if _, has := s["anyOf"]; has {
		return
	}
	var names []string
	for _, x := range types {
		n, ok := x.(string)
		if !ok || slices.Contains(names, n) {
			return
		}
		names = append(names, n)
	}
	var branches []any
	nullable := false
	moved := map[string]bool{}
	for _, n := range names {
		if n == "null" {
			nullable = true
			continue
		}
		b := map[string]any{"type": n}
		for _, kw := range geminiTypeKeywords[n] {
			if v, ok := s[kw]; ok {
				b[kw] = v
				moved[kw] = true
			}
		}
		branches = append(branches, b)
	}
	if len(branches) < 2 {
		return
	}
	for kw := range moved {
		delete(s, kw)
	}
	// A type's keyword with that type absent constrains nothing; drop it.
	for t, kws := range geminiTypeKeywords {
		if !slices.Contains(names, t) && !(t == "number" && slices.Contains(names, "integer")) {
			for _, kw := range kws {
				delete(s, kw)
			}
		}
	}
	delete(s, "type")
	if nullable {
		branches = append(branches, map[string]any{"type": "null"})
	}
	s["anyOf"] = branches
}
