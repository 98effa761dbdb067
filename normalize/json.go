package normalize

import (
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/structpb"
)

// This file holds a small strict RFC 8259 parser that builds structpb values
// directly. It is hand-written on purpose: encoding/json accepts duplicate
// object keys silently (last one wins), turns numbers into float64 without
// saying whether the literal survived, and replaces lone surrogate escapes
// with U+FFFD — each of which would let JSON decoding lose or invent data,
// which RT-TOOL-8 (our reading) forbids. The parser reports exactly why it
// refused, so validation can tell the model.

// parseError says why a string was not decoded. Off is the byte offset.
type parseError struct {
	reason SkipReason
	off    int
}

type jsonParser struct {
	s      string
	i      int
	err    parseError
	failed bool
	// b, when set, bounds what the parse builds (ApplyWithin); base is the
	// policy depth of the string being parsed.
	b    *budget
	base int
	// track: record the failure's path (tokens, innermost first) for
	// ParseArguments; the repair path leaves it off.
	track  bool
	tokens []string
	// ranOut: the text ended inside a string (its failure's offset is
	// where the string began).
	ranOut bool
	// inKey: the failure is in an object key (ParseArguments names it so).
	inKey bool
}

// at records a path token while a failed parse unwinds.
func (p *jsonParser) at(tok string) {
	if p.b != nil {
		p.b.at(tok)
	}
	if p.track {
		p.tokens = append(p.tokens, tok)
	}
}

// limitHit is the failure reason of a parse stopped by its budget; it is
// never reported as a skip (the budget holds the error).
const limitHit SkipReason = 255

// parseStrictJSON parses s as a single JSON text (surrounding JSON whitespace
// allowed). On failure it returns the reason.
func parseStrictJSON(s string) (*structpb.Value, SkipReason, int) {
	return parseStrictJSONWithin(s, nil, 0)
}

// parseStrictJSONWithin is parseStrictJSON building at most what b allows
// (nil: unbounded but for MaxJSONDepth); a string at policy depth base.
// Crossing b fails with limitHit and b.err set.
func parseStrictJSONWithin(s string, b *budget, base int) (*structpb.Value, SkipReason, int) {
	if !utf8.ValidString(s) {
		// RFC 8259 §8.1: JSON text exchanged between systems is UTF-8.
		return nil, NotJSON, firstInvalidUTF8(s)
	}
	p := jsonParser{s: s, b: b, base: base}
	p.ws()
	v := p.value(0)
	if p.failed {
		return nil, p.err.reason, p.err.off
	}
	p.ws()
	if p.i != len(p.s) {
		return nil, NotJSON, p.i
	}
	return v, 0, 0
}

func firstInvalidUTF8(s string) int {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(s)
}

func (p *jsonParser) fail(r SkipReason, off int) {
	if !p.failed {
		p.failed = true
		p.err = parseError{reason: r, off: off}
	}
}

func (p *jsonParser) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// limited fails the parse when ok is false (a budget was crossed).
func (p *jsonParser) limited(ok bool) bool {
	if !ok {
		p.fail(limitHit, p.i)
	}
	return !ok
}

// lit parses true, false or null (b == nil).
func (p *jsonParser) lit(word string, b any) *structpb.Value {
	if len(p.s)-p.i >= len(word) && p.s[p.i:p.i+len(word)] == word {
		if p.b != nil && p.limited(p.b.addBytes(4)) {
			return nil
		}
		p.i += len(word)
		if b == nil {
			return structpb.NewNullValue()
		}
		return structpb.NewBoolValue(b.(bool))
	}
	p.fail(NotJSON, p.i)
	return nil
}

// value parses one JSON value; depth counts the arrays/objects enclosing it.
func (p *jsonParser) value(depth int) *structpb.Value {
	if p.i >= len(p.s) {
		p.fail(NotJSON, p.i)
		return nil
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		s, ok := p.str()
		if !ok || p.b != nil && p.limited(p.b.str(len(s))) {
			return nil
		}
		return newStringValue(s)
	case c == 't':
		return p.lit("true", true)
	case c == 'f':
		return p.lit("false", false)
	case c == 'n':
		return p.lit("null", nil)
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	}
	p.fail(NotJSON, p.i)
	return nil
}

func (p *jsonParser) object(depth int) *structpb.Value {
	if p.b != nil && p.limited(p.b.depth(p.base, depth) && p.b.addBytes(4)) {
		return nil
	}
	if depth > MaxJSONDepth {
		p.fail(TooDeep, p.i)
		return nil
	}
	p.i++ // '{'
	fields := map[string]*structpb.Value{}
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return newStructValue(fields)
	}
	for {
		p.ws()
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			p.fail(NotJSON, p.i)
			return nil
		}
		keyOff := p.i
		k, ok := p.str()
		if !ok {
			p.inKey = true
			return nil
		}
		if p.b != nil && p.limited(p.b.key() && p.b.str(len(k))) {
			p.at(k)
			return nil
		}
		p.ws()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			p.fail(NotJSON, p.i)
			return nil
		}
		p.i++
		p.ws()
		v := p.value(depth)
		if p.failed {
			p.at(k)
			return nil
		}
		// Compared after unescaping: "a" and "\u0061" are the same key.
		if _, dup := fields[k]; dup {
			p.fail(DuplicateKey, keyOff)
			p.at(k)
			return nil
		}
		fields[k] = v
		p.ws()
		if p.i >= len(p.s) {
			p.fail(NotJSON, p.i)
			return nil
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return newStructValue(fields)
		default:
			p.fail(NotJSON, p.i)
			return nil
		}
	}
}

func (p *jsonParser) array(depth int) *structpb.Value {
	if p.b != nil && p.limited(p.b.depth(p.base, depth) && p.b.addBytes(4)) {
		return nil
	}
	if depth > MaxJSONDepth {
		p.fail(TooDeep, p.i)
		return nil
	}
	p.i++ // '['
	var vals []*structpb.Value
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return newListValue([]*structpb.Value{})
	}
	for {
		p.ws()
		if p.b != nil && p.limited(p.b.element()) {
			p.at(indexToken(len(vals)))
			return nil
		}
		v := p.value(depth)
		if p.failed {
			p.at(indexToken(len(vals)))
			return nil
		}
		vals = append(vals, v)
		p.ws()
		if p.i >= len(p.s) {
			p.fail(NotJSON, p.i)
			return nil
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return newListValue(vals)
		default:
			p.fail(NotJSON, p.i)
			return nil
		}
	}
}

// str parses a JSON string starting at the opening quote.
func (p *jsonParser) str() (string, bool) {
	start := p.i
	p.i++ // '"'
	// Fast path: no escapes.
	j := p.i
	for j < len(p.s) {
		c := p.s[j]
		if c == '"' {
			out := p.s[p.i:j]
			p.i = j + 1
			return out, true
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			p.fail(NotJSON, j)
			return "", false
		}
		j++
	}
	buf := make([]byte, 0, j-p.i+16)
	buf = append(buf, p.s[p.i:j]...)
	p.i = j
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return string(buf), true
		case c < 0x20:
			p.fail(NotJSON, p.i)
			return "", false
		case c != '\\':
			buf = append(buf, c)
			p.i++
			continue
		}
		// Escape.
		if p.i+1 >= len(p.s) {
			p.fail(NotJSON, p.i)
			p.ranOut = true
			return "", false
		}
		e := p.s[p.i+1]
		p.i += 2
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			escOff := p.i - 2
			r, ok := p.hex4()
			if !ok {
				return "", false
			}
			if utf16.IsSurrogate(r) {
				// A surrogate must be a high one followed by a low one;
				// anything else cannot be carried in a (UTF-8) protobuf
				// string without inventing U+FFFD, so the argument stays as sent.
				if r >= 0xDC00 || p.i+6 > len(p.s) || p.s[p.i] != '\\' || p.s[p.i+1] != 'u' {
					p.fail(LoneSurrogate, escOff)
					return "", false
				}
				p.i += 2
				r2, ok := p.hex4()
				if !ok {
					return "", false
				}
				r = utf16.DecodeRune(r, r2)
				if r == utf8.RuneError {
					p.fail(LoneSurrogate, escOff)
					return "", false
				}
			}
			buf = utf8.AppendRune(buf, r)
		default:
			p.fail(NotJSON, p.i-2)
			return "", false
		}
	}
	p.fail(NotJSON, start)
	p.ranOut = true
	return "", false
}

func (p *jsonParser) hex4() (rune, bool) {
	if p.i+4 > len(p.s) {
		p.fail(NotJSON, p.i)
		p.ranOut = true
		return 0, false
	}
	var r rune
	for k := 0; k < 4; k++ {
		c := p.s[p.i+k]
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			p.fail(NotJSON, p.i+k)
			return 0, false
		}
	}
	p.i += 4
	return r, true
}

// number parses an RFC 8259 number and keeps it only when the float64 it
// becomes carries the literal's exact decimal value.
func (p *jsonParser) number() *structpb.Value {
	start := p.i
	s := p.s
	i := p.i
	if s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		p.fail(NotJSON, i)
		return nil
	}
	if i < len(s) && s[i] == '.' {
		i++
		d := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == d {
			p.fail(NotJSON, i)
			return nil
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		d := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == d {
			p.fail(NotJSON, i)
			return nil
		}
	}
	p.i = i
	if p.b != nil && p.limited(p.b.addBytes(11)) {
		return nil
	}
	lit := s[start:i]
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) || !sameDecimal(lit, strconv.FormatFloat(f, 'g', -1, 64)) {
		p.fail(LossyNumber, start)
		return nil
	}
	return newNumberValue(f)
}

// decimal is a number in canonical form: value = (-1)^neg × 0.digits × 10^exp,
// digits without leading or trailing zeros ("" for zero).
type decimal struct {
	neg    bool
	digits string
	exp    int64
}

// canonDecimal canonicalizes a number literal in JSON or strconv 'g' syntax
// (the latter is JSON syntax plus an optional '+' in the exponent).
func canonDecimal(lit string) decimal {
	var d decimal
	i := 0
	if i < len(lit) && lit[i] == '-' {
		d.neg = true
		i++
	}
	var digits []byte
	var pointPos int64 = -1
	n := int64(0)
	for ; i < len(lit); i++ {
		c := lit[i]
		if c == '.' {
			pointPos = n
			continue
		}
		if c < '0' || c > '9' {
			break
		}
		digits = append(digits, c)
		n++
	}
	if pointPos < 0 {
		pointPos = n
	}
	var e int64
	if i < len(lit) && (lit[i] == 'e' || lit[i] == 'E') {
		i++
		eneg := false
		if i < len(lit) && (lit[i] == '+' || lit[i] == '-') {
			eneg = lit[i] == '-'
			i++
		}
		for ; i < len(lit); i++ {
			// Saturate: such exponents never match a float64's anyway.
			if e < 1<<40 {
				e = e*10 + int64(lit[i]-'0')
			}
		}
		if eneg {
			e = -e
		}
	}
	// Strip leading zeros (each moves the point left) and trailing zeros.
	lead := 0
	for lead < len(digits) && digits[lead] == '0' {
		lead++
	}
	trail := len(digits)
	for trail > lead && digits[trail-1] == '0' {
		trail--
	}
	d.digits = string(digits[lead:trail])
	if d.digits == "" {
		return decimal{neg: d.neg} // zero; the sign is kept (-0 is a distinct float64)
	}
	d.exp = pointPos - int64(lead) + e
	return d
}

// sameDecimal reports whether two number literals denote the same decimal value.
func sameDecimal(a, b string) bool {
	return canonDecimal(a) == canonDecimal(b)
}

// The constructors below allocate a Value together with its oneof wrapper
// (and container) in one object instead of two or three: decoded arguments
// are mostly small leaves, so this roughly halves the parser's allocations.

func newStringValue(s string) *structpb.Value {
	x := &struct {
		v structpb.Value
		k structpb.Value_StringValue
	}{k: structpb.Value_StringValue{StringValue: s}}
	x.v.Kind = &x.k
	return &x.v
}

func newNumberValue(f float64) *structpb.Value {
	x := &struct {
		v structpb.Value
		k structpb.Value_NumberValue
	}{k: structpb.Value_NumberValue{NumberValue: f}}
	x.v.Kind = &x.k
	return &x.v
}

func newStructValue(fields map[string]*structpb.Value) *structpb.Value {
	x := &struct {
		v structpb.Value
		k structpb.Value_StructValue
		s structpb.Struct
	}{}
	x.s.Fields = fields
	x.k.StructValue = &x.s
	x.v.Kind = &x.k
	return &x.v
}

func newListValue(vals []*structpb.Value) *structpb.Value {
	x := &struct {
		v structpb.Value
		k structpb.Value_ListValue
		l structpb.ListValue
	}{}
	x.l.Values = vals
	x.k.ListValue = &x.l
	x.v.Kind = &x.k
	return &x.v
}
