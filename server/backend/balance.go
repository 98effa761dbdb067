package backend

import (
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/resolver"
)

// Load balancing over a backend's replicas. A target naming several
// addresses — "dns:///tools:7001" (every address the name resolves to),
// "static:///10.0.0.1:7001,tools-b:7001" (a fixed list of host:port) or
// gRPC's own "ipv4:"/"ipv6:" address lists — is balanced
// round_robin: each call goes to the next ready replica, and a replica
// that is down is skipped while it reconnects. Other targets (one
// host:port) keep gRPC's pick_first.
const roundRobinServiceConfig = `{"loadBalancingConfig":[{"round_robin":{}}]}`

// StaticScheme is the resolver scheme of a fixed address list.
const StaticScheme = "static"

// balanced reports whether target names several replicas to balance.
func balanced(target string) bool {
	for _, p := range []string{StaticScheme + ":", "dns:", "ipv4:", "ipv6:"} {
		if strings.HasPrefix(target, p) {
			return true
		}
	}
	return false
}

// balanceOptions are the dial options that balance target's replicas with
// serviceConfig ("": plain round_robin; eject.go's adds outlier ejection),
// or none for a target that is not balanced.
func balanceOptions(target, serviceConfig string) []grpc.DialOption {
	if !balanced(target) {
		return nil
	}
	if serviceConfig == "" {
		serviceConfig = roundRobinServiceConfig
	}
	opts := []grpc.DialOption{grpc.WithDefaultServiceConfig(serviceConfig)}
	if strings.HasPrefix(target, StaticScheme+":") {
		opts = append(opts, grpc.WithResolvers(staticResolver{}))
	}
	return opts
}

// staticResolver resolves "static:///a:1,b:2" to its addresses, once; it
// is registered on the connections that use it only (grpc.WithResolvers),
// not process-wide.
type staticResolver struct{}

func (staticResolver) Scheme() string { return StaticScheme }

func (staticResolver) Build(t resolver.Target, cc resolver.ClientConn, _ resolver.BuildOptions) (resolver.Resolver, error) {
	var addrs []resolver.Address
	for _, a := range strings.Split(t.Endpoint(), ",") {
		addrs = append(addrs, resolver.Address{Addr: a})
	}
	if err := cc.UpdateState(resolver.State{Addresses: addrs}); err != nil {
		return nil, err
	}
	return staticResolver{}, nil
}

func (staticResolver) ResolveNow(resolver.ResolveNowOptions) {}
func (staticResolver) Close()                                {}
