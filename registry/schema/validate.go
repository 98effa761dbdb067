package schema

import (
	"context"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/normalize"
)

// Schema is a compiled JSON Schema: the jsonschema/v6 validator, which is
// authoritative and explains failures, and the fast validator, which only
// ever accepts. Immutable and safe for concurrent use.
type Schema struct {
	js *jsonschema.Schema
	// cost bounds the work of validating arguments (cost.go).
	cost *costProfile
	// fast accepts valid arguments without allocating; nil when the schema
	// uses keywords it does not cover (see fast.go) or fast paths are off.
	fast      *fastSchema
	fastPaths bool
	// sens says which values messages must not show.
	sens *Sensitivity
	// nulls is the schema as DropOptionalNulls reads it, compiled on its
	// first use (nulls.go).
	nullsOnce sync.Once
	nulls     *nnode
}

// Option configures Compile.
type Option func(*options)

type options struct {
	noFastPaths    bool
	maxEvaluations int
}

// WithoutFastPaths compiles no fast validator: Validate always asks
// jsonschema and FastValidWire always returns false. For comparing the two
// paths and for ruling the fast paths out when diagnosing.
func WithoutFastPaths() Option { return func(o *options) { o.noFastPaths = true } }

// WithMaxEvaluations sets the evaluation bound: Compile refuses a schema
// one argument value could cost more than n subschema evaluations to
// validate (n <= 0: DefaultMaxEvaluations). See cost.go.
func WithMaxEvaluations(n int) Option { return func(o *options) { o.maxEvaluations = n } }

// FastPaths reports whether the schema was compiled with fast paths (they
// may still decline a schema they do not cover; see HasFastValidator).
func (s *Schema) FastPaths() bool { return s.fastPaths }

// Sensitivity is which argument values the schema marks sensitive (the
// audit log's redaction uses the same).
func (s *Schema) Sensitivity() *Sensitivity { return s.sens }

// EvaluationBound is the most subschema evaluations one argument value can
// cost to validate against this schema, at any level of the arguments'
// default nesting bound (cost.go); Compile refuses schemas over
// WithMaxEvaluations.
func (s *Schema) EvaluationBound() uint64 {
	k, _ := s.cost.worst()
	return k
}

// HasFastValidator reports whether a fast validator covers this schema.
func (s *Schema) HasFastValidator() bool { return s.fast != nil }

var printer = message.NewPrinter(language.English)

// Validate is ValidateWithin with no deadline and DefaultMaxSteps.
func (s *Schema) Validate(args *structpb.Struct, rep *normalize.Report) error {
	return s.ValidateWithin(context.Background(), args, rep, DefaultMaxSteps)
}

// ValidateWithin checks arguments (normally the normalized ones) against
// the schema, within a step budget (maxSteps; <= 0: DefaultMaxSteps) and
// ctx. rep is the normalization report for these arguments (may be nil);
// its skips explain type errors and its repairs travel with the error.
//
// It returns nil when the arguments are valid, a *ValidationError (Tool
// left for the caller to set) when they are not, a *BudgetError when
// validating them could take more than maxSteps (nothing is evaluated
// then), ctx's error when ctx ends first, and a *RuntimeError when the
// engine could not judge them — never the caller's fault, never to be
// shown to a model as a violation.
func (s *Schema) ValidateWithin(ctx context.Context, args *structpb.Struct, rep *normalize.Report, maxSteps int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if v := nonFiniteViolations(args, s.sens); len(v) > 0 { // finite.go
		ve := &ValidationError{Violations: v}
		if rep != nil {
			ve.Repairs = rep.Repairs
		}
		return ve
	}
	if maxSteps <= 0 {
		maxSteps = DefaultMaxSteps
	}
	// The bound holds for both validators, so the verdict does not depend
	// on whether the fast path is on; and jsonschema, which cannot be
	// stopped, never starts work the budget does not allow.
	if be := s.cost.checkBudget(args, maxSteps); be != nil {
		return be
	}
	// The fast path only ever accepts; anything it rejects or cannot judge
	// goes to jsonschema, which is authoritative and explains failures.
	if s.fast != nil {
		ok, halt := s.fast.valid(ctx, args, maxSteps)
		if halt != nil {
			return halt
		}
		if ok {
			return nil
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	inst := structToMap(args)
	err := s.js.Validate(inst)
	if err == nil {
		return nil
	}
	jve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return &RuntimeError{Err: err}
	}
	var leaves []*jsonschema.ValidationError
	collectLeaves(jve, &leaves)
	for _, l := range leaves {
		switch l.ErrorKind.(type) {
		case *kind.RefCycle, *kind.InvalidJsonValue:
			// A $ref cycle that never descends into the instance is the
			// schema's fault, found only now; an invalid JSON value cannot
			// come from a Struct (non-finite numbers are refused above).
			return &RuntimeError{Err: l}
		}
	}
	ve := &ValidationError{}
	if rep != nil {
		ve.Repairs = rep.Repairs
	}
	type ranked struct {
		v    Violation
		rank int
	}
	all := make([]ranked, 0, len(leaves))
	seen := make(map[Violation]bool, len(leaves))
	for _, l := range leaves {
		kw := keywordOf(l.ErrorKind)
		for _, v := range describe(l, inst, rep, s.sens) {
			v.Keyword = kw
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
// and null are, except where sens marks the value (or an ancestor)
// sensitive: then no message shows the value, its length, or the schema's
// allowed values, which could be the secret itself.
func describe(l *jsonschema.ValidationError, inst map[string]any, rep *normalize.Report, sens *Sensitivity) []Violation {
	ptr := pointer(l.InstanceLocation)
	val, isArr := lookup(inst, l.InstanceLocation)
	name := fieldName(l.InstanceLocation, isArr)
	one := func(msg string) []Violation { return []Violation{{Pointer: ptr, Message: msg}} }
	secret := sens.At(l.InstanceLocation, isArr)
	// got is "; got <what was sent>", or nothing for a sensitive value.
	got := func(what string) string {
		if secret {
			return ""
		}
		return "; got " + what
	}
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
		if secret {
			return one(fmt.Sprintf("%s must be %s; got %s", name, wantTypes(k.Want), kindOf(val)))
		}
		return one(fmt.Sprintf("%s must be %s; got %s", name, wantTypes(k.Want), gotValue(ptr, val, rep)))
	case *unsafeInteger:
		return one(fmt.Sprintf("%s must be an integer between -2^53 and 2^53%s", name, got(formatNumber(k.Got))))
	case *kind.Enum:
		if secret {
			return one(fmt.Sprintf("%s must be one of the values the tool allows", name))
		}
		return one(fmt.Sprintf("%s must be one of %s", name, displayValues(k.Want)))
	case *kind.Const:
		if secret {
			return one(fmt.Sprintf("%s must be the value the tool requires", name))
		}
		return one(fmt.Sprintf("%s must be %s", name, displayValue(k.Want)))
	case *kind.Pattern:
		return one(fmt.Sprintf("%s must match the pattern %q", name, k.Want))
	case *kind.Format:
		return one(fmt.Sprintf("%s must be a valid %s", name, k.Want))
	case *kind.MinLength:
		return one(fmt.Sprintf("%s must be at least %d characters long%s", name, k.Want, got(fmt.Sprint(k.Got))))
	case *kind.MaxLength:
		return one(fmt.Sprintf("%s must be at most %d characters long%s", name, k.Want, got(fmt.Sprint(k.Got))))
	case *kind.MinItems:
		return one(fmt.Sprintf("%s must have at least %d items%s", name, k.Want, got(fmt.Sprint(k.Got))))
	case *kind.MaxItems:
		return one(fmt.Sprintf("%s must have at most %d items%s", name, k.Want, got(fmt.Sprint(k.Got))))
	case *kind.Minimum:
		return one(fmt.Sprintf("%s must be >= %s%s", name, ratString(k.Want), got(ratString(k.Got))))
	case *kind.Maximum:
		return one(fmt.Sprintf("%s must be <= %s%s", name, ratString(k.Want), got(ratString(k.Got))))
	case *kind.ExclusiveMinimum:
		return one(fmt.Sprintf("%s must be > %s%s", name, ratString(k.Want), got(ratString(k.Got))))
	case *kind.ExclusiveMaximum:
		return one(fmt.Sprintf("%s must be < %s%s", name, ratString(k.Want), got(ratString(k.Got))))
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
	if secret {
		// jsonschema's own wording may quote the value (multipleOf does).
		return one(fmt.Sprintf("%s does not satisfy the schema's %s keyword", name, keywordName(l.ErrorKind)))
	}
	return one(fmt.Sprintf("%s: %s", name, l.ErrorKind.LocalizedString(printer)))
}

// keywordName is the failing keyword of k ("multipleOf"), for a message
// that must not quote the value.
func keywordName(k jsonschema.ErrorKind) string {
	if p := k.KeywordPath(); len(p) > 0 {
		return "`" + p[len(p)-1] + "`"
	}
	return "constraints"
}

// keywordOf is the failing keyword of k, unquoted ("multipleOf"), for
// Violation.Keyword.
func keywordOf(k jsonschema.ErrorKind) string {
	if p := k.KeywordPath(); len(p) > 0 {
		return p[len(p)-1]
	}
	return ""
}

// kindOf names a value's JSON type without its value.
func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return "a value"
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
