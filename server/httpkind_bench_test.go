package server_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
)

// BenchmarkHTTPOperation is the per-call cost of an HTTP-operation tool
// (createPet of testdata/petstore.openapi.yaml) through the gateway next
// to a direct net/http call to the same handler with the same JSON body,
// both on loopback in one run (BENCHMARKS.md).
func BenchmarkHTTPOperation(b *testing.B) {
	ctx := context.Background()
	svc := &petService{}
	lis := gatewaytest.Listen(b)
	hs := &http.Server{Handler: svc.handler()}
	go hs.Serve(lis)
	b.Cleanup(func() { hs.Close() })
	baseURL := "http://" + lis.Addr().String()
	env := gatewaytest.Start(b, gatewaytest.WithoutRecording())
	importPetsTB(b, ctx, env, baseURL, "")

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.Cleanup(client.CloseIdleConnections)
	body := []byte(`{"name":"Rex","tags":["good","old"]}`)
	gatewayReq := &gatewayv1.InvokeToolRequest{Tool: "createPet", CallId: "bench",
		Arguments: gatewaytest.Args(b, map[string]any{"name": "Rex", "tags": []any{"good", "old"}})}

	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/pets", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	})
	b.Run("gateway", func(b *testing.B) {
		invokeParallel(b, env.Client, gatewayReq)
	})
}
