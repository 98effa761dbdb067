package mcpupstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/internal/mcpupstream"
)

// TestCallerMetaDeclaresRelayableInput: on a 2026-07-28 session a call's
// _meta declares what the session declared — as the SDK's own session
// with the same handlers writes it — narrowed to what the call's caller
// can be asked (WithCallerInput), never more than the session declared.
func TestCallerMetaDeclaresRelayableInput(t *testing.T) {
	up := startDifferentialUpstream(t, true, true)
	ctx := context.Background()
	both := mcpupstream.InputKinds{Elicitation: true, Sampling: true}
	caps := func(p map[string]any) string {
		meta, _ := p["_meta"].(map[string]any)
		b, _ := json.Marshal(meta[mcp.MetaKeyClientCapabilities])
		return string(b)
	}
	// The SDK's session declaring both (its handlers), for the bytes.
	sdk, err := mcpupstream.Connect(ctx, up.URL, mcpupstream.Header{}, mcpupstream.ConnectOptions{Input: both})
	if err != nil {
		t.Fatal(err)
	}
	defer sdk.Close()
	if _, err := sdk.CallTool(ctx, &mcp.CallToolParams{Name: "sum", Arguments: json.RawMessage(`{"a":1,"b":2}`)}); err != nil {
		t.Fatal(err)
	}
	sdkParams := up.last(t).params
	if got := caps(sdkParams); got != `{"elicitation":{"form":{}},"roots":{"listChanged":true},"sampling":{}}` {
		t.Fatalf("the SDK's session declaring both writes %s", got)
	}
	for _, tc := range []struct {
		name, reason string
		session      mcpupstream.InputKinds
		caller       *mcpupstream.InputKinds // nil: not said
		want         string                  // the clientCapabilities ("sdk": as the SDK's session wrote them)
	}{
		{"unsaid", "a call that does not say its caller's kinds declares what the session declared, as the SDK does", both, nil, "sdk"},
		{"caller-both", "a caller that can answer both: as the SDK", both, &both, "sdk"},
		{"caller-elicitation", "a caller that can answer elicitation only is not offered to be sampled",
			both, &mcpupstream.InputKinds{Elicitation: true}, `{"elicitation":{"form":{}},"roots":{"listChanged":true}}`},
		{"caller-none", "a caller that can be asked nothing (gRPC, no face session): roots only",
			both, &mcpupstream.InputKinds{}, `{"roots":{"listChanged":true}}`},
		{"session-none", "a caller's kinds never exceed what the session declared (policy forbids them)",
			mcpupstream.InputKinds{}, &both, `{"roots":{"listChanged":true}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fast, err := mcpupstream.ConnectCaller(ctx, up.URL, mcpupstream.Header{}, mcpupstream.ConnectOptions{Input: tc.session, ClientNotificationsOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer fast.Close()
			cctx := ctx
			if tc.caller != nil {
				cctx = mcpupstream.WithCallerInput(ctx, *tc.caller)
			}
			if _, err := fast.CallTool(cctx, "sum", json.RawMessage(`{"a":1,"b":2}`)); err != nil {
				t.Fatal(err)
			}
			got := up.last(t).params
			if tc.want == "sdk" {
				if !reflect.DeepEqual(got, sdkParams) {
					t.Errorf("%s:\n params %v\n sdk    %v", tc.reason, got, sdkParams)
				}
				return
			}
			if c := caps(got); c != tc.want {
				t.Errorf("%s: clientCapabilities %s, want %s", tc.reason, c, tc.want)
			}
		})
	}
}

// TestOneStreamInputOutsideCall: over legacy SSE (one stream), an
// upstream's request for input while no request of the gateway is in
// flight has no call to belong to: refused, never handed to anyone.
func TestOneStreamInputOutsideCall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The go-sdk server handles a session's first requests concurrently
	// and may record it as 2026-07-28 (from a request's _meta) before or
	// after the initialize of an older revision; as 2026-07-28 it refuses
	// to send the elicitation itself (not a JSON-RPC answer), and nothing
	// reaches the gateway. Such a try says nothing either way: a new
	// session is tried, at most 5 in all.
	for try := 1; ; try++ {
		srv := mcp.NewServer(&mcp.Implementation{Name: "asks-outside", Version: "1"}, nil)
		up := httptest.NewServer(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil))
		c, err := mcpupstream.ConnectCaller(ctx, up.URL, mcpupstream.Header{}, mcpupstream.ConnectOptions{
			Transport: mcpupstream.TransportSSE, Input: mcpupstream.InputKinds{Elicitation: true, Sampling: true}})
		if err != nil {
			up.Close()
			t.Fatal(err)
		}
		var errs []error
		for ss := range srv.Sessions() {
			_, err := ss.Elicit(ctx, &mcp.ElicitParams{Message: "Your name?", RequestedSchema: map[string]any{"type": "object"}})
			errs = append(errs, err)
		}
		c.Close()
		up.Close()
		if len(errs) != 1 {
			t.Fatalf("the upstream has %d sessions, want 1", len(errs))
		}
		var rpc *jsonrpc.Error
		if !errors.As(errs[0], &rpc) && errs[0] != nil && strings.Contains(errs[0].Error(), "cannot be sent while serving a request") && try < 5 {
			continue
		}
		if !errors.As(errs[0], &rpc) || rpc.Code != jsonrpc.CodeMethodNotFound || !strings.Contains(rpc.Message, "no request of the gateway is in flight") {
			t.Errorf("an elicitation outside any call: %v, want -32601 saying no request is in flight", errs[0])
		}
		return
	}
}
