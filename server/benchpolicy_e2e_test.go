package server_test

import (
	"path/filepath"
	"strings"
	"testing"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/internal/loadgen"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
)

// benchAPIKey is the key tools/bench/prod-policy.yaml holds the hash of.
const benchAPIKey = "flowdrop-bench-key-not-a-secret"

// TestBenchProdPolicyServesTheBenchPayload keeps the benchmark's production
// policy (tools/bench/prod-policy.yaml, the gateway-prod target) valid and
// doing what BENCHMARKS.md says it does: it loads and builds (CEL rule
// included), the bench key is accepted and every call is audited with its
// arguments, the bench payloads (clean and repair) pass the rule and the
// limits, and a call the rule refuses is refused — so the target measures
// the full policy on the accepted path.
func TestBenchProdPolicyServesTheBenchPayload(t *testing.T) {
	t.Parallel()
	p, err := server.LoadPolicyFile(filepath.Join("..", "tools", "bench", "prod-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	p.Audit.Path = audit // the file's path is relative to run.sh's work directory
	schema, err := structpb.NewStruct(loadgen.BenchToolSchema())
	if err != nil {
		t.Fatal(err)
	}
	env := gatewaytest.Start(t, gatewaytest.WithPolicy(p), gatewaytest.WithTool(func(backend string) registry.Tool {
		return registry.Tool{Name: loadgen.BenchTool, Backend: backend, InputSchema: schema}
	}), gatewaytest.WithBackendHandler(loadgen.BenchTool, loadgen.NewBackend().Invoke))

	for _, kind := range []string{loadgen.PayloadClean, loadgen.PayloadRepair} {
		args, err := loadgen.Arguments(kind)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := env.Client.InvokeTool(withKey(benchAPIKey), &gatewayv1.InvokeToolRequest{Tool: loadgen.BenchTool, Arguments: args, CallId: "bench-" + kind}); err != nil {
			t.Errorf("%s payload with the bench key: %v; want OK (the target would measure a refusal)", kind, err)
		}
	}
	args, _ := loadgen.Arguments(loadgen.PayloadClean)
	args.Fields["title"] = structpb.NewStringValue("DROP TABLE tasks")
	if _, err := env.Client.InvokeTool(withKey(benchAPIKey), &gatewayv1.InvokeToolRequest{Tool: loadgen.BenchTool, Arguments: args}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("a title the rule refuses: %v; want PermissionDenied (the rule must be evaluated)", err)
	}
	if _, err := env.Client.InvokeTool(withKey("wrong"), &gatewayv1.InvokeToolRequest{Tool: loadgen.BenchTool, Arguments: args}); status.Code(err) != codes.Unauthenticated {
		t.Errorf("another key: %v; want Unauthenticated", err)
	}
	lines, _ := auditLines(t, env, audit)
	var withArgs int
	for _, l := range lines {
		if l["args_sent"] != nil && strings.HasPrefix(l["tool"].(string), "bench") {
			withArgs++
		}
	}
	if withArgs < 3 {
		t.Errorf("%d audit lines carry the arguments as sent; want one per bench call (3)", withArgs)
	}
}
