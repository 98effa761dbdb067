package mcpapi

// Federation: the resources, resource templates, prompts and completions
// of the upstream MCP servers the registry fronts, served on this face
// beside their tools (resources.go, prompts.go, completions.go).
//
// An upstream is a group of imported tools (registry.Tool.ImportedFrom)
// with one URL, credential reference and spec.tls — the session its tools'
// calls use. Its namespace is its import prefix, read back from its tools'
// names (gateway name = prefix + mapped upstream name, mcpimport.MapName).
// An upstream is federated only when that prefix is one and the same for
// all its tools and no other upstream has it: the namespace is what makes
// names and URIs reversible, so an ambiguous one is not served. A caller's view is the upstreams of which it may
// invoke at least one tool (pipeline.Visible): an upstream whose tools are
// all denied to the caller is invisible to it, resources and prompts
// included.
//
// One upstream imported without a prefix (the common single-upstream
// deployment) is federated too, under the empty namespace: its URIs and
// prompt names are its own. Routing looks at the prefixed namespaces
// first: a flowdrop-mcp:// URI goes to the prefix it names, a prompt name
// starting with a federated prefix to that upstream; everything else to
// the prefix-less upstream. So its own items that would read as prefixed
// ones (a URI of the face's scheme, in any case; a prompt name starting
// with a federated prefix) are neither listed nor reachable through it,
// and its notifications for such URIs are dropped. Two or more prefix-less
// upstreams are ambiguous: none of them is federated (logged).
//
// An upstream any of whose tools the policy sends under a per-user
// identity mode (upstream_identity: anything but static) is not federated
// either (logged once): its federated requests would go on its shared
// session with the static credential, so every caller would read it as the
// gateway. Its items are not listed, not declared, and naming one is the
// same "not found" as naming an unknown one.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/internal/mcpimport"
	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/identity"
	"github.com/flowdrop/gateway/server/pipeline"
)

// Upstreams reaches the upstream MCP servers for the face's federated
// methods (backend.MCPUpstream).
type Upstreams interface {
	// Federated runs f over the upstream's session, under the backend
	// limits; an error is for the log (it may name the upstream's URL).
	Federated(ctx context.Context, up *registry.MCPTool, ts *registry.TransportSecurity, f func(context.Context, *mcp.ClientSession) error) error
	// FederatedRound sends a request that may ask its caller for input in
	// rounds (prompts/get, resources/read: params and out are the SDK's
	// types) as in says, under the same limits (fedinput.go). A refusal
	// of the round is a *pipeline.Error; another error is for the log.
	FederatedRound(ctx context.Context, up *registry.MCPTool, ts *registry.TransportSecurity, in pipeline.FederatedInput, params mcp.Params, out mcp.Result) error
	// MaxResponseBytes is the backend receive limit.
	MaxResponseBytes() int
	// IdentityMode is the identity mode the policy in force sends the
	// gateway tool named tool, imported from up, under (identity.Static:
	// the upstream's shared session and credential serve it).
	IdentityMode(tool string, up *registry.MCPTool) identity.Mode
	// Current is the capabilities of the upstream's live session and its
	// generation (0: no session), without contacting it (fedcache.go).
	Current(up *registry.MCPTool, ts *registry.TransportSecurity) (*mcp.ServerCapabilities, uint64)
}

// UpstreamScheme is the URI scheme of an upstream's resources on this
// face: flowdrop-mcp://PREFIX/UPSTREAM-URI. PREFIX (the upstream's
// namespace, a tool-name prefix: no "/") names the upstream; everything
// after the first "/" that follows it is the upstream's own URI, verbatim.
// So the form is reversible, and a URI can only ever reach the upstream
// its PREFIX names (an upstream listing a flowdrop-mcp:// URI of its own
// gets it wrapped again, under its own prefix).
const UpstreamScheme = "flowdrop-mcp"

const upstreamURIStart = UpstreamScheme + "://"

// maxUpstreamURIBytes bounds an upstream URI or URI template the face
// carries (listed, read or completed).
const maxUpstreamURIBytes = 8 << 10

// capsProbeTimeout bounds one read of an upstream (its capabilities, a
// session made when there is none; its prompt listing) shared by the
// requests that wait on it (fedcache.go).
const capsProbeTimeout = 5 * time.Second

// federatedUpstream is one upstream of the registry, as federated.
type federatedUpstream struct {
	key  upstreamKey
	ns   string
	spec registry.MCPTool // URL and credential reference (Tool unset)
	tls  *registry.TransportSecurity
	// tools are the upstream's gateway tool names (its view test).
	tools []string
}

// gatewayURI is an upstream URI in the face's form; ok is false for a
// prefix-less upstream's URI that would read as a prefixed one (or is over
// the bound), which is not carried.
func (u *federatedUpstream) gatewayURI(upstreamURI string) (_ string, ok bool) {
	if u.ns == "" {
		if upstreamURI == "" || len(upstreamURI) > maxUpstreamURIBytes || hasGatewayScheme(upstreamURI) {
			return "", false
		}
		return upstreamURI, true
	}
	return upstreamURIStart + u.ns + "/" + upstreamURI, true
}

// hasGatewayScheme: uri's scheme is the face's own (URI schemes are
// case-insensitive, so in any case).
func hasGatewayScheme(uri string) bool {
	const scheme = UpstreamScheme + ":"
	return len(uri) >= len(scheme) && strings.EqualFold(uri[:len(scheme)], scheme)
}

// upstreamOfURI is the upstream in the caller's view that the face URI
// uri names, and the upstream's own URI; nil when none: a
// flowdrop-mcp:// URI names its prefix's upstream (never the prefix-less
// one), any other URI the prefix-less upstream.
func (m *Server) upstreamOfURI(ctx context.Context, uri string) (*federatedUpstream, string) {
	if ns, upstreamURI, ok := splitGatewayURI(uri); ok {
		if u := m.upstreamFor(ctx, ns); u != nil {
			return u, upstreamURI
		}
		return nil, ""
	}
	if uri == "" || len(uri) > maxUpstreamURIBytes || hasGatewayScheme(uri) {
		return nil, ""
	}
	if u := m.upstreamFor(ctx, ""); u != nil {
		return u, uri
	}
	return nil, ""
}

// shadowsPrefixed: a prefix-less upstream's prompt named name would read
// as one of the federated upstream fed's prefixes.
func shadowsPrefixed(fed map[string]*federatedUpstream, name string) bool {
	for ns := range fed {
		if ns != "" && strings.HasPrefix(name, ns) {
			return true
		}
	}
	return false
}

// splitGatewayURI is a face URI's namespace and upstream URI; ok is false
// for any other URI.
func splitGatewayURI(uri string) (ns, upstreamURI string, ok bool) {
	rest, ok := strings.CutPrefix(uri, upstreamURIStart)
	if !ok {
		return "", "", false
	}
	ns, upstreamURI, ok = strings.Cut(rest, "/")
	if !ok || ns == "" || upstreamURI == "" || len(upstreamURI) > maxUpstreamURIBytes {
		return "", "", false
	}
	return ns, upstreamURI, true
}

type upstreamKey struct {
	url, env, file string
	transport      registry.MCPTransport
	tls            registry.TransportSecurity
	hasTLS         bool
}

// federatedUpstreams are the registry's federable upstreams, by namespace
// (see the file comment for which are).
func (m *Server) federatedUpstreams() map[string]*federatedUpstream {
	type group struct {
		up       *federatedUpstream
		prefixes map[string]bool
		// perUser is a non-static identity mode one of its tools is
		// sent under ("": none).
		perUser identity.Mode
	}
	groups := map[upstreamKey]*group{}
	for _, e := range m.reg.Snapshot().List() {
		t := e.Tool
		if t.Spec == nil || t.Spec.MCPTool == nil || !t.ImportedFrom(t.Spec.MCPTool.URL) {
			continue
		}
		sp := t.Spec.MCPTool
		k := upstreamKey{url: sp.URL, env: sp.CredentialEnv, file: sp.CredentialFile, transport: sp.Transport}
		if t.Spec.TLS != nil {
			k.tls, k.hasTLS = *t.Spec.TLS, true
		}
		g := groups[k]
		if g == nil {
			g = &group{up: &federatedUpstream{key: k, spec: registry.MCPTool{URL: sp.URL, CredentialEnv: sp.CredentialEnv, CredentialFile: sp.CredentialFile, Transport: sp.Transport}, tls: t.Spec.TLS},
				prefixes: map[string]bool{}}
			groups[k] = g
		}
		g.up.tools = append(g.up.tools, t.Name)
		if g.perUser == "" {
			if mode := m.upstreams.IdentityMode(t.Name, sp); mode != identity.Static {
				g.perUser = mode
			}
		}
		mapped, _ := mcpimport.MapName("", sp.Tool)
		prefix, ok := strings.CutSuffix(t.Name, mapped)
		if !ok || mapped == "" {
			prefix = "\x00" // renamed: no prefix to read back
		}
		g.prefixes[prefix] = true
	}
	out := map[string]*federatedUpstream{}
	taken := map[string]int{}
	perUser := map[upstreamKey]identity.Mode{}
	// unprefixed: upstreams left out because their tools' names give no
	// one prefix to read a face name back by (a tool renamed after its
	// import, or imported twice under two prefixes).
	unprefixed := map[upstreamKey]string{}
	for k, g := range groups {
		if g.perUser != "" {
			perUser[k] = g.perUser
			continue
		}
		if len(g.prefixes) != 1 {
			unprefixed[k] = "its tools' names give more than one prefix (a tool renamed after its import, or the upstream imported under two prefixes)"
			continue
		}
		for p := range g.prefixes {
			g.up.ns = p
		}
		if g.up.ns == "\x00" || strings.Contains(g.up.ns, "/") {
			unprefixed[k] = "its tools' names give no prefix to read a name back by (renamed after their import, or a prefix with a '/')"
			continue
		}
		taken[g.up.ns]++
		out[g.up.ns] = g.up
	}
	for ns, n := range taken {
		if n > 1 {
			// Two upstreams under one prefix: neither is reversible.
			for k, g := range groups {
				if _, left := unprefixed[k]; !left && g.perUser == "" && g.up.ns == ns && ns != "" {
					unprefixed[k] = "another upstream's tools are imported under the same prefix"
				}
			}
			delete(out, ns)
		}
	}
	for _, k := range m.fed.unprefixedChanged(unprefixed) {
		m.log.Warn("MCP federation: an upstream is not federated (its resources, prompts and completions are not served): "+unprefixed[k],
			"tool", policy.Bound(groups[k].up.tools[0]))
	}
	if n := taken[""]; m.fed.prefixlessChanged(n) && n > 1 {
		m.log.Warn("MCP federation: upstreams imported without a prefix are not federated: there is more than one, so their URIs and prompt names would be ambiguous", "upstreams", n)
	}
	for _, k := range m.fed.perUserChanged(perUser) {
		m.log.Warn("MCP federation: an upstream whose tools are sent under a per-user identity mode is not federated (its resources, prompts and completions would be read with the gateway's own credential, not the caller's)",
			"tool", policy.Bound(groups[k].up.tools[0]), "identity_mode", string(perUser[k]))
	}
	m.fed.retain(out)
	return out
}

// inView reports whether the caller may invoke some tool of u.
func (m *Server) inView(ctx context.Context, u *federatedUpstream) bool {
	return slices.ContainsFunc(u.tools, func(name string) bool { return m.pipe.Visible(ctx, name) })
}

// view is the caller's federated upstreams, by namespace order.
func (m *Server) view(ctx context.Context) []*federatedUpstream {
	if m.upstreams == nil {
		return nil
	}
	var out []*federatedUpstream
	for _, u := range m.federatedUpstreams() {
		if m.inView(ctx, u) {
			out = append(out, u)
		}
	}
	slices.SortFunc(out, func(a, b *federatedUpstream) int { return strings.Compare(a.ns, b.ns) })
	return out
}

// upstreamFor is the upstream of namespace ns in the caller's view.
func (m *Server) upstreamFor(ctx context.Context, ns string) *federatedUpstream {
	if m.upstreams == nil {
		return nil
	}
	u := m.federatedUpstreams()[ns]
	if u == nil || !m.inView(ctx, u) {
		return nil
	}
	return u
}

// withUpstream runs f over u's session, as the gateway (nothing of the
// caller's SDK request reaches the upstream).
func (m *Server) withUpstream(ctx context.Context, u *federatedUpstream, f func(context.Context, *mcp.ClientSession) error) error {
	spec := u.spec
	return m.upstreams.Federated(withoutSDKValues(ctx), &spec, u.tls, f)
}

// callerCapabilities is what the face declares to the caller in ctx:
// tools, and resources, prompts and completions when an upstream in its
// view is known to offer them, without waiting on any (fedcache.go;
// resources also only when its resource allow list is not empty). To a
// caller with a stream to hear them on (streams: subscriptions.go),
// resources.subscribe and the prompt and resource listChanged flags where
// such an upstream declares them; to a caller getting a face session
// (sessionSubs: sessionsubs.go), resources.subscribe alone; never to
// another.
func (m *Server) callerCapabilities(ctx context.Context, streams, sessionSubs bool) *mcp.ServerCapabilities {
	caps := capabilities()
	for _, u := range m.view(ctx) {
		c, ok := m.knownCaps(u)
		if !ok {
			// Declared once known, to a later caller: this one does not wait.
			m.startCapsRead(ctx, u)
			continue
		}
		if c == nil {
			continue
		}
		if c.Resources != nil && m.mayListResources(ctx) {
			if caps.Resources == nil {
				caps.Resources = &mcp.ResourceCapabilities{}
			}
			caps.Resources.Subscribe = caps.Resources.Subscribe || (streams || sessionSubs) && c.Resources.Subscribe
			caps.Resources.ListChanged = caps.Resources.ListChanged || streams && c.Resources.ListChanged
		}
		if c.Prompts != nil && federatedMethods["prompts/list"] != nil {
			if caps.Prompts == nil {
				caps.Prompts = &mcp.PromptCapabilities{}
			}
			caps.Prompts.ListChanged = caps.Prompts.ListChanged || streams && c.Prompts.ListChanged
		}
		if c.Completions != nil && federatedMethods["completion/complete"] != nil {
			caps.Completions = &mcp.CompletionCapabilities{}
		}
	}
	return caps
}

// authz is the authorizer of the request's policy and its caller (nil
// authorizer: no authorization, everything open).
func (m *Server) authz(ctx context.Context) (*policy.Authorizer, policy.Caller, bool) {
	pol := pipeline.PolicyFrom(ctx)
	if pol == nil {
		pol = m.pipe.Policy()
	}
	caller, ok := policy.CallerFrom(ctx)
	return pol.Authz, caller, ok
}

// mayListResources: the caller has a resource allow list (or there is no
// authorization).
func (m *Server) mayListResources(ctx context.Context) bool {
	az, caller, ok := m.authz(ctx)
	return az == nil || ok && az.MayListResources(caller)
}

// mayReadResource: the caller's resource allow and deny lists admit the
// face URI.
func (m *Server) mayReadResource(ctx context.Context, uri string) bool {
	az, caller, ok := m.authz(ctx)
	return az == nil || ok && az.AllowResource(caller, uri) == nil
}

// MCP JSON-RPC errors of the federated methods.
const (
	// MCPCodeUpstreamTooLarge: the upstream's answer is over the backend
	// receive limit (implementation-defined range, clear of the codes the
	// SDK defines: -32001..-32005, -32020..-32022, -32042).
	MCPCodeUpstreamTooLarge = -32010
	// MCPCodeUpstreamUnavailable: the upstream could not answer.
	MCPCodeUpstreamUnavailable = -32011
)

// upstreamError is the caller's error for a failed upstream request: it
// names what the caller asked for, never the upstream; the cause is logged.
func (m *Server) upstreamError(ctx context.Context, method, what string, err error) error {
	var rpc *jsonrpc.Error
	switch {
	case errors.Is(err, errTooLarge) || errors.Is(err, mcpupstream.ErrResponseTooLarge):
		return &jsonrpc.Error{Code: MCPCodeUpstreamTooLarge, Message: fmt.Sprintf("%s %q: the upstream's answer is over the gateway's limit of %d bytes for backend responses",
			method, policy.Bound(what), m.upstreams.MaxResponseBytes())}
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return ctx.Err()
	case errors.As(err, &rpc) && rpc.Code == jsonrpc.CodeInvalidParams:
		// Its own words may quote anything; the code is what the caller needs.
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s %q: the upstream refused the request's parameters", method, policy.Bound(what))}
	}
	m.log.WarnContext(ctx, "MCP federation: upstream request failed", "method", method, "name", policy.Bound(what), "error", err)
	return &jsonrpc.Error{Code: MCPCodeUpstreamUnavailable, Message: fmt.Sprintf("%s %q: the upstream MCP server did not answer", method, policy.Bound(what))}
}

// errTooLarge is the face's refusal of an upstream answer it read whole
// and measured over the limit (a stdio upstream's: over HTTP the transport
// cuts it off); it wraps mcpupstream.ErrResponseTooLarge, which tells
// Upstreams.Federated the session is sound.
var errTooLarge = fmt.Errorf("measured: %w", mcpupstream.ErrResponseTooLarge)

// federationBounds are the listing bounds (unset: mcpimport's defaults).
func (m *Server) federationBounds() mcpimport.Bounds {
	return m.bounds.Or(mcpimport.DefaultBounds())
}

// maxListPages bounds the pages read of one upstream listing.
const maxListPages = 100

// federatedMethod answers one federated MCP method; each concept's file
// registers its own (resources.go, prompts.go, completions.go).
type federatedMethod func(m *Server, ctx context.Context, method string, req mcp.Request) (mcp.Result, error)

var federatedMethods = map[string]federatedMethod{}

func init() {
	for _, method := range []string{"resources/list", "resources/templates/list", "resources/read", "prompts/list", "prompts/get", "completion/complete"} {
		countedMethods[method] = true
	}
}

// federate answers the federated methods, and declares in initialize and
// server/discover what the caller is served; ok is false for any other
// method (server.go's handle answers it).
func (m *Server) federate(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (_ mcp.Result, _ error, ok bool) {
	switch method {
	case "initialize", "server/discover":
		res, err := next(ctx, method, req)
		if err != nil || m.upstreams == nil {
			return res, err, true
		}
		switch r := res.(type) {
		case *mcp.InitializeResult:
			r.Capabilities = m.callerCapabilities(ctx, streamsFor(method), m.sessionSubscriptionsOn(ctx, r.ProtocolVersion))
		case *mcp.DiscoverResult:
			r.Capabilities = m.callerCapabilities(ctx, streamsFor(method), false)
		}
		return res, err, true
	}
	h := federatedMethods[method]
	if h == nil {
		return nil, nil, false
	}
	if m.upstreams == nil {
		return nil, notOffered(method), true
	}
	res, err := h(m, ctx, method, req)
	return res, err, true
}
