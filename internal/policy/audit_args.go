package policy

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/registry/schema"
)

// The audit line's arguments are encoded straight from the Struct, with
// redaction applied while encoding: no redacted copy, no protojson, and no
// re-compaction of the result when the line is built (appendLine copies
// them in). The bytes are exactly what the
// former path (protojson.Marshal of the redacted copy, compacted by
// encoding/json with HTML escaping) wrote: keys sorted, compact, numbers
// as encoding/json formats float64, strings escaped as encoding/json does
// (<, >, &, U+2028 and U+2029 as \u escapes). audit_args_test.go holds
// the two paths to the same bytes.

// errArgsUnencodable: a Value JSON cannot carry (NaN, ±Inf, no kind, or
// invalid UTF-8), as protojson refuses it; the line then has no arguments.
var errArgsUnencodable = errors.New("audit: arguments not encodable as JSON")

// SetArgs records the arguments as sent and as repaired, redacted per the
// tool's schema. repaired may be nil (not reached) or the same pointer as
// sent (nothing repaired); then only args_sent is written. Both are
// encoded into one pooled buffer (ReleaseArgs recycles it).
func (a *AuditRecord) SetArgs(red *Redactor, sent, repaired *structpb.Struct) error {
	a.ArgsSent, a.ArgsRepaired, a.argsEncoded, a.argsBuf = nil, nil, false, nil
	if sent == nil && (repaired == nil || repaired == sent) {
		return nil
	}
	enc := argsEncoder{red: red.sensitivity()}
	ab := getAuditBuf(512)
	buf := ab.b
	var err error
	if sent != nil {
		if buf, err = enc.object(buf, sent, enc.root()); err != nil {
			putAuditBuf(ab)
			return err
		}
	}
	n := len(buf)
	if repaired != nil && repaired != sent {
		if buf, err = enc.object(buf, repaired, enc.root()); err != nil {
			putAuditBuf(ab)
			return err
		}
	}
	if sent != nil {
		a.ArgsSent = buf[:n:n]
	}
	if len(buf) > n {
		a.ArgsRepaired = buf[n:]
	}
	ab.b = buf
	a.argsEncoded, a.argsBuf = true, ab
	return nil
}

// AppendStructJSON appends s as the audit line writes arguments, without
// redaction and with strings escaped as protojson escapes them: the bytes
// protojson.Marshal writes, compacted (TestAppendStructJSONMatchesProtojson),
// without its reflection. It refuses what protojson refuses (NaN, ±Inf, a
// Value with no kind, invalid UTF-8). The MCP client leg sends a call's
// arguments with it.
func AppendStructJSON(b []byte, s *structpb.Struct) ([]byte, error) {
	return argsEncoder{plain: true}.object(b, s, nil)
}

// sensitivity is the Redactor's Sensitivity when it marks anything (nil
// otherwise: nothing to redact, nothing to walk).
func (r *Redactor) sensitivity() *schema.Sensitivity {
	if r == nil || !r.s.Any() {
		return nil
	}
	return r.s
}

// argsEncoder writes a Struct as JSON, redacting as Redactor.Redact does.
type argsEncoder struct {
	red *schema.Sensitivity // nil: nothing is sensitive
	// plain: strings escaped as protojson escapes them (no \u escapes
	// for <, >, &, U+2028, U+2029), so a request is as long as protojson
	// made it; the audit line keeps encoding/json's HTML escaping.
	plain bool
}

// quote is appendJSONString, or its plain form.
func (e argsEncoder) quote(b []byte, s string) ([]byte, error) {
	return quote(b, s, false, !e.plain)
}

func (e argsEncoder) root() schema.Nodes {
	if e.red == nil {
		return nil
	}
	return e.red.Root()
}

func (e argsEncoder) object(b []byte, s *structpb.Struct, nodes schema.Nodes) ([]byte, error) {
	fields := s.GetFields()
	var stack [16]string
	keys := stack[:0]
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	var err error
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = e.quote(b, k); err != nil {
			return b, err
		}
		b = append(b, ':')
		var child schema.Nodes
		if len(nodes) > 0 {
			child = e.red.Key(nodes, k)
		}
		if b, err = e.value(b, fields[k], child); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

func (e argsEncoder) value(b []byte, v *structpb.Value, nodes schema.Nodes) ([]byte, error) {
	redact := len(nodes) > 0
	if redact && e.red.Marked(nodes) {
		return appendJSONString(b, Redacted)
	}
	switch k := v.GetKind().(type) {
	case *structpb.Value_NullValue:
		return append(b, "null"...), nil
	case *structpb.Value_BoolValue:
		return strconv.AppendBool(b, k.BoolValue), nil
	case *structpb.Value_NumberValue:
		return appendJSONNumber(b, k.NumberValue)
	case *structpb.Value_StringValue:
		if redact && e.red.Holds(nodes) {
			return appendJSONString(b, Redacted)
		}
		return e.quote(b, k.StringValue)
	case *structpb.Value_StructValue:
		if !redact {
			nodes = nil
		}
		return e.object(b, k.StructValue, nodes)
	case *structpb.Value_ListValue:
		b = append(b, '[')
		var err error
		for i, el := range k.ListValue.GetValues() {
			if i > 0 {
				b = append(b, ',')
			}
			var child schema.Nodes
			if redact {
				child = e.red.Index(nodes, i)
			}
			if b, err = e.value(b, el, child); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	}
	return b, errArgsUnencodable
}

// appendJSONNumber formats f as encoding/json (and protojson) do.
func appendJSONNumber(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, errArgsUnencodable
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' { // e-09 → e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

const hexDigits = "0123456789abcdef"

// appendJSONString quotes s as encoding/json does with HTML escaping;
// invalid UTF-8 is refused, as protojson refuses it.
// Generic so the wire encoder passes the received bytes without a copy.
func appendJSONString[T string | []byte](b []byte, s T) ([]byte, error) {
	return appendQuoted(b, s, false)
}

// appendQuoted is appendJSONString; with replaceInvalid, invalid UTF-8
// becomes \ufffd (as encoding/json writes it) instead of an error.
func appendQuoted[T string | []byte](b []byte, s T, replaceInvalid bool) ([]byte, error) {
	return quote(b, s, replaceInvalid, true)
}

// quote is appendQuoted; without html, <, >, &, U+2028 and U+2029 are
// written as they are (as protojson writes them).
func quote[T string | []byte](b []byte, s T, replaceInvalid, html bool) ([]byte, error) {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!html || c != '<' && c != '>' && c != '&') {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default: // other control bytes and <, >, &
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))])) // ≤ 4 bytes: no copy escapes
		if r == utf8.RuneError && size == 1 {
			if !replaceInvalid {
				return b, errArgsUnencodable
			}
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if html && (r == '\u2028' || r == '\u2029') {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			start = i + size
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"'), nil
}
