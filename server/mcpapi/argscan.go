package mcpapi

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/flowdrop/gateway/internal/policy"
)

// scanArgumentLimits checks tools/call arguments (raw JSON) against the
// argument limits before anything decodes them: encoding/json builds a Go
// value per element (~50 bytes for a 2-byte "1,"), so 4 MiB of a tiny array
// would cost hundreds of MB before a limit on the decoded form could say
// no. It reads the text once without allocating and stops at the first
// limit crossed, returning the policy refusal naming the limit and the
// RFC 6901 pointer. Counting follows the gRPC face: the arguments object
// is depth 1, elements and keys are totals, string lengths are of the
// decoded string. Syntax is not judged here: on malformed text it stops
// and leaves the error to the decoder. members is the number of object
// members it read (duplicates counted, for parseMCPArguments), -1 when it
// stopped before the end.
func scanArgumentLimits(tool string, raw []byte, lim policy.Limits) (members int, _ error) {
	if len(raw) > lim.MaxArgumentBytes {
		// JSON text is never smaller than the Struct it encodes by much; the
		// decoded form's size is checked again by the pipeline.
		return -1, lim.Exceeded(tool, policy.LimitMaxArgumentBytes, "", false)
	}
	s := argScanner{b: raw, lim: lim}
	s.ws()
	if s.value(0) {
		return s.keys, nil
	}
	if s.limit == "" {
		return -1, nil
	}
	var path []byte
	for i := len(s.tokens) - 1; i >= 0; i-- {
		path = append(path, '/')
		for _, c := range []byte(s.tokens[i]) {
			switch c {
			case '~':
				path = append(path, '~', '0')
			case '/':
				path = append(path, '~', '1')
			default:
				path = append(path, c)
			}
		}
	}
	return -1, lim.Exceeded(tool, s.limit, string(path), false)
}

type argScanner struct {
	b              []byte
	i              int
	lim            policy.Limits
	elements, keys int
	limit          string   // the limit crossed; "" when the scan stopped on bad syntax
	tokens         []string // the path to the failure, innermost first
}

func (s *argScanner) over(limit string) bool {
	s.limit = limit
	return false
}

func (s *argScanner) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

// value scans one value inside d enclosing containers; false stops.
func (s *argScanner) value(d int) bool {
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; c {
	case '{':
		return s.object(d + 1)
	case '[':
		return s.array(d + 1)
	case '"':
		n, ok := s.str()
		if !ok {
			return false
		}
		if n > s.lim.MaxStringLength {
			return s.over(policy.LimitMaxStringLength)
		}
		return true
	}
	// A literal or number: skip to the next delimiter.
	start := s.i
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ',', ']', '}', ' ', '\t', '\n', '\r':
			return s.i > start
		}
		s.i++
	}
	return s.i > start
}

func (s *argScanner) object(d int) bool {
	if d > s.lim.MaxDepth {
		return s.over(policy.LimitMaxDepth)
	}
	s.i++ // '{'
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return true
	}
	for {
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			return false
		}
		start := s.i
		n, ok := s.str()
		if !ok {
			return false
		}
		s.keys++
		ok = true
		switch {
		case s.keys > s.lim.MaxObjectKeys:
			ok = s.over(policy.LimitMaxObjectKeys)
		case n > s.lim.MaxStringLength:
			ok = s.over(policy.LimitMaxStringLength)
		default:
			s.ws()
			if s.i >= len(s.b) || s.b[s.i] != ':' {
				return false
			}
			s.i++
			s.ws()
			ok = s.value(d)
		}
		if !ok {
			if s.limit != "" {
				s.tokens = append(s.tokens, decodeKey(s.b[start:]))
			}
			return false
		}
		s.ws()
		if s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

func (s *argScanner) array(d int) bool {
	if d > s.lim.MaxDepth {
		return s.over(policy.LimitMaxDepth)
	}
	s.i++ // '['
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return true
	}
	for n := 0; ; n++ {
		s.ws()
		s.elements++
		ok := true
		if s.elements > s.lim.MaxListElements {
			ok = s.over(policy.LimitMaxListElements)
		} else {
			ok = s.value(d)
		}
		if !ok {
			if s.limit != "" {
				s.tokens = append(s.tokens, strconv.Itoa(n))
			}
			return false
		}
		s.ws()
		if s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case ']':
			s.i++
			return true
		default:
			return false
		}
	}
}

// str passes over a string at its opening quote and returns its decoded
// length in bytes (invalid UTF-8 and lone surrogates count as the U+FFFD
// encoding/json makes of them).
func (s *argScanner) str() (n int, ok bool) {
	s.i++ // '"'
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return n, true
		case c == '\\':
			if s.i+1 >= len(s.b) {
				return 0, false
			}
			if s.b[s.i+1] != 'u' {
				n++
				s.i += 2
				continue
			}
			r, ok := hex4(s.b[s.i+2:])
			if !ok {
				return 0, false
			}
			s.i += 6
			if utf16.IsSurrogate(r) {
				n += 3 // alone, U+FFFD (3 bytes); a pair, 4 bytes for two escapes: never undercounted
			} else {
				n += utf8.RuneLen(r)
			}
		case c < utf8.RuneSelf:
			n++
			s.i++
		default:
			r, size := utf8.DecodeRune(s.b[s.i:])
			if r == utf8.RuneError && size == 1 {
				n += 3
			} else {
				n += size
			}
			s.i += size
		}
	}
	return 0, false
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b[:4]), 16, 32)
	return rune(v), err == nil
}

// decodeKey is the key of the object member whose string starts b, for a
// refusal's path (only on failure, so allocating is fine).
func decodeKey(b []byte) string {
	end := 1
	for end < len(b) && b[end] != '"' {
		if b[end] == '\\' {
			end++
		}
		end++
	}
	if end >= len(b) {
		return string(b)
	}
	k, err := strconv.Unquote(string(b[:end+1]))
	if err != nil {
		return string(b[1:end])
	}
	return k
}
