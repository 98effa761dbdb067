package backend

import (
	"crypto/tls"
	"fmt"
	"path"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/flowdrop/gateway/registry"
)

// TargetTLS is transport security for the backends whose target matches
// Match (server.Config / policy file backend_tls): how a ToolBackendService
// tool (which has no spec) gets TLS, and a default for typed kinds whose
// spec sets no tls.
type TargetTLS struct {
	// Match is a glob (path.Match: *, ?, [...]) over the target's address,
	// the part after any "scheme:" and "//authority/": "*.tools.internal:7001",
	// "10.0.1.*:*", "notes:7002".
	Match string
	TLS   registry.TransportSecurity
}

// TLSConfig is the client *tls.Config for s, the files read now: every
// backend kind's one way from the settings to a TLS client (gRPC here; the
// HTTP and MCP kinds use it for their http.Transport). Errors are
// *registry.TLSFileError, naming the setting and the file (for the log).
func TLSConfig(s registry.TransportSecurity) (*tls.Config, error) { return s.ClientConfig() }

// TargetAddress is target without its resolver scheme and authority, the
// part a TargetTLS glob is matched against.
func TargetAddress(target string) string {
	if i := strings.Index(target, ":"); i > 0 && !strings.ContainsAny(target[:i], ".[") && !isPort(target[i+1:]) {
		rest := target[i+1:]
		if after, ok := strings.CutPrefix(rest, "//"); ok {
			if j := strings.IndexByte(after, '/'); j >= 0 {
				return after[j+1:]
			}
		}
		return rest
	}
	return target
}

// isPort reports whether s is all digits (host:port has no scheme).
func isPort(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }

// CheckTargetTLS checks a backend_tls list: valid globs, something set,
// and files that load now (start-up fails closed on a bad file rather
// than calling in plaintext or failing every call later).
func CheckTargetTLS(list []TargetTLS) error {
	for i, e := range list {
		if e.Match == "" {
			return fmt.Errorf("backend_tls[%d]: match is required", i)
		}
		if _, err := path.Match(e.Match, ""); err != nil {
			return fmt.Errorf("backend_tls[%d]: match %q is not a glob: %v", i, e.Match, err)
		}
		if !e.TLS.Enabled() {
			return fmt.Errorf("backend_tls[%d] (%s): sets nothing: set require, ca_file, cert_file and key_file, or server_name", i, e.Match)
		}
		if (e.TLS.CertFile == "") != (e.TLS.KeyFile == "") {
			return fmt.Errorf("backend_tls[%d] (%s): cert_file and key_file go together", i, e.Match)
		}
		if _, err := TLSConfig(e.TLS); err != nil {
			return fmt.Errorf("backend_tls[%d] (%s): %w", i, e.Match, err)
		}
	}
	return nil
}

// transportFor is the security a connection to target uses: the tool's
// own (spec tls) when set, else the first backend_tls entry matching the
// target, else none (plaintext).
func transportFor(target string, own registry.TransportSecurity, list []TargetTLS) registry.TransportSecurity {
	if own.Enabled() {
		return own
	}
	addr := TargetAddress(target)
	for _, e := range list {
		if ok, _ := path.Match(e.Match, addr); ok || e.Match == target {
			return e.TLS
		}
	}
	return registry.TransportSecurity{}
}

// transportCredentials is the dial option for s: TLS from its files, or
// plaintext only when s asks for no TLS at all. A file that does not load
// is an error, never plaintext.
func transportCredentials(s registry.TransportSecurity) (grpc.DialOption, error) {
	if !s.Enabled() {
		return grpc.WithTransportCredentials(insecure.NewCredentials()), nil
	}
	cfg, err := TLSConfig(s)
	if err != nil {
		return nil, err
	}
	return grpc.WithTransportCredentials(credentials.NewTLS(cfg)), nil
}
