package server_test

import (
	"context"
	"strings"
	"testing"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/gatewaytest"
	"github.com/flowdrop/gateway/server"
	"github.com/flowdrop/gateway/server/rawcodec"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
)

// TestUndecodableRequestsAreInvalidArgument: a request that does not
// decode is the caller's error, on every method, not Internal.
func TestUndecodableRequestsAreInvalidArgument(t *testing.T) {
	t.Parallel()
	env := gatewaytest.Start(t)
	deep := wireString("x")
	for range 11_000 { // past protobuf's recursion limit of 10,000
		deep = wireList(deep)
	}
	truncated := []byte{0x0a, 0x10, 'a'}
	cases := []struct {
		name, reason, method string
		req                  []byte
	}{
		{"invoke/invalid-utf8-tool", "the tool name is not UTF-8", gatewayv1.ToolGatewayService_InvokeTool_FullMethodName,
			wireBytes(nil, 1, []byte("cre\xffate"))},
		{"invoke/invalid-utf8-argument", "a string argument is not UTF-8", gatewayv1.ToolGatewayService_InvokeTool_FullMethodName,
			append(wireBytes(nil, 1, []byte("create_note")), wireBytes(nil, 2, wireEntry("title", wireString("\xff")))...)},
		{"invoke/truncated", "a length runs past the end", gatewayv1.ToolGatewayService_InvokeTool_FullMethodName, truncated},
		{"invoke/too-deep", "nesting past protobuf's recursion limit", gatewayv1.ToolGatewayService_InvokeTool_FullMethodName,
			append(wireBytes(nil, 1, []byte("create_note")), wireBytes(nil, 2, wireEntry("title", deep))...)},
		{"get-tool/invalid-utf8", "GetTool's name is not UTF-8", gatewayv1.ToolRegistryService_GetTool_FullMethodName,
			wireBytes(nil, 1, []byte("a\xff"))},
		{"get-tool/truncated", "GetTool's bytes are cut off", gatewayv1.ToolRegistryService_GetTool_FullMethodName, truncated},
		{"list-tools/truncated", "ListTools' bytes are cut off", gatewayv1.ToolRegistryService_ListTools_FullMethodName, truncated},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := env.Conn.Invoke(testCtx(t), tc.method, &rawcodec.Forward{Head: tc.req}, new(rawcodec.Frame), rawcodec.CallOption())
			if status.Code(err) != codes.InvalidArgument {
				t.Errorf("got %v, want InvalidArgument (%s)", err, tc.reason)
			}
		})
	}
	t.Run("watch-tools/truncated", func(t *testing.T) {
		ctx, cancel := context.WithCancel(testCtx(t))
		defer cancel()
		stream, err := env.Conn.NewStream(ctx, &gatewayv1.ToolRegistryService_ServiceDesc.Streams[0],
			gatewayv1.ToolRegistryService_WatchTools_FullMethodName, rawcodec.CallOption())
		if err != nil {
			t.Fatal(err)
		}
		if err := stream.SendMsg(&rawcodec.Forward{Head: truncated}); err != nil {
			t.Fatal(err)
		}
		stream.CloseSend()
		if err := stream.RecvMsg(new(rawcodec.Frame)); status.Code(err) != codes.InvalidArgument {
			t.Errorf("got %v, want InvalidArgument (a WatchTools request that does not decode)", err)
		}
	})
}

// TestGatewaySizeLimitsSayWhose: a request over the backend send limit is
// refused before sending, naming the tool and that the limit is the
// gateway's; an oversized backend response names the tool and that it was
// the response. Both ResourceExhausted, as gRPC answers oversized messages.
func TestGatewaySizeLimitsSayWhose(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 64<<10)
	env := gatewaytest.Start(t,
		gatewaytest.WithTool(gatewaytest.ObjectTool("big_answer")),
		gatewaytest.WithBackendHandler("big_answer", func(context.Context, *gatewayv1.InvokeRequest) (*gatewayv1.InvokeResponse, error) {
			return &gatewayv1.InvokeResponse{Result: structpb.NewStringValue(big)}, nil
		}),
		gatewaytest.WithConfig(func(c *server.Config) { c.BackendMaxSendMsgSize, c.BackendMaxRecvMsgSize = 16<<10, 16<<10 }))
	cases := []struct {
		name, reason, tool string
		args               map[string]any
		want               []string
	}{
		{"request", "the forwarded request would cross the gateway's backend send limit", "create_note",
			map[string]any{"title": "t", "body": big}, []string{`tool "create_note"`, "gateway's backend send limit of 16384 bytes"}},
		{"repaired-request", "normalized arguments are measured too", "create_note",
			map[string]any{"title": "a &amp; b", "body": big}, []string{`tool "create_note"`, "gateway's backend send limit"}},
		{"response", "the backend's response crosses the gateway's receive limit", "big_answer",
			map[string]any{}, []string{`tool "big_answer"`, "backend's response", "16384 bytes"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := env.Client.InvokeTool(testCtx(t), &gatewayv1.InvokeToolRequest{Tool: tc.tool, Arguments: gatewaytest.Args(t, tc.args)})
			if status.Code(err) != codes.ResourceExhausted {
				t.Fatalf("got %v, want ResourceExhausted (%s)", err, tc.reason)
			}
			msg := status.Convert(err).Message()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q lacks %q (%s)", msg, w, tc.reason)
				}
			}
			if strings.Contains(msg, env.BackendAddr) {
				t.Errorf("message %q names the backend's address", msg)
			}
		})
	}
}
