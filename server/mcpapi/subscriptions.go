package mcpapi

// Resource subscriptions and list changes of the federated upstreams
// (federation.go), relayed to the callers that have a stream to hear them.
//
// The face is stateless: a request before MCP 2026-07-28 has no stream
// after its answer, so without a face session resources/subscribe (and
// unsubscribe) are not offered there and not declared (resources.subscribe
// and the listChanged flags stay false); a caller with a face session
// subscribes in requests of its own and hears the updates on its session's
// GET stream (sessionsubs.go, sessionstream.go: resources.subscribe is
// declared to it, the listChanged flags are not). From 2026-07-28 a caller subscribes on its
// subscriptions/listen stream (SEP-2575: resourceSubscriptions,
// promptsListChanged, resourcesListChanged); the SDK calls subscribe and
// unsubscribe below for each URI as the stream opens and ends, and sends
// what ResourceUpdated and the list-changed nudges below announce on it.
//
// A subscription is admitted for a face URI the caller may read (its
// upstream in its view, its resource lists admit the URI) of an upstream
// that declares resources.subscribe; any other gets resource-not-found, as
// a read would, so subscribing tells nothing a read would not. Bounded:
// maxSubscriptionsPerCaller per caller (its subject and authentication
// method) and maxSubscriptionsTotal in all. The upstream is subscribed once
// per face URI however many callers subscribe, on the session its calls
// use, and unsubscribed when the last one leaves; a new session to the
// upstream (backend.NoticeSession) subscribes again what the old one had.
// An upstream's notifications/resources/updated for a subscribed URI is
// relayed with the URI in the face's form, coalesced: one relay per URI per
// updateCoalesce, however many updates arrive within it.
//
// A federated upstream's notifications/prompts/list_changed and
// notifications/resources/list_changed make what the face kept of its
// listings stale (the backend moves the session's generation: fedcache.go)
// and are relayed to every stream that asked for them: like
// tools/list_changed, they say only that something changed, and a caller
// re-lists what it may see.

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
)

const (
	// maxSubscriptionsPerCaller bounds one caller's subscribed URIs, over
	// all its streams.
	maxSubscriptionsPerCaller = 64
	// maxSubscriptionsTotal bounds the subscribed URIs of all callers.
	maxSubscriptionsTotal = 4096
	// updateCoalesce is how long updates of one URI are gathered into one
	// relay.
	updateCoalesce = 200 * time.Millisecond
	// unsubscribeTimeout bounds an upstream unsubscribe, which runs after
	// the caller's stream has ended.
	unsubscribeTimeout = 5 * time.Second
)

// MCPCodeSubscriptionLimit: a subscription over the per-caller or total
// bound (implementation-defined range, clear of the SDK's codes and of
// MCPCodeUpstreamTooLarge, MCPCodeUpstreamUnavailable).
const MCPCodeSubscriptionLimit = -32012

// Names of the SDK-side entries whose re-adding makes the SDK announce a
// list change on the streams that asked for it (the SDK sends list changes
// only when its own sets change). The face answers prompts/* and
// resources/* itself (federation.go), so neither is ever listed or read.
const (
	listChangedPrompt   = "flowdrop-list-changed"
	listChangedResource = "flowdrop-internal:list-changed"
)

// subscriptions are the face's resource subscriptions.
type subscriptions struct {
	mu        sync.Mutex
	byURI     map[string]*upstreamSub // by face URI
	perCaller map[string]int
	total     int
	pending   map[string]bool // face URIs with a relay scheduled
}

// upstreamSub is one face URI subscribed at its upstream.
type upstreamSub struct {
	u           *federatedUpstream
	upstreamURI string
	refs        int
	// ready is closed once the upstream subscribe ended, err its outcome;
	// done is closed once the upstream unsubscribe (refs back to 0) ended.
	ready, done chan struct{}
	err         error
	leaving     bool
}

// callerKey is whose a subscription is.
func callerKey(ctx context.Context) string {
	c, _ := policy.CallerFrom(ctx)
	return c.Method + "\x00" + c.Subject
}

// streamsFor reports whether a request of method (initialize or
// server/discover) comes from a caller with a stream to hear
// notifications on: from 2026-07-28 (server/discover), its
// subscriptions/listen.
func streamsFor(method string) bool { return method == "server/discover" }

// subscribeOptions are the SDK server's options for subscriptions: the SDK
// agrees a listen stream's resourceSubscriptions and list-changed flags
// only where its own capabilities declare them, so they are declared there
// (what a caller is told is federation.go's, per caller).
func (m *Server) subscribeOptions(o *mcp.ServerOptions) {
	o.Capabilities.Resources = &mcp.ResourceCapabilities{Subscribe: true, ListChanged: true}
	o.Capabilities.Prompts = &mcp.PromptCapabilities{ListChanged: true}
	o.SubscribeHandler = m.subscribe
	o.UnsubscribeHandler = m.unsubscribe
}

// addListChangedEntries adds the entries the list-changed nudges re-add.
func (m *Server) addListChangedEntries() {
	m.sdk.AddPrompt(&mcp.Prompt{Name: listChangedPrompt}, m.unreachablePrompt)
	m.sdk.AddResource(&mcp.Resource{URI: listChangedResource, Name: listChangedResource}, m.unreachableResource)
}

func (m *Server) unreachablePrompt(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	return nil, notOffered("prompts/get")
}

func (m *Server) unreachableResource(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return nil, notOffered("resources/read")
}

// refuseLegacySubscribe answers resources/subscribe and
// resources/unsubscribe sent as requests of their own without a face
// session (sessionsubs.go): a stateless request has no stream after the
// answer to deliver updates on.
func refuseLegacySubscribe(method string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf(
		"method %q is not offered without a session: this request carries no Mcp-Session-Id the gateway issued; from MCP 2026-07-28 subscribe on a subscriptions/listen stream (resourceSubscriptions)", method)}
}

// subscribe admits one URI of a caller's listen stream and subscribes its
// upstream when it is the URI's first subscriber.
func (m *Server) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	if m.upstreams == nil || req.Params == nil {
		return notOffered("resources/subscribe")
	}
	uri := req.Params.URI
	u, upstreamURI := m.subscribable(ctx, uri)
	if u == nil {
		return resourceNotFound(uri)
	}
	return m.hold(ctx, callerKey(ctx), uri, u, upstreamURI)
}

// subscribable is the upstream of the face URI uri and its own URI when
// the caller in ctx may subscribe to it: it may read it, the upstream is
// in its view and declares resources.subscribe; nil otherwise.
func (m *Server) subscribable(ctx context.Context, uri string) (*federatedUpstream, string) {
	if !m.mayListResources(ctx) || !m.mayReadResource(ctx, uri) {
		return nil, ""
	}
	u, upstreamURI := m.upstreamOfURI(ctx, uri)
	if u == nil {
		return nil, ""
	}
	if c := m.upstreamCaps(ctx, u); c == nil || c.Resources == nil || !c.Resources.Subscribe {
		return nil, ""
	}
	return u, upstreamURI
}

// hold counts one subscription of who (a caller's listen streams, or a
// face session: sessionsubs.go) to uri, subscribing its upstream when it
// is the URI's first.
func (m *Server) hold(ctx context.Context, who, uri string, u *federatedUpstream, upstreamURI string) error {
	for {
		m.subs.mu.Lock()
		if m.subs.byURI == nil {
			m.subs.byURI, m.subs.perCaller, m.subs.pending = map[string]*upstreamSub{}, map[string]int{}, map[string]bool{}
		}
		if m.subs.perCaller[who] >= maxSubscriptionsPerCaller || m.subs.total >= maxSubscriptionsTotal {
			m.subs.mu.Unlock()
			return &jsonrpc.Error{Code: MCPCodeSubscriptionLimit, Message: fmt.Sprintf(
				"resource %q: over the gateway's bound of %d subscriptions per caller (%d in all)", policy.Bound(uri), maxSubscriptionsPerCaller, maxSubscriptionsTotal)}
		}
		e := m.subs.byURI[uri]
		if e != nil && e.leaving {
			// Its upstream unsubscribe is under way: subscribe after it.
			done := e.done
			m.subs.mu.Unlock()
			select {
			case <-done:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		first := e == nil
		if first {
			e = &upstreamSub{u: u, upstreamURI: upstreamURI, ready: make(chan struct{}), done: make(chan struct{})}
			m.subs.byURI[uri] = e
		}
		e.refs++
		m.subs.perCaller[who]++
		m.subs.total++
		m.subs.mu.Unlock()
		if first {
			e.err = m.withUpstream(ctx, u, func(ctx context.Context, cs *mcp.ClientSession) error {
				return cs.Subscribe(ctx, &mcp.SubscribeParams{URI: upstreamURI})
			})
			close(e.ready)
		}
		select {
		case <-e.ready:
		case <-ctx.Done():
			m.release(who, uri)
			return ctx.Err()
		}
		if e.err != nil {
			m.release(who, uri)
			return m.upstreamError(ctx, "resources/subscribe", uri, e.err)
		}
		return nil
	}
}

// unsubscribe ends one URI of a caller's listen stream (the SDK calls it
// as the stream ends, for each URI subscribe admitted).
func (m *Server) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	if req.Params != nil {
		m.release(callerKey(ctx), req.Params.URI)
	}
	return nil
}

// release drops one subscription of who to uri; the last one of uri
// unsubscribes its upstream, in the background (the caller's stream has
// ended), bounded by unsubscribeTimeout.
func (m *Server) release(who, uri string) {
	m.subs.mu.Lock()
	defer m.subs.mu.Unlock()
	e := m.subs.byURI[uri]
	if e == nil || e.leaving || e.refs == 0 {
		return
	}
	e.refs--
	if m.subs.perCaller[who]--; m.subs.perCaller[who] <= 0 {
		delete(m.subs.perCaller, who)
	}
	m.subs.total--
	if e.refs > 0 {
		return
	}
	e.leaving = true
	go func() {
		<-e.ready
		if e.err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), unsubscribeTimeout)
			err := m.withUpstream(ctx, e.u, func(ctx context.Context, cs *mcp.ClientSession) error {
				return cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: e.upstreamURI})
			})
			cancel()
			if err != nil {
				m.log.Warn("MCP federation: upstream unsubscribe failed", "namespace", e.u.ns, "error", err)
			}
		}
		m.subs.mu.Lock()
		if m.subs.byURI[uri] == e {
			delete(m.subs.byURI, uri)
		}
		m.subs.mu.Unlock()
		close(e.done)
	}()
}

// UpstreamNotified is what an upstream notified (backend.MCPUpstream's
// OnNotice): a resource's update, a list change, or a new session. It
// does not block: relays are sent from goroutines of their own.
func (m *Server) UpstreamNotified(up *registry.MCPTool, ts *registry.TransportSecurity, method, uri string) {
	if m.upstreams == nil {
		return
	}
	switch method {
	case "notifications/prompts/list_changed":
		if m.fedFor(up, ts) != nil {
			m.sdk.AddPrompt(&mcp.Prompt{Name: listChangedPrompt}, m.unreachablePrompt)
		}
	case "notifications/resources/list_changed":
		if m.fedFor(up, ts) != nil {
			m.sdk.AddResource(&mcp.Resource{URI: listChangedResource, Name: listChangedResource}, m.unreachableResource)
		}
	case "notifications/resources/updated":
		if u := m.fedFor(up, ts); u != nil && len(uri) <= maxUpstreamURIBytes {
			// A prefix-less upstream's update of a URI that reads as a
			// prefixed one would notify another upstream's subscribers.
			if face, ok := u.gatewayURI(uri); ok {
				m.relayUpdated(face)
			}
		}
	case "flowdrop/session": // backend.NoticeSession
		m.resubscribe(up, ts)
	}
}

// fedFor is the federated upstream of a session's spec, nil when it is not
// federated.
func (m *Server) fedFor(up *registry.MCPTool, ts *registry.TransportSecurity) *federatedUpstream {
	k := upstreamKey{url: up.URL, env: up.CredentialEnv, file: up.CredentialFile, transport: up.Transport}
	if ts != nil {
		k.tls, k.hasTLS = *ts, true
	}
	for _, u := range m.federatedUpstreams() {
		if u.key == k {
			return u
		}
	}
	return nil
}

// relayUpdated sends notifications/resources/updated for the face URI uri
// to its subscribers, once per updateCoalesce; nothing when it has none.
func (m *Server) relayUpdated(uri string) {
	m.subs.mu.Lock()
	defer m.subs.mu.Unlock()
	if e := m.subs.byURI[uri]; e == nil || e.refs == 0 || m.subs.pending[uri] {
		return
	}
	m.subs.pending[uri] = true
	time.AfterFunc(updateCoalesce, func() {
		m.subs.mu.Lock()
		delete(m.subs.pending, uri)
		m.subs.mu.Unlock()
		ctx, cancel := context.WithTimeout(m.drain, unsubscribeTimeout)
		defer cancel()
		_ = m.sdk.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
		m.deliverSessionUpdate(uri) // sessionstream.go
	})
}

// resubscribe subscribes again, on a new session to the upstream, the URIs
// subscribed on the one before.
func (m *Server) resubscribe(up *registry.MCPTool, ts *registry.TransportSecurity) {
	u := m.fedFor(up, ts)
	if u == nil {
		return
	}
	var again []string
	m.subs.mu.Lock()
	for _, e := range m.subs.byURI {
		if e.u.key != u.key || e.leaving {
			continue
		}
		select {
		case <-e.ready:
			if e.err == nil {
				again = append(again, e.upstreamURI)
			}
		default: // its first subscribe is under way, on this session
		}
	}
	m.subs.mu.Unlock()
	if len(again) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), unsubscribeTimeout)
	defer cancel()
	err := m.withUpstream(ctx, u, func(ctx context.Context, cs *mcp.ClientSession) error {
		for _, uri := range again {
			if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		m.log.Warn("MCP federation: subscribing again on a new upstream session failed", "namespace", u.ns, "error", err)
	}
}
