package grpcapi

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/flowdrop/gateway/registry/schema"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/demotools"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/memstore"
	"github.com/flowdrop/gateway/server/pipeline"
)

// fakeBackend stands in for a backend kind: it remembers the arguments
// each call reached it with and answers "ok".
type fakeBackend struct {
	mu   sync.Mutex
	args []*structpb.Struct
}

func (b *fakeBackend) Invoke(_ context.Context, c *pipeline.Call) (pipeline.Result, error) {
	args, err := c.Args()
	if err != nil {
		return pipeline.Result{}, err
	}
	b.mu.Lock()
	b.args = append(b.args, args)
	b.mu.Unlock()
	return pipeline.Result{Value: structpb.NewStringValue("ok")}, nil
}

func (b *fakeBackend) calls() []*structpb.Struct {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.args)
}

// testPipeline is a pipeline over a real registry holding the demo tools,
// without policy (every check off, callers anonymous). cfg's Registry is
// set here; the rest of cfg is the test's.
func testPipeline(t *testing.T, cfg pipeline.Config) *pipeline.Pipeline {
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
	cfg.Registry = reg
	return pipeline.New(cfg)
}

// toolInterceptors is InvokeTool's part of the chain (chain.go): the
// outcome, then one adapter per pipeline stage in the pipeline's order.
func toolInterceptors(p *pipeline.Pipeline) grpc.UnaryServerInterceptor {
	ics := []grpc.UnaryServerInterceptor{outcomeInterceptor(p, registryWriteAudit(p.Audit()))}
	for i := range p.Stages() {
		ics = append(ics, stageInterceptor(p, i))
	}
	return chainUnary(ics...)
}

var invokeInfo = &grpc.UnaryServerInfo{FullMethod: gatewayv1.ToolGatewayService_InvokeTool_FullMethodName}

// TestStagesNormalizeTheCall checks the contract the handler relies on: the
// call it dispatches holds the normalized arguments, the call state is in
// ctx, and the repairs are added to the response.
func TestStagesNormalizeTheCall(t *testing.T) {
	t.Parallel()
	be := &fakeBackend{}
	p := testPipeline(t, pipeline.Config{Backend: be})
	args, _ := structpb.NewStruct(map[string]any{"title": "A &amp;amp; B", "tags": `["x"]`})
	req := &gatewayv1.InvokeToolRequest{Tool: "create_note", Arguments: args, CallId: "c"}
	wantNormalized := func(who string, s *structpb.Struct) {
		t.Helper()
		got := s.GetFields()
		if got["title"].GetStringValue() != "A & B" || len(got["tags"].GetListValue().GetValues()) != 1 {
			t.Errorf("%s saw arguments %v, want the normalized ones", who, got)
		}
	}
	var handled bool
	gw := newGatewayService(p, nil)
	resp, err := toolInterceptors(p)(context.Background(), req, invokeInfo, func(ctx context.Context, r any) (any, error) {
		handled = true
		c := pipeline.CallFrom(ctx)
		if c == nil || c.Entry == nil || c.Caller.Subject != "anonymous" {
			t.Fatalf("call state in ctx = %+v", c)
		}
		a, err := c.Args()
		if err != nil {
			t.Fatal(err)
		}
		wantNormalized("handler", a)
		return gw.handler(ctx, r)
	})
	if err != nil || !handled {
		t.Fatalf("err = %v, handled = %v", err, handled)
	}
	if got := be.calls(); len(got) != 1 {
		t.Fatalf("backend called %d times, want once", len(got))
	} else {
		wantNormalized("backend", got[0])
	}
	if n := len(resp.(*gatewayv1.InvokeToolResponse).GetRepairs()); n != 2 {
		t.Errorf("response carries %d repairs, want 2", n)
	}
	if args.GetFields()["title"].GetStringValue() != "A &amp;amp; B" {
		t.Error("the model's original arguments were mutated")
	}
}

func TestValidateStageStopsBeforeTheHandler(t *testing.T) {
	t.Parallel()
	be := &fakeBackend{}
	p := testPipeline(t, pipeline.Config{Backend: be})
	args, _ := structpb.NewStruct(map[string]any{"ops": `{"op":"add"}`})
	req := &gatewayv1.InvokeToolRequest{Tool: "apply_ops", Arguments: args}
	gw := newGatewayService(p, nil)
	_, err := toolInterceptors(p)(context.Background(), req, invokeInfo, func(ctx context.Context, r any) (any, error) {
		t.Error("handler ran for invalid arguments")
		return gw.handler(ctx, r)
	})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("err = %v, want InvalidArgument", err)
	}
	if n := len(be.calls()); n != 0 {
		t.Errorf("backend called %d times for invalid arguments", n)
	}
}

// TestInvokeRunsTheStagesInOrder covers the transport-free entry point the
// MCP endpoint uses: it runs the stages in order and stops at the first
// failing stage.
func TestInvokeRunsTheStagesInOrder(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, reason string
		c            *pipeline.Call
		want         string // error type
		lastStage    string // the stage that failed
		repairs      int
	}{
		{name: "unknown", reason: "lookup fails first", c: pipeline.NewCall("nope", "", nil), want: "tool-not-found", lastStage: "normalize"},
		{name: "invalid", reason: "validation runs on the normalized arguments and carries the repairs",
			c:    pipeline.NewCall("create_note", "", mustStruct(t, map[string]any{"title": "&amp;amp;", "tags": "{}"})),
			want: "*schema.ValidationError", lastStage: "validate", repairs: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var ran []string
			p := testPipeline(t, pipeline.Config{Backend: &fakeBackend{}, StageHook: func(stage string, _ *pipeline.Call) {
				ran = append(ran, stage)
			}})
			_, err := p.Invoke(context.Background(), tc.c)
			if got := typeName(err); got != tc.want {
				t.Errorf("error %v is %s, want %s (%s)", err, got, tc.want, tc.reason)
			}
			if len(tc.c.Report.Repairs) != tc.repairs {
				t.Errorf("%d repairs, want %d (%s)", len(tc.c.Report.Repairs), tc.repairs, tc.reason)
			}
			names := p.StageNames()
			if i := slices.Index(names, tc.lastStage); i < 0 || !slices.Equal(ran, names[:i+1]) {
				t.Errorf("stages run = %q, want %q up to %s (%s)", ran, names, tc.lastStage, tc.reason)
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

// typeName names what an Invoke error is: the unknown-tool refusal, a
// schema validation failure (its cause), or something else.
func typeName(err *pipeline.Error) string {
	var ve *schema.ValidationError
	switch {
	case err == nil:
		return "nil"
	case err.Reason == pipeline.ReasonToolNotFound:
		return "tool-not-found"
	case err.Kind == pipeline.KindValidation && errors.As(err, &ve):
		return "*schema.ValidationError"
	}
	return "other"
}
