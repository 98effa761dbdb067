package grpcapi

import (
	gatewayv1 "github.com/flowdrop/gateway/gen/flowdrop/gateway/v1"
)

// hideSpecTarget clears a response tool's typed backend's target (an HTTP
// operation's base URL, an upstream MCP tool's URL and credential
// references, an imported tool's origin URL) and its TLS file paths (the gateway's disk), for a caller
// who does not see backends (the spec is toolProto's own copy). That TLS
// is required stays.
func hideSpecTarget(p *gatewayv1.Tool) {
	if ts := p.GetSpec().GetTls(); ts != nil {
		p.Spec.Tls = &gatewayv1.TransportSecurity{Require: true}
	}
	if m := p.GetSpec().GetGrpcMethod(); m != nil {
		m.Target = ""
	}
	if h := p.GetSpec().GetHttpOperation(); h != nil {
		h.BaseUrl = ""
	}
	if m := p.GetSpec().GetMcpTool(); m != nil {
		m.Url, m.CredentialEnv, m.CredentialFile = "", "", ""
	}
	if o := p.GetOrigin(); o != nil { // the upstream's URL is a backend target
		o.McpUpstream = ""
	}
}
