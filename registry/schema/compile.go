package schema

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/message"
	"google.golang.org/protobuf/types/known/structpb"
)

// schemaURL is the base URI a tool's schema is compiled under. The scheme
// is not one the loader serves, so any $ref leaving the document fails.
const schemaURL = "mem:///input_schema.json"

// MaxSafeInteger is 2^53: integer arguments must lie within ±MaxSafeInteger,
// because structpb carries numbers as float64 and larger whole values are
// no longer exact.
const MaxSafeInteger = 1 << 53

// drafts maps the $schema values we accept to their drafts; a $schema
// outside this set is refused instead of being fetched.
var drafts = map[string]*jsonschema.Draft{
	"json-schema.org/draft-04/schema":      jsonschema.Draft4,
	"json-schema.org/draft-06/schema":      jsonschema.Draft6,
	"json-schema.org/draft-07/schema":      jsonschema.Draft7,
	"json-schema.org/draft/2019-09/schema": jsonschema.Draft2019,
	"json-schema.org/draft/2020-12/schema": jsonschema.Draft2020,
}

func draftFor(schema string) *jsonschema.Draft {
	u := strings.TrimSuffix(schema, "#")
	u, ok := strings.CutPrefix(u, "http://")
	if !ok {
		u, _ = strings.CutPrefix(u, "https://")
	}
	return drafts[u]
}

// noLoader refuses every document: tool schemas must be self-contained.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, errors.New("remote and file references are not loaded")
}

// CheckDraft refuses a $schema outside the drafts Compile supports, with a
// *CompileError at /$schema; any other document passes. Compile checks it
// too; it is exported so a caller with rules of its own (the registry's
// object root) can report an unsupported draft first, as the more basic
// problem.
func CheckDraft(doc *structpb.Struct) error {
	s, ok := doc.GetFields()["$schema"]
	if !ok {
		return nil
	}
	str := s.GetStringValue()
	if draftFor(str) == nil {
		return &CompileError{Pointer: "/$schema", Reason: fmt.Sprintf("unsupported $schema %q (supported: draft-04, draft-06, draft-07, 2019-09, 2020-12)", str)}
	}
	return nil
}

// Compile compiles a JSON Schema document. It refuses, with a
// *CompileError, an unsupported $schema, a $ref leaving the document, a
// document its draft's meta-schema rejects, an invalid regular
// expression, and a schema one argument value could cost more than the
// evaluation bound (WithMaxEvaluations; cost.go) to validate.
func Compile(doc *structpb.Struct, opts ...Option) (*Schema, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if err := CheckDraft(doc); err != nil {
		return nil, err
	}
	raw := structToMap(doc)
	c, v, err := compileJSONSchema(raw)
	if err != nil {
		return nil, compileError(err)
	}
	limit := o.maxEvaluations
	if limit <= 0 {
		limit = DefaultMaxEvaluations
	}
	cost, ce := compileCost(c, raw, v, limit)
	if ce != nil {
		return nil, ce
	}
	s := &Schema{js: v, cost: cost, fastPaths: !o.noFastPaths, sens: NewSensitivity(doc)}
	if s.fastPaths {
		s.fast, _ = compileFast(v) // unsupported schema: jsonschema alone
	}
	return s, nil
}

// compileJSONSchema compiles doc (already converted from structpb) with the
// integer-range vocabulary; the compiler is returned for compiling more of
// doc's subschemas (compileCost's dynamic anchors).
func compileJSONSchema(doc map[string]any) (*jsonschema.Compiler, *jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	c.RegisterVocabulary(safeIntVocab)
	// Custom vocabularies are off for 2019-09/2020-12 unless asserted; we
	// want the ±2^53 rule under every draft.
	c.AssertVocabs()
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, nil, err
	}
	s, err := c.Compile(schemaURL)
	return c, s, err
}

// safeIntVocab adds the ±2^53 bound to every schema whose type allows
// "integer" but not "number" (jsonschema alone accepts 1e20 as an integer).
// A keyword extension rather than a post-check, so it composes correctly
// with anyOf/oneOf/not and $ref.
var safeIntVocab = &jsonschema.Vocabulary{
	URL: "urn:flowdrop:vocab:safe-integer",
	Compile: func(_ *jsonschema.CompilerContext, obj map[string]any) (jsonschema.SchemaExt, error) {
		var hasInt, hasNum bool
		switch t := obj["type"].(type) {
		case string:
			hasInt = t == "integer"
		case []any:
			for _, x := range t {
				hasInt = hasInt || x == "integer"
				hasNum = hasNum || x == "number"
			}
		}
		if !hasInt || hasNum {
			return nil, nil
		}
		return safeInt{}, nil
	},
}

type safeInt struct{}

func (safeInt) Validate(ctx *jsonschema.ValidatorContext, v any) {
	f, ok := v.(float64)
	if !ok {
		return
	}
	if f == math.Trunc(f) && math.Abs(f) > MaxSafeInteger {
		ctx.AddError(&unsafeInteger{Got: f})
	}
}

// unsafeInteger is the error kind of safeInt.
type unsafeInteger struct{ Got float64 }

func (*unsafeInteger) KeywordPath() []string { return []string{"type"} }

func (k *unsafeInteger) LocalizedString(p *message.Printer) string {
	return p.Sprintf("integer %s is outside ±2^53", formatNumber(k.Got))
}

func formatNumber(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// structToMap converts a Struct to the plain Go values jsonschema walks, in
// one pass and without a JSON round trip: map[string]any, []any, float64,
// string, bool, nil.
func structToMap(s *structpb.Struct) map[string]any {
	fields := s.GetFields()
	m := make(map[string]any, len(fields))
	for k, v := range fields {
		m[k] = valueToAny(v)
	}
	return m
}

func valueToAny(v *structpb.Value) any {
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		return k.StringValue
	case *structpb.Value_NumberValue:
		return k.NumberValue
	case *structpb.Value_BoolValue:
		return k.BoolValue
	case *structpb.Value_StructValue:
		return structToMap(k.StructValue)
	case *structpb.Value_ListValue:
		vals := k.ListValue.GetValues()
		a := make([]any, len(vals))
		for i, x := range vals {
			a[i] = valueToAny(x)
		}
		return a
	}
	return nil // NullValue or unset
}

// compileError turns a jsonschema compile error into a *CompileError.
func compileError(err error) *CompileError {
	ce := &CompileError{}
	var (
		load   *jsonschema.LoadURLError
		ptr    *jsonschema.JSONPointerNotFoundError
		anchor *jsonschema.AnchorNotFoundError
		sv     *jsonschema.SchemaValidationError
		re     *jsonschema.InvalidRegexError
	)
	switch {
	case errors.As(err, &load):
		ce.Reason = fmt.Sprintf("unresolvable $ref %q: only references within the schema itself are allowed", trimBase(load.URL))
	case errors.As(err, &ptr):
		ce.Reason = fmt.Sprintf("unresolvable $ref %q: no such location in the schema", trimBase(ptr.URL))
	case errors.As(err, &anchor):
		ce.Reason = fmt.Sprintf("unresolvable $ref %q: no such anchor in the schema", anchor.Reference)
	case errors.As(err, &sv):
		var ve *jsonschema.ValidationError
		if errors.As(sv.Err, &ve) {
			leaf := firstLeaf(ve)
			ce.Pointer = pointer(leaf.InstanceLocation)
			ce.Reason = "not a valid JSON Schema: " + leaf.ErrorKind.LocalizedString(printer)
		} else {
			ce.Reason = "not a valid JSON Schema: " + sv.Err.Error()
		}
	case errors.As(err, &re):
		_, frag, _ := strings.Cut(re.URL, "#")
		ce.Pointer = frag
		ce.Reason = fmt.Sprintf("invalid regular expression %q: %v", re.Regex, re.Err)
	default:
		ce.Reason = strings.ReplaceAll(err.Error(), schemaURL, "schema")
	}
	return ce
}

func trimBase(u string) string {
	if rest, ok := strings.CutPrefix(u, schemaURL); ok {
		return rest
	}
	return u
}

func firstLeaf(ve *jsonschema.ValidationError) *jsonschema.ValidationError {
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	return ve
}

// pointer renders RFC 6901 tokens.
func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		t = strings.ReplaceAll(t, "~", "~0")
		b.WriteString(strings.ReplaceAll(t, "/", "~1"))
	}
	return b.String()
}
