package registry

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/registry/compat"
)

// Alias offers another registered tool (the target) under the alias
// tool's own name, description and input schema (spec.alias). The alias's
// InputSchema is what a model sees; it may only narrow the target's
// (CheckAlias proves it with the compatibility engine). Fixed and
// injected arguments are never in it: the pipeline sets them after
// normalizing and validating the model's arguments, then validates the
// whole against the target's schema.
type Alias struct {
	// Target is the target tool's name (registered, not an alias).
	Target string
	// Fixed are arguments set on every call: property → JSON value (as
	// structpb's AsMap and encoding/json decode them).
	Fixed map[string]any
	// Injected are arguments taken from the caller's identity: property →
	// source (InjectSubject, InjectAuthMethod, InjectClaimPrefix+NAME).
	Injected map[string]string
}

// The sources of injected arguments.
const (
	InjectSubject     = "subject"     // the caller's subject (JWT sub, API key name, certificate CN)
	InjectAuthMethod  = "auth-method" // how the caller authenticated ("jwt", "api-key", "mtls")
	InjectClaimPrefix = "claim:"      // claim:NAME: a string claim of the caller's verified JWT
)

// Bounds on an alias's definition: far above any real one, so a hostile
// registration costs bounded work.
const (
	maxAliasArguments  = 64
	maxAliasValueBytes = 64 << 10
	maxClaimNameBytes  = 128
)

// GatewaySet lists the properties the gateway sets (fixed and injected),
// sorted.
func (a *Alias) GatewaySet() []string {
	names := slices.Collect(maps.Keys(a.Fixed))
	for k := range a.Injected {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// AliasOf is t's alias spec; nil when t is not an alias.
func (t *Tool) AliasOf() *Alias {
	if t.Spec == nil {
		return nil
	}
	return t.Spec.Alias
}

// aliasKind is the alias kind (spec.alias). An alias has no backend of its
// own: the pipeline resolves it to its target before dispatch.
type aliasKind struct{}

func (aliasKind) name() string                  { return "alias" }
func (aliasKind) title(t *Tool) string          { return "alias of " + t.Spec.Alias.Target }
func (aliasKind) target(t *Tool) string         { return "" }
func (aliasKind) operatorTarget(t *Tool) string { return "" }
func (aliasKind) line(t *Tool) string           { return "alias of " + t.Spec.Alias.Target }

func (aliasKind) check(t *Tool) (protoreflect.MethodDescriptor, *ToolError) {
	bad := func(field, reason string) *ToolError { return &ToolError{Tool: t.Name, Field: field, Reason: reason} }
	a := t.Spec.Alias
	if t.Spec.TLS != nil {
		return nil, bad("spec.tls", "must be unset for an alias: its target's transport applies")
	}
	if !ValidName(a.Target) {
		return nil, bad("spec.alias.target", "must name a registered tool (matching "+NamePattern+")")
	}
	if a.Target == t.Name {
		return nil, bad("spec.alias.target", "must name another tool, not the alias itself")
	}
	if len(a.Fixed)+len(a.Injected) > maxAliasArguments {
		return nil, bad("spec.alias", fmt.Sprintf("sets %d arguments; at most %d", len(a.Fixed)+len(a.Injected), maxAliasArguments))
	}
	for k, v := range a.Fixed {
		if r := aliasPropertyName(k); r != "" {
			return nil, bad("spec.alias.fixed_arguments", r)
		}
		if _, dup := a.Injected[k]; dup {
			return nil, bad("spec.alias.injected_arguments", fmt.Sprintf("property %q is also a fixed argument", policyBound(k)))
		}
		b, err := json.Marshal(v)
		if err != nil || len(b) > maxAliasValueBytes {
			return nil, bad("spec.alias.fixed_arguments", fmt.Sprintf("property %q: the value must be JSON of at most %d bytes", policyBound(k), maxAliasValueBytes))
		}
	}
	for k, src := range a.Injected {
		if r := aliasPropertyName(k); r != "" {
			return nil, bad("spec.alias.injected_arguments", r)
		}
		if r := checkInjectSource(src); r != "" {
			return nil, bad("spec.alias.injected_arguments", fmt.Sprintf("property %q: %s", policyBound(k), r))
		}
	}
	// What the model sees never names what the gateway sets.
	props, _ := schemaMap(t.InputSchema)["properties"].(map[string]any)
	for _, k := range a.GatewaySet() {
		if _, ok := props[k]; ok {
			return nil, &ToolError{Tool: t.Name, Field: "input_schema", Pointer: "/properties/" + escapePointer(k),
				Reason: "is set by the gateway (spec.alias fixed or injected argument): the schema the model sees must not declare it"}
		}
	}
	return nil, nil
}

// aliasPropertyName is why k cannot be a fixed or injected property ("":
// it can).
func aliasPropertyName(k string) string {
	if k == "" || len(k) > 256 {
		return "property names must be 1 to 256 bytes"
	}
	return ""
}

// checkInjectSource is why src is not a source of injected arguments.
func checkInjectSource(src string) string {
	switch {
	case src == InjectSubject, src == InjectAuthMethod:
		return ""
	case strings.HasPrefix(src, InjectClaimPrefix):
		name := src[len(InjectClaimPrefix):]
		if name == "" || len(name) > maxClaimNameBytes {
			return fmt.Sprintf("claim names must be 1 to %d bytes", maxClaimNameBytes)
		}
		for i := 0; i < len(name); i++ {
			if name[i] < 0x21 || name[i] > 0x7e {
				return "claim names are printable ASCII without spaces"
			}
		}
		return ""
	}
	return fmt.Sprintf("source must be %q, %q or %q+NAME", InjectSubject, InjectAuthMethod, InjectClaimPrefix)
}

// policyBound is a caller-supplied name quoted in a message, bounded.
func policyBound(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

func schemaMap(s *structpb.Struct) map[string]any {
	if s == nil {
		return map[string]any{}
	}
	return s.AsMap()
}

func (aliasKind) equal(a, b *BackendSpec) bool {
	x, y := a.Alias, b.Alias
	return x.Target == y.Target && reflect.DeepEqual(nonNilMap(x.Fixed), nonNilMap(y.Fixed)) && maps.Equal(x.Injected, y.Injected)
}

func nonNilMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// hideAddress clears the fixed arguments and the injected ones' sources
// (a fixed value may be a tenant or account an invoker must not learn)
// and the target (the tool an admin may have hidden behind the alias).
func (aliasKind) hideAddress(s *BackendSpec) {
	s.Alias = &Alias{}
}

// aliasForm is the stored form and the tools file's:
//
//	alias: {target: notes.v1.Notes.Create, fixed_arguments: {visibility: private}, injected_arguments: {tenant: "claim:tenant"}}
type aliasForm struct {
	Target   string            `json:"target"`
	Fixed    map[string]any    `json:"fixed_arguments,omitempty"`
	Injected map[string]string `json:"injected_arguments,omitempty"`
}

func (aliasKind) record(s *BackendSpec) (any, error) {
	a := s.Alias
	return &aliasForm{Target: a.Target, Fixed: a.Fixed, Injected: a.Injected}, nil
}

func (aliasKind) fromRecord(raw json.RawMessage, s *BackendSpec) error {
	var f aliasForm
	if err := json.Unmarshal(raw, &f); err != nil {
		return err
	}
	s.Alias = &Alias{Target: f.Target, Fixed: f.Fixed, Injected: f.Injected}
	return nil
}

func (aliasKind) fromFile(raw json.RawMessage, s *BackendSpec) (string, error) {
	var f aliasForm
	if err := decodeStrict(raw, &f); err != nil {
		return "", err
	}
	s.Alias = &Alias{Target: f.Target, Fixed: f.Fixed, Injected: f.Injected}
	return "", nil
}

// CheckAlias admits alias against its target as stored: the target is no
// alias itself, and the schema the model sees, with the gateway's
// arguments added (a fixed one as its const, an injected one as the
// target's own property schema, both required), is never wider than the
// target's: the compatibility engine must find no value it accepts that
// the target's schema refuses. A refusal names the pointer and keyword.
func CheckAlias(alias, target Tool) *ToolError {
	bad := func(field, reason string) *ToolError {
		return &ToolError{Tool: alias.Name, Field: field, Reason: reason}
	}
	if target.AliasOf() != nil {
		return bad("spec.alias.target", fmt.Sprintf("%q is itself an alias; name the tool it offers", target.Name))
	}
	overlay := AliasCallSchema(alias, target)
	fs := compat.Compare(overlay, schemaMap(target.InputSchema))
	if len(fs) == 0 {
		return nil
	}
	// The first few findings, each by pointer and keyword: enough to fix
	// them, bounded whatever the schemas.
	var parts []string
	for i, f := range fs {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(fs)-3))
			break
		}
		where := f.Path
		if where == "" {
			where = "(root)"
		}
		parts = append(parts, fmt.Sprintf("%s, keyword %q at %s: %s", f.Kind, f.Keyword, where, f.Message))
	}
	return &ToolError{Tool: alias.Name, Field: "input_schema", Pointer: fs[0].Path,
		Reason: fmt.Sprintf("is wider than the target %q's schema (%s); an alias may only narrow it", target.Name, strings.Join(parts, "; "))}
}

// AliasCallSchema is what a call through alias sends its target, as a
// schema: the alias's schema with each fixed argument as its const and
// each injected one as the target's property schema (any value the target
// takes there), both required, and the target's root constraints the
// alias does not restate.
func AliasCallSchema(alias, target Tool) map[string]any {
	a := alias.AliasOf()
	s := schemaMap(alias.InputSchema)
	props, _ := s["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
	}
	tprops, _ := schemaMap(target.InputSchema)["properties"].(map[string]any)
	required, _ := s["required"].([]any)
	for _, k := range a.GatewaySet() {
		if v, ok := a.Fixed[k]; ok {
			props[k] = map[string]any{"const": v}
		} else if ps, ok := tprops[k]; ok {
			props[k] = ps
		} else {
			props[k] = map[string]any{}
		}
		required = append(required, k)
	}
	s["properties"], s["required"] = props, required
	// The target's other root constraints (a proto oneof's "not", its
	// $defs) hold for every call through the alias, since the pipeline
	// validates the whole against the target: an overlay that does not
	// repeat them inherits them.
	for k, v := range schemaMap(target.InputSchema) {
		if _, set := s[k]; !set && !ownRootKeywords[k] {
			s[k] = v
		}
	}
	return s
}

// ownRootKeywords are the root keywords an alias's schema has of its own
// (what its properties are) or that carry no constraint.
var ownRootKeywords = map[string]bool{
	"properties": true, "required": true, "additionalProperties": true, "patternProperties": true, "propertyNames": true,
	"unevaluatedProperties": true, "minProperties": true, "maxProperties": true,
	"title": true, "description": true, "$schema": true, "$id": true, "$comment": true, "examples": true, "default": true,
}
