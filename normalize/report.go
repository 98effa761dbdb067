package normalize

import "fmt"

// RepairKind says which repair changed an argument.
type RepairKind uint8

const (
	// JSONDecoded: a string argument was decoded as JSON (clause 2).
	JSONDecoded RepairKind = iota + 1
	// EntitiesDecoded: HTML character references were decoded in a string leaf (clause 4).
	EntitiesDecoded
	// NullDropped: a null sent for an optional property whose schema does
	// not admit null was removed. Not RT-TOOL-8 (nothing in this package
	// makes it): the gateway's optional-nulls extension
	// (registry/schema.Schema.DropOptionalNulls) reports it in the same
	// Report.
	NullDropped
)

// String returns "json-decoded", "entities-decoded" or "null-dropped".
func (k RepairKind) String() string {
	switch k {
	case JSONDecoded:
		return "json-decoded"
	case EntitiesDecoded:
		return "entities-decoded"
	case NullDropped:
		return "null-dropped"
	}
	return "unknown"
}

// Repair is one change normalization made.
type Repair struct {
	// Path is the RFC 6901 JSON Pointer of the changed value, e.g. "/ops" or "/ops/0/title".
	Path string
	Kind RepairKind
	// Passes is the number of entity-decoding passes that changed the value (EntitiesDecoded only).
	Passes int
	// BoundHit reports that the value was still changing when the pass bound was reached
	// (EntitiesDecoded only); the value is left as it was after the last allowed pass.
	BoundHit bool
}

// SkipReason says why a string argument for a parameter declared array or
// object was passed through unmodified (clause 3).
type SkipReason uint8

const (
	// NotJSON: the string is not strict RFC 8259 JSON.
	NotJSON SkipReason = iota + 1
	// WrongShape: it parses, but not to the declared shape (see Skip.Got).
	WrongShape
	// LossyNumber: it holds a number a float64 cannot carry exactly as written.
	LossyNumber
	// DuplicateKey: it holds an object with a repeated key.
	DuplicateKey
	// TooDeep: it nests deeper than the limit.
	TooDeep
	// LoneSurrogate: it holds a \u escape of an unpaired UTF-16 surrogate,
	// which a protobuf (UTF-8) string can only carry by inventing U+FFFD.
	LoneSurrogate
)

// String returns a short, stable name for the reason.
func (r SkipReason) String() string {
	switch r {
	case NotJSON:
		return "not-json"
	case WrongShape:
		return "wrong-shape"
	case LossyNumber:
		return "lossy-number"
	case DuplicateKey:
		return "duplicate-key"
	case TooDeep:
		return "too-deep"
	case LoneSurrogate:
		return "lone-surrogate"
	}
	return "unknown"
}

// Skip records a string argument that was not JSON-decoded although its
// parameter is declared array or object, so validation can say why.
type Skip struct {
	// Path is the RFC 6901 JSON Pointer of the argument, e.g. "/ops".
	Path string
	// Declared is "array" or "object" ("array or object" when both are declared).
	Declared string
	Reason   SkipReason
	// Got is the JSON type the string parsed to when Reason is WrongShape:
	// "object", "array", "string", "number", "boolean" or "null".
	Got string
}

// Report lists what normalization did to one set of arguments.
type Report struct {
	Repairs []Repair
	Skipped []Skip
}

// Changed reports whether any value was repaired.
func (r *Report) Changed() bool { return len(r.Repairs) > 0 }

// Message says in one line why the argument was left as sent, for a
// validation error, e.g. "/ops must be an array; got a string that parses as an object".
func (s Skip) Message() string {
	want := map[string]string{"array": "an array", "object": "an object", "array or object": "an array or an object"}[s.Declared]
	if want == "" {
		want = s.Declared
	}
	var got string
	switch s.Reason {
	case NotJSON:
		got = "a string that is not JSON"
	case WrongShape:
		article := "a "
		switch s.Got {
		case "object", "array":
			article = "an "
		case "null":
			article = ""
		}
		got = "a string that parses as " + article + s.Got
	case LossyNumber:
		got = "a string holding a number that a float64 cannot carry exactly"
	case DuplicateKey:
		got = "a string holding JSON with a duplicate object key"
	case TooDeep:
		got = fmt.Sprintf("a string holding JSON nested deeper than %d levels", MaxJSONDepth)
	case LoneSurrogate:
		got = `a string holding JSON with an unpaired \u surrogate escape`
	default:
		got = "a string"
	}
	return s.Path + " must be " + want + "; got " + got
}
