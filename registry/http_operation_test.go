package registry_test

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/registry"
)

// TestCompileHTTPOperation: an HTTP operation is admitted only with an
// http(s) base URL without credentials, a known method, and every path
// placeholder mapped by a path parameter; headers an argument must not set
// are refused at registration, not at call time.
func TestCompileHTTPOperation(t *testing.T) {
	ok := func() *registry.HTTPOperation {
		return &registry.HTTPOperation{BaseURL: "http://127.0.0.1:8080/api", Method: "GET", Path: "/pets/{id}",
			Parameters: []registry.HTTPParameter{{Name: "id", In: registry.HTTPInPath}, {Name: "tag", In: registry.HTTPInQuery}}}
	}
	with := func(f func(*registry.HTTPOperation)) *registry.HTTPOperation { op := ok(); f(op); return op }
	cases := []struct {
		name, reason      string
		op                *registry.HTTPOperation
		grpc              bool // a gRPC method as well
		wantField, wantIn string
	}{
		{name: "ok", reason: "a mapped operation is admitted", op: ok()},
		{name: "two-kinds", reason: "one spec, one kind", op: ok(), grpc: true, wantField: "spec", wantIn: "exactly one"},
		{name: "scheme", reason: "only http and https", op: with(func(o *registry.HTTPOperation) { o.BaseURL = "file:///etc" }),
			wantField: "spec.http_operation.base_url", wantIn: "http:// or https://"},
		{name: "credentials", reason: "a password in the URL would be shown to operators and logged",
			op:        with(func(o *registry.HTTPOperation) { o.BaseURL = "https://u:secret@api.example" }),
			wantField: "spec.http_operation.base_url", wantIn: "credentials"},
		{name: "query", reason: "the base URL carries no query: arguments make it",
			op: with(func(o *registry.HTTPOperation) { o.BaseURL = "https://api.example/?k=v" }), wantField: "spec.http_operation.base_url", wantIn: "query"},
		{name: "method", reason: "TRACE and made-up methods are refused", op: with(func(o *registry.HTTPOperation) { o.Method = "TRACE" }),
			wantField: "spec.http_operation.method", wantIn: "TRACE"},
		{name: "unmapped-placeholder", reason: "every {placeholder} needs a path parameter",
			op: with(func(o *registry.HTTPOperation) { o.Path = "/pets/{id}/{sub}" }), wantField: "spec.http_operation.parameters", wantIn: "{sub}"},
		{name: "path-param-not-in-path", reason: "a path parameter must appear in the template",
			op: with(func(o *registry.HTTPOperation) { o.Path = "/pets" }), wantField: "spec.http_operation.parameters[0].name", wantIn: "not in the path"},
		{name: "duplicate", reason: "a name maps to one place", op: with(func(o *registry.HTTPOperation) {
			o.Parameters = append(o.Parameters, registry.HTTPParameter{Name: "tag", In: registry.HTTPInHeader})
		}), wantField: "spec.http_operation.parameters[2].name", wantIn: "twice"},
		{name: "hop-by-hop", reason: "hop-by-hop headers belong to the transport", op: with(func(o *registry.HTTPOperation) {
			o.Parameters = append(o.Parameters, registry.HTTPParameter{Name: "connection", In: registry.HTTPInHeader})
		}), wantField: "spec.http_operation.parameters[2].name", wantIn: "Connection"},
		{name: "host", reason: "Host is the base URL's", op: with(func(o *registry.HTTPOperation) {
			o.Parameters = append(o.Parameters, registry.HTTPParameter{Name: "Host", In: registry.HTTPInHeader})
		}), wantField: "spec.http_operation.parameters[2].name", wantIn: "Host"},
		{name: "flowdrop-header", reason: "an argument must not forge the gateway's caller header", op: with(func(o *registry.HTTPOperation) {
			o.Parameters = append(o.Parameters, registry.HTTPParameter{Name: "X-Flowdrop-Caller", In: registry.HTTPInHeader})
		}), wantField: "spec.http_operation.parameters[2].name", wantIn: "X-Flowdrop-"},
		{name: "body-both-ways", reason: "the body is one argument or an object of body parameters, not both", op: with(func(o *registry.HTTPOperation) {
			o.Parameters = append(o.Parameters, registry.HTTPParameter{Name: "name", In: registry.HTTPInBody})
			o.BodyArgument = "body"
		}), wantField: "spec.http_operation.body_argument", wantIn: "either"},
		{name: "unspecified-in", reason: "every parameter says where it goes", op: with(func(o *registry.HTTPOperation) {
			o.Parameters = append(o.Parameters, registry.HTTPParameter{Name: "x"})
		}), wantField: "spec.http_operation.parameters[2].in", wantIn: "path, query, header or body"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := &registry.BackendSpec{HTTPOperation: tc.op}
			if tc.grpc {
				spec.GRPCMethod = &registry.GRPCMethod{Target: "127.0.0.1:1", Method: "/p.S/M"}
			}
			tool := registry.Tool{Name: "pets.get", Spec: spec,
				InputSchema: &structpb.Struct{Fields: map[string]*structpb.Value{"type": structpb.NewStringValue("object")}}}
			_, err := registry.Compile(tool)
			if tc.wantField == "" {
				if err != nil {
					t.Fatalf("Compile: %v (%s)", err, tc.reason)
				}
				return
			}
			var te *registry.ToolError
			if !errors.As(err, &te) || te.Field != tc.wantField || !strings.Contains(te.Reason, tc.wantIn) {
				t.Errorf("Compile: %v, want a ToolError on %s containing %q (%s)", err, tc.wantField, tc.wantIn, tc.reason)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("Compile: %v quotes the credential", err)
			}
		})
	}
}
