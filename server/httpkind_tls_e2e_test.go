package server_test

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/registry"
	"google.golang.org/protobuf/types/known/structpb"
)

// TestHTTPOperationTLS: an HTTP-operation tool with spec.tls reaches an
// https API whose certificate chains to the tool's CA file; the same API
// without the setting is refused (the host's roots do not know it); a tool
// that requires TLS with an http base URL is refused before any request —
// never plaintext.
func TestHTTPOperationTLS(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	var plainHits atomic.Int32
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(secure.Close)
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { plainHits.Add(1) }))
	t.Cleanup(plain.Close)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: secure.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	httpTool := func(name, base string, ts *registry.TransportSecurity) gatewaytest.Option {
		return gatewaytest.WithTool(func(string) registry.Tool {
			return registry.Tool{Name: name, InputSchema: &structpb.Struct{Fields: map[string]*structpb.Value{"type": structpb.NewStringValue("object")}},
				Spec: &registry.BackendSpec{HTTPOperation: &registry.HTTPOperation{BaseURL: base, Method: "GET", Path: "/status"}, TLS: ts}}
		})
	}
	env := gatewaytest.Start(t,
		httpTool("tls.trusted", secure.URL, &registry.TransportSecurity{CAFile: caFile}),
		httpTool("tls.untrusted", secure.URL, nil),
		httpTool("tls.required", plain.URL, &registry.TransportSecurity{Require: true}))

	resp, err := invoke(ctx, env, "tls.trusted")
	if err != nil || !resp.GetResult().GetStructValue().GetFields()["ok"].GetBoolValue() {
		t.Errorf("https with the tool's CA: %v %v; want the API's answer", resp, err)
	}
	_, err = invoke(ctx, env, "tls.untrusted")
	wantUnavailableNaming(t, err, "tls.untrusted", "an unknown certificate authority is refused", secure.URL, caFile)
	_, err = invoke(ctx, env, "tls.required")
	wantUnavailableNaming(t, err, "tls.required", "TLS required with an http base URL: no plaintext", plain.URL)
	if n := plainHits.Load(); n != 0 {
		t.Errorf("the plaintext API got %d requests; want none (TLS required)", n)
	}
}
