package mcpimport

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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

// TestListIsBounded: List reads every page of an upstream's tools up to
// its bound (MaxListed; a small one here), and refuses an upstream that
// lists more (one that pages without end cannot grow the gateway).
func TestListIsBounded(t *testing.T) {
	for _, tc := range []struct {
		reason string
		n      int
		ok     bool
	}{
		{"every page, up to the bound", 25, true},
		{"one past the bound", 26, false},
	} {
		srv := mcp.NewServer(&mcp.Implementation{Name: "many", Version: "1"}, &mcp.ServerOptions{PageSize: 10})
		for i := range tc.n {
			mcp.AddTool(srv, &mcp.Tool{Name: fmt.Sprintf("t%05d", i)}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{}, nil, nil
			})
		}
		ct, st := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(t.Context(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(t.Context(), ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		tools, _, err := ListWithin(t.Context(), cs, Bounds{Tools: 25})
		if tc.ok && (err != nil || len(tools) != tc.n) {
			t.Errorf("%s: %d tools, %v; want %d", tc.reason, len(tools), err, tc.n)
		}
		if !tc.ok && (err == nil || !strings.Contains(err.Error(), "more than 25 tools")) {
			t.Errorf("%s: %d tools, %v; want an error naming the bound", tc.reason, len(tools), err)
		}
		cs.Close()
		ss.Close()
	}
}
