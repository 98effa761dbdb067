package mcpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// checkArgumentText refuses tools/call arguments (raw JSON, as the client
// sent them) holding a string that is not valid UTF-8 or a \u escape of an
// unpaired UTF-16 surrogate, naming its JSON Pointer. Go's JSON decoders
// replace both with U+FFFD, inventing text the model never sent; the gRPC
// face refuses invalid UTF-8 (a protobuf string must be UTF-8), so MCP does
// too. Keys are checked like values. Syntax errors are left to the parser.
func checkArgumentText(raw []byte) error {
	if utf8.Valid(raw) && !bytes.Contains(raw, []byte(`\u`)) {
		return nil // the common case: nothing that could need the walk
	}
	s := textScanner{b: raw}
	return s.value("")
}

// textScanner walks one JSON value, checking its strings.
type textScanner struct {
	b []byte
	i int
}

func (s *textScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

// value checks the value at s.i, whose pointer is at.
func (s *textScanner) value(at string) error {
	s.ws()
	if s.i >= len(s.b) {
		return nil
	}
	switch s.b[s.i] {
	case '{':
		s.i++
		for {
			s.ws()
			if s.i >= len(s.b) || s.b[s.i] == '}' {
				s.i++
				return nil
			}
			if s.b[s.i] == ',' {
				s.i++
				continue
			}
			start := s.i
			if err := s.str(at, "key"); err != nil {
				return err
			}
			var key string
			_ = json.Unmarshal(s.b[start:s.i], &key) // checked above: valid text
			s.ws()
			if s.i < len(s.b) && s.b[s.i] == ':' {
				s.i++
			}
			if err := s.value(at + "/" + escapePointer(key)); err != nil {
				return err
			}
		}
	case '[':
		s.i++
		for n := 0; ; {
			s.ws()
			if s.i >= len(s.b) || s.b[s.i] == ']' {
				s.i++
				return nil
			}
			if s.b[s.i] == ',' {
				s.i++
				continue
			}
			if err := s.value(at + "/" + strconv.Itoa(n)); err != nil {
				return err
			}
			n++
		}
	case '"':
		return s.str(at, "string")
	}
	for s.i < len(s.b) && !bytes.ContainsRune([]byte(",}] \t\r\n"), rune(s.b[s.i])) {
		s.i++ // a number, true, false or null
	}
	return nil
}

// str checks the string starting at s.i (what names it in an error:
// "string" or "key") and moves past it.
func (s *textScanner) str(at, what string) error {
	s.i++ // the opening quote
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return nil
		case c == '\\' && s.i+1 < len(s.b) && s.b[s.i+1] == 'u':
			r, ok := s.hex4(s.i + 2)
			if !ok {
				return nil // not an escape: the parser says so
			}
			if !utf16.IsSurrogate(r) {
				s.i += 6
				continue
			}
			if r < 0xdc00 && s.i+11 < len(s.b) && s.b[s.i+6] == '\\' && s.b[s.i+7] == 'u' {
				if lo, ok := s.hex4(s.i + 8); ok && lo >= 0xdc00 && lo <= 0xdfff {
					s.i += 12 // a valid pair
					continue
				}
			}
			return fmt.Errorf(`%s at %s holds \u%04x, an unpaired UTF-16 surrogate (no character; decoding it would invent U+FFFD)`, what, pointerOrRoot(at), r)
		case c == '\\':
			s.i += 2
		case c < utf8.RuneSelf:
			s.i++
		default:
			r, size := utf8.DecodeRune(s.b[s.i:])
			if r == utf8.RuneError && size == 1 {
				return fmt.Errorf("%s at %s is not valid UTF-8", what, pointerOrRoot(at))
			}
			s.i += size
		}
	}
	return nil
}

// hex4 reads four hex digits at j.
func (s *textScanner) hex4(j int) (rune, bool) {
	if j+4 > len(s.b) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(s.b[j:j+4]), 16, 32)
	return rune(v), err == nil
}

// pointerOrRoot is a JSON Pointer for a message ("" is the root).
func pointerOrRoot(p string) string {
	if p == "" {
		return "(root)"
	}
	return p
}
