package backend

import (
	"testing"

	"github.com/flowdrop/gateway/registry"
)

// TestTransportFor: the tool's own TLS wins; else the first backend_tls
// glob over the target's address; else plaintext.
func TestTransportFor(t *testing.T) {
	ca := registry.TransportSecurity{CAFile: "/ca.pem"}
	mtls := registry.TransportSecurity{CAFile: "/ca.pem", CertFile: "/c.pem", KeyFile: "/k.pem"}
	own := registry.TransportSecurity{Require: true}
	list := []TargetTLS{{Match: "*.tools.internal:7001", TLS: mtls}, {Match: "10.0.0.*:*", TLS: ca}, {Match: "*", TLS: ca}}
	cases := []struct {
		reason, target string
		own            registry.TransportSecurity
		list           []TargetTLS
		want           registry.TransportSecurity
	}{
		{"no settings anywhere: plaintext", "127.0.0.1:7001", registry.TransportSecurity{}, nil, registry.TransportSecurity{}},
		{"a dns target matches on its address", "dns:///a.tools.internal:7001", registry.TransportSecurity{}, list, mtls},
		{"host:port matches as it is", "a.tools.internal:7001", registry.TransportSecurity{}, list, mtls},
		{"a static list matches on its addresses", "static:///10.0.0.1:7001,10.0.0.2:7001", registry.TransportSecurity{}, list, ca},
		{"the first match wins", "10.0.0.1:7001", registry.TransportSecurity{}, list, ca},
		{"the tool's own setting beats the target's", "a.tools.internal:7001", own, list, own},
		{"an address no glob fits is plaintext", "127.0.0.1:7001", registry.TransportSecurity{}, list[:2], registry.TransportSecurity{}},
	}
	for _, tc := range cases {
		if got := transportFor(tc.target, tc.own, tc.list); got != tc.want {
			t.Errorf("transportFor(%q) = %+v, want %+v (%s)", tc.target, got, tc.want, tc.reason)
		}
	}
}
