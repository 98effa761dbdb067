package registry

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// MCPTool is a tool of an upstream MCP server reached over HTTP
// (streamable, or the legacy HTTP+SSE transport), or over stdio: a process
// the gateway runs. The credential fields
// are references (an environment variable's name, a file's path), never
// the credential itself: the registry holds no secret, and a registry read
// shows none.
type MCPTool struct {
	// URL is the upstream's streamable-HTTP endpoint (http or https), or
	// stdio://NAME: the stdio server NAME of the gateway's configuration
	// (mcp_upstreams.stdio; a registration names one, never a command).
	URL string
	// Tool is the upstream tool's own name.
	Tool string
	// CredentialEnv names an environment variable of the gateway holding
	// a bearer token or one "Header-Name: value" line.
	CredentialEnv string
	// CredentialFile is the path of a file on the gateway's host holding
	// the same.
	CredentialFile string
	// Transport is how an http(s) upstream is spoken to (empty: detected
	// when a session is made); always empty over stdio.
	Transport MCPTransport
}

// MCPTransport is the HTTP transport of an upstream MCP server: the proto
// enum McpTransport by name, as the tools file and the stored form write it.
type MCPTransport string

// The transports (proto McpTransport).
const (
	// MCPTransportDetect: streamable HTTP, falling back to the legacy
	// HTTP+SSE transport where the endpoint refuses the streamable POST
	// (MCP's backward compatibility; mcpupstream.TransportDetect).
	MCPTransportDetect MCPTransport = ""
	// MCPTransportStreamable: streamable HTTP (MCP 2025-03-26 and later).
	MCPTransportStreamable MCPTransport = "streamable_http"
	// MCPTransportSSE: the legacy HTTP+SSE transport (MCP 2024-11-05).
	MCPTransportSSE MCPTransport = "sse"
)

// StdioScheme is the URL scheme of an upstream MCP server run over stdio.
const StdioScheme = "stdio"

// StdioName is the configured stdio server an upstream URL names
// (stdio://NAME), and whether it names one.
func StdioName(rawURL string) (string, bool) {
	name, ok := strings.CutPrefix(rawURL, StdioScheme+"://")
	return name, ok
}

// ValidStdioName reports whether name may name a stdio server:
// ^[a-z0-9_-]{1,64}$ (a host-like word, so the URL reads as one).
func ValidStdioName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for _, r := range name {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '_' && r != '-' {
			return false
		}
	}
	return true
}

// checkMCPTool admits an upstream MCP tool: an absolute http(s) URL with a
// host and no user info (a credential belongs in a reference), or
// stdio://NAME; an upstream tool name; at most one credential reference
// (none over stdio: the process's environment is the configuration's).
func checkMCPTool(name string, m *MCPTool, spec *BackendSpec) *ToolError {
	bad := func(field, reason string) *ToolError {
		return &ToolError{Tool: name, Field: "spec.mcp_tool." + field, Reason: reason}
	}
	if stdio, ok := StdioName(m.URL); ok {
		switch {
		case !ValidStdioName(stdio):
			return bad("url", "stdio://NAME must name a configured stdio server: NAME matches ^[a-z0-9_-]{1,64}$")
		case m.CredentialEnv != "" || m.CredentialFile != "":
			return bad("credential_env", "a stdio server takes no credential reference: its environment is the gateway's configuration (mcp_upstreams.stdio)")
		case spec != nil && spec.TLS != nil:
			return &ToolError{Tool: name, Field: "spec.tls", Reason: "a stdio server is a local process: there is no transport to secure"}
		case m.Transport != MCPTransportDetect:
			return bad("transport", "a stdio server is spoken to over its stdio: leave transport unset")
		}
		return checkMCPToolName(bad, m)
	}
	u, err := url.Parse(m.URL)
	switch {
	case m.URL == "":
		return bad("url", "must not be empty: the upstream's streamable-HTTP URL, or stdio://NAME")
	case err != nil:
		return bad("url", "is not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return bad("url", fmt.Sprintf("scheme %q is not supported: want http, https or stdio", u.Scheme))
	case u.Host == "":
		return bad("url", "must name a host")
	case u.User != nil:
		return bad("url", "must not carry user info: reference the credential with credential_env or credential_file")
	}
	if te := checkMCPToolName(bad, m); te != nil {
		return te
	}
	switch m.Transport {
	case MCPTransportDetect, MCPTransportStreamable, MCPTransportSSE:
	default:
		return bad("transport", "is not a transport: want streamable_http or sse (unset: detected when a session is made)")
	}
	switch {
	case m.CredentialEnv != "" && m.CredentialFile != "":
		return bad("credential_env", "set at most one of credential_env and credential_file")
	case m.CredentialFile != "" && !filepath.IsAbs(m.CredentialFile):
		return bad("credential_file", "must be an absolute path on the gateway's host")
	case m.CredentialEnv != "" && strings.ContainsAny(m.CredentialEnv, "= \t\x00"):
		return bad("credential_env", "is not an environment variable name")
	}
	return nil
}

func checkMCPToolName(bad func(field, reason string) *ToolError, m *MCPTool) *ToolError {
	switch {
	case m.Tool == "":
		return bad("tool", "must not be empty: the upstream tool's name")
	case len(m.Tool) > 128 || strings.ContainsAny(m.Tool, "\x00\r\n"):
		return bad("tool", "must be at most 128 bytes without control characters")
	}
	return nil
}

// mcpToolKind is the upstream-MCP-tool kind (spec.mcp_tool), over
// streamable HTTP or stdio.
type mcpToolKind struct{}

func (mcpToolKind) name() string          { return "mcp_tool" }
func (mcpToolKind) title(t *Tool) string  { return "MCP tool " + t.Spec.MCPTool.Tool }
func (mcpToolKind) target(t *Tool) string { return t.Spec.MCPTool.URL }
func (mcpToolKind) line(t *Tool) string {
	return "mcp " + t.Spec.MCPTool.URL + " " + t.Spec.MCPTool.Tool
}

// operatorTarget is the upstream's URL without its query and fragment (a
// query may carry a token; admission refuses user info), as the other
// kinds' targets show scheme, host and path; stdio://NAME names the
// configured server, not its command.
func (mcpToolKind) operatorTarget(t *Tool) string {
	u := t.Spec.MCPTool.URL
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	return u
}

func (mcpToolKind) check(t *Tool) (protoreflect.MethodDescriptor, *ToolError) {
	if te := checkMCPTool(t.Name, t.Spec.MCPTool, t.Spec); te != nil {
		return nil, te
	}
	return nil, nil
}

func (mcpToolKind) equal(a, b *BackendSpec) bool { return *a.MCPTool == *b.MCPTool }

func (mcpToolKind) hideAddress(s *BackendSpec) {
	m := *s.MCPTool
	m.URL, m.CredentialEnv, m.CredentialFile = "", "", ""
	s.MCPTool = &m
}

// mcpToolForm is the stored form and the tools file's (read strictly
// there): references to a credential, never one.
//
//	mcp_tool: {url: https://weather.internal/mcp, tool: forecast, credential_file: /etc/flowdrop/weather.token}
type mcpToolForm struct {
	URL            string       `json:"url"`
	Tool           string       `json:"tool"`
	CredentialEnv  string       `json:"credential_env,omitempty"`
	CredentialFile string       `json:"credential_file,omitempty"`
	Transport      MCPTransport `json:"transport,omitempty"`
}

func (mcpToolKind) record(s *BackendSpec) (any, error) { return (*mcpToolForm)(s.MCPTool), nil }

func (mcpToolKind) fromRecord(raw json.RawMessage, s *BackendSpec) error {
	var m mcpToolForm
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	s.MCPTool = (*MCPTool)(&m)
	return nil
}

func (mcpToolKind) fromFile(raw json.RawMessage, s *BackendSpec) (string, error) {
	var m mcpToolForm
	if err := decodeStrict(raw, &m); err != nil {
		return "", err
	}
	s.MCPTool = (*MCPTool)(&m)
	return "", nil
}
