package registry

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// MCPTool is a tool of an upstream MCP server reached over streamable
// HTTP. The credential fields are references (an environment variable's
// name, a file's path), never the credential itself: the registry holds no
// secret, and a registry read shows none.
type MCPTool struct {
	// URL is the upstream's streamable-HTTP endpoint (http or https).
	URL string
	// Tool is the upstream tool's own name.
	Tool string
	// CredentialEnv names an environment variable of the gateway holding
	// a bearer token or one "Header-Name: value" line.
	CredentialEnv string
	// CredentialFile is the path of a file on the gateway's host holding
	// the same.
	CredentialFile string
}

// checkMCPTool admits an upstream MCP tool: an absolute http(s) URL with a
// host and no user info (a credential belongs in a reference), an upstream
// tool name, and at most one credential reference.
func checkMCPTool(name string, m *MCPTool) *ToolError {
	bad := func(field, reason string) *ToolError {
		return &ToolError{Tool: name, Field: "spec.mcp_tool." + field, Reason: reason}
	}
	u, err := url.Parse(m.URL)
	switch {
	case m.URL == "":
		return bad("url", "must not be empty: the upstream's streamable-HTTP URL")
	case err != nil:
		return bad("url", "is not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return bad("url", fmt.Sprintf("scheme %q is not supported: want http or https", u.Scheme))
	case u.Host == "":
		return bad("url", "must name a host")
	case u.User != nil:
		return bad("url", "must not carry user info: reference the credential with credential_env or credential_file")
	}
	switch {
	case m.Tool == "":
		return bad("tool", "must not be empty: the upstream tool's name")
	case len(m.Tool) > 128 || strings.ContainsAny(m.Tool, "\x00\r\n"):
		return bad("tool", "must be at most 128 bytes without control characters")
	case m.CredentialEnv != "" && m.CredentialFile != "":
		return bad("credential_env", "set at most one of credential_env and credential_file")
	case m.CredentialFile != "" && !filepath.IsAbs(m.CredentialFile):
		return bad("credential_file", "must be an absolute path on the gateway's host")
	case m.CredentialEnv != "" && strings.ContainsAny(m.CredentialEnv, "= \t\x00"):
		return bad("credential_env", "is not an environment variable name")
	}
	return nil
}
