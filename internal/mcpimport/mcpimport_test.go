package mcpimport

import (
	"strings"
	"testing"
)

func TestMapName(t *testing.T) {
	cases := []struct {
		name, reason, prefix, upstream, want string
		ok                                   bool
	}{
		{name: "kept", reason: "a name in the pattern is kept, after the prefix", prefix: "up.", upstream: "add_items", want: "up.add_items", ok: true},
		{name: "space", reason: "characters outside the pattern become _", prefix: "up.", upstream: "say hello", want: "up.say_hello", ok: true},
		{name: "unicode", reason: "a non-ASCII letter is one _ (per character, not per byte)", prefix: "", upstream: "café", want: "caf_", ok: true},
		{name: "too-long", reason: "over 64 bytes is refused, not cut (a cut could collide silently)", prefix: "p.", upstream: strings.Repeat("a", 63),
			want: "p." + strings.Repeat("a", 63), ok: false},
		{name: "empty", reason: "an upstream tool with no name has no gateway name", prefix: "up.", upstream: "", want: "up.", ok: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := MapName(tc.prefix, tc.upstream)
			if got != tc.want || ok != tc.ok {
				t.Errorf("MapName(%q, %q) = %q, %v; want %q, %v (%s)", tc.prefix, tc.upstream, got, ok, tc.want, tc.ok, tc.reason)
			}
		})
	}
}
