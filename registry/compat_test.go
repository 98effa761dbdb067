package registry_test

import (
	"fmt"
	"testing"

	"github.com/flowdrop/gateway/registry"
)

func TestCheckCompatibility(t *testing.T) {
	cases := []struct {
		reason   string
		old, new string
		want     []string // "kind path"
	}{
		{reason: "identical", old: `{"type":"object","properties":{"a":{"type":"string"}}}`, new: `{"type":"object","properties":{"a":{"type":"string"}}}`},
		{reason: "new optional parameter", old: `{"type":"object","properties":{}}`, new: `{"type":"object","properties":{"b":{"type":"string"}}}`},
		{reason: "parameter removed", old: `{"type":"object","properties":{"a":{},"b":{}}}`, new: `{"type":"object","properties":{"a":{}}}`,
			want: []string{"removed /properties/b"}},
		{reason: "existing parameter becomes required", old: `{"type":"object","properties":{"a":{}}}`, new: `{"type":"object","properties":{"a":{}},"required":["a"]}`,
			want: []string{"newly-required /properties/a"}},
		{reason: "new required parameter", old: `{"type":"object","properties":{}}`, new: `{"type":"object","properties":{"z":{}},"required":["z"]}`,
			want: []string{"newly-required /properties/z"}},
		{reason: "required stays required", old: `{"type":"object","properties":{"a":{}},"required":["a"]}`, new: `{"type":"object","properties":{"a":{}},"required":["a"]}`},
		{reason: "array to string narrows", old: `{"type":"object","properties":{"ops":{"type":"array"}}}`, new: `{"type":"object","properties":{"ops":{"type":"string"}}}`,
			want: []string{"narrowed /properties/ops/type"}},
		{reason: "object to string narrows", old: `{"type":"object","properties":{"o":{"type":"object"}}}`, new: `{"type":"object","properties":{"o":{"type":"string"}}}`,
			want: []string{"narrowed /properties/o/type"}},
		{reason: "number to integer narrows", old: `{"type":"object","properties":{"n":{"type":"number"}}}`, new: `{"type":"object","properties":{"n":{"type":"integer"}}}`,
			want: []string{"narrowed /properties/n/type"}},
		{reason: "integer to number widens", old: `{"type":"object","properties":{"n":{"type":"integer"}}}`, new: `{"type":"object","properties":{"n":{"type":"number"}}}`},
		{reason: "type list widened", old: `{"type":"object","properties":{"a":{"type":"string"}}}`, new: `{"type":"object","properties":{"a":{"type":["string","null"]}}}`},
		{reason: "type list narrowed", old: `{"type":"object","properties":{"a":{"type":["string","null"]}}}`, new: `{"type":"object","properties":{"a":{"type":"string"}}}`,
			want: []string{"narrowed /properties/a/type"}},
		{reason: "untyped to typed narrows", old: `{"type":"object","properties":{"a":{}}}`, new: `{"type":"object","properties":{"a":{"type":"string"}}}`,
			want: []string{"narrowed /properties/a/type"}},
		{reason: "types followed through local $ref", old: `{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"array"}}}`, new: `{"type":"object","properties":{"a":{"type":"string"}}}`,
			want: []string{"narrowed /properties/a/type"}},
		{reason: "anyOf union", old: `{"type":"object","properties":{"a":{"anyOf":[{"type":"string"},{"type":"integer"}]}}}`, new: `{"type":"object","properties":{"a":{"type":"string"}}}`,
			want: []string{"narrowed /properties/a/type"}},
		{reason: "nested object property removed and required", old: `{"type":"object","properties":{"o":{"type":"object","properties":{"x":{},"y":{}}}}}`, new: `{"type":"object","properties":{"o":{"type":"object","properties":{"x":{}},"required":["x"]}}}`,
			want: []string{"newly-required /properties/o/properties/x", "removed /properties/o/properties/y"}},
		{reason: "several at once, sorted by path", old: `{"type":"object","properties":{"b":{"type":"array"},"a":{}}}`, new: `{"type":"object","properties":{"b":{"type":"string"}},"required":["b"]}`,
			want: []string{"removed /properties/a", "newly-required /properties/b", "narrowed /properties/b/type"}},
	}
	for _, c := range cases {
		notes := registry.CheckCompatibility(registry.Tool{InputSchema: schema(t, c.old)}, registry.Tool{InputSchema: schema(t, c.new)})
		var got []string
		for _, n := range notes {
			got = append(got, n.Kind+" "+n.Path)
			if n.Message == "" {
				t.Errorf("%s: note without message: %+v", c.reason, n)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: notes %v, want %v", c.reason, got, c.want)
		}
	}
}
