package server_test

import (
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/openapiimport"
	"github.com/flowdrop/gateway/internal/policy"
)

// TestHTTPOperationURLHiddenFromInvokers: an HTTP-operation tool's base
// URL is, like any backend address, shown only to callers that may
// register tools: GetTool and ListTools clear it for an invoker and show
// it to an operator; the method and path template stay visible. The
// admin status page names the kind (method and path).
func TestHTTPOperationURLHiddenFromInvokers(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	p := testPolicy(nil)
	const keyOperator = "operator-key-0123456789"
	p.Auth.APIKeys = append(p.Auth.APIKeys, policy.APIKey{Name: "operator", SHA256: policy.HashAPIKey(keyOperator),
		Roles: []string{policy.RoleAdmin, policy.RoleInvoker}})
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(p), gatewaytest.WithAdmin())
	data, err := os.ReadFile("testdata/petstore.openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapiimport.Load(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	const baseURL = "http://127.0.0.1:9/api"
	tools, _, err := openapiimport.Tools(doc, openapiimport.Options{BaseURL: baseURL, Operation: "getPet", Prefix: "hidden."})
	if err != nil {
		t.Fatal(err)
	}
	rc := gatewayv1.NewToolRegistryServiceClient(env.Conn)
	if _, err := rc.RegisterTool(withKey(keyAdmin), &gatewayv1.RegisterToolRequest{Tool: tools[0]}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		key, reason string
		wantURL     string
	}{
		{keyInvoker, "an invoker reads no base URL", ""},
		{keyOperator, "an operator (admin and invoker) reads it", baseURL},
	} {
		get, err := rc.GetTool(withKey(tc.key), &gatewayv1.GetToolRequest{Name: "hidden.getPet"})
		if err != nil {
			t.Fatalf("GetTool: %v", err)
		}
		list, err := rc.ListTools(withKey(tc.key), &gatewayv1.ListToolsRequest{NamePrefix: "hidden.getPet"})
		if err != nil || len(list.GetTools()) != 1 {
			t.Fatalf("ListTools: %v %v", list, err)
		}
		for what, got := range map[string]*gatewayv1.Tool{"GetTool": get.GetTool(), "ListTools": list.GetTools()[0]} {
			h := got.GetSpec().GetHttpOperation()
			if h.GetBaseUrl() != tc.wantURL || h.GetMethod() != "GET" || h.GetPath() != "/pets/{petId}" {
				t.Errorf("%s as %s: %v; want base URL %q, GET and the path (%s)", what, tc.key, h, tc.wantURL, tc.reason)
			}
		}
	}

	resp, err := http.Get(env.AdminURL + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	page, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(page), "HTTP GET /pets/{petId}") {
		t.Errorf("the status page does not name the tool's kind as %q", "HTTP GET /pets/{petId}")
	}
}
