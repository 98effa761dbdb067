package mcpupstream_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/internal/mcpupstream"
)

// TestCallerRequestMatchesSDK: a prompts/get and a resources/read the
// Caller sends itself (Request) reach a go-sdk 2026-07-28 server as the
// SDK's own client sends them — the same params (_meta, arguments, a
// retry's inputResponses and requestState) and the same Mcp-Method and
// Mcp-Name headers — and the answer decodes as the SDK decodes it; an
// InputRequiredResult comes back whole (its resultType, requests and
// state), where the SDK's client would try to fulfil it itself.
func TestCallerRequestMatchesSDK(t *testing.T) {
	var mu sync.Mutex
	var seen []string // each request as the server read it: its headers and params
	note := func(h http.Header, params any) {
		b, _ := json.Marshal(params)
		mu.Lock()
		seen = append(seen, h.Get("Mcp-Method")+" "+h.Get("Mcp-Name")+" "+string(b))
		mu.Unlock()
	}
	last := func() string {
		mu.Lock()
		defer mu.Unlock()
		if len(seen) == 0 {
			return ""
		}
		return seen[len(seen)-1]
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "rounds", Version: "1"}, nil)
	ask := mcp.InputRequestMap{"q": &mcp.ElicitParams{Message: "Name?", RequestedSchema: map[string]any{"type": "object"}}}
	s.AddPrompt(&mcp.Prompt{Name: "p ✓", Arguments: []*mcp.PromptArgument{{Name: "a"}}}, func(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		note(r.Extra.Header, r.Params)
		if r.Params.RequestState == "" {
			return &mcp.GetPromptResult{InputRequests: ask, RequestState: "st"}, nil
		}
		return &mcp.GetPromptResult{Description: "d", Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi " + r.Params.Arguments["a"]}}}}, nil
	})
	s.AddResource(&mcp.Resource{URI: "doc://r", Name: "r"}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		note(r.Extra.Header, r.Params)
		if r.Params.RequestState == "" {
			return &mcp.ReadResourceResult{InputRequests: ask, RequestState: "st"}, nil
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "body"}}}, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(srv.Close)
	ctx := context.Background()
	sdk, err := mcpupstream.Connect(ctx, srv.URL, mcpupstream.Header{}, mcpupstream.ConnectOptions{MaxResponseBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer sdk.Close()
	fast, err := mcpupstream.ConnectCaller(ctx, srv.URL, mcpupstream.Header{}, mcpupstream.ConnectOptions{MaxResponseBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Close()
	if !fast.Rounds() {
		t.Fatal("a streamable HTTP caller without client options sends its own requests")
	}
	answers := mcp.InputResponseMap{"q": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}}
	enc, err := json.Marshal(answers)
	if err != nil {
		t.Fatal(err)
	}
	retry := &mcpupstream.Retry{Responses: enc, State: "st"}

	for _, row := range []struct {
		reason string
		sdk    func() (any, error)
		fast   func() (any, error)
	}{
		{"prompts/get retry: arguments, answers and state", func() (any, error) {
			return sdk.GetPrompt(ctx, &mcp.GetPromptParams{Name: "p ✓", Arguments: map[string]string{"a": "x"}, InputResponses: answers, RequestState: "st"})
		}, func() (any, error) {
			out := &mcp.GetPromptResult{}
			return out, fast.Request(ctx, "prompts/get", "p ✓", &mcp.GetPromptParams{Name: "p ✓", Arguments: map[string]string{"a": "x"}}, retry, out)
		}},
		{"resources/read retry: the URI as Mcp-Name", func() (any, error) {
			return sdk.ReadResource(ctx, &mcp.ReadResourceParams{URI: "doc://r", InputResponses: answers, RequestState: "st"})
		}, func() (any, error) {
			out := &mcp.ReadResourceResult{}
			return out, fast.Request(ctx, "resources/read", "doc://r", &mcp.ReadResourceParams{URI: "doc://r"}, retry, out)
		}},
	} {
		t.Run(row.reason, func(t *testing.T) {
			want, err := row.sdk()
			if err != nil {
				t.Fatal(err)
			}
			wantSeen := last()
			got, err := row.fast()
			if err != nil {
				t.Fatal(err)
			}
			if gotSeen := last(); gotSeen != wantSeen {
				t.Errorf("the server read\n%s\nwant (the SDK's)\n%s", gotSeen, wantSeen)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("decoded %+v, want (the SDK's) %+v", got, want)
			}
		})
	}

	t.Run("an InputRequiredResult comes back whole", func(t *testing.T) {
		out := &mcp.GetPromptResult{}
		if err := fast.Request(ctx, "prompts/get", "p ✓", &mcp.GetPromptParams{Name: "p ✓"}, nil, out); err != nil {
			t.Fatal(err)
		}
		if !out.NeedsInput() || out.RequestState != "st" || len(out.InputRequests) != 1 {
			t.Fatalf("got %+v, want input_required with the server's request and state", out)
		}
		if _, ok := out.InputRequests["q"].(*mcp.ElicitParams); !ok {
			t.Fatalf("the request decoded as %T", out.InputRequests["q"])
		}
	})
}
