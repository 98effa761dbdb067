package server_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/mcpapi"
	"github.com/flowdrop/gateway/server/pipeline"
)

// anyOfChain is the explosive shape: argument x nests `levels` deep,
// each level an anyOf of two object branches that both $ref the next level,
// so one value `levels` deep costs 2^levels evaluations (4·2^(levels-1)
// with the $ref and its target).
func anyOfChain(levels int) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{"x":{"$ref":"#/$defs/l0"}},"$defs":{`)
	for i := range levels {
		if i > 0 {
			b.WriteString(",")
		}
		next := fmt.Sprintf(`{"$ref":"#/$defs/l%d"}`, i+1)
		if i == levels-1 {
			next = `{"type":"integer"}`
		}
		fmt.Fprintf(&b, `"l%d":{"anyOf":[{"type":"object","properties":{"x":%s,"a":{"type":"string"}}},{"type":"object","properties":{"x":%s,"b":{"type":"string"}}}]}`, i, next, next)
	}
	b.WriteString("}}")
	return b.String()
}

// nestedX is {"x":{"x":…leaf}} levels+1 deep: every branch of the chain
// fails on it, so validation explores them all.
func nestedX(levels int, leaf string) string {
	return strings.Repeat(`{"x":`, levels+1) + leaf + strings.Repeat("}", levels+1)
}

func jsonStruct(t *testing.T, js string) *structpb.Struct {
	t.Helper()
	var s structpb.Struct
	if err := s.UnmarshalJSON([]byte(js)); err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return &s
}

func chainTool(name, schema string) func(string) registry.Tool {
	return func(backend string) registry.Tool {
		var s structpb.Struct
		if err := s.UnmarshalJSON([]byte(schema)); err != nil {
			panic(err)
		}
		return registry.Tool{Name: name, Backend: backend, InputSchema: &s}
	}
}

// badRequestFields are the BadRequest field violations of a status.
func badRequestFields(err error) []string {
	var out []string
	for _, d := range status.Convert(err).Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				out = append(out, v.GetField())
			}
		}
	}
	return out
}

// TestSchemaEvaluationBoundAtRegistration: RegisterTool over gRPC refuses a
// schema whose evaluation can explode — input or output schema — with
// InvalidArgument naming the JSON Pointer where the alternatives cross the
// bound and the bound's name; a schema under it is admitted, and a policy's
// limits.max_schema_evaluations moves the bound. A tools file seeding such
// a schema stops start-up naming the tool and the pointer.
func TestSchemaEvaluationBoundAtRegistration(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, reason string
		bound        int    // limits.max_schema_evaluations (0: the default)
		input        string // input schema
		output       string // output schema, when set
		wantField    string // "" admitted
	}{
		{"explosive-input", "ten levels of a two-way anyOf: 2,048 evaluations for one value",
			0, anyOfChain(10), "", "tool.input_schema/$defs/l1"},
		{"explosive-output", "the same shape as an output schema, which every result is validated against",
			0, `{"type":"object"}`, anyOfChain(10), "tool.output_schema/$defs/l1"},
		{"under-the-bound", "eight levels cost 512 per value: admitted",
			0, anyOfChain(8), "", ""},
		{"raised-bound", "a policy's max_schema_evaluations of 4096 admits ten levels",
			4096, anyOfChain(10), "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := gatewaytest.Start(t, gatewaytest.WithConfig(func(c *server.Config) { c.Policy.Limits.MaxSchemaEvaluations = tc.bound }))
			ctx := testCtx(t)
			tool := &gatewayv1.Tool{Name: "deep", Backend: env.BackendAddr, InputSchema: jsonStruct(t, tc.input)}
			if tc.output != "" {
				tool.OutputSchema = jsonStruct(t, tc.output)
			}
			_, err := gatewayv1.NewToolRegistryServiceClient(env.Conn).RegisterTool(ctx, &gatewayv1.RegisterToolRequest{Tool: tool})
			if tc.wantField == "" {
				if err != nil {
					t.Fatalf("RegisterTool: %v, want admitted (%s)", err, tc.reason)
				}
				return
			}
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("RegisterTool: %v, want InvalidArgument (%s)", err, tc.reason)
			}
			msg := status.Convert(err).Message()
			if fields := badRequestFields(err); len(fields) != 1 || fields[0] != tc.wantField ||
				!strings.Contains(msg, "max_schema_evaluations") || !strings.Contains(msg, "anyOf of 2") {
				t.Errorf("RegisterTool refused with %v: %q; want the field %s, naming the bound and the branching (%s)", fields, msg, tc.wantField, tc.reason)
			}
			if _, ok := env.Registry.Lookup("deep"); ok {
				t.Errorf("the refused tool is served (%s)", tc.reason)
			}
		})
	}

	t.Run("tools-file", func(t *testing.T) {
		t.Parallel()
		file := filepath.Join(t.TempDir(), "tools.json")
		doc := fmt.Sprintf(`{"tools":[{"name":"deep","backend":"127.0.0.1:7001","input_schema":%s}]}`, anyOfChain(10))
		if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := server.DefaultConfig()
		cfg.Store.Kind, cfg.ToolsFile = server.StoreMemory, file
		cfg.Listeners.GRPC = gatewaytest.Listen(t)
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		g, err := server.Start(testCtx(t), cfg)
		if err == nil {
			g.Close(testCtx(t))
			t.Fatal("a tools file with an explosive schema started a gateway")
		}
		if msg := err.Error(); !strings.Contains(msg, `"deep"`) || !strings.Contains(msg, "/$defs/l1") || !strings.Contains(msg, "max_schema_evaluations") {
			t.Errorf("start-up error %q does not name the tool, the pointer and the bound", msg)
		}
	})
}

// TestValidationStepBudget: a schema just under the registration bound
// with an adversarial argument — every branch at every level fails — is
// judged within the step budget: with the default budget the call returns
// its violations (over gRPC and MCP); with a policy's smaller
// max_validation_steps it is refused before anything is evaluated,
// InvalidArgument naming the limit and the argument where the worst case
// crosses it. The backend is never called. (Steps, not time: the unit
// tests in registry/schema count them.)
func TestValidationStepBudget(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, reason string
		steps        int
		wantLimit    string // "" the violations
		wantPath     string
	}{
		{"default-budget", "512 evaluations at the costliest value, ~1,500 steps in all: judged", 0, "", ""},
		{"small-budget", "1,000 steps: the worst case crosses it at the seventh level", 1000, policy.LimitMaxValidationSteps, "/x/x/x/x/x/x/x"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := gatewaytest.Start(t, gatewaytest.WithMCP(), gatewaytest.WithTool(chainTool("deep", anyOfChain(8))),
				gatewaytest.WithConfig(func(c *server.Config) { c.Policy.Limits.MaxValidationSteps = tc.steps }))
			ctx := testCtx(t)
			args := nestedX(8, `"not an integer"`)
			_, err := env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: "deep", Arguments: jsonStruct(t, args)})
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("gRPC: %v, want InvalidArgument (%s)", err, tc.reason)
			}
			msg := status.Convert(err).Message()
			if tc.wantLimit == "" {
				if md := limitInfo(err); md["limit"] != "" || !strings.Contains(msg, "invalid arguments") {
					t.Errorf("gRPC: %q (metadata %v), want the violations (%s)", msg, md, tc.reason)
				}
			} else if md := limitInfo(err); md["limit"] != tc.wantLimit || md["policy_reason"] != policy.ReasonLimitValidationSteps ||
				!strings.Contains(msg, tc.wantLimit) || !strings.Contains(msg, "at "+tc.wantPath) {
				t.Errorf("gRPC: %q (metadata %v), want the limit %s at %s (%s)", msg, md, tc.wantLimit, tc.wantPath, tc.reason)
			}

			cs := mustConnect(t, ctx, env.MCPURL, mcpClientOpts{})
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "deep", Arguments: jsonStruct(t, args).AsMap()})
			if err != nil || !res.IsError {
				t.Fatalf("MCP: %v %v, want an isError result (%s)", res, err, tc.reason)
			}
			want := string(pipeline.ReasonArgumentsInvalid)
			if tc.wantLimit != "" {
				want = policy.ReasonLimitValidationSteps
			}
			if res.Meta[mcpapi.MCPMetaReason] != want {
				t.Errorf("MCP: reason %v, want %s (%s)", res.Meta[mcpapi.MCPMetaReason], want, tc.reason)
			}
			if n := len(env.Backend.CallsFor("deep")); n != 0 {
				t.Errorf("the backend got %d calls, want none", n)
			}
		})
	}
}

// TestExplosiveSchemaDoesNotHoldTheGateway: a schema whose evaluation
// explodes (twenty levels: 2^21 evaluations at the innermost value),
// admitted because a policy lifted the registration bound, cannot make a
// call burn CPU: the step budget refuses adversarial arguments at once,
// within the caller's short deadline, and a gateway closed while such calls
// are in flight shuts down gracefully within the grace instead of waiting
// on them. (Before the budget, each call evaluated for minutes after its
// deadline, and shutdown waited out the whole grace.)
func TestExplosiveSchemaDoesNotHoldTheGateway(t *testing.T) {
	t.Parallel()
	env := gatewaytest.Start(t, gatewaytest.WithTool(chainTool("deep", anyOfChain(20))),
		gatewaytest.WithConfig(func(c *server.Config) { c.Policy.Limits.MaxSchemaEvaluations = 1 << 30 }))
	args := jsonStruct(t, nestedX(20, `"not an integer"`))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	_, err := env.Client.InvokeTool(ctx, &gatewayv1.InvokeToolRequest{Tool: "deep", Arguments: args})
	cancel()
	if md := limitInfo(err); status.Code(err) != codes.InvalidArgument || md["limit"] != policy.LimitMaxValidationSteps {
		t.Errorf("a call with a 2 s deadline: %v (metadata %v); want InvalidArgument naming max_validation_steps", err, md)
	}

	answers := make(chan error, 4)
	for range cap(answers) {
		go func() {
			_, err := env.Client.InvokeTool(context.Background(), &gatewayv1.InvokeToolRequest{Tool: "deep", Arguments: args})
			answers <- err
		}()
	}
	time.Sleep(100 * time.Millisecond) // the calls are in the gateway (before the budget: evaluating)
	closed := make(chan error, 1)
	go func() {
		sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		closed <- env.Gateway.Close(sctx)
	}()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v; want a graceful shutdown within the grace", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return within 5 s of a 20 s grace: it waits on calls in evaluation")
	}
	for range cap(answers) {
		if err := <-answers; status.Code(err) != codes.InvalidArgument && status.Code(err) != codes.Unavailable {
			t.Errorf("a call in flight at shutdown: %v; want its InvalidArgument (or Unavailable if it arrived after Close)", err)
		}
	}
}
