package protoschema

import (
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
)

// UnsupportedError is a message whose JSON form no schema can describe
// honestly (google.protobuf.Any: its shape depends on a type URL the
// gateway cannot resolve at import). Path names the field, e.g.
// "flowdrop.testing.v1.CreateNoteRequest.payload".
type UnsupportedError struct {
	Path   string
	Reason string
}

func (e *UnsupportedError) Error() string { return e.Path + ": " + e.Reason }

// Schema returns the JSON Schema (draft 2020-12, the gateway's default, so
// without "$schema") of md's proto3 JSON form,
// as protojson reads it:
//
//   - fields by their JSON name (lowerCamelCase), no others
//     (additionalProperties: false): protojson in strict mode refuses them;
//   - 32-bit integers as integers within their range; 64-bit integers as an
//     integer or a decimal string (above 2^53 only the string is exact);
//     floats as numbers; bytes as base64 strings; enums by name;
//   - repeated fields as arrays with items; maps as objects whose values
//     have the value type's schema (integer and bool keys are strings);
//   - well-known types by their JSON form: Timestamp (RFC 3339), Duration
//     ("1.5s"), FieldMask, Struct, Value, ListValue, the wrappers (or null),
//     NullValue; google.protobuf.Any is an *UnsupportedError;
//   - a oneof's fields as mutually exclusive properties; proto2 required
//     and google.api.field_behavior = REQUIRED fields as required;
//   - leading comments as descriptions, when the descriptor has source info;
//   - a message that contains itself as a $ref: the root's to "#", others'
//     to "#/$defs/<full name>".
//
// A message graph whose inlined schema would be over MaxInlineNodes (a
// DAG: A has two fields of B, B two of C, ... doubles per level) has every
// message below the root in $defs once, referenced as "#/$defs/<full
// name>": the schema stays as large as the descriptors.
func Schema(md protoreflect.MessageDescriptor) (*structpb.Struct, error) {
	s, err := schemaOf(md, false)
	if errors.Is(err, errOverBudget) {
		s, err = schemaOf(md, true)
	}
	return s, err
}

// MaxInlineNodes bounds the object schemas a request message's schema
// may expand to when every message it uses is inlined; past it, messages
// are shared in $defs.
const MaxInlineNodes = 10000

var errOverBudget = errors.New("the inlined schema is over the node budget")

func schemaOf(md protoreflect.MessageDescriptor, share bool) (*structpb.Struct, error) {
	b := &builder{root: md.FullName(), onPath: map[protoreflect.FullName]bool{}, defs: map[string]any{}, recursive: map[protoreflect.FullName]bool{}, share: share}
	var s map[string]any
	wk, ok, err := wellKnown(md, string(md.FullName()))
	switch {
	case err != nil:
		return nil, err
	case ok && wk["type"] != "object": // Struct is an object; Timestamp, Value... are not
		return nil, &UnsupportedError{Path: string(md.FullName()), Reason: "a tool's arguments are an object; this type's JSON form is not one"}
	case ok:
		s = wk
	default:
		if s, err = b.object(md); err != nil {
			return nil, err
		}
	}
	// No "$schema": 2020-12 is the gateway's default dialect, and providers
	// reject the keyword (Gemini) or gain nothing from it.
	if d := description(md); d != "" {
		s["description"] = d
	}
	if len(b.defs) > 0 {
		s["$defs"] = b.defs
	}
	out, err := structpb.NewStruct(s)
	if err != nil { // only numbers and strings, maps and slices are built
		return nil, fmt.Errorf("protoschema: %v", err)
	}
	return out, nil
}

type builder struct {
	root protoreflect.FullName
	// onPath holds the messages being built (the current nesting), to find
	// a message inside itself; recursive marks those found so.
	onPath    map[protoreflect.FullName]bool
	recursive map[protoreflect.FullName]bool
	defs      map[string]any
	// share puts every message below the root in defs; otherwise nodes
	// counts the objects inlined, up to MaxInlineNodes.
	share bool
	nodes int
}

func defRef(name protoreflect.FullName) string { return "#/$defs/" + string(name) }

// message is the schema of a message-typed value.
func (b *builder) message(md protoreflect.MessageDescriptor, path string) (map[string]any, error) {
	name := md.FullName()
	if s, ok, err := wellKnown(md, path); ok || err != nil {
		return s, err
	}
	if name == b.root {
		if b.onPath[name] {
			return map[string]any{"$ref": "#"}, nil
		}
	}
	if _, ok := b.defs[string(name)]; ok {
		return map[string]any{"$ref": defRef(name)}, nil
	}
	if b.onPath[name] {
		b.recursive[name] = true
		return map[string]any{"$ref": defRef(name)}, nil
	}
	s, err := b.object(md)
	if err != nil {
		return nil, err
	}
	if b.recursive[name] || b.share {
		if d := description(md); d != "" {
			s["description"] = d
		}
		b.defs[string(name)] = s
		return map[string]any{"$ref": defRef(name)}, nil
	}
	return s, nil
}

// object is a message's own object schema: its fields and their rules.
func (b *builder) object(md protoreflect.MessageDescriptor) (map[string]any, error) {
	if !b.share {
		if b.nodes++; b.nodes > MaxInlineNodes {
			return nil, errOverBudget
		}
	}
	name := md.FullName()
	b.onPath[name] = true
	defer delete(b.onPath, name)
	props := map[string]any{}
	var required []any
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		path := string(name) + "." + string(fd.Name())
		s, err := b.field(fd, path)
		if err != nil {
			return nil, err
		}
		if d := description(fd); d != "" {
			s = withDescription(s, d)
		}
		props[fd.JSONName()] = s
		if fd.Cardinality() == protoreflect.Required || fieldBehaviorRequired(fd) {
			required = append(required, fd.JSONName())
		}
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	if x := exclusive(md); x != nil {
		s["not"] = x
	}
	return s, nil
}

// withDescription adds a description beside s's keywords; a $ref gets an
// allOf wrapper so the description does not sit beside a bare $ref.
func withDescription(s map[string]any, d string) map[string]any {
	if _, ok := s["$ref"]; ok {
		return map[string]any{"allOf": []any{s}, "description": d}
	}
	s["description"] = d
	return s
}

// exclusive is the "not" that keeps a oneof's fields mutually exclusive:
// no two of them together. Synthetic oneofs (proto3 optional) have one
// field and need none.
func exclusive(md protoreflect.MessageDescriptor) map[string]any {
	var pairs []any
	oneofs := md.Oneofs()
	for i := range oneofs.Len() {
		o := oneofs.Get(i)
		if o.IsSynthetic() {
			continue
		}
		f := o.Fields()
		for a := range f.Len() {
			for c := a + 1; c < f.Len(); c++ {
				pairs = append(pairs, map[string]any{"required": []any{f.Get(a).JSONName(), f.Get(c).JSONName()}})
			}
		}
	}
	if len(pairs) == 0 {
		return nil
	}
	return map[string]any{"anyOf": pairs}
}

// field is a field's schema: a map, a list, or one value.
func (b *builder) field(fd protoreflect.FieldDescriptor, path string) (map[string]any, error) {
	switch {
	case fd.IsMap():
		v, err := b.value(fd.MapValue(), path)
		if err != nil {
			return nil, err
		}
		s := map[string]any{"type": "object", "additionalProperties": v}
		if k := mapKey(fd.MapKey()); k != nil {
			s["propertyNames"] = k
		}
		return s, nil
	case fd.IsList():
		v, err := b.value(fd, path)
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "array", "items": v}, nil
	}
	return b.value(fd, path)
}

// Decimal integers as protojson writes and reads them in strings.
const (
	signedDecimal   = `^-?(0|[1-9][0-9]*)$`
	unsignedDecimal = `^(0|[1-9][0-9]*)$`
)

// mapKey constrains a map's keys (JSON object keys are strings): integer
// keys are decimals, bool keys true or false; string keys are free.
func mapKey(fd protoreflect.FieldDescriptor) map[string]any {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return map[string]any{"enum": []any{"true", "false"}}
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return map[string]any{"pattern": unsignedDecimal}
	case protoreflect.StringKind:
		return nil
	}
	return map[string]any{"pattern": signedDecimal}
}

// value is the schema of one value of fd's type (one element of a list).
func (b *builder) value(fd protoreflect.FieldDescriptor, path string) (map[string]any, error) {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return b.message(fd.Message(), path)
	case protoreflect.EnumKind:
		return enum(fd.Enum()), nil
	}
	return scalar(fd.Kind()), nil
}

func scalar(k protoreflect.Kind) map[string]any {
	switch k {
	case protoreflect.BoolKind:
		return map[string]any{"type": "boolean"}
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return map[string]any{"type": "integer", "minimum": -2147483648.0, "maximum": 2147483647.0}
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return map[string]any{"type": "integer", "minimum": 0.0, "maximum": 4294967295.0}
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		// A string carries any int64 exactly; the integer form is for
		// values a float64 holds (the schema engine refuses others).
		return map[string]any{"type": []any{"integer", "string"}, "pattern": signedDecimal}
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return map[string]any{"type": []any{"integer", "string"}, "minimum": 0.0, "pattern": unsignedDecimal}
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return map[string]any{"type": "number"}
	case protoreflect.BytesKind:
		return map[string]any{"type": "string", "contentEncoding": "base64"}
	}
	return map[string]any{"type": "string"}
}

func enum(ed protoreflect.EnumDescriptor) map[string]any {
	if ed.FullName() == "google.protobuf.NullValue" {
		return map[string]any{"type": "null"}
	}
	vals := ed.Values()
	names := make([]any, 0, vals.Len())
	for i := range vals.Len() {
		names = append(names, string(vals.Get(i).Name()))
	}
	s := map[string]any{"type": "string", "enum": names}
	if d := description(ed); d != "" {
		s["description"] = d
	}
	return s
}

// wellKnown is the JSON form of the well-known types protojson gives a
// special one; ok is false for every other message.
func wellKnown(md protoreflect.MessageDescriptor, path string) (s map[string]any, ok bool, err error) {
	if md.ParentFile() == nil || !strings.HasPrefix(string(md.FullName()), "google.protobuf.") {
		return nil, false, nil
	}
	switch md.Name() {
	case "Any":
		return nil, false, &UnsupportedError{Path: path, Reason: "google.protobuf.Any cannot be described by a JSON Schema (its shape depends on a type URL); give the field a concrete message type"}
	case "Timestamp":
		return map[string]any{"type": "string", "format": "date-time"}, true, nil
	case "Duration":
		return map[string]any{"type": "string", "pattern": `^-?[0-9]+(\.[0-9]{1,9})?s$`}, true, nil
	case "FieldMask":
		return map[string]any{"type": "string"}, true, nil
	case "Struct":
		return map[string]any{"type": "object"}, true, nil
	case "Value":
		return map[string]any{}, true, nil
	case "ListValue":
		// Any JSON values; "items": {} says so where providers require
		// items on every array (OpenAI, Gemini).
		return map[string]any{"type": "array", "items": map[string]any{}}, true, nil
	case "DoubleValue", "FloatValue", "Int64Value", "UInt64Value", "Int32Value", "UInt32Value", "BoolValue", "StringValue", "BytesValue":
		s := scalar(md.Fields().ByName("value").Kind())
		// A wrapper's null is "not set", the reason wrappers exist.
		switch t := s["type"].(type) {
		case string:
			s["type"] = []any{t, "null"}
		case []any:
			s["type"] = append(t, "null")
		}
		return s, true, nil
	}
	return nil, false, nil // Empty and the descriptor messages are plain messages
}

// google.api.field_behavior (FieldOptions extension 1052, repeated enum)
// and its REQUIRED value, read from the options' wire form so the
// extension need not be linked in.
const (
	fieldBehaviorNumber   = 1052
	fieldBehaviorREQUIRED = 2
)

func fieldBehaviorRequired(fd protoreflect.FieldDescriptor) bool {
	opts := fd.Options()
	if opts == nil {
		return false
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(opts)
	if err != nil {
		return false
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		if num == fieldBehaviorNumber {
			switch typ {
			case protowire.VarintType:
				v, m := protowire.ConsumeVarint(b)
				if m >= 0 && v == fieldBehaviorREQUIRED {
					return true
				}
			case protowire.BytesType: // packed
				p, m := protowire.ConsumeBytes(b)
				for m >= 0 && len(p) > 0 {
					v, k := protowire.ConsumeVarint(p)
					if k < 0 {
						break
					}
					if v == fieldBehaviorREQUIRED {
						return true
					}
					p = p[k:]
				}
			}
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return false
		}
		b = b[m:]
	}
	return false
}

// description is d's leading comment (or trailing, if it has none), with
// the comment markers' leading space removed and blank edges trimmed.
func description(d protoreflect.Descriptor) string {
	f := d.ParentFile()
	if f == nil {
		return ""
	}
	loc := f.SourceLocations().ByDescriptor(d)
	c := loc.LeadingComments
	if strings.TrimSpace(c) == "" {
		c = loc.TrailingComments
	}
	lines := strings.Split(strings.TrimSpace(c), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, " ")
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}
