package lint

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
)

// ---- tool names ----

var (
	// OpenAI function name: "Must be a-z, A-Z, 0-9, or contain underscores and
	// dashes, with a maximum length of 64." Source: OpenAI API reference,
	// FunctionDefinition.name (mirrored at
	// https://apis.io/schemas/chatgpt/chatgpt-chat-completions-function-definition/);
	// the API answers "Invalid 'tools[0].function.name': string does not match
	// pattern ... '^[a-zA-Z0-9_-]+$'" (github.com/brekkylab/ailoy/pull/109).
	openAIName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

	// Anthropic tool name: "Must match the regex ^[a-zA-Z0-9_-]{1,64}$."
	// Source: Claude API Tool schema (https://schemas.apis.io/schemas/claude/claude-tool/).
	// Since 2025 the API's own error says {1,128} ("tools.16.custom.name: String
	// should match pattern '^[a-zA-Z0-9_-]{1,128}$'",
	// github.com/modelcontextprotocol/modelcontextprotocol/issues/1345), so
	// 65..128 characters is a warning, not an error.
	anthropicNameChars = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

	// Gemini FunctionDeclaration.name: "Must start with a letter or an
	// underscore. Must be a-z, A-Z, 0-9, or contain underscores, dots and
	// dashes, with a maximum length of 64." Source: Vertex AI REST reference
	// v1beta1 FunctionDeclaration
	// (https://cloud.google.com/vertex-ai/docs/reference/rest/v1beta1/FunctionDeclaration);
	// the Gemini API v1beta reference also allows colons
	// (https://hexdocs.pm/geminix/Geminix.V1beta.FunctionDeclaration.html).
	geminiName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$`)

	// Gemini parameter names: "must start with a letter or an underscore and
	// must only contain chars a-z, A-Z, 0-9, or underscores with a maximum
	// length of 64." Source: the same Vertex FunctionDeclaration page. Only
	// Vertex documents it, so it is a warning.
	geminiParamName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]{0,63}$`)
)

func (l *linter) checkName() {
	n := l.name
	switch l.profile {
	case OpenAI, OpenAIStrict:
		if !openAIName.MatchString(n) {
			l.add(NamePath, "name-pattern", SeverityError, "OpenAI function names must match ^[a-zA-Z0-9_-]{1,64}$"+nameHint(n, 64))
		}
	case Anthropic:
		switch {
		case !anthropicNameChars.MatchString(n) || len(n) > 128:
			l.add(NamePath, "name-pattern", SeverityError, "Anthropic tool names must match ^[a-zA-Z0-9_-]{1,64}$"+nameHint(n, 128))
		case len(n) > 64:
			l.add(NamePath, "name-length", SeverityWarning, fmt.Sprintf("Anthropic documents at most 64 characters (the API currently accepts 128); got %d", len(n)))
		}
	case Gemini:
		if !geminiName.MatchString(n) {
			msg := "Gemini function names must start with a letter or underscore and use only a-z, A-Z, 0-9, '_', '.', ':' or '-', at most 64 characters"
			if n != "" && !(n[0] == '_' || (n[0] >= 'a' && n[0] <= 'z') || (n[0] >= 'A' && n[0] <= 'Z')) {
				msg += fmt.Sprintf("; it starts with %q", n[:1])
			}
			l.add(NamePath, "name-pattern", SeverityError, msg)
		}
	}
}

// nameHint says what is wrong with a name in a few words.
func nameHint(n string, max int) string {
	switch {
	case n == "":
		return "; the name is empty"
	case len(n) > max:
		return fmt.Sprintf("; the name has %d characters", len(n))
	}
	for _, r := range n {
		if !(r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')) {
			return fmt.Sprintf("; %q is not allowed", r)
		}
	}
	if len(n) > 64 {
		return fmt.Sprintf("; the name has %d characters", len(n))
	}
	return ""
}

// ---- the root ----

func (l *linter) checkRoot(root *structpb.Struct) {
	// Root must be an object schema.
	// OpenAI: "Invalid schema for function 'json': schema must be a JSON Schema
	// of 'type: "object"', got 'type: "None"'" (github.com/browserbase/stagehand/issues/1159).
	// Anthropic: input_schema.type is const "object" in the Tool schema
	// (https://schemas.apis.io/schemas/claude/claude-tool/).
	// Gemini: parameters "must describe an object where the properties are the
	// parameters to the function" (Vertex FunctionDeclaration reference).
	if ts, has := types(root); !has {
		l.add("", "root-type-object", SeverityError, "the root schema must declare \"type\": \"object\"; it has no \"type\"")
	} else if len(ts) != 1 || ts[0] != "object" || root.GetFields()["type"].GetListValue() != nil {
		l.add("/type", "root-type-object", SeverityError, "the root schema must declare \"type\": \"object\"")
	}

	for _, kw := range []string{"allOf", "anyOf", "oneOf"} {
		if _, ok := root.GetFields()[kw]; !ok {
			continue
		}
		p := "/" + kw
		switch l.profile {
		case Anthropic:
			// "tools.N.custom.input_schema: input_schema does not support oneOf,
			// allOf, or anyOf at the top level" (github.com/anthropics/claude-code/issues/5973,
			// github.com/dearlordylord/huly-mcp/issues/66).
			l.add(p, "root-composition", SeverityError, "Anthropic rejects "+kw+" at the top level of input_schema; move it into a property or express it in the description")
		case OpenAIStrict:
			// Structured Outputs: "Root objects must not be anyOf" and the root
			// must be a plain object (OpenAI Structured Outputs, Supported schemas,
			// https://platform.openai.com/docs/guides/structured-outputs#supported-schemas;
			// summarised at https://jsonschemaprofiles.unitvectorylabs.com/schemas/openai).
			l.add(p, "root-composition", SeverityError, "strict mode requires a plain object at the root; "+kw+" is not allowed there")
		case OpenAI:
			// Not documented for non-strict tools, but clients strip it for
			// OpenAI too (github.com/anomalyco/opencode/issues/35516), so warn.
			l.add(p, "root-composition", SeverityWarning, kw+" at the root is unsupported in strict mode and is stripped by several OpenAI clients")
		}
	}
}

// ---- every schema node ----

// geminiKeywords is the field set of the Gemini API Schema message, the
// "select subset of an OpenAPI 3.0 schema object" that
// FunctionDeclaration.parameters takes. Any other key fails the whole request
// with "Invalid JSON payload received. Unknown name "X" at
// 'tools[0].function_declarations[N].parameters...': Cannot find field."
// Sources: protos.google.ai.generativelanguage.v1beta.ISchema
// (https://docs.cloud.google.com/nodejs/docs/reference/generativelanguage/latest/generativelanguage/protos.google.ai.generativelanguage.v1beta.ischema);
// the error, for $schema, additionalProperties, const, exclusiveMinimum and
// propertyNames: github.com/openswarm-ai/openswarm/issues/24,
// github.com/glowingjade/obsidian-smart-composer/issues/455,
// github.com/zed-extensions/mcp-server-brave-search/issues/12.
var geminiKeywords = []string{
	"anyOf", "default", "description", "enum", "example", "format", "items",
	"maxItems", "maxLength", "maxProperties", "maximum", "minItems", "minLength",
	"minProperties", "minimum", "nullable", "pattern", "properties",
	"propertyOrdering", "required", "title", "type",
}

// geminiTypes are the Type enum values (case-insensitive on the wire).
var geminiTypes = []string{"string", "number", "integer", "boolean", "array", "object"}

// OpenAI strict mode, from Structured Outputs "Supported schemas"
// (https://platform.openai.com/docs/guides/structured-outputs#supported-schemas,
// summarised at https://jsonschemaprofiles.unitvectorylabs.com/schemas/openai):
//   - documented unsupported: allOf, not, dependentRequired, dependentSchemas,
//     if, then, else  -> error;
//   - not in the documented supported subset and reported rejected, or
//     rejected for fine-tuned models only -> warning: minLength/maxLength and
//     default ("In strict mode, default, minLength, and maxLength can be
//     rejected by the API", github.com/openai/openai-node/pull/1988),
//     uniqueItems (github.com/microsoft/semantic-kernel/issues/9786), oneOf,
//     and the object/array keywords listed as unsupported for fine-tuned models.
var (
	strictUnsupported = []string{"allOf", "dependentRequired", "dependentSchemas", "else", "if", "not", "then"}
	strictDoubtful    = []string{
		"contains", "default", "maxContains", "maxLength", "maxProperties", "minContains",
		"minLength", "minProperties", "oneOf", "patternProperties", "propertyNames",
		"unevaluatedItems", "unevaluatedProperties", "uniqueItems",
	}
	// Documented string formats for strict mode.
	strictFormats = []string{"date", "date-time", "duration", "email", "hostname", "ipv4", "ipv6", "time", "uuid"}
)

// Strict-mode limits, current docs: "up to 5000 object properties total, with
// up to 10 levels of nesting"; older snapshots enforced 100 and 5 ("6 levels
// of nesting exceeds limit of 5", github.com/tidyverse/ellmer/issues/671;
// https://community.openai.com/t/measuring-maximum-depth-and-object-properties-in-structured-outputs/918388).
// Also at most 1000 enum values and 120,000 characters of property names,
// definition names, enum and const values.
const (
	strictMaxDepth       = 10
	strictOldMaxDepth    = 5
	strictMaxProps       = 5000
	strictOldMaxProps    = 100
	strictMaxEnumValues  = 1000
	strictMaxStringChars = 120000
)

func (l *linter) checkNode(n node) {
	s, p := n.s, n.path
	f := s.GetFields()
	ts, hasType := types(s)

	// An array without items.
	// OpenAI: "Invalid schema for function 'x': In context=('properties',
	// 'paths'), array schema missing items." (github.com/sigoden/aichat/pull/1049,
	// github.com/mark3labs/mcphost/issues/35). Gemini: "...parameters.properties[tags].items:
	// missing field." (github.com/cline/cline/issues/7339,
	// github.com/kkrishnan90/gemini-desktop/pull/7). Anthropic accepts it, but the
	// model then has no element type to follow.
	if contains(ts, "array") {
		if _, ok := f["items"]; !ok {
			switch l.profile {
			case Anthropic:
				l.add(p, "array-items-required", SeverityWarning, "array schema has no \"items\": Anthropic accepts it but the model gets no element type (OpenAI and Gemini reject it)")
			case Gemini:
				l.add(p, "array-items-required", SeverityError, "array schema has no \"items\"; Gemini rejects it (\"items: missing field\")")
			default:
				l.add(p, "array-items-required", SeverityError, "array schema has no \"items\"; OpenAI rejects it (\"array schema missing items\")")
			}
		}
	}

	if ref, ok := f["$ref"]; ok && l.profile != Gemini {
		l.checkRef(n, ref)
	}

	switch l.profile {
	case OpenAIStrict:
		l.checkStrict(n, ts)
	case Gemini:
		l.checkGemini(n, ts, hasType)
	}
}

// checkRef lints a $ref without following it.
func (l *linter) checkRef(n node, ref *structpb.Value) {
	p := n.path + "/$ref"
	r, ok := ref.GetKind().(*structpb.Value_StringValue)
	if !ok {
		l.add(p, "ref-invalid", SeverityError, "$ref must be a string, got "+kindName(ref))
		return
	}
	target := r.StringValue
	if !strings.HasPrefix(target, "#") {
		// OpenAI supports definitions inside the schema only ("$defs" plus
		// "#" for recursion, Supported schemas page). Anthropic documents
		// "External $ref not supported" for structured outputs / strict tools;
		// plain tools are only checked against the metaschema, so warn there.
		msg := "$ref " + strconv.Quote(target) + " points outside the schema; providers do not fetch external references"
		if l.profile == Anthropic {
			l.add(p, "ref-external", SeverityWarning, msg)
		} else {
			l.add(p, "ref-external", SeverityError, msg)
		}
		return
	}
	frag, err := url.PathUnescape(target[1:])
	if err != nil {
		l.add(p, "ref-unresolved", SeverityError, "$ref "+strconv.Quote(target)+" is not a valid URI fragment: "+err.Error())
		return
	}
	resolved := false
	if frag == "" || strings.HasPrefix(frag, "/") {
		_, resolved = resolvePointer(l.doc, frag)
	} else {
		resolved = hasAnchor(l.doc, frag)
	}
	if !resolved {
		l.add(p, "ref-unresolved", SeverityError, "$ref "+strconv.Quote(target)+" does not resolve within the schema")
		return
	}
	if l.profile == OpenAIStrict {
		// "$ref cannot have keywords {'description'}" — OpenAI's answer to a
		// $ref with siblings in strict mode
		// (https://community.openai.com/t/allow-annotation-only-keywords-like-description-title-and-examples-for-ref-keywords-when-using-json-structured-output/1374904).
		var sib []string
		for _, k := range sortedKeys(n.s) {
			if k != "$ref" && k != "$defs" && k != "definitions" {
				sib = append(sib, k)
			}
		}
		if len(sib) > 0 {
			l.add(p, "ref-siblings", SeverityError, "strict mode rejects keywords beside $ref ("+strings.Join(sib, ", ")+"); wrap the $ref in anyOf to keep them")
		}
		if frag != "" && !strings.HasPrefix(frag, "/$defs/") && !strings.HasPrefix(frag, "/definitions/") {
			l.add(p, "ref-form", SeverityWarning, "strict mode documents $ref only to \"#\" or \"#/$defs/...\"; got "+strconv.Quote(target))
		}
	}
}

// hasAnchor reports whether any schema in doc declares "$anchor": name.
func hasAnchor(v *structpb.Value, name string) bool {
	switch k := v.GetKind().(type) {
	case *structpb.Value_StructValue:
		for key, c := range k.StructValue.GetFields() {
			if key == "$anchor" && c.GetStringValue() == name {
				return true
			}
			if hasAnchor(c, name) {
				return true
			}
		}
	case *structpb.Value_ListValue:
		for _, c := range k.ListValue.GetValues() {
			if hasAnchor(c, name) {
				return true
			}
		}
	}
	return false
}

func (l *linter) checkStrict(n node, ts []string) {
	s, p := n.s, n.path
	f := s.GetFields()
	for _, kw := range sortedKeys(s) {
		switch {
		case contains(strictUnsupported, kw):
			l.add(p+"/"+escape(kw), "strict-unsupported-keyword", SeverityError, kw+" is not supported in strict mode")
		case contains(strictDoubtful, kw):
			l.add(p+"/"+escape(kw), "strict-unsupported-keyword", SeverityWarning, kw+" is outside the documented strict-mode subset and may be rejected")
		}
	}
	if fv, ok := f["format"]; ok && contains(ts, "string") {
		if !contains(strictFormats, fv.GetStringValue()) {
			l.add(p+"/format", "strict-format", SeverityWarning, "format "+strconv.Quote(fv.GetStringValue())+" is not one of the documented strict-mode formats ("+strings.Join(strictFormats, ", ")+")")
		}
	}
	if e, ok := f["enum"]; ok {
		for _, v := range e.GetListValue().GetValues() {
			l.enumCount++
			l.stringBytes += len(v.GetStringValue())
		}
	}
	if c, ok := f["const"]; ok {
		l.stringBytes += len(c.GetStringValue())
	}
	for _, kw := range []string{"$defs", "definitions"} {
		for k := range f[kw].GetStructValue().GetFields() {
			l.stringBytes += len(k)
		}
	}

	if !isObjectSchema(s) {
		return
	}
	// "additionalProperties: false must always be set in objects" and "all
	// fields must be required" (Supported schemas page); the API says
	// "In context=('properties', 'fields'), 'additionalProperties' is required
	// to be supplied and to be false." (github.com/letta-ai/letta/issues/3137).
	if ap, ok := f["additionalProperties"]; !ok {
		l.add(p, "strict-additional-properties", SeverityError, "strict mode requires \"additionalProperties\": false on every object")
	} else if b, isBool := ap.GetKind().(*structpb.Value_BoolValue); !isBool || b.BoolValue {
		l.add(p+"/additionalProperties", "strict-additional-properties", SeverityError, "strict mode requires \"additionalProperties\": false on every object")
	}
	props, hasProps := f["properties"]
	if !hasProps {
		// "In context=(), object schema missing properties." (github.com/spring-projects/spring-ai/issues/4776).
		l.add(p, "strict-object-properties", SeverityError, "strict mode requires \"properties\" on every object schema (use {} for none)")
	}
	required := map[string]bool{}
	for _, r := range f["required"].GetListValue().GetValues() {
		required[r.GetStringValue()] = true
	}
	pm := props.GetStructValue()
	for _, k := range sortedKeys(pm) {
		l.propCount++
		l.stringBytes += len(k)
		if !required[k] {
			l.add(p+"/properties/"+escape(k), "strict-required", SeverityError, "strict mode requires every property in \"required\"; make "+strconv.Quote(k)+" required and allow null (\"type\": [\"...\", \"null\"]) if it is optional")
		}
	}
	switch n.depth {
	case strictMaxDepth + 1:
		l.add(p, "strict-nesting-depth", SeverityError, fmt.Sprintf("object nesting reaches %d levels; strict mode allows %d", n.depth, strictMaxDepth))
	case strictOldMaxDepth + 1:
		l.add(p, "strict-nesting-depth", SeverityWarning, fmt.Sprintf("object nesting reaches %d levels; older strict-mode models allow %d", n.depth, strictOldMaxDepth))
	}
}

func (l *linter) checkBudgets() {
	if l.profile != OpenAIStrict {
		return
	}
	switch {
	case l.propCount > strictMaxProps:
		l.add("", "strict-property-count", SeverityError, fmt.Sprintf("the schema has %d object properties; strict mode allows %d", l.propCount, strictMaxProps))
	case l.propCount > strictOldMaxProps:
		l.add("", "strict-property-count", SeverityWarning, fmt.Sprintf("the schema has %d object properties; older strict-mode models allow %d", l.propCount, strictOldMaxProps))
	}
	if l.enumCount > strictMaxEnumValues {
		l.add("", "strict-enum-count", SeverityError, fmt.Sprintf("the schema has %d enum values; strict mode allows %d", l.enumCount, strictMaxEnumValues))
	}
	if l.stringBytes > strictMaxStringChars {
		l.add("", "strict-string-size", SeverityError, fmt.Sprintf("property names, definition names, enum and const values total %d characters; strict mode allows %d", l.stringBytes, strictMaxStringChars))
	}
}

func (l *linter) checkGemini(n node, ts []string, hasType bool) {
	s, p := n.s, n.path
	f := s.GetFields()
	for _, kw := range sortedKeys(s) {
		if !contains(geminiKeywords, kw) {
			l.add(p+"/"+escape(kw), "gemini-unsupported-keyword", SeverityError, "Gemini's function Schema has no field "+strconv.Quote(kw)+" (\"Unknown name ... Cannot find field\")")
		}
	}

	tv := f["type"]
	switch {
	case tv.GetListValue() != nil:
		// "Invalid JSON payload received. Unknown name "type" at '...': Proto
		// field is not repeating, cannot start list." (github.com/voocel/litellm/issues/9,
		// github.com/zed-industries/zed/issues/53919).
		l.add(p+"/type", "gemini-type-list", SeverityError, "Gemini takes a single type; use one type with \"nullable\": true instead of a type list")
	case hasType:
		t := strings.ToLower(tv.GetStringValue())
		switch {
		case t == "null":
			// Vertex v1 rejects it ("Invalid value at
			// '...any_of[1].type' (...Type), "null"", github.com/pydantic/pydantic-ai/issues/533);
			// newer Gemini API versions list NULL in the Type enum
			// (github.com/epam/ai-dial-adapter-vertexai/issues/219), so warn.
			l.add(p+"/type", "gemini-type-null", SeverityWarning, "type \"null\" is rejected by some Gemini API versions; prefer \"nullable\": true on the other branch")
		case !contains(geminiTypes, t):
			l.add(p+"/type", "gemini-type-invalid", SeverityError, "Gemini does not know type "+strconv.Quote(tv.GetStringValue())+" (want one of "+strings.Join(geminiTypes, ", ")+")")
		}
	default:
		_, hasAnyOf := f["anyOf"]
		_, hasRef := f["$ref"] // already reported as an unknown field
		if !hasAnyOf && !hasRef {
			// Schema.type was "Required" in the Gemini reference; a missing
			// type is sent as "" and rejected ("Invalid value at '...type'
			// (...Type), """, github.com/zereight/gitlab-mcp/issues/166).
			l.add(p, "gemini-type-missing", SeverityWarning, "schema has no \"type\"; older Gemini API versions require one")
		}
	}

	if e, ok := f["enum"]; ok {
		// "...properties[truncateMode].enum: only allowed for STRING type"
		// (github.com/musistudio/llms/pull/20); integer enum values fail with
		// "Invalid value at '...enum[2]' (TYPE_STRING), 4"
		// (github.com/microsoft/azure-devops-mcp/issues/145).
		if hasType && !(len(ts) == 1 && strings.EqualFold(ts[0], "string")) {
			l.add(p+"/enum", "gemini-enum-non-string", SeverityError, "Gemini allows enum only on type string")
		}
		for i, v := range e.GetListValue().GetValues() {
			if _, isStr := v.GetKind().(*structpb.Value_StringValue); !isStr {
				l.add(p+"/enum/"+strconv.Itoa(i), "gemini-enum-non-string", SeverityError, "Gemini enum values must be strings, got "+kindName(v))
			}
		}
	}

	isObj := hasType && len(ts) == 1 && strings.EqualFold(ts[0], "object")
	if hasType && !isObj {
		// "...properties[data].properties: only allowed for OBJECT type"
		// (github.com/anomalyco/opencode/pull/11888).
		for _, kw := range []string{"properties", "required"} {
			if _, ok := f[kw]; ok {
				l.add(p+"/"+kw, "gemini-object-keyword", SeverityError, "Gemini allows "+kw+" only on type object")
			}
		}
	}
	if isObj {
		props := f["properties"].GetStructValue()
		if len(props.GetFields()) == 0 {
			// "...parameters.properties: should be non-empty for OBJECT type"
			// (github.com/agno-agi/agno/issues/2112, github.com/vercel/ai/issues/3371);
			// later models accept it (github.com/bug-ops/zeph/issues/1641), so warn.
			l.add(p, "gemini-object-empty", SeverityWarning, "object schema with no properties: several Gemini models reject it (\"should be non-empty for OBJECT type\"); omit parameters for a tool without arguments")
		}
		for _, k := range sortedKeys(props) {
			if !geminiParamName.MatchString(k) {
				l.add(p+"/properties/"+escape(k), "gemini-property-name", SeverityWarning, "Vertex AI documents parameter names as ^[a-zA-Z_][a-zA-Z0-9_]{0,63}$; "+strconv.Quote(k)+" does not match")
			}
		}
	}

	if fv, ok := f["format"]; ok && hasType && len(ts) == 1 && strings.EqualFold(ts[0], "string") {
		// "When using the Gemini Developer API, this must be either 'enum' or
		// 'date-time', otherwise requests will fail."
		// (https://firebase.google.com/docs/reference/js/ai.schemashared). The
		// v1beta reference now says any value is allowed, so warn.
		if v := fv.GetStringValue(); v != "enum" && v != "date-time" {
			l.add(p+"/format", "gemini-format", SeverityWarning, "Gemini documents only \"enum\" and \"date-time\" as string formats; "+strconv.Quote(v)+" may be rejected")
		}
	}

	if _, ok := f["anyOf"]; ok && len(f) > 1 {
		// Vertex with Gemini 3: "When using any_of, it must be the only field
		// set" (github.com/patlux/pi-commandcode-provider/pull/103).
		l.add(p+"/anyOf", "gemini-anyof-siblings", SeverityWarning, "Vertex AI requires anyOf to be the only field of its schema")
	}
}

// checkBoolSchema handles a subschema that is true or false.
func (l *linter) checkBoolSchema(path string) {
	if l.profile == Gemini {
		// The Schema message cannot be a boolean.
		l.add(path, "gemini-boolean-schema", SeverityError, "Gemini cannot take a boolean schema; write an object schema")
	}
}
