package structwire

import (
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
)

// Limits bound what Scan accepts; zero leaves a field unbounded. Depth
// counts containers (the Struct itself is depth 1); elements and keys are
// totals over the whole Struct.
type Limits struct {
	MaxDepth, MaxStringLength, MaxElements, MaxKeys int
}

// Limit names the limit a scan stopped at.
type Limit uint8

// The limits Scan checks.
const (
	LimitDepth Limit = iota + 1
	LimitStringLength
	LimitElements
	LimitKeys
)

// maxScanDepth is proto.Unmarshal's own recursion limit: deeper bytes do
// not decode, so the scan calls them malformed rather than recursing on.
const maxScanDepth = 10000

// ScanResult is what Scan found.
type ScanResult struct {
	// Exceeded is the limit the bytes cross (0: none); Max its value.
	Exceeded Limit
	Max      int
	// Kindless: a Value with no kind, which decodes to a Value a backend
	// cannot interpret (and JSON cannot express).
	Kindless bool
	// Path is the RFC 6901 pointer of the value that crossed the limit or
	// has no kind ("" is the whole Struct).
	Path string
	// Malformed: the bytes do not decode (truncated, a wire type proto
	// refuses, nesting past proto's recursion limit).
	Malformed bool
	// Canonical: every entry is exactly one key and one value and every
	// Value exactly one kind, with no unknown fields anywhere — the bytes
	// hold nothing a decode-and-validate would not see. Anything else must
	// be decoded (dropping unknown fields) and re-encoded before it is
	// forwarded.
	Canonical bool
}

// Scan reads a google.protobuf.Struct's wire bytes once, without
// decoding them or allocating (unless it reports a path), counting nesting,
// string lengths, list elements and keys against lim, so a call can be
// refused before proto.Unmarshal builds a Value per element: 4 MiB of tiny
// list elements is ~1M Values, hundreds of MB decoded. It stops at the
// first limit crossed or kind-less Value. UTF-8 is not checked (decoding
// does that).
func Scan(b []byte, lim Limits) ScanResult {
	s := scanner{lim: lim, canonical: true}
	if s.object(b, 1) {
		return ScanResult{Canonical: s.canonical}
	}
	r := ScanResult{Exceeded: s.exceeded, Max: s.max, Kindless: s.kindless, Malformed: s.malformed}
	if s.exceeded != 0 || s.kindless {
		var sb strings.Builder
		for i := len(s.tokens) - 1; i >= 0; i-- {
			sb.WriteByte('/')
			sb.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(s.tokens[i]))
		}
		r.Path = sb.String()
	}
	return r
}

type scanner struct {
	lim            Limits
	elements, keys int
	canonical      bool
	exceeded       Limit
	max            int
	kindless       bool
	malformed      bool
	tokens         []string // path below the failure, innermost first
}

func (s *scanner) over(l Limit, max int) bool {
	s.exceeded, s.max = l, max
	return false
}

func (s *scanner) bad() bool {
	s.malformed = true
	return false
}

// object scans a Struct's fields at depth d; false stops the scan.
func (s *scanner) object(b []byte, d int) bool {
	if d > maxScanDepth {
		return s.bad()
	}
	if s.lim.MaxDepth > 0 && d > s.lim.MaxDepth {
		return s.over(LimitDepth, s.lim.MaxDepth)
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return s.bad()
		}
		b = b[n:]
		if num != StructFields || typ != protowire.BytesType {
			if !s.skip(num, typ, &b) {
				return false
			}
			continue
		}
		entry, m := protowire.ConsumeBytes(b)
		if m < 0 {
			return s.bad()
		}
		b = b[m:]
		if !s.entry(entry, d) {
			return false
		}
	}
	return true
}

// skip passes over a field the scan does not follow (unknown, or a known
// number with another wire type, which proto keeps as unknown).
func (s *scanner) skip(num protowire.Number, typ protowire.Type, b *[]byte) bool {
	s.canonical = false
	m := protowire.ConsumeFieldValue(num, typ, *b)
	if m < 0 {
		return s.bad()
	}
	*b = (*b)[m:]
	return true
}

// entry scans one map entry of a Struct at depth d.
func (s *scanner) entry(b []byte, d int) bool {
	var key, value []byte
	haveKey, haveValue := false, false
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return s.bad()
		}
		b = b[n:]
		if (num != EntryKey && num != EntryValue) || typ != protowire.BytesType {
			if !s.skip(num, typ, &b) {
				return false
			}
			continue
		}
		f, m := protowire.ConsumeBytes(b)
		if m < 0 {
			return s.bad()
		}
		b = b[m:]
		if num == EntryKey {
			s.canonical = s.canonical && !haveKey
			key, haveKey = f, true
		} else {
			s.canonical = s.canonical && !haveValue
			value, haveValue = f, true // proto merges repeats; the last one's kind wins
		}
	}
	s.keys++
	if s.lim.MaxKeys > 0 && s.keys > s.lim.MaxKeys {
		s.tokens = append(s.tokens, string(key))
		return s.over(LimitKeys, s.lim.MaxKeys)
	}
	if s.lim.MaxStringLength > 0 && len(key) > s.lim.MaxStringLength {
		s.tokens = append(s.tokens, string(key))
		return s.over(LimitStringLength, s.lim.MaxStringLength)
	}
	if !s.value(value, d) {
		if s.exceeded != 0 || s.kindless {
			s.tokens = append(s.tokens, string(key))
		}
		return false
	}
	return true
}

// value scans one Value inside a container at depth d.
func (s *scanner) value(b []byte, d int) bool {
	kinds := 0
	var kind Kind
	var payload []byte
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return s.bad()
		}
		b = b[n:]
		var m int
		switch {
		case (num == NullValue || num == BoolValue) && typ == protowire.VarintType:
			_, m = protowire.ConsumeVarint(b)
		case num == NumberValue && typ == protowire.Fixed64Type:
			_, m = protowire.ConsumeFixed64(b)
		case (num == StringValue || num == StructValue || num == ListValue) && typ == protowire.BytesType:
			payload, m = protowire.ConsumeBytes(b)
		default:
			if !s.skip(num, typ, &b) {
				return false
			}
			continue
		}
		if m < 0 {
			return s.bad()
		}
		b = b[m:]
		kinds++
		kind = num
		// Containers of the same kind merge in proto; scanning each one
		// counts what the merge holds.
		if !s.kindValue(kind, payload, d) {
			return false
		}
	}
	if kinds == 0 {
		s.kindless = true
		return false
	}
	if kinds > 1 {
		s.canonical = false
	}
	return true
}

// kindValue checks one kind field's payload.
func (s *scanner) kindValue(kind Kind, payload []byte, d int) bool {
	switch kind {
	case StringValue:
		if s.lim.MaxStringLength > 0 && len(payload) > s.lim.MaxStringLength {
			return s.over(LimitStringLength, s.lim.MaxStringLength)
		}
	case StructValue:
		return s.object(payload, d+1)
	case ListValue:
		return s.list(payload, d+1)
	}
	return true
}

// list scans a ListValue's values at depth d.
func (s *scanner) list(b []byte, d int) bool {
	if d > maxScanDepth {
		return s.bad()
	}
	if s.lim.MaxDepth > 0 && d > s.lim.MaxDepth {
		return s.over(LimitDepth, s.lim.MaxDepth)
	}
	for i := 0; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return s.bad()
		}
		b = b[n:]
		if num != ListValues || typ != protowire.BytesType {
			if !s.skip(num, typ, &b) {
				return false
			}
			continue
		}
		item, m := protowire.ConsumeBytes(b)
		if m < 0 {
			return s.bad()
		}
		b = b[m:]
		s.elements++
		if s.lim.MaxElements > 0 && s.elements > s.lim.MaxElements {
			s.tokens = append(s.tokens, strconv.Itoa(i))
			return s.over(LimitElements, s.lim.MaxElements)
		}
		if !s.value(item, d) {
			if s.exceeded != 0 || s.kindless {
				s.tokens = append(s.tokens, strconv.Itoa(i))
			}
			return false
		}
		i++
	}
	return true
}
