package policy

import (
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/registry/schema"
)

// Redacted replaces sensitive argument values in the audit log.
const Redacted = "[REDACTED]"

// Redactor copies arguments for the audit log with the values a tool's
// input schema marks sensitive replaced by Redacted. What counts as
// sensitive is schema.Sensitivity's one rule (writeOnly: true, format:
// "password" or x-sensitive: true, through every subschema keyword, failing
// closed), the same rule that keeps such values out of validation messages.
//
// A string sent where the schema expects an object or array holding a
// sensitive field is redacted whole, because it may be that object as JSON
// text (normalize would decode it).
type Redactor struct {
	s *schema.Sensitivity
}

// NewRedactor prepares a Redactor for schema (nil: nothing is sensitive).
func NewRedactor(doc *structpb.Struct) *Redactor {
	return &Redactor{s: schema.NewSensitivity(doc)}
}

// RedactorFor is the Redactor of an already prepared Sensitivity (a
// compiled schema's).
func RedactorFor(s *schema.Sensitivity) *Redactor { return &Redactor{s: s} }

// Redact returns a copy of args with sensitive values replaced by Redacted.
// args is not modified.
func (r *Redactor) Redact(args *structpb.Struct) *structpb.Struct {
	if args == nil {
		return nil
	}
	var nodes schema.Nodes
	if r != nil {
		nodes = r.s.Root()
	}
	return r.object(args, nodes)
}

func (r *Redactor) object(s *structpb.Struct, nodes schema.Nodes) *structpb.Struct {
	out := &structpb.Struct{Fields: make(map[string]*structpb.Value, len(s.GetFields()))}
	for k, v := range s.GetFields() {
		var child schema.Nodes
		if r != nil {
			child = r.s.Key(nodes, k)
		}
		out.Fields[k] = r.value(v, child)
	}
	return out
}

func (r *Redactor) value(v *structpb.Value, nodes schema.Nodes) *structpb.Value {
	if len(nodes) == 0 {
		return v
	}
	if r.s.Marked(nodes) {
		return structpb.NewStringValue(Redacted)
	}
	switch k := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		if r.s.Holds(nodes) {
			return structpb.NewStringValue(Redacted)
		}
		return v
	case *structpb.Value_StructValue:
		return structpb.NewStructValue(r.object(k.StructValue, nodes))
	case *structpb.Value_ListValue:
		vals := k.ListValue.GetValues()
		out := make([]*structpb.Value, len(vals))
		for i, e := range vals {
			out[i] = r.value(e, r.s.Index(nodes, i))
		}
		return structpb.NewListValue(&structpb.ListValue{Values: out})
	}
	return v
}
