package mcpapi

// Bundles (registry.Bundle): each is served as its own endpoint,
// Path + "/" + name, through the same handler chain as Path. The request
// is marked with its bundle (pipeline.WithBundle), so
//   - tools/list lists the bundle's tools the caller may see;
//   - tools/call of a tool outside the bundle is not found, exactly as a
//     name that is not registered (the pipeline's lookup);
//   - resources, resource templates, prompts and completions are those of
//     the upstream MCP servers that have a tool in the bundle the caller
//     may see (federation.go's view follows pipeline.Visible).
// A name no bundle has is answered 404 with a JSON-RPC error before
// anything else: the name is bounded (a tool name) and looked up in the
// snapshot, nothing is read from the body, no credential is checked.

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/pipeline"
)

// MCPCodeBundleNotFound is the JSON-RPC error code of a request to an
// endpoint whose bundle does not exist (HTTP 404). Implementation-defined
// range, clear of the codes the go-sdk reserves (codes_test.go).
const MCPCodeBundleNotFound = -32017

// BundlePath is the endpoint path of the named bundle.
func BundlePath(bundle string) string { return Path + "/" + bundle }

// bundleEndpoint routes Path/<bundle> to next with the bundle in the
// request's context, or answers 404 for a bundle the registry does not
// serve.
func (m *Server) bundleEndpoint(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, Path+"/")
		if !registry.ValidBundleName(name) {
			m.bundleNotFound(w, r, "no bundle here: a bundle name matches "+registry.NamePattern)
			return
		}
		if _, ok := m.reg.Snapshot().Bundle(name); !ok {
			m.bundleNotFound(w, r, `bundle "`+name+`" not found`) // a valid name: nothing to escape
			return
		}
		next.ServeHTTP(w, r.WithContext(pipeline.WithBundle(r.Context(), name)))
	})
}

// bundleNotFound answers 404 with a JSON-RPC error (id null: the body is
// not read) and closes the connection, as every refusal before the body.
func (m *Server) bundleNotFound(w http.ResponseWriter, r *http.Request, msg string) {
	noteRefusal(r, "bundle-not-found")
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": MCPCodeBundleNotFound, "message": policy.BoundTo(msg, 256)}})
	w.Header().Set("Connection", "close")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write(append(body, '\n'))
}
