package lint

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
)

// Profile names one provider's set of rules.
type Profile string

// The profiles Lint knows.
const (
	OpenAI       Profile = "openai"
	OpenAIStrict Profile = "openai-strict"
	Anthropic    Profile = "anthropic"
	Gemini       Profile = "gemini"
)

var allProfiles = []Profile{OpenAI, OpenAIStrict, Anthropic, Gemini}

// Profiles returns every known profile in a fixed order.
func Profiles() []Profile {
	return append([]Profile(nil), allProfiles...)
}

// ProfileNames is the profiles as "a, b, c or d", for messages.
func ProfileNames() string {
	names := make([]string, len(allProfiles))
	for i, p := range allProfiles {
		names[i] = string(p)
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// ParseProfiles reads a comma-separated list of profile names.
func ParseProfiles(list string) ([]Profile, error) {
	var out []Profile
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		p, ok := ParseProfile(name)
		if !ok {
			return nil, fmt.Errorf("unknown lint profile %q (want %s)", name, ProfileNames())
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// ParseProfile returns the profile called s, or false when there is none.
func ParseProfile(s string) (Profile, bool) {
	for _, p := range allProfiles {
		if string(p) == s {
			return p, true
		}
	}
	return "", false
}

// Severity says whether a finding means the provider rejects the tool.
type Severity string

// Severities.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Finding is one problem found in one profile.
type Finding struct {
	Profile Profile
	// Path is a JSON Pointer (RFC 6901) into the input schema ("" is the
	// schema root), or "/name" for the tool name.
	Path string
	// Rule is a stable identifier, e.g. "array-items-required".
	Rule     string
	Message  string
	Severity Severity
}

// NamePath is the Path of findings about the tool name.
const NamePath = "/name"

// String renders the finding as "PROFILE SEVERITY PATH RULE: MESSAGE". The
// schema root, whose pointer is empty, is shown as "(root)" so the columns
// stay aligned.
func (f Finding) String() string {
	p := f.Path
	if p == "" {
		p = "(root)"
	}
	return string(f.Profile) + " " + string(f.Severity) + " " + p + " " + f.Rule + ": " + f.Message
}

// HasErrors reports whether any finding has error severity.
func HasErrors(fs []Finding) bool {
	for _, f := range fs {
		if f.Severity == SeverityError {
			return true
		}
	}
	return false
}

// Lint checks name and schema against the given profiles, or all profiles
// when none are given. Findings come grouped by profile in the order given,
// and within a profile in a fixed walk order (name first, then the schema
// depth-first with object keys sorted), so output is deterministic. An
// unknown profile yields one "unknown-profile" error finding.
func Lint(name string, schema *structpb.Struct, profiles ...Profile) []Finding {
	if len(profiles) == 0 {
		profiles = allProfiles
	}
	var out []Finding
	seen := map[Profile]bool{}
	for _, p := range profiles {
		if seen[p] {
			continue
		}
		seen[p] = true
		l := &linter{profile: p, name: name}
		if schema != nil {
			l.doc = structpb.NewStructValue(schema)
		}
		l.run()
		out = append(out, l.findings...)
	}
	return out
}

// linter holds the state of one profile's pass over one tool.
type linter struct {
	profile  Profile
	name     string
	doc      *structpb.Value // nil when the tool has no schema
	findings []Finding

	// openai-strict budgets, summed over the whole schema.
	propCount   int
	enumCount   int
	stringBytes int
}

func (l *linter) add(path, rule string, sev Severity, msg string) {
	l.findings = append(l.findings, Finding{Profile: l.profile, Path: path, Rule: rule, Message: msg, Severity: sev})
}

func (l *linter) run() {
	switch l.profile {
	case OpenAI, OpenAIStrict, Anthropic, Gemini:
	default:
		l.add("", "unknown-profile", SeverityError, "unknown lint profile "+strconv.Quote(string(l.profile)))
		return
	}
	l.checkName()
	root, ok := asStruct(l.doc)
	if !ok {
		l.add("", "root-type-object", SeverityError, "the input schema must be a JSON object with \"type\": \"object\"")
		return
	}
	if l.profile == Anthropic {
		l.checkMetaschema()
	}
	l.checkRoot(root)
	l.walk(l.doc, "", 0, false)
	l.checkBudgets()
}

// node describes one schema position during the walk.
type node struct {
	s    *structpb.Struct
	path string
	// depth counts object schemas from the root down to and including this
	// one (the root object is depth 1).
	depth int
}

// subschemaMaps are keywords whose value maps names to schemas.
var subschemaMaps = []string{"$defs", "definitions", "dependentSchemas", "patternProperties", "properties"}

// subschemaArrays are keywords whose value is a list of schemas.
var subschemaArrays = []string{"allOf", "anyOf", "oneOf", "prefixItems"}

// subschemaSingles are keywords whose value is one schema.
var subschemaSingles = []string{
	"additionalItems", "additionalProperties", "contains", "else", "if", "items",
	"not", "propertyNames", "then", "unevaluatedItems", "unevaluatedProperties",
}

// walk visits v (a schema at path) and every subschema below it. Boolean
// schemas are leaves; $ref is never followed.
func (l *linter) walk(v *structpb.Value, path string, parentDepth int, inDefs bool) {
	if _, isBool := v.GetKind().(*structpb.Value_BoolValue); isBool {
		l.checkBoolSchema(path)
		return
	}
	s, ok := asStruct(v)
	if !ok {
		l.add(path, "schema-not-object", SeverityError, "a schema must be a JSON object (or a boolean), got "+kindName(v))
		return
	}
	n := node{s: s, path: path, depth: parentDepth}
	if isObjectSchema(s) {
		n.depth++
	}
	l.checkNode(n)

	for _, kw := range sortedKeys(s) {
		child := s.GetFields()[kw]
		kwPath := path + "/" + escape(kw)
		switch {
		case contains(subschemaMaps, kw):
			m, ok := asStruct(child)
			if !ok {
				continue // the metaschema check reports the wrong shape
			}
			defs := inDefs || kw == "$defs" || kw == "definitions"
			for _, k := range sortedKeys(m) {
				// $defs members restart the object depth: OpenAI counts
				// nesting where a definition is used, not where it is kept.
				d := n.depth
				if kw == "$defs" || kw == "definitions" {
					d = 0
				}
				l.walk(m.GetFields()[k], kwPath+"/"+escape(k), d, defs)
			}
		case contains(subschemaArrays, kw):
			for i, item := range child.GetListValue().GetValues() {
				l.walk(item, kwPath+"/"+strconv.Itoa(i), n.depth, inDefs)
			}
		case contains(subschemaSingles, kw):
			if kw == "items" && child.GetListValue() != nil {
				// Draft-04..2019-09 tuple form.
				for i, item := range child.GetListValue().GetValues() {
					l.walk(item, kwPath+"/"+strconv.Itoa(i), n.depth, inDefs)
				}
				continue
			}
			if kw == "additionalProperties" || kw == "unevaluatedProperties" || kw == "additionalItems" || kw == "unevaluatedItems" {
				if _, isBool := child.GetKind().(*structpb.Value_BoolValue); isBool {
					continue // true/false here is a switch, not a schema to lint
				}
			}
			l.walk(child, kwPath, n.depth, inDefs)
		}
	}
}

// isObjectSchema reports whether s describes objects: "type" includes
// "object", or there is no "type" but "properties" is present.
func isObjectSchema(s *structpb.Struct) bool {
	ts, has := types(s)
	if !has {
		_, ok := s.GetFields()["properties"]
		return ok
	}
	return contains(ts, "object")
}

// types returns the declared type names of s and whether "type" is present.
func types(s *structpb.Struct) ([]string, bool) {
	v, ok := s.GetFields()["type"]
	if !ok {
		return nil, false
	}
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		return []string{k.StringValue}, true
	case *structpb.Value_ListValue:
		var out []string
		for _, e := range k.ListValue.GetValues() {
			if sv, ok := e.GetKind().(*structpb.Value_StringValue); ok {
				out = append(out, sv.StringValue)
			}
		}
		return out, true
	}
	return nil, true
}

func asStruct(v *structpb.Value) (*structpb.Struct, bool) {
	if v == nil {
		return nil, false
	}
	s, ok := v.GetKind().(*structpb.Value_StructValue)
	if !ok || s.StructValue == nil {
		return nil, false
	}
	return s.StructValue, true
}

func kindName(v *structpb.Value) string {
	switch v.GetKind().(type) {
	case *structpb.Value_NullValue:
		return "null"
	case *structpb.Value_NumberValue:
		return "a number"
	case *structpb.Value_StringValue:
		return "a string"
	case *structpb.Value_BoolValue:
		return "a boolean"
	case *structpb.Value_ListValue:
		return "an array"
	case *structpb.Value_StructValue:
		return "an object"
	}
	return "nothing"
}

func sortedKeys(s *structpb.Struct) []string {
	keys := make([]string, 0, len(s.GetFields()))
	for k := range s.GetFields() {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// escape encodes one JSON Pointer reference token (RFC 6901 §3).
func escape(tok string) string {
	if !strings.ContainsAny(tok, "~/") {
		return tok
	}
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}

// unescape decodes one JSON Pointer reference token.
func unescape(tok string) string {
	if !strings.Contains(tok, "~") {
		return tok
	}
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
}

// resolvePointer looks up a JSON Pointer in doc.
func resolvePointer(doc *structpb.Value, ptr string) (*structpb.Value, bool) {
	if ptr == "" {
		return doc, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	cur := doc
	for _, raw := range strings.Split(ptr[1:], "/") {
		tok := unescape(raw)
		switch k := cur.GetKind().(type) {
		case *structpb.Value_StructValue:
			next, ok := k.StructValue.GetFields()[tok]
			if !ok {
				return nil, false
			}
			cur = next
		case *structpb.Value_ListValue:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(k.ListValue.GetValues()) || (len(tok) > 1 && tok[0] == '0') {
				return nil, false
			}
			cur = k.ListValue.GetValues()[i]
		default:
			return nil, false
		}
	}
	return cur, true
}
