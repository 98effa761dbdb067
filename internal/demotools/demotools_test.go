package demotools_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/demotools"
	"github.com/flowdrop/gateway/normalize"
	"github.com/flowdrop/gateway/registry"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestDemoToolsExerciseRTTool8 checks the embedded file loads and that its
// schemas declare what the demo relies on: a string title, an array
// parameter and an object parameter.
func TestDemoToolsExerciseRTTool8(t *testing.T) {
	tools, err := registry.ParseTools(demotools.ToolsYAML("127.0.0.1:7001"), "embedded")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]registry.Tool{}
	for _, tl := range tools {
		if tl.Backend != "127.0.0.1:7001" {
			t.Errorf("tool %s backend = %q: placeholder not replaced", tl.Name, tl.Backend)
		}
		byName[tl.Name] = tl
	}
	cases := []struct {
		reason, tool, param, declared string
	}{
		{"a string title is entity-decoded but never JSON-decoded", "create_note", "title", ""},
		{"an array parameter for stringified lists", "create_note", "tags", "array"},
		{"an array of objects", "apply_ops", "ops", "array"},
		{"an object parameter", "update_settings", "settings", "object"},
		{"a plain string for later policy tests", "run_command", "command", ""},
	}
	for _, tc := range cases {
		tl, ok := byName[tc.tool]
		if !ok {
			t.Fatalf("demo tool %s missing (%s)", tc.tool, tc.reason)
		}
		plan, err := normalize.Compile(tl.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		if got := plan.Declared(tc.param); got != tc.declared {
			t.Errorf("%s.%s declared %q, want %q (%s)", tc.tool, tc.param, got, tc.declared, tc.reason)
		}
	}
}

func TestServiceOverGRPC(t *testing.T) {
	svc := demotools.New(demotools.WithRecording(), demotools.WithHandler("boom", func(context.Context, *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
		panic("tool bug")
	}))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := demotools.NewGRPCServer(svc, nil)
	done := make(chan struct{})
	go func() { defer close(done); gs.Serve(lis) }()
	defer func() { gs.Stop(); <-done }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := gatewayv1.NewToolBackendServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "x-flowdrop-call-id", "c1")

	args, _ := structpb.NewStruct(map[string]any{"title": "t"})
	resp, err := client.Invoke(ctx, &gatewayv1.InvokeRequest{Tool: "create_note", Arguments: args, CallId: "c1",
		Caller: &gatewayv1.Caller{Subject: "s", Method: "none"}})
	if err != nil {
		t.Fatal(err)
	}
	f := resp.GetResult().GetStructValue().GetFields()
	if f["arguments"].GetStructValue().GetFields()["title"].GetStringValue() != "t" || f["call_id"].GetStringValue() != "c1" ||
		f["caller"].GetStructValue().GetFields()["subject"].GetStringValue() != "s" || resp.GetIsError() {
		t.Errorf("echo = %v", resp)
	}

	cmd, _ := structpb.NewStruct(map[string]any{"command": "false"})
	resp, err = client.Invoke(ctx, &gatewayv1.InvokeRequest{Tool: "run_command", Arguments: cmd})
	if err != nil || !resp.GetIsError() {
		t.Errorf("run_command false = %v, %v; want is_error", resp, err)
	}

	_, err = client.Invoke(ctx, &gatewayv1.InvokeRequest{Tool: "boom"})
	if st := status.Convert(err); st.Code() != codes.Internal || strings.Contains(st.Message(), "tool bug") {
		t.Errorf("panicking tool = %v; want Internal without the panic value", err)
	}
	_, err = client.Invoke(ctx, &gatewayv1.InvokeRequest{Tool: "nope"})
	if status.Code(err) != codes.NotFound {
		t.Errorf("unknown tool = %v; want NotFound", err)
	}

	calls := svc.Calls()
	if len(calls) != 4 || calls[0].Metadata.Get("x-flowdrop-call-id")[0] != "c1" {
		t.Errorf("recorded calls = %v", calls)
	}
}
