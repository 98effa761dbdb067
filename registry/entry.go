package registry

import (
	"fmt"
	"math/big"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/normalize"
)

// Entry is a tool with its schema compiled for the hot path: the RT-TOOL-8
// plan and the validator, built once per revision. Entries are immutable
// and shared by every snapshot that holds the same tool revision.
type Entry struct {
	Tool      Tool
	Plan      *normalize.Plan
	Validator *jsonschema.Schema

	// fast accepts valid arguments without allocating; nil when the schema
	// uses keywords it does not cover (see fastvalidate.go).
	fast *fastSchema
}

// Compile validates a tool definition and compiles its schema with the
// default normalization options.
func Compile(t Tool) (*Entry, error) { return CompileWith(t) }

// CompileWith is Compile with normalization options. Every refusal is a
// *ToolError naming the tool, the field and, for schemas, the JSON Pointer.
func CompileWith(t Tool, opts ...normalize.Option) (*Entry, error) {
	if err := ValidateName(t.Name); err != nil {
		return nil, err
	}
	if r := ValidateBackend(t.Backend); r != "" {
		return nil, &ToolError{Tool: t.Name, Field: "backend", Reason: r}
	}
	if t.Timeout < 0 {
		return nil, &ToolError{Tool: t.Name, Field: "timeout", Reason: fmt.Sprintf("must not be negative, got %s", t.Timeout)}
	}
	if t.InputSchema == nil {
		return nil, &ToolError{Tool: t.Name, Field: "input_schema", Reason: "is required"}
	}
	doc := structToMap(t.InputSchema)
	if err := checkRoot(t.Name, doc); err != nil {
		return nil, err
	}
	v, err := compileSchema(doc)
	if err != nil {
		return nil, schemaError(t.Name, err)
	}
	plan, err := normalize.Compile(t.InputSchema, opts...)
	if err != nil {
		te := &ToolError{Tool: t.Name, Field: "input_schema", Reason: err.Error()}
		if ce, ok := err.(*normalize.CompilationError); ok {
			te.Pointer, te.Reason = ce.Pointer, ce.Reason
		}
		return nil, te
	}
	fast, _ := compileFast(v) // unsupported schema: jsonschema alone
	return &Entry{Tool: t, Plan: plan, Validator: v, fast: fast}, nil
}

// checkRoot enforces an object root schema. Our reading: the root must say
// `"type": "object"` (or `["object"]`), or, without a type, declare
// `properties` — arguments always arrive as an object, and a root that
// allows other types (or only via $ref/anyOf) is a mistake model providers
// also reject. An unsupported $schema is refused here rather than fetched.
func checkRoot(tool string, doc map[string]any) *ToolError {
	bad := func(ptr, reason string) *ToolError {
		return &ToolError{Tool: tool, Field: "input_schema", Pointer: ptr, Reason: reason}
	}
	if s, ok := doc["$schema"]; ok {
		str, _ := s.(string)
		if draftFor(str) == nil {
			return bad("/$schema", fmt.Sprintf("unsupported $schema %q (supported: draft-04, draft-06, draft-07, 2019-09, 2020-12)", str))
		}
	}
	switch t := doc["type"].(type) {
	case nil:
		if _, ok := doc["type"]; ok {
			return bad("/type", `root type must be "object"; got null`)
		}
		if _, ok := doc["properties"].(map[string]any); !ok {
			return bad("", `root must be an object schema: set "type": "object"`)
		}
	case string:
		if t != "object" {
			return bad("/type", fmt.Sprintf("root type must be %q; got %q", "object", t))
		}
	case []any:
		if len(t) != 1 || t[0] != "object" {
			return bad("/type", fmt.Sprintf("root type must be %q; got %s", "object", describeTypes(t)))
		}
	default:
		return bad("/type", "root type must be \"object\"")
	}
	return nil
}

func describeTypes(a []any) string {
	parts := make([]string, len(a))
	for i, x := range a {
		parts[i] = fmt.Sprintf("%v", x)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

var printer = message.NewPrinter(language.English)

// Validate checks normalized arguments against the tool's schema. rep is the
// normalization report for these arguments (may be nil); its skips explain
// type errors and its repairs travel with the error. It returns nil when the
// arguments are valid.
func (e *Entry) Validate(args *structpb.Struct, rep *normalize.Report) *ValidationError {
	if v := nonFiniteViolations(args); len(v) > 0 { // finite.go
		ve := &ValidationError{Tool: e.Tool.Name, Violations: v}
		if rep != nil {
			ve.Repairs = rep.Repairs
		}
		return ve
	}
	// The fast path only ever accepts; anything it rejects or cannot judge
	// goes to jsonschema, which is authoritative and explains failures.
	if e.fast != nil && e.fast.valid(args) {
		return nil
	}
	inst := structToMap(args)
	err := e.Validator.Validate(inst)
	if err == nil {
		return nil
	}
	ve := &ValidationError{Tool: e.Tool.Name}
	if rep != nil {
		ve.Repairs = rep.Repairs
	}
	jve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		ve.Violations = []Violation{{Message: err.Error()}}
		return ve
	}
	var leaves []*jsonschema.ValidationError
	collectLeaves(jve, &leaves)
	type ranked struct {
		v    Violation
		rank int
	}
	all := make([]ranked, 0, len(leaves))
	seen := make(map[Violation]bool, len(leaves))
	for _, l := range leaves {
		for _, v := range describe(l, inst, rep) {
			if !seen[v] {
				seen[v] = true
				all = append(all, ranked{v, kindRank(l.ErrorKind)})
			}
		}
	}
	// Causes come partly from map iteration: sort for a stable message —
	// by location, then the most basic problem (type, presence) first.
	sort.Slice(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if a.v.Pointer != b.v.Pointer {
			return a.v.Pointer < b.v.Pointer
		}
		if a.rank != b.rank {
			return a.rank < b.rank
		}
		return a.v.Message < b.v.Message
	})
	ve.Violations = make([]Violation, len(all))
	for i, r := range all {
		ve.Violations[i] = r.v
	}
	return ve
}

func kindRank(k jsonschema.ErrorKind) int {
	switch k.(type) {
	case *kind.Type, *unsafeInteger:
		return 0
	case *kind.Required, *kind.AdditionalProperties, *kind.FalseSchema:
		return 1
	}
	return 2
}

func collectLeaves(e *jsonschema.ValidationError, out *[]*jsonschema.ValidationError) {
	if len(e.Causes) == 0 {
		*out = append(*out, e)
		return
	}
	for _, c := range e.Causes {
		collectLeaves(c, out)
	}
}

// describe turns one leaf error into violations with model-facing messages.
// String values are never echoed (they may hold secrets); numbers, booleans
// and null are.
func describe(l *jsonschema.ValidationError, inst map[string]any, rep *normalize.Report) []Violation {
	ptr := pointer(l.InstanceLocation)
	val, isArr := lookup(inst, l.InstanceLocation)
	name := fieldName(l.InstanceLocation, isArr)
	one := func(msg string) []Violation { return []Violation{{Pointer: ptr, Message: msg}} }
	switch k := l.ErrorKind.(type) {
	case *kind.Required:
		out := make([]Violation, 0, len(k.Missing))
		for _, m := range k.Missing {
			loc := append(append([]string(nil), l.InstanceLocation...), m)
			if len(l.InstanceLocation) == 0 {
				out = append(out, Violation{Pointer: pointer(loc), Message: fmt.Sprintf("missing required argument `%s`", m)})
			} else {
				out = append(out, Violation{Pointer: pointer(loc), Message: fmt.Sprintf("%s is missing required property `%s`", name, m)})
			}
		}
		return out
	case *kind.AdditionalProperties:
		out := make([]Violation, 0, len(k.Properties))
		for _, p := range k.Properties {
			loc := append(append([]string(nil), l.InstanceLocation...), p)
			what := "argument"
			if len(l.InstanceLocation) > 0 {
				what = "property in " + name
			}
			out = append(out, Violation{Pointer: pointer(loc), Message: fmt.Sprintf("unknown %s `%s`: remove it", what, p)})
		}
		return out
	case *kind.Type:
		return one(fmt.Sprintf("%s must be %s; got %s", name, wantTypes(k.Want), gotValue(ptr, val, rep)))
	case *unsafeInteger:
		return one(fmt.Sprintf("%s must be an integer between -2^53 and 2^53; got %s", name, formatNumber(k.Got)))
	case *kind.Enum:
		return one(fmt.Sprintf("%s must be one of %s", name, displayValues(k.Want)))
	case *kind.Const:
		return one(fmt.Sprintf("%s must be %s", name, displayValue(k.Want)))
	case *kind.Pattern:
		return one(fmt.Sprintf("%s must match the pattern %q", name, k.Want))
	case *kind.Format:
		return one(fmt.Sprintf("%s must be a valid %s", name, k.Want))
	case *kind.MinLength:
		return one(fmt.Sprintf("%s must be at least %d characters long; got %d", name, k.Want, k.Got))
	case *kind.MaxLength:
		return one(fmt.Sprintf("%s must be at most %d characters long; got %d", name, k.Want, k.Got))
	case *kind.MinItems:
		return one(fmt.Sprintf("%s must have at least %d items; got %d", name, k.Want, k.Got))
	case *kind.MaxItems:
		return one(fmt.Sprintf("%s must have at most %d items; got %d", name, k.Want, k.Got))
	case *kind.Minimum:
		return one(fmt.Sprintf("%s must be >= %s; got %s", name, ratString(k.Want), ratString(k.Got)))
	case *kind.Maximum:
		return one(fmt.Sprintf("%s must be <= %s; got %s", name, ratString(k.Want), ratString(k.Got)))
	case *kind.ExclusiveMinimum:
		return one(fmt.Sprintf("%s must be > %s; got %s", name, ratString(k.Want), ratString(k.Got)))
	case *kind.ExclusiveMaximum:
		return one(fmt.Sprintf("%s must be < %s; got %s", name, ratString(k.Want), ratString(k.Got)))
	case *kind.FalseSchema:
		if len(l.InstanceLocation) == 1 {
			return one(fmt.Sprintf("unknown argument %s: remove it", name))
		}
		return one(fmt.Sprintf("%s is not allowed here", name))
	case *kind.OneOf:
		return one(fmt.Sprintf("%s must match exactly one of the allowed forms; it matches several", name))
	case *kind.Not:
		return one(fmt.Sprintf("%s must not match the excluded form", name))
	case *kind.UniqueItems:
		return one(fmt.Sprintf("%s must have unique items; items %d and %d are equal", name, k.Duplicates[0], k.Duplicates[1]))
	}
	return one(fmt.Sprintf("%s: %s", name, l.ErrorKind.LocalizedString(printer)))
}

// lookup finds the instance value at tokens; isArr reports for each token
// whether it indexes an array (for display).
func lookup(inst map[string]any, tokens []string) (any, []bool) {
	isArr := make([]bool, len(tokens))
	var cur any = inst
	for i, t := range tokens {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[t]
		case []any:
			isArr[i] = true
			var n int
			if _, err := fmt.Sscan(t, &n); err != nil || n < 0 || n >= len(c) {
				return nil, isArr
			}
			cur = c[n]
		default:
			return nil, isArr
		}
	}
	return cur, isArr
}

// fieldName renders a location as `ops[0].title`; the root is "the arguments".
func fieldName(tokens []string, isArr []bool) string {
	if len(tokens) == 0 {
		return "the arguments"
	}
	var b strings.Builder
	b.WriteByte('`')
	for i, t := range tokens {
		switch {
		case isArr[i]:
			b.WriteString("[" + t + "]")
		case i > 0:
			b.WriteString("." + t)
		default:
			b.WriteString(t)
		}
	}
	b.WriteByte('`')
	return b.String()
}

func wantTypes(want []string) string {
	parts := make([]string, len(want))
	for i, w := range want {
		parts[i] = article(w)
	}
	return strings.Join(parts, " or ")
}

func article(t string) string {
	switch t {
	case "array", "object", "integer":
		return "an " + t
	case "null":
		return "null"
	}
	return "a " + t
}

// gotValue describes what was sent. For a string left as sent by
// normalization, the skip says why it was not decoded.
func gotValue(ptr string, v any, rep *normalize.Report) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return fmt.Sprint(x)
	case float64:
		return formatNumber(x)
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		if rep != nil {
			for _, s := range rep.Skipped {
				if s.Path == ptr {
					return "a string " + skipText(s)
				}
			}
		}
		return "a string"
	}
	return fmt.Sprintf("%T", v)
}

func skipText(s normalize.Skip) string {
	switch s.Reason {
	case normalize.NotJSON:
		return "that is not valid JSON"
	case normalize.WrongShape:
		return "that parses as " + article(s.Got)
	case normalize.LossyNumber:
		return "holding JSON with a number that cannot be carried exactly, so it was not decoded"
	case normalize.DuplicateKey:
		return "holding JSON with a duplicate object key, so it was not decoded"
	case normalize.TooDeep:
		return fmt.Sprintf("holding JSON nested deeper than %d levels, so it was not decoded", normalize.MaxJSONDepth)
	case normalize.LoneSurrogate:
		return "holding JSON with an unpaired \\u surrogate escape, so it was not decoded"
	}
	return "that was not decoded"
}

func displayValue(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("%q", x)
	case float64:
		return formatNumber(x)
	case nil:
		return "null"
	case map[string]any, []any:
		return "the given constant"
	}
	return fmt.Sprint(v)
}

func displayValues(vs []any) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = displayValue(v)
	}
	return strings.Join(parts, ", ")
}

// ratString prints a bound or value the way it would appear in JSON.
func ratString(r *big.Rat) string {
	if r.IsInt() && r.Num().IsInt64() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return formatNumber(f)
}
