package repairstats

import (
	"strings"
	"unicode/utf8"

	"github.com/flowdrop/gateway/registry"
)

// Other is the label value counts over a cap are kept under; None is a
// caller or client the call did not name.
const (
	Other = registry.LabelOther // no tool may have it (registry.ReservedLabel)
	None  = "_none"
)

// Limits bound what the analytics keep, whatever the callers send: field
// names (a model can invent any number), subjects and client names are
// admitted first come, first kept, up to each cap; what is over a cap is
// counted under Other (and in the overflow counter of its dimension), so
// totals stay right and memory does not grow.
type Limits struct {
	// MaxTools is how many tools get counts of their own (registered tools
	// only; a deleted tool frees its place: Prune). Default 1024.
	MaxTools int
	// MaxFieldsPerTool is how many distinct fields one tool gets. Default 64.
	MaxFieldsPerTool int
	// MaxCallers is how many distinct caller labels are kept. Default 64.
	MaxCallers int
	// MaxClients is how many distinct client labels are kept. Default 32.
	MaxClients int
	// MaxRows is how many (tool, field, caller, client, event) rows are
	// kept; past it a new combination counts as (tool, _other, _other,
	// _other, event), of which there are at most tools × events. Default 4096.
	MaxRows int
}

// DefaultLimits are the limits a zero Limits field takes.
var DefaultLimits = Limits{MaxTools: 1024, MaxFieldsPerTool: 64, MaxCallers: 64, MaxClients: 32, MaxRows: 4096}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.MaxTools > 0 {
		d.MaxTools = l.MaxTools
	}
	if l.MaxFieldsPerTool > 0 {
		d.MaxFieldsPerTool = l.MaxFieldsPerTool
	}
	if l.MaxCallers > 0 {
		d.MaxCallers = l.MaxCallers
	}
	if l.MaxClients > 0 {
		d.MaxClients = l.MaxClients
	}
	if l.MaxRows > 0 {
		d.MaxRows = l.MaxRows
	}
	return d
}

// Dimensions an overflow is counted by (Snapshot.Overflow, the
// flowdrop_repair_analytics_overflow_total counter's label).
const (
	DimTool   = "tool"
	DimField  = "field"
	DimCaller = "caller"
	DimClient = "client"
	DimRows   = "rows"
)

var dims = []string{DimTool, DimField, DimCaller, DimClient, DimRows}

// MaxLabelBytes bounds a field, caller or client label: a longer one is
// counted under Other.
const MaxLabelBytes = 128

// labelOK: short, valid UTF-8 (Prometheus refuses anything else) without
// control characters (the value reaches terminals through flowdropctl).
func labelOK(s string) bool {
	if len(s) > MaxLabelBytes || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return false
		}
	}
	return true
}

// fieldLabel is a repair's or violation's JSON Pointer with every array
// index (an all-digit token) as "*": "/ops/3/title" → "/ops/*/title", so a
// long list counts as one field. An object key made of digits reads as an
// index too (the pointer alone cannot tell them apart). "" (the arguments
// themselves) stays "".
func fieldLabel(ptr string) string {
	if !labelOK(ptr) {
		return Other
	}
	if !hasIndex(ptr) {
		return ptr
	}
	var b strings.Builder
	b.Grow(len(ptr))
	for tok := range strings.SplitSeq(ptr[1:], "/") {
		b.WriteByte('/')
		if allDigits(tok) {
			b.WriteByte('*')
		} else {
			b.WriteString(tok)
		}
	}
	return b.String()
}

func hasIndex(ptr string) bool {
	if ptr == "" || ptr[0] != '/' {
		return false
	}
	for tok := range strings.SplitSeq(ptr[1:], "/") {
		if allDigits(tok) {
			return true
		}
	}
	return false
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// textLabel is a caller or client name as a label: None when empty, Other
// when not a label (too long, not UTF-8, control characters).
func textLabel(s string) string {
	switch {
	case s == "":
		return None
	case !labelOK(s):
		return Other
	}
	return s
}

// keywords are the failure keywords counted by name (JSON Schema's
// validation and applicator keywords, and registry/schema's own "finite"
// and "json"); anything else counts as "other", so a schema's own
// vocabulary cannot grow the label set.
var keywords = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range strings.Fields(`type enum const multipleOf maximum exclusiveMaximum minimum exclusiveMinimum
		maxLength minLength pattern format maxItems minItems uniqueItems maxContains minContains contains
		maxProperties minProperties required dependentRequired dependencies dependentSchemas additionalProperties
		properties patternProperties propertyNames items prefixItems additionalItems unevaluatedItems
		unevaluatedProperties allOf anyOf oneOf not if then else $ref contentEncoding contentMediaType false finite json`) {
		m[k] = true
	}
	return m
}()

func keywordLabel(k string) string {
	if keywords[k] {
		return k
	}
	return "other"
}
