package normalize

import (
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"
)

//go:generate go run ./internal/entitygen -o entity_table.go

// RT-TOOL-8 clause 4: every string leaf has its HTML character references
// decoded, repeatedly, to a fixed point. This is a hand-written decoder rather
// than html.UnescapeString because the project's reading admits only
// well-formed references: html.UnescapeString also decodes legacy names
// without ';' (so "?a=1&copy=2" would become "?a=1©=2", golang/go#40320).
//
// A reference is one of
//
//	&name;     name from the WHATWG table (entity_table.go, 2,125 names ending in ';')
//	&#NNN;     decimal
//	&#xHHH;    hex, 'x' or 'X'
//
// and nothing else: the ';' is required, "&#;" and "&#x;" are not references,
// unknown names pass through. Numeric values follow the HTML standard's
// "numeric character reference end state": 0, surrogates and values above
// U+10FFFF become U+FFFD, 0x80–0x9F map through windows-1252, and every other
// value — noncharacters such as U+FFFE and control characters such as U+0001
// or U+000D included — decodes to that code point (the standard reports a
// parse error for those but still emits the character, and so do we).
//
// Cost: one pass is a single left-to-right scan, O(len(s)); a failed reference
// candidate is never rescanned (its bytes hold no '&'), names are capped at
// entityMaxName bytes and digit runs are consumed without overflow. So
// DecodeEntities costs O(maxPasses·len(s)), linear for a fixed bound such as
// DefaultMaxPasses.

// entityEntry is one named character reference: name without '&' and ';'.
type entityEntry struct {
	name, value string
}

// DecodeEntities decodes well-formed HTML character references in s, repeating until the value stops
// changing or maxPasses passes have changed it. passes = number of passes that changed the value
// (0 when s is returned unchanged). boundHit = the value would still change after maxPasses passes.
// A string without '&' is returned as is, with no allocation. maxPasses < 1 allows no pass.
func DecodeEntities(s string, maxPasses int) (out string, passes int, boundHit bool) {
	// Passes alternate between two buffers, so a value needing many passes
	// costs two allocations, not one per pass, and stays cache-warm. Each
	// pass reads the buffer the previous pass wrote and writes the other one,
	// so the buffer behind the returned string is never written again.
	var bufs [2][]byte
	out = s
	for {
		if strings.IndexByte(out, '&') < 0 {
			return out, passes, false // nothing left to decode
		}
		if passes >= maxPasses {
			// Only find out whether another pass would change the value; build nothing.
			return out, passes, wouldChange(out)
		}
		dst, changed := appendDecoded(bufs[passes%2][:0], out)
		if !changed {
			return out, passes, false
		}
		bufs[passes%2] = dst
		out = unsafe.String(unsafe.SliceData(dst), len(dst))
		passes++
	}
}

// decodeEntitiesOnce decodes every reference in s once, left to right; text a
// decoding produces is not looked at again in the same pass (so "&amp;lt;"
// becomes "&lt;"). It returns s itself, without allocating, when s holds no
// reference.
func decodeEntitiesOnce(s string) (string, bool) {
	dst, changed := appendDecoded(nil, s)
	if !changed {
		return s, false
	}
	return unsafe.String(unsafe.SliceData(dst), len(dst)), true
}

// appendDecoded is one pass: it appends s, references decoded, to dst. When s holds no reference it writes nothing and reports false, so
// the caller keeps s and nothing is allocated.
func appendDecoded(dst []byte, s string) ([]byte, bool) {
	i := strings.IndexByte(s, '&')
	copied, found := 0, false // s[:copied] has been written to dst
	for i >= 0 {
		end, named, r, ok := scanReference(s, i)
		if ok {
			if !found {
				found = true
				if cap(dst) < len(s) {
					// Named references never grow by more than one byte, so this
					// room is nearly always enough.
					dst = make([]byte, 0, len(s)+8)
				}
			}
			dst = append(dst, s[copied:i]...)
			if named != "" {
				dst = append(dst, named...)
			} else {
				dst = utf8.AppendRune(dst, r)
			}
			copied = end
		}
		// s[i+1:end] holds no '&' either way, so the search resumes at end.
		j := strings.IndexByte(s[end:], '&')
		if j < 0 {
			break
		}
		i = end + j
	}
	if !found {
		return dst, false
	}
	dst = append(dst, s[copied:]...)
	return dst, string(dst) != s // the comparison does not allocate
}

// wouldChange reports whether one more pass would change s, without building the result.
func wouldChange(s string) bool {
	for i := strings.IndexByte(s, '&'); i >= 0; {
		end, _, _, ok := scanReference(s, i)
		if ok {
			// A pass that decodes a reference changes the value: no
			// replacement re-creates the reference's text. checkDecodeProperties
			// (entity_test.go) checks that this agrees with decodeEntitiesOnce.
			return true
		}
		j := strings.IndexByte(s[end:], '&')
		if j < 0 {
			break
		}
		i = end + j
	}
	return false
}

// scanReference looks for a well-formed reference at s[i] == '&'. On success
// it returns the index just past the ';' and the replacement: named is set for
// a named reference, r for a numeric one. On failure end > i is where scanning
// stopped; s[i+1:end] holds no '&', so the caller may resume there.
func scanReference(s string, i int) (end int, named string, r rune, ok bool) {
	j := i + 1
	if j >= len(s) {
		return j, "", 0, false
	}
	if s[j] == '#' {
		return scanNumeric(s, j+1)
	}
	// Named: an alphanumeric run of at most entityMaxName bytes, then ';'.
	// Every name in the table is alphanumeric, so the run must be the whole
	// name; the cap keeps a long run of letters from costing more than it is long.
	start := j
	for j < len(s) && j-start <= entityMaxName && isAlnum(s[j]) {
		j++
	}
	n := j - start
	if n == 0 || n > entityMaxName || j >= len(s) || s[j] != ';' {
		return j, "", 0, false
	}
	v, found := lookupEntity(s[start:j])
	if !found {
		return j, "", 0, false
	}
	return j + 1, v, 0, true
}

// scanNumeric parses the digits of a numeric reference starting at s[j]
// (just past "&#"). Any number of digits is accepted without overflow: once the
// value exceeds U+10FFFF it stops accumulating, as only its being too large
// matters then.
func scanNumeric(s string, j int) (end int, named string, r rune, ok bool) {
	hex := false
	if j < len(s) && (s[j] == 'x' || s[j] == 'X') {
		hex = true
		j++
	}
	start := j
	var v rune
	for ; j < len(s); j++ {
		d := digitValue(s[j], hex)
		if d < 0 {
			break
		}
		if v <= utf8.MaxRune { // so v*10+d and v<<4|d stay far below 1<<31
			if hex {
				v = v<<4 | d
			} else {
				v = v*10 + d
			}
		}
	}
	if j == start || j >= len(s) || s[j] != ';' {
		return j, "", 0, false
	}
	return j + 1, "", numericRune(v), true
}

// digitValue returns c's value as a decimal (or, if hex, hexadecimal) digit, or -1.
func digitValue(c byte, hex bool) rune {
	switch {
	case '0' <= c && c <= '9':
		return rune(c - '0')
	case hex && 'a' <= c && c <= 'f':
		return rune(c-'a') + 10
	case hex && 'A' <= c && c <= 'F':
		return rune(c-'A') + 10
	}
	return -1
}

// numericRune maps a numeric reference's value to the character the HTML
// standard's numeric character reference end state produces.
func numericRune(v rune) rune {
	switch {
	case v == 0, v > utf8.MaxRune, 0xD800 <= v && v <= 0xDFFF:
		return utf8.RuneError // U+FFFD
	case 0x80 <= v && v <= 0x9F:
		return windows1252[v-0x80]
	}
	return v // including noncharacters and other controls: a parse error in HTML, still decoded
}

// windows1252 is the HTML standard's replacement table for numeric references
// 0x80–0x9F; the five code points windows-1252 leaves undefined (0x81, 0x8D,
// 0x8F, 0x90, 0x9D) map to themselves.
var windows1252 = [32]rune{
	'\u20AC', '\u0081', '\u201A', '\u0192', '\u201E', '\u2026', '\u2020', '\u2021',
	'\u02C6', '\u2030', '\u0160', '\u2039', '\u0152', '\u008D', '\u017D', '\u008F',
	'\u0090', '\u2018', '\u2019', '\u201C', '\u201D', '\u2022', '\u2013', '\u2014',
	'\u02DC', '\u2122', '\u0161', '\u203A', '\u0153', '\u009D', '\u017E', '\u0178',
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// entityIndex maps each name in entityTable to its value. A map measured
// about 2.5x faster than binary search over the sorted table
// (BenchmarkEntityLookup); it is built on first use so that programs which
// never decode a reference do not pay for it at start-up.
var entityIndex = sync.OnceValue(func() map[string]string {
	m := make(map[string]string, len(entityTable))
	for _, e := range entityTable {
		m[e.name] = e.value
	}
	return m
})

// lookupEntity finds name (without '&' and ';'); it does not allocate.
func lookupEntity(name string) (string, bool) {
	v, ok := entityIndex()[name]
	return v, ok
}
