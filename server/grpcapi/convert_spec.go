package grpcapi

import (
	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
	"github.com/flowdrop/gateway/internal/toolproto"
)

// hideSpecTarget clears, for a caller who does not see backends, a
// response tool's typed backend's addresses as its kind says
// (registry.BackendSpec.WithoutAddresses: a target, an upstream MCP tool's
// credential references) and its TLS file paths (the gateway's disk), and an
// imported tool's origin URL. That TLS is required stays. The spec is
// toolProto's own copy.
func hideSpecTarget(p *gatewayv1.Tool) {
	if p.GetSpec() != nil {
		p.Spec = toolproto.SpecProto(toolproto.SpecFromProto(p.Spec).WithoutAddresses())
	}
	if o := p.GetOrigin(); o != nil { // the upstream's URL is a backend target
		o.McpUpstream = ""
	}
}
