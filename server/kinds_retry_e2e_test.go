package server_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/registry"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
)

// TestHTTPOperationRetriesOnlyIdempotentTools: an HTTP API answering 503
// once, then 200: a tool marked idempotent is retried and succeeds (two
// requests); the same operation unmarked is Unavailable after one request.
func TestHTTPOperationRetriesOnlyIdempotentTools(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	api := func() (*httptest.Server, *atomic.Int32) {
		var n atomic.Int32
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if n.Add(1) == 1 {
				http.Error(w, "warming up", http.StatusServiceUnavailable)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"ok":true}`))
		}))
		t.Cleanup(s.Close)
		return s, &n
	}
	idemAPI, idemHits := api()
	onceAPI, onceHits := api()
	yes := true
	tool := func(name, base string, idem bool) gatewaytest.Option {
		return gatewaytest.WithTool(func(string) registry.Tool {
			t := registry.Tool{Name: name, InputSchema: &structpb.Struct{Fields: map[string]*structpb.Value{"type": structpb.NewStringValue("object")}},
				Spec: &registry.BackendSpec{HTTPOperation: &registry.HTTPOperation{BaseURL: base, Method: "GET", Path: "/x"}}}
			if idem {
				t.Annotations = &registry.ToolAnnotations{IdempotentHint: &yes}
			}
			return t
		})
	}
	env := gatewaytest.Start(t, tool("retry.idempotent", idemAPI.URL, true), tool("retry.once", onceAPI.URL, false))
	if _, err := invoke(ctx, env, "retry.idempotent"); err != nil || idemHits.Load() != 2 {
		t.Errorf("idempotent tool over a 503-then-200 API: %v after %d requests; want OK after 2", err, idemHits.Load())
	}
	if _, err := invoke(ctx, env, "retry.once"); status.Code(err) != codes.Unavailable || onceHits.Load() != 1 {
		t.Errorf("unmarked tool: %v after %d requests; want Unavailable after exactly 1", err, onceHits.Load())
	}
}
