package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// targetSchemes are the gRPC resolver schemes a backend may use. Other
// schemes are refused so that a typo cannot reach a resolver by accident.
var targetSchemes = []string{"dns", "unix", "unix-abstract", "passthrough", "ipv4", "ipv6", "static"}

// ValidateBackend checks a backend dial target: "host:port" with a port in
// 1–65535, or a gRPC target with one of the schemes dns, unix,
// unix-abstract, passthrough, ipv4, ipv6. It returns a reason, "" when valid.
func ValidateBackend(target string) string {
	if target == "" {
		return "must not be empty"
	}
	if strings.TrimSpace(target) != target || strings.ContainsAny(target, " \t\r\n") {
		return fmt.Sprintf("%q must not contain whitespace", target)
	}
	for _, s := range targetSchemes {
		if rest, ok := strings.CutPrefix(target, s+":"); ok {
			if r := checkSchemeTarget(s, rest); r != "" {
				return fmt.Sprintf("%q: %s", target, r)
			}
			return ""
		}
	}
	if i := strings.Index(target, "://"); i > 0 {
		return fmt.Sprintf("%q: unsupported scheme %q (want host:port or one of dns, unix, unix-abstract, passthrough, ipv4, ipv6, static)", target, target[:i])
	}
	if r := checkHostPort(target, true); r != "" {
		return fmt.Sprintf("%q: %s", target, r)
	}
	return ""
}

func checkSchemeTarget(scheme, rest string) string {
	switch scheme {
	case "dns":
		// dns:[//authority/]host[:port]
		if after, ok := strings.CutPrefix(rest, "//"); ok {
			i := strings.IndexByte(after, '/')
			if i < 0 {
				return "dns target must be dns:///host:port"
			}
			rest = after[i+1:]
		}
		if rest == "" {
			return "dns target has no host"
		}
		return checkHostPort(rest, false)
	case "unix":
		// unix:path or unix:///absolute/path; unix://host/path is not valid gRPC.
		if after, ok := strings.CutPrefix(rest, "//"); ok {
			if !strings.HasPrefix(after, "/") {
				return "unix target must be unix:///absolute/path or unix:relative/path"
			}
			rest = after
		}
		if rest == "" || rest == "/" {
			return "unix target has no socket path"
		}
	case "unix-abstract":
		if strings.TrimPrefix(rest, "//") == "" {
			return "unix-abstract target has no name"
		}
	case "passthrough":
		if after, ok := strings.CutPrefix(rest, "//"); ok {
			i := strings.IndexByte(after, '/')
			if i < 0 {
				return "passthrough target must be passthrough:///address"
			}
			rest = after[i+1:]
		}
		if rest == "" {
			return "passthrough target has no address"
		}
	case "static":
		// static:///host:port,host:port — the gateway's fixed replica list,
		// balanced round_robin.
		list, ok := strings.CutPrefix(rest, "///")
		if !ok || list == "" {
			return "static target must be static:///host:port[,host:port...]"
		}
		for _, a := range strings.Split(list, ",") {
			if r := checkHostPort(a, true); r != "" {
				return fmt.Sprintf("address %q: %s", a, r)
			}
		}
	case "ipv4", "ipv6":
		if rest == "" {
			return scheme + " target has no address"
		}
		for _, a := range strings.Split(rest, ",") {
			host, port := a, ""
			if h, p, err := net.SplitHostPort(a); err == nil {
				host, port = h, p
			} else if scheme == "ipv6" {
				host = strings.TrimSuffix(strings.TrimPrefix(a, "["), "]")
			}
			ip := net.ParseIP(host)
			if ip == nil || (scheme == "ipv4") != (ip.To4() != nil && !strings.Contains(host, ":")) {
				return fmt.Sprintf("%q is not an %s address", a, scheme)
			}
			if port != "" {
				if r := checkPort(port); r != "" {
					return r
				}
			}
		}
	}
	return ""
}

// checkHostPort checks host[:port]; the port is required when needPort.
func checkHostPort(s string, needPort bool) string {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		if needPort {
			return "must be host:port, e.g. 127.0.0.1:7001, or a gRPC target such as dns:///tools:7001"
		}
		host, port = s, ""
	}
	if host == "" {
		return "has no host"
	}
	if strings.ContainsAny(host, "/?#@[]") {
		return fmt.Sprintf("host %q is not a host name or IP address", host)
	}
	if port == "" {
		if needPort {
			return "has no port"
		}
		return ""
	}
	return checkPort(port)
}

func checkPort(port string) string {
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || strings.TrimLeft(port, "0123456789") != "" {
		return fmt.Sprintf("port %q must be a number from 1 to 65535", port)
	}
	return ""
}

// toolBackendServiceKind is a tool without a spec: Tool.Backend is the
// dial target of a service implementing ToolBackendService.
type toolBackendServiceKind struct{}

func (toolBackendServiceKind) name() string                  { return "" }
func (toolBackendServiceKind) title(*Tool) string            { return "ToolBackendService" }
func (toolBackendServiceKind) target(t *Tool) string         { return t.Backend }
func (toolBackendServiceKind) operatorTarget(t *Tool) string { return t.Backend }
func (toolBackendServiceKind) line(t *Tool) string           { return t.Backend }
func (toolBackendServiceKind) equal(a, b *BackendSpec) bool  { return true } // Tool.Backend is compared with the tool
func (toolBackendServiceKind) hideAddress(*BackendSpec)      {}

func (toolBackendServiceKind) check(t *Tool) (protoreflect.MethodDescriptor, *ToolError) {
	if r := ValidateBackend(t.Backend); r != "" {
		return nil, &ToolError{Tool: t.Name, Field: "backend", Reason: r}
	}
	return nil, nil
}

// A ToolBackendService has no spec, so no spec form.
func (toolBackendServiceKind) record(*BackendSpec) (any, error) { return nil, errNoSpecForm }
func (toolBackendServiceKind) fromRecord(json.RawMessage, *BackendSpec) error {
	return errNoSpecForm
}
func (toolBackendServiceKind) fromFile(json.RawMessage, *BackendSpec) (string, error) {
	return "", errNoSpecForm
}

var errNoSpecForm = errors.New("a ToolBackendService has no spec: its target is the tool's backend")
