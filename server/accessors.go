package server

import (
	"net"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/repairstats"
)

// What a started Gateway tells its caller (cmd/, tests).

// GRPCAddr is the address a client on this host dials for gRPC.
func (g *Gateway) GRPCAddr() string { return dialAddr(g.grpcLis.Addr()) }

// MCPURL is the MCP endpoint's URL, or "" when MCP is off.
func (g *Gateway) MCPURL() string {
	if g.mcpLis == nil {
		return ""
	}
	return "http://" + dialAddr(g.mcpLis.Addr()) + MCPPath
}

// AdminAddr is the admin listener's address, or "" when it is off.
func (g *Gateway) AdminAddr() string {
	if g.adminLis == nil {
		return ""
	}
	return dialAddr(g.adminLis.Addr())
}

func (g *Gateway) Registry() *registry.Registry { return g.reg }

// RepairStats is the gateway's repair analytics (Snapshot for a console).
func (g *Gateway) RepairStats() *repairstats.Stats { return g.repairs }

// AuthenticationOn reports whether callers must authenticate (auth.mode on).
func (g *Gateway) AuthenticationOn() bool { return !g.auth.Off() }

// BackendTargets lists the backend targets the gateway holds a connection to.
func (g *Gateway) BackendTargets() []string { return g.tools.Targets() }

// PathCounts says, since Start, how many InvokeTool calls were forwarded
// as received, how many argument decodes of received bytes there were, and
// how many requests were decoded whole. Tests compare deltas.
func (g *Gateway) PathCounts() (forwarded, decodedArgs, decodedWhole int64) {
	st := g.pipe.Stats()
	return st.Forwarded, st.Decoded, g.grpc.DecodedWhole()
}

// RateLimitBuckets is the number of live rate-limit buckets (tests hold
// it bounded by the registry, whatever names callers send).
func (g *Gateway) RateLimitBuckets() int { return g.pipe.Policy().RateLimit.Len() }

// StageNames lists the pipeline's stages in order.
func (g *Gateway) StageNames() []string { return g.pipe.StageNames() }

// Failed delivers the error of a listener that stopped serving on its own.
func (g *Gateway) Failed() <-chan error { return g.failed }

// Store is the registry's store.
func (g *Gateway) Store() registry.Store { return g.store }

// dialAddr turns a listen address into one a client on this host can dial.
func dialAddr(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// MCPFastCalls is how many tools/call requests the MCP face's fast path
// answered (the rest went through the go-sdk's handler); 0 when MCP is off.
func (g *Gateway) MCPFastCalls() uint64 {
	if g.mcp == nil {
		return 0
	}
	return g.mcp.FastCalls()
}
