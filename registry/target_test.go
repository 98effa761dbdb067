package registry

import "testing"

// TestTargetCoversEveryKind: every backend kind names where its calls go,
// so a failure's log line and the backend pools never see "".
func TestTargetCoversEveryKind(t *testing.T) {
	cases := []struct {
		name, reason, want string
		tool               Tool
	}{
		{"tool-backend-service", "the plain backend address", "127.0.0.1:7001", Tool{Backend: "127.0.0.1:7001"}},
		{"grpc-method", "the method's dial target", "notes:7002", Tool{Spec: &BackendSpec{GRPCMethod: &GRPCMethod{Target: "notes:7002", Method: "/a.B/C"}}}},
		{"http-operation", "the base URL", "https://api.internal/v1", Tool{Spec: &BackendSpec{HTTPOperation: &HTTPOperation{BaseURL: "https://api.internal/v1"}}}},
		{"mcp-tool", "the upstream's URL (it was \"\")", "https://mcp.internal/mcp", Tool{Spec: &BackendSpec{MCPTool: &MCPTool{URL: "https://mcp.internal/mcp", Tool: "t"}}}},
		{"mcp-stdio", "a stdio server by its name", "stdio://helper", Tool{Spec: &BackendSpec{MCPTool: &MCPTool{URL: "stdio://helper", Tool: "t"}}}},
	}
	for _, tc := range cases {
		if got := tc.tool.Target(); got != tc.want {
			t.Errorf("%s: Target() = %q, want %q (%s)", tc.name, got, tc.want, tc.reason)
		}
	}
}
