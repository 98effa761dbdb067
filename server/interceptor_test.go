package server

import (
	"context"
	"testing"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/demotools"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/memstore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
)

// testPipeline is a pipeline over a real registry holding the demo tools.
// Its pool is never used by these tests (the handlers are local).
func testPipeline(t *testing.T) *pipeline {
	t.Helper()
	ctx := context.Background()
	tools, err := registry.ParseTools(demotools.ToolsYAML("127.0.0.1:1"), "demo")
	if err != nil {
		t.Fatal(err)
	}
	store := memstore.New()
	t.Cleanup(func() { store.Close() })
	if err := registry.Seed(ctx, store, tools); err != nil {
		t.Fatal(err)
	}
	reg := registry.New(store)
	if err := reg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	return &pipeline{reg: reg}
}

var invokeInfo = &grpc.UnaryServerInfo{FullMethod: gatewayv1.ToolGatewayService_InvokeTool_FullMethodName}

// TestNormalizeInterceptorRewritesTheRequest checks the contract handlers
// rely on: the request they get holds the normalized arguments, the call
// state is in ctx, and the repairs are added to the response.
func TestNormalizeInterceptorRewritesTheRequest(t *testing.T) {
	p := testPipeline(t)
	args, _ := structpb.NewStruct(map[string]any{"title": "A &amp;amp; B", "tags": `["x"]`})
	req := &gatewayv1.InvokeToolRequest{Tool: "create_note", Arguments: args, CallId: "c"}
	var handled bool
	resp, err := normalizeInterceptor(p)(context.Background(), req, invokeInfo, func(ctx context.Context, r any) (any, error) {
		handled = true
		got := r.(*gatewayv1.InvokeToolRequest).GetArguments().GetFields()
		if got["title"].GetStringValue() != "A & B" || len(got["tags"].GetListValue().GetValues()) != 1 {
			t.Errorf("handler saw arguments %v, want the normalized ones", got)
		}
		if c := callFrom(ctx); c == nil || c.entry == nil || c.caller.GetSubject() != "anonymous" {
			t.Errorf("call state in ctx = %+v", c)
		}
		return &gatewayv1.InvokeToolResponse{}, nil
	})
	if err != nil || !handled {
		t.Fatalf("err = %v, handled = %v", err, handled)
	}
	if n := len(resp.(*gatewayv1.InvokeToolResponse).GetRepairs()); n != 2 {
		t.Errorf("response carries %d repairs, want 2", n)
	}
	if args.GetFields()["title"].GetStringValue() != "A &amp;amp; B" {
		t.Error("the model's original arguments were mutated")
	}
}

func TestValidateInterceptorStopsBeforeTheHandler(t *testing.T) {
	p := testPipeline(t)
	args, _ := structpb.NewStruct(map[string]any{"ops": `{"op":"add"}`})
	req := &gatewayv1.InvokeToolRequest{Tool: "apply_ops", Arguments: args}
	_, err := normalizeInterceptor(p)(context.Background(), req, invokeInfo, func(ctx context.Context, r any) (any, error) {
		return validateInterceptor(p)(ctx, r, invokeInfo, func(context.Context, any) (any, error) {
			t.Error("handler ran for invalid arguments")
			return &gatewayv1.InvokeToolResponse{}, nil
		})
	})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("err = %v, want InvalidArgument", err)
	}
}

// TestInvokeRunsTheStagesInOrder covers the transport-free entry point the
// MCP endpoint will use: it stops at the first failing stage.
func TestInvokeRunsTheStagesInOrder(t *testing.T) {
	p := testPipeline(t)
	cases := []struct {
		name, reason string
		c            *call
		want         string // error type
		repairs      int
	}{
		{name: "unknown", reason: "lookup fails first", c: &call{tool: "nope"}, want: "*server.toolNotFoundError"},
		{name: "invalid", reason: "validation runs on the normalized arguments and carries the repairs",
			c: &call{tool: "create_note", args: mustStruct(t, map[string]any{"title": "&amp;amp;", "tags": "{}"})}, want: "*registry.ValidationError", repairs: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, rep, err := p.invoke(context.Background(), tc.c)
			if got := typeName(err); got != tc.want {
				t.Errorf("error %v is %s, want %s (%s)", err, got, tc.want, tc.reason)
			}
			if len(rep.Repairs) != tc.repairs {
				t.Errorf("%d repairs, want %d (%s)", len(rep.Repairs), tc.repairs, tc.reason)
			}
		})
	}
}

func mustStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func typeName(v any) string {
	switch v.(type) {
	case *toolNotFoundError:
		return "*server.toolNotFoundError"
	case *registry.ValidationError:
		return "*registry.ValidationError"
	case nil:
		return "nil"
	}
	return "other"
}
