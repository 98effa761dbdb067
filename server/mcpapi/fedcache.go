package mcpapi

// What the face knows of each federated upstream (federation.go): its
// capabilities and its prompt, resource and resource-template listings,
// kept so that initialize and server/discover never wait on an upstream,
// and a prompts/get (or a completion on a template) costs no listing.
//
// Capabilities are those of the upstream's live session (its initialize
// result, read without contacting it: Upstreams.Current); without one, the
// last ones read, for federationTTL. An upstream of which nothing is known
// (never reached, or its last read older than the TTL) is declared with
// nothing beyond tools — fail-safe: the face never declares what it may not
// serve — and a read of it starts in the background, so a later initialize
// declares what it offers. A failed read is not tried again for
// federationRetry, so a flood of initializes (or of listings) while an
// upstream is down costs it at most one attempt per interval.
//
// A listing is reused for federationTTL while the upstream's session
// generation is the one it was read under: a new session, or a stdio
// upstream's notifications/prompts/list_changed or
// notifications/resources/list_changed, makes it stale. What each caller
// may see of it is chosen per request. prompts/get on a
// name the listing lacks reads it again, at most once per
// promptMissRefreshGap per upstream.
//
// Concurrent reads of one upstream are one (singleflight), detached from
// the callers that wait on them and bounded by capsProbeTimeout. Memory is
// bounded: one entry per federated upstream of the registry (entries of
// upstreams gone from it are dropped), each listing held to the listing
// bounds (mcpimport.Bounds, the backend receive limit).

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/singleflight"

	"github.com/flowdrop/gateway/server/identity"
)

const (
	// federationTTL is how long capabilities read without a live session,
	// and a prompt listing, are reused.
	federationTTL = time.Minute
	// federationRetry is the least time between two failed reads of one
	// upstream.
	federationRetry = 5 * time.Second
	// promptMissRefreshGap is the least age of a prompt listing read again
	// because a prompts/get named a prompt it lacks.
	promptMissRefreshGap = 2 * time.Second
)

// errRecentlyFailed: the upstream's last read failed less than
// federationRetry ago; it is not tried again yet.
var errRecentlyFailed = errors.New("the upstream's last read failed moments ago; not tried again yet")

// upstreamCache is what the face knows of the federated upstreams.
type upstreamCache struct {
	mu     sync.Mutex
	byKey  map[upstreamKey]*upstreamKnown
	flight singleflight.Group
	// prefixless is how many upstreams without a prefix the registry had
	// when last looked at (federation.go logs a change to an ambiguous
	// count once, not per request).
	prefixless int
	// perUser are the upstreams left out for a per-user identity mode
	// when last looked at (federation.go logs each once, not per request).
	perUser map[upstreamKey]identity.Mode
	// unprefixed are the upstreams left out for their tools' names (why,
	// by upstream) when last looked at (federation.go logs each once).
	unprefixed map[upstreamKey]string
}

// unprefixedChanged records the upstreams left out for their tools' names
// and returns those not left out (or for another reason) last time.
func (c *upstreamCache) unprefixedChanged(now map[upstreamKey]string) []upstreamKey {
	c.mu.Lock()
	defer c.mu.Unlock()
	return leftOutChanged(&c.unprefixed, now)
}

// leftOutChanged sets *last to now and returns the upstreams of now that
// *last did not hold with the same value (c.mu held).
func leftOutChanged[V comparable](last *map[upstreamKey]V, now map[upstreamKey]V) []upstreamKey {
	var fresh []upstreamKey
	for k, v := range now {
		if old, ok := (*last)[k]; !ok || old != v {
			fresh = append(fresh, k)
		}
	}
	*last = now
	return fresh
}

// perUserChanged records the upstreams left out for a per-user identity
// mode and returns those not left out (or not under that mode) last time.
func (c *upstreamCache) perUserChanged(now map[upstreamKey]identity.Mode) []upstreamKey {
	c.mu.Lock()
	defer c.mu.Unlock()
	return leftOutChanged(&c.perUser, now)
}

// prefixlessChanged records n prefix-less upstreams and reports whether
// that differs from the last count.
func (c *upstreamCache) prefixlessChanged(n int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	changed := c.prefixless != n
	c.prefixless = n
	return changed
}

// upstreamKnown is what is known of one upstream; upstreamCache.mu guards it.
type upstreamKnown struct {
	caps       *mcp.ServerCapabilities
	capsAt     time.Time // zero: never read
	capsFailed time.Time
	// capsReading: a read started for an initialize is under way (later
	// initializes add no waiter to it).
	capsReading bool

	// listings are the upstream's listings by kind (listingPrompts, …).
	listings map[string]*keptListing
}

// keptListing is one listing of an upstream as read.
type keptListing struct {
	items  any       // []*mcp.Prompt, []*mcp.Resource or []*mcp.ResourceTemplate
	gen    uint64    // the session generation it was read under
	at     time.Time // zero: never read
	failed time.Time
}

// The kinds of listing kept.
const (
	listingPrompts   = "prompts"
	listingResources = "resources"
	listingTemplates = "templates"
)

// listing is k's listing of kind, made when there is none; the cache's mu
// is held.
func (k *upstreamKnown) listing(kind string) *keptListing {
	if k.listings == nil {
		k.listings = map[string]*keptListing{}
	}
	l := k.listings[kind]
	if l == nil {
		l = &keptListing{}
		k.listings[kind] = l
	}
	return l
}

// known is k's entry, made when there is none; c.mu is held.
func (c *upstreamCache) known(k upstreamKey) *upstreamKnown {
	if c.byKey == nil {
		c.byKey = map[upstreamKey]*upstreamKnown{}
	}
	e := c.byKey[k]
	if e == nil {
		e = &upstreamKnown{}
		c.byKey[k] = e
	}
	return e
}

// retain forgets the upstreams not in live.
func (c *upstreamCache) retain(live map[string]*federatedUpstream) {
	keep := make(map[upstreamKey]bool, len(live))
	for _, u := range live {
		keep[u.key] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.byKey {
		if !keep[k] {
			delete(c.byKey, k)
		}
	}
}

// flightKey names one kind of read of one upstream.
func flightKey(kind string, k upstreamKey) string {
	return fmt.Sprintf("%s\x00%q\x00%q\x00%q\x00%q\x00%v\x00%+v", kind, k.url, k.env, k.file, k.transport, k.hasTLS, k.tls)
}

// detached is ctx for a read shared by its waiters: none of them cancels
// it, capsProbeTimeout bounds it.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), capsProbeTimeout)
}

// knownCaps is u's capabilities as known without contacting it; ok is
// false when nothing current is known.
func (m *Server) knownCaps(u *federatedUpstream) (caps *mcp.ServerCapabilities, ok bool) {
	if caps, gen := m.upstreams.Current(&u.spec, u.tls); gen != 0 {
		return caps, true
	}
	m.fed.mu.Lock()
	defer m.fed.mu.Unlock()
	k := m.fed.known(u.key)
	if !k.capsAt.IsZero() && time.Since(k.capsAt) < federationTTL {
		return k.caps, true
	}
	return nil, false
}

// readCaps starts a read of u's capabilities (one at a time per upstream)
// and is where its result arrives; nil when its last read failed less than
// federationRetry ago.
func (m *Server) readCaps(ctx context.Context, u *federatedUpstream) <-chan singleflight.Result {
	m.fed.mu.Lock()
	failed := m.fed.known(u.key).capsFailed
	m.fed.mu.Unlock()
	if !failed.IsZero() && time.Since(failed) < federationRetry {
		return nil
	}
	return m.fed.flight.DoChan(flightKey("caps", u.key), func() (any, error) {
		ctx, cancel := detached(ctx)
		defer cancel()
		var caps *mcp.ServerCapabilities
		err := m.withUpstream(ctx, u, func(_ context.Context, cs *mcp.ClientSession) error {
			if ir := cs.InitializeResult(); ir != nil {
				caps = ir.Capabilities
			}
			return nil
		})
		m.fed.mu.Lock()
		k := m.fed.known(u.key)
		k.capsReading = false
		if err != nil {
			k.capsFailed = time.Now()
		} else {
			k.caps, k.capsAt, k.capsFailed = caps, time.Now(), time.Time{}
		}
		m.fed.mu.Unlock()
		if err != nil {
			m.log.WarnContext(ctx, "MCP federation: upstream unreachable", "namespace", u.ns, "error", err)
		}
		return caps, err
	})
}

// startCapsRead starts a read of u's capabilities for an initialize, which
// does not wait for it: at most one at a time.
func (m *Server) startCapsRead(ctx context.Context, u *federatedUpstream) {
	m.fed.mu.Lock()
	k := m.fed.known(u.key)
	reading := k.capsReading
	k.capsReading = true
	m.fed.mu.Unlock()
	if !reading && m.readCaps(ctx, u) == nil {
		m.fed.mu.Lock()
		m.fed.known(u.key).capsReading = false // not started: failed moments ago
		m.fed.mu.Unlock()
	}
}

// upstreamCaps is u's capabilities for a federated method: as known, else
// read (waiting at most for ctx); nil when it cannot be reached.
func (m *Server) upstreamCaps(ctx context.Context, u *federatedUpstream) *mcp.ServerCapabilities {
	if caps, ok := m.knownCaps(u); ok {
		return caps
	}
	ch := m.readCaps(ctx, u)
	if ch == nil {
		return nil
	}
	select {
	case r := <-ch:
		caps, _ := r.Val.(*mcp.ServerCapabilities)
		return caps
	case <-ctx.Done():
		return nil
	}
}

// keptListing is u's listing of kind as read by read (within the listing
// bounds), reused while current; fresh reads it again unless it is younger
// than promptMissRefreshGap.
func (m *Server) keptListing(ctx context.Context, u *federatedUpstream, kind string, fresh bool,
	read func(context.Context, *mcp.ClientSession) (any, error)) (any, error) {
	_, gen := m.upstreams.Current(&u.spec, u.tls)
	m.fed.mu.Lock()
	l := m.fed.known(u.key).listing(kind)
	age := time.Since(l.at)
	current := !l.at.IsZero() && gen != 0 && l.gen == gen && age < federationTTL
	if current && (!fresh || age < promptMissRefreshGap) {
		items := l.items
		m.fed.mu.Unlock()
		return items, nil
	}
	failed := !l.failed.IsZero() && time.Since(l.failed) < federationRetry
	m.fed.mu.Unlock()
	if failed {
		return nil, errRecentlyFailed
	}
	ch := m.fed.flight.DoChan(flightKey(kind, u.key), func() (any, error) {
		ctx, cancel := detached(ctx)
		defer cancel()
		var items any
		var gen uint64
		err := m.withUpstream(ctx, u, func(ctx context.Context, cs *mcp.ClientSession) error {
			// Read before listing: a change notified during it leaves the
			// listing stale, not the other way round.
			_, gen = m.upstreams.Current(&u.spec, u.tls)
			var err error
			items, err = read(ctx, cs)
			return err
		})
		m.fed.mu.Lock()
		l := m.fed.known(u.key).listing(kind)
		if err != nil {
			l.failed = time.Now()
		} else {
			l.items, l.gen, l.at, l.failed = items, gen, time.Now(), time.Time{}
		}
		m.fed.mu.Unlock()
		return items, err
	})
	select {
	case r := <-ch:
		return r.Val, r.Err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// promptListing is u's prompts as the upstream lists them (keptListing).
func (m *Server) promptListing(ctx context.Context, u *federatedUpstream, fresh bool) ([]*mcp.Prompt, error) {
	b := m.federationBounds()
	v, err := m.keptListing(ctx, u, listingPrompts, fresh, func(ctx context.Context, cs *mcp.ClientSession) (any, error) {
		var all []*mcp.Prompt
		err := m.listUpstreamPages(ctx, cs, b.Tools, func(ctx context.Context, cursor string) (string, any, error) {
			r, err := cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
			if err != nil {
				return "", nil, err
			}
			return r.NextCursor, r, nil
		}, func(raw any) int {
			for _, p := range raw.(*mcp.ListPromptsResult).Prompts {
				if len(all) < b.Tools && p != nil {
					all = append(all, p)
				}
			}
			return len(all)
		})
		return all, err
	})
	ps, _ := v.([]*mcp.Prompt)
	return ps, err
}

// resourceListing is u's resources as the upstream lists them, those over
// a bound left out (keptListing).
func (m *Server) resourceListing(ctx context.Context, u *federatedUpstream) ([]*mcp.Resource, error) {
	b := m.federationBounds()
	v, err := m.keptListing(ctx, u, listingResources, false, func(ctx context.Context, cs *mcp.ClientSession) (any, error) {
		var all []*mcp.Resource
		err := m.listUpstreamPages(ctx, cs, b.Tools, func(ctx context.Context, cursor string) (string, any, error) {
			r, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
			if err != nil {
				return "", nil, err
			}
			return r.NextCursor, r, nil
		}, func(raw any) int {
			for _, r := range raw.(*mcp.ListResourcesResult).Resources {
				if len(all) >= b.Tools {
					break
				}
				if r == nil || r.URI == "" || len(r.URI) > maxUpstreamURIBytes || len(r.Description) > b.DescriptionBytes || len(r.Name) > maxUpstreamURIBytes {
					continue
				}
				all = append(all, r)
			}
			return len(all)
		})
		return all, err
	})
	rs, _ := v.([]*mcp.Resource)
	return rs, err
}

// templateListing is u's resource templates as the upstream lists them,
// those over a bound left out (keptListing).
func (m *Server) templateListing(ctx context.Context, u *federatedUpstream) ([]*mcp.ResourceTemplate, error) {
	b := m.federationBounds()
	v, err := m.keptListing(ctx, u, listingTemplates, false, func(ctx context.Context, cs *mcp.ClientSession) (any, error) {
		var all []*mcp.ResourceTemplate
		err := m.listUpstreamPages(ctx, cs, b.Tools, func(ctx context.Context, cursor string) (string, any, error) {
			r, err := cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
			if err != nil {
				return "", nil, err
			}
			return r.NextCursor, r, nil
		}, func(raw any) int {
			for _, t := range raw.(*mcp.ListResourceTemplatesResult).ResourceTemplates {
				if len(all) >= b.Tools {
					break
				}
				if t == nil || t.URITemplate == "" || len(t.URITemplate) > maxUpstreamURIBytes || len(t.Description) > b.DescriptionBytes || len(t.Name) > maxUpstreamURIBytes {
					continue
				}
				all = append(all, t)
			}
			return len(all)
		})
		return all, err
	})
	ts, _ := v.([]*mcp.ResourceTemplate)
	return ts, err
}
