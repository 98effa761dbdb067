package mcpapi

// OAuth 2.0 Protected Resource Metadata (RFC 9728) for MCP authorization
// discovery: with JWT authentication on, the MCP listener serves a public
// document naming the resource and the authorization servers, and every
// 401 points at it (resource_metadata in WWW-Authenticate), so an MCP client
// finds where to get a token on its own. Without JWT there is neither.

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// ResourceMetadataPath is the well-known path of the metadata document
// (RFC 9728 §3); it is also served with the resource's path appended
// (§3.1: /.well-known/oauth-protected-resource/mcp).
const ResourceMetadataPath = "/.well-known/oauth-protected-resource"

// resourceURL is the protected resource's identifier: the policy's
// jwt.resource, else the listener's own MCP URL.
func (m *Server) resourceURL(d *policy.JWTDiscovery) string {
	if d.Resource != "" {
		return d.Resource
	}
	return m.resource
}

// resourceMetadataURL is where the document of resource is, as RFC 9728
// §3.1 forms it: the well-known path inserted between host and path.
func resourceMetadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil { // checked at policy load; the default is ours
		return ""
	}
	u.Path = ResourceMetadataPath + strings.TrimSuffix(u.Path, "/")
	u.RawPath, u.RawQuery = "", ""
	return u.String()
}

// serveResourceMetadata answers GET of the metadata document. It is public:
// it says only what a client needs to ask for a token, nothing of a caller.
func (m *Server) serveResourceMetadata(w http.ResponseWriter, r *http.Request) {
	d := m.pipe.Policy().Auth.JWTDiscovery()
	if d == nil {
		http.NotFound(w, r)
		return
	}
	resource := m.resourceURL(d)
	if !m.isResourceMetadataPath(r.URL.Path, resource) {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := json.Marshal(oauthex.ProtectedResourceMetadata{Resource: resource, AuthorizationServers: d.AuthorizationServers,
		ScopesSupported: d.ScopesSupported, BearerMethodsSupported: []string{"header"}})
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	// Public metadata that follows policy reloads: cacheable briefly.
	h.Set("Cache-Control", "public, max-age=60")
	// Browser-based MCP clients discover it cross-origin (no credentials).
	h.Set("Access-Control-Allow-Origin", "*")
	w.Write(body)
}

// isResourceMetadataPath reports whether path is the document's: the bare
// well-known path, or it followed by the MCP path or by the configured
// resource's path (a proxy may publish the endpoint under another path).
func (m *Server) isResourceMetadataPath(path, resource string) bool {
	suffix, ok := strings.CutPrefix(path, ResourceMetadataPath)
	if !ok {
		return false
	}
	if suffix == "" || suffix == Path {
		return true
	}
	u, err := url.Parse(resource)
	return err == nil && suffix == strings.TrimSuffix(u.Path, "/")
}

// resourceMetadataParam is the challenge parameter pointing at the
// document (RFC 9728 §5.1), "" without JWT discovery.
func (m *Server) resourceMetadataParam(auth *policy.Authenticator) string {
	d := auth.JWTDiscovery()
	if d == nil {
		return ""
	}
	return `, resource_metadata="` + resourceMetadataURL(m.resourceURL(d)) + `"`
}
