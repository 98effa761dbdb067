package main

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
)

// backendImportGuard is the gRPC and OpenAPI imports' importGuard: a tool
// that does not exist is written; one that does is replaced only when it
// is this import's own — the same kind of backend at the same place (own
// says so: the same gRPC target, the same HTTP base URL); anything else (an admin's tool, another backend's, an upstream MCP
// server's) is refused naming --replace. The write is pinned to the
// revision checked (0: must not exist), so a tool written meanwhile is not
// replaced either.
func backendImportGuard(own func(cur *gatewayv1.Tool) bool) importGuard {
	return func(ctx context.Context, client gatewayv1.ToolRegistryServiceClient, t *gatewayv1.Tool) (*int64, error) {
		resp, err := client.GetTool(ctx, &gatewayv1.GetToolRequest{Name: t.GetName()})
		if status.Code(err) == codes.NotFound {
			none := int64(0)
			return &none, nil
		}
		if err != nil {
			return nil, err
		}
		cur := resp.GetTool()
		if !own(cur) {
			return nil, status.Errorf(codes.AlreadyExists, "tool %s exists and was not imported from this backend (backend %s); not replaced (--replace replaces it)",
				cur.GetName(), toolBackend(cur))
		}
		rev := cur.GetRevision()
		return &rev, nil
	}
}

// sameGRPCTarget: cur is a gRPC-method tool of target.
func sameGRPCTarget(target string) func(*gatewayv1.Tool) bool {
	return func(cur *gatewayv1.Tool) bool {
		m := cur.GetSpec().GetGrpcMethod()
		return m != nil && m.GetTarget() == target && cur.GetOrigin().GetMcpUpstream() == ""
	}
}

// sameBaseURL: cur is an HTTP-operation tool of baseURL.
func sameBaseURL(baseURL string) func(*gatewayv1.Tool) bool {
	return func(cur *gatewayv1.Tool) bool {
		h := cur.GetSpec().GetHttpOperation()
		return h != nil && h.GetBaseUrl() == baseURL && cur.GetOrigin().GetMcpUpstream() == ""
	}
}
