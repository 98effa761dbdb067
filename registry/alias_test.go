package registry_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/registry"
)

// TestCheckAlias: an alias's schema, with what it sets, may only narrow
// its target's; a refusal names the pointer and the keyword.
func TestCheckAlias(t *testing.T) {
	st := func(m map[string]any) *structpb.Struct {
		s, err := structpb.NewStruct(m)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	target := registry.Tool{Name: "svc.Op", Backend: "127.0.0.1:1", InputSchema: st(map[string]any{
		"type": "object", "additionalProperties": false, "required": []any{"q"},
		"properties": map[string]any{
			"q":      map[string]any{"type": "string", "maxLength": 100},
			"n":      map[string]any{"type": "integer", "minimum": 0, "maximum": 50},
			"mode":   map[string]any{"type": "string", "enum": []any{"a", "b", "c"}},
			"tenant": map[string]any{"type": "string"},
		},
		"not": map[string]any{"required": []any{"mode", "n"}}})}
	alias := func(schema map[string]any, fixed map[string]any, injected map[string]string) registry.Tool {
		return registry.Tool{Name: "op", InputSchema: st(schema),
			Spec: &registry.BackendSpec{Alias: &registry.Alias{Target: "svc.Op", Fixed: fixed, Injected: injected}}}
	}
	obj := func(props map[string]any, required ...any) map[string]any {
		return map[string]any{"type": "object", "additionalProperties": false, "properties": props, "required": append([]any{}, required...)}
	}
	cases := []struct {
		name, reason string
		alias        registry.Tool
		wantIn       []string // empty: admitted
	}{
		{name: "narrower", reason: "fewer properties, tighter bounds, fewer enum values; the target's not inherited",
			alias: alias(obj(map[string]any{"q": map[string]any{"type": "string", "maxLength": 20},
				"mode": map[string]any{"type": "string", "enum": []any{"a"}}}, "q"), nil, map[string]string{"tenant": "subject"})},
		{name: "fixed-in-range", reason: "a fixed value the target takes",
			alias: alias(obj(map[string]any{"q": map[string]any{"type": "string", "maxLength": 100}}, "q"), map[string]any{"n": 5.0}, nil)},
		{name: "wider-type", reason: "q may be an integer through the alias",
			alias:  alias(obj(map[string]any{"q": map[string]any{"type": []any{"string", "integer"}, "maxLength": 100}}, "q"), nil, nil),
			wantIn: []string{"/properties/q", `"type"`}},
		{name: "optional-required", reason: "the target requires q; the alias lets it out",
			alias:  alias(obj(map[string]any{"q": map[string]any{"type": "string"}}), nil, nil),
			wantIn: []string{"required"}},
		{name: "fixed-out-of-range", reason: "a fixed n the target refuses",
			alias:  alias(obj(map[string]any{"q": map[string]any{"type": "string"}}, "q"), map[string]any{"n": 99.0}, nil),
			wantIn: []string{"/properties/n"}},
		{name: "injected-unknown", reason: "injects a property the target does not declare (additionalProperties: false)",
			alias:  alias(obj(map[string]any{"q": map[string]any{"type": "string"}}, "q"), nil, map[string]string{"org": "subject"}),
			wantIn: []string{"/properties/org"}},
		{name: "extra-property", reason: "a property the target does not have",
			alias:  alias(obj(map[string]any{"q": map[string]any{"type": "string", "maxLength": 100}, "zz": map[string]any{}}, "q"), nil, nil),
			wantIn: []string{"/properties/zz"}},
	}
	for _, tc := range cases {
		te := registry.CheckAlias(tc.alias, target)
		if len(tc.wantIn) == 0 {
			if te != nil {
				t.Errorf("%s: refused: %v (%s)", tc.name, te, tc.reason)
			}
			continue
		}
		if te == nil {
			t.Errorf("%s: admitted, want a refusal (%s)", tc.name, tc.reason)
			continue
		}
		for _, s := range tc.wantIn {
			if !strings.Contains(te.Error(), s) {
				t.Errorf("%s: %v does not name %s (%s)", tc.name, te, s, tc.reason)
			}
		}
	}
	chained := alias(obj(nil), nil, nil)
	if te := registry.CheckAlias(chained, registry.Tool{Name: "other", Spec: chained.Spec}); te == nil || !strings.Contains(te.Error(), "itself an alias") {
		t.Errorf("an alias of an alias: %v", te)
	}
}

// TestAliasAdmission: what the alias kind refuses on its own, before any
// target is looked at.
func TestAliasAdmission(t *testing.T) {
	st, _ := structpb.NewStruct(map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}})
	mk := func(a *registry.Alias, tls bool) registry.Tool {
		tl := registry.Tool{Name: "op", InputSchema: st, Spec: &registry.BackendSpec{Alias: a}}
		if tls {
			tl.Spec.TLS = &registry.TransportSecurity{Require: true}
		}
		return tl
	}
	cases := []struct {
		name, reason, wantIn string
		tool                 registry.Tool
	}{
		{"self", "an alias of itself", "another tool", mk(&registry.Alias{Target: "op"}, false)},
		{"bad-target", "a target no tool can be named", "spec.alias.target", mk(&registry.Alias{Target: "a b"}, false)},
		{"tls", "an alias has no transport", "spec.tls", mk(&registry.Alias{Target: "t"}, true)},
		{"shown", "the model's schema declares an injected property", "/properties/q", mk(&registry.Alias{Target: "t", Injected: map[string]string{"q": "subject"}}, false)},
		{"source", "an unknown identity source", "source must be", mk(&registry.Alias{Target: "t", Injected: map[string]string{"x": "password"}}, false)},
		{"both", "fixed and injected at once", "also a fixed", mk(&registry.Alias{Target: "t", Fixed: map[string]any{"x": 1.0}, Injected: map[string]string{"x": "subject"}}, false)},
	}
	for _, tc := range cases {
		_, err := registry.Compile(tc.tool)
		if err == nil || !strings.Contains(err.Error(), tc.wantIn) {
			t.Errorf("%s: %v, want a refusal naming %q (%s)", tc.name, err, tc.wantIn, tc.reason)
		}
	}
}
