package normalize

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
)

// ParseArguments parses a tool call's arguments as the JSON text a model
// API returned them (OpenAI's tool_calls[].function.arguments, for one)
// with the strict parser: a duplicate key, a number a float64 cannot hold
// exactly, a lone surrogate escape, invalid UTF-8 or nesting past
// MaxJSONDepth is a *ParseError naming the JSON Pointer where it is, and
// the text must be one JSON object. lim bounds what the parse builds, like
// ApplyWithin's (depth 1 is the arguments object): crossing one stops the
// parse there with a *LimitError naming the limit and the path.
func ParseArguments(text string, lim Limits) (*structpb.Struct, error) {
	p := jsonParser{s: text, b: &budget{lim: lim}, track: true}
	if i := firstInvalidUTF8(text); i < len(text) {
		return nil, invalidUTF8At(text, i)
	}
	p.ws()
	if p.i >= len(p.s) {
		return nil, &ParseError{Reason: NotJSON, Offset: p.i, Length: len(text), Truncated: true}
	}
	if c := p.s[p.i]; c != '{' {
		// Say what it starts as rather than where the object should have
		// started (by its first byte: nothing more is parsed).
		return nil, &ParseError{Reason: WrongShape, Offset: p.i, Got: startsAs(c)}
	}
	v := p.value(0)
	if p.failed {
		if p.err.reason == limitHit {
			p.b.finish("")
			return nil, p.b.err
		}
		e := &ParseError{Reason: p.err.reason, Offset: p.err.off, Length: len(text), Path: pointerOf(p.tokens),
			Truncated: p.err.reason == NotJSON && (p.err.off >= len(p.s) || p.ranOut), Key: p.inKey}
		if e.Reason == LoneSurrogate {
			e.Surrogate, _ = hexRune(text[e.Offset+2:]) // the parser read these four digits
		}
		return nil, e
	}
	p.ws()
	if p.i != len(p.s) {
		return nil, &ParseError{Reason: NotJSON, Offset: p.i, Trailing: true}
	}
	return v.GetStructValue(), nil
}

// ParseError says why ParseArguments refused a text.
type ParseError struct {
	// Reason: NotJSON, WrongShape (the text is not an object; Got says
	// what it is), LossyNumber, DuplicateKey, TooDeep or LoneSurrogate.
	Reason SkipReason
	// Path is the RFC 6901 pointer of the value at fault ("" is the
	// arguments object, or the whole text).
	Path string
	// Offset is the byte offset in the text.
	Offset int
	// Got is what the text is when Reason is WrongShape ("a string").
	Got string
	// Length is the text's length (what a truncated text ended after).
	Length int
	// Truncated: the text ended inside a value (cut off); Trailing: text
	// follows the object; InvalidUTF8: the text is not UTF-8.
	Truncated, Trailing, InvalidUTF8 bool
	// InString: the invalid UTF-8 is inside a string, which Path and Key
	// locate (otherwise only Offset does).
	InString bool
	// Key: the string at fault (LoneSurrogate, InvalidUTF8) is an object
	// key, of the object at Path.
	Key bool
	// Surrogate is the unpaired surrogate escaped (LoneSurrogate).
	Surrogate rune
}

// invalidUTF8At is the refusal of text whose first invalid UTF-8 byte is
// at i, located by parsing the text before it (an error path only): the
// parse runs out inside the string holding the byte, and its path is the
// string's.
func invalidUTF8At(text string, i int) *ParseError {
	e := &ParseError{Reason: NotJSON, Offset: i, InvalidUTF8: true}
	p := jsonParser{s: text[:i], track: true}
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == '{' {
		p.value(0)
		if p.failed && p.err.reason == NotJSON && p.ranOut {
			e.InString, e.Key, e.Path = true, p.inKey, pointerOf(p.tokens)
		}
	}
	return e
}

// hexRune reads four hex digits.
func hexRune(s string) (rune, bool) {
	p := jsonParser{s: s}
	r, ok := p.hex4()
	return r, ok
}

func (e *ParseError) Error() string { return e.Describe("arguments") }

// Describe is the error in words a model can act on, naming the text what
// (a request field, say).
func (e *ParseError) Describe(what string) string {
	at := e.Path
	if at == "" {
		at = "(root)"
	}
	str := "string"
	if e.Key {
		str = "key"
	}
	switch {
	case e.InvalidUTF8 && e.InString:
		return fmt.Sprintf("%s: the %s at %s is not valid UTF-8 (at byte %d)", what, str, at, e.Offset)
	case e.InvalidUTF8:
		return fmt.Sprintf("%s is not valid UTF-8 (at byte %d)", what, e.Offset)
	case e.Reason == WrongShape:
		return fmt.Sprintf("%s must be a JSON object; got %s", what, e.Got)
	case e.Truncated:
		return fmt.Sprintf("%s ends after %d bytes, inside the value at %s: the JSON is cut off", what, e.Length, at)
	case e.Trailing:
		return fmt.Sprintf("%s has text after the arguments object (at byte %d)", what, e.Offset)
	}
	switch e.Reason {
	case LossyNumber:
		return fmt.Sprintf("%s: the number at %s cannot be represented exactly as a 64-bit float; send it as a string", what, at)
	case DuplicateKey:
		return fmt.Sprintf("%s: the key at %s appears more than once in its object", what, at)
	case TooDeep:
		return fmt.Sprintf("%s: the value at %s nests deeper than %d levels", what, at, MaxJSONDepth)
	case LoneSurrogate:
		return fmt.Sprintf("%s: the %s at %s holds \\u%04x, an unpaired UTF-16 surrogate (no character; decoding it would invent U+FFFD)", what, str, at, e.Surrogate)
	}
	return fmt.Sprintf("%s is not valid JSON: unexpected input at byte %d, inside the value at %s", what, e.Offset, at)
}

// pointerOf is the pointer of tokens recorded innermost first.
func pointerOf(tokens []string) string {
	var sb strings.Builder
	for i := len(tokens) - 1; i >= 0; i-- {
		sb.Write(appendToken(nil, tokens[i]))
	}
	return sb.String()
}

// startsAs names the JSON type a text starting with c would be.
func startsAs(c byte) string {
	switch {
	case c == '"':
		return "a string"
	case c == '[':
		return "an array"
	case c == '-' || c >= '0' && c <= '9':
		return "a number"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	}
	return "text that is not JSON"
}
