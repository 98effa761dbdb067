package policy

import (
	"bytes"
	"math"
	"slices"
	"strconv"

	"github.com/flowdrop/gateway/internal/structwire"
	"github.com/flowdrop/gateway/registry/schema"
)

// SetArgsWire records the arguments as sent and as repaired from wire bytes
// (google.protobuf.Struct), for a call that never decoded them: repaired is
// nil when nothing was repaired, and the line then has no args_repaired.
// The JSON is what SetArgs writes for the decoded Structs, byte for byte
// (members sorted, a repeated key's last value, as decoding keeps it),
// redacted the same way; bytes that do not decode as a Struct are refused
// (the line then has no arguments, as when decoding fails). Both are
// encoded into one pooled buffer (ReleaseArgs recycles it).
func (a *AuditRecord) SetArgsWire(red *Redactor, sent, repaired []byte) error {
	a.ArgsSent, a.ArgsRepaired, a.argsEncoded, a.argsBuf = nil, nil, false, nil
	enc := argsEncoder{red: red.sensitivity()}
	size := len(sent) + len(repaired)
	ab := getAuditBuf(size + size/4 + 16)
	buf, err := enc.wireObject(ab.b, sent, enc.root(), 0)
	if err != nil {
		putAuditBuf(ab)
		return err
	}
	n := len(buf)
	if repaired != nil {
		if buf, err = enc.wireObject(buf, repaired, enc.root(), 0); err != nil {
			putAuditBuf(ab)
			return err
		}
		a.ArgsRepaired = buf[n:]
	}
	ab.b = buf
	a.ArgsSent, a.argsEncoded, a.argsBuf = buf[:n:n], true, ab
	return nil
}

// wireEntry is one member of a Struct's bytes.
type wireEntry struct{ key, value []byte }

func (e argsEncoder) wireObject(b, obj []byte, nodes schema.Nodes, depth int) ([]byte, error) {
	if depth > structwire.MaxDepth {
		return b, errArgsUnencodable
	}
	var stack [16]wireEntry
	entries := stack[:0]
	for rest := obj; len(rest) > 0; {
		k, v, next, ok := structwire.NextEntry(rest, true)
		if !ok {
			return b, errArgsUnencodable
		}
		entries = append(entries, wireEntry{k, v})
		rest = next
	}
	// Stable: among a repeated key's entries the last one is kept.
	slices.SortStableFunc(entries, func(x, y wireEntry) int { return bytes.Compare(x.key, y.key) })
	b = append(b, '{')
	first := true
	var err error
	for i, en := range entries {
		if i+1 < len(entries) && bytes.Equal(en.key, entries[i+1].key) {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		if b, err = appendJSONString(b, en.key); err != nil {
			return b, err
		}
		b = append(b, ':')
		var child schema.Nodes
		if len(nodes) > 0 {
			child = e.red.Key(nodes, string(en.key))
		}
		if b, err = e.wireValue(b, en.value, child, depth); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

func (e argsEncoder) wireValue(b, v []byte, nodes schema.Nodes, depth int) ([]byte, error) {
	kind, scalar, payload, ok := structwire.ReadValue(v, true)
	if !ok {
		return b, errArgsUnencodable
	}
	redact := len(nodes) > 0
	if redact && e.red.Marked(nodes) {
		return appendJSONString(b, Redacted)
	}
	switch kind {
	case structwire.NullValue:
		return append(b, "null"...), nil
	case structwire.BoolValue:
		return strconv.AppendBool(b, scalar != 0), nil
	case structwire.NumberValue:
		return appendJSONNumber(b, math.Float64frombits(scalar))
	case structwire.StringValue:
		if redact && e.red.Holds(nodes) {
			return appendJSONString(b, Redacted)
		}
		return appendJSONString(b, payload)
	case structwire.StructValue:
		if !redact {
			nodes = nil
		}
		return e.wireObject(b, payload, nodes, depth+1)
	case structwire.ListValue:
		b = append(b, '[')
		var err error
		for i, rest := 0, payload; len(rest) > 0; i++ {
			item, next, ok := structwire.NextItem(rest)
			if !ok {
				return b, errArgsUnencodable
			}
			if i > 0 {
				b = append(b, ',')
			}
			var child schema.Nodes
			if redact {
				child = e.red.Index(nodes, i)
			}
			if b, err = e.wireValue(b, item, child, depth+1); err != nil {
				return b, err
			}
			rest = next
		}
		return append(b, ']'), nil
	}
	return b, errArgsUnencodable
}
