package mcpfollow

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowdrop/gateway/internal/mcpimport"
	"github.com/flowdrop/gateway/internal/mcppin"
	"github.com/flowdrop/gateway/internal/mcpupstream"
	"github.com/flowdrop/gateway/internal/policy"
	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/server/backend"
	"github.com/flowdrop/gateway/server/pipeline"
)

// DefaultRelistInterval is how often the follower re-lists its upstream
// MCP servers' tools when nothing told it they changed.
const DefaultRelistInterval = 30 * time.Second

// Config is what a Follower follows with. Registry is required; the rest
// may be left zero.
type Config struct {
	Registry *registry.Registry
	// Audit is where the follower's writes get their audit lines (nil: no
	// audit log).
	Audit *pipeline.AuditRecorder
	// Stdio lists a running stdio server's tools (nil: no stdio servers).
	Stdio StdioLister
	Log   *slog.Logger // nil: slog.Default()
	// Interval is how often every upstream is re-listed (0:
	// DefaultRelistInterval).
	Interval time.Duration
	// PinPolicy is the policy's mcp_upstreams.auto_approve now (nil: none).
	PinPolicy func() mcppin.Policy
	// Bounds hold each listing (unset bounds: mcpimport.DefaultBounds).
	Bounds mcpimport.Bounds
	// CountOversized (nil: none) counts a tool over a bound, by bound.
	CountOversized func(bound string)
	// ReferenceAllowed (nil: any) refuses a credential reference the
	// policy does not declare for url, before it is read.
	ReferenceAllowed func(url string, ref mcpupstream.Reference) error
}

// Follower keeps the tools imported from upstream MCP servers (those
// with an origin naming their upstream: an admin's tool is never followed)
// in step with their upstreams: on an upstream's
// notifications/tools/list_changed (a standing session per upstream
// listens) it re-lists that upstream alone, at most once per relistGap
// (relistPacer), and every interval (for an upstream that cannot notify,
// or a lost notification) each upstream — each listing within the bounds
// (bounds.go) — and a changed definition
// or a tool gone upstream becomes the tool's pending change, held for an
// admin's approval unless the policy auto-approves it (definition
// pinning: internal/mcppin, pin.go).
//
// A tool new upstream is not added: which tools, under which prefix, is
// the import's decision. A stdio server (a process the gateway runs) is
// followed while it runs, over the calls' own session (its list_changed
// reaches the kind, which calls NotifyStdio); it is never started only
// to be listed. An upstream that cannot be listed changes nothing
// (it being down must not empty the registry). Writes carry the revision
// they were computed from, so an admin's concurrent change wins.
type Follower struct {
	reg              *registry.Registry
	audit            *pipeline.AuditRecorder // nil: no audit log
	stdio            StdioLister
	log              *slog.Logger
	interval         time.Duration
	pinPolicy        func() mcppin.Policy
	bounds           mcpimport.Bounds
	countOversized   func(bound string)
	pacer            *relistPacer
	referenceAllowed func(url string, ref mcpupstream.Reference) error

	kick chan struct{}
	stop chan struct{}
	done chan struct{}

	mu        sync.Mutex
	listeners map[mcpupstream.Reference]map[string]*mcp.ClientSession // by credential, then URL
	oversized map[oversizedKey]bool                                   // reported (skipOversized)

	health healthBook // each upstream's last listing (Health)
}

// StdioLister lists a running stdio server's tools (backend.MCPUpstream);
// backend.ErrNotRunning when it is not running.
type StdioLister interface {
	ListRunning(ctx context.Context, url string, b mcpimport.Bounds) ([]*mcp.Tool, []mcpimport.Oversized, error)
}

// New is a follower for cfg; Run starts it, Close stops it.
func New(cfg Config) *Follower {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultRelistInterval
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	f := &Follower{reg: cfg.Registry, audit: cfg.Audit, stdio: cfg.Stdio, log: cfg.Log, interval: cfg.Interval,
		pinPolicy: cfg.PinPolicy, bounds: cfg.Bounds.Or(mcpimport.DefaultBounds()), countOversized: cfg.CountOversized,
		referenceAllowed: cfg.ReferenceAllowed, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		listeners: map[mcpupstream.Reference]map[string]*mcp.ClientSession{}}
	f.pacer = newRelistPacer(relistGap, f.wake)
	return f
}

// mcpUpstreamGroup is the registered tools of one upstream (URL and
// credential reference), by upstream tool name.
type mcpUpstreamGroup struct {
	url   string
	ref   mcpupstream.Reference
	tools map[string]registry.Tool
	key   mcpGroupKey
}

type mcpGroupKey struct {
	url  string
	mcpT registry.MCPTransport // spec.mcp_tool.transport
	ref  mcpupstream.Reference
	tls  registry.TransportSecurity // the tools' spec.tls (zero: none)
	has  bool                       // spec.tls is set
}

// transport is the group's HTTP transport: its spec.tls, never plaintext
// when TLS is required.
func (k mcpGroupKey) transport() (http.RoundTripper, error) {
	if !k.has {
		return backend.HTTPTransportFor(k.url, nil, nil)
	}
	return backend.HTTPTransportFor(k.url, &k.tls, nil)
}

func (f *Follower) groups() map[mcpGroupKey]*mcpUpstreamGroup {
	out := map[mcpGroupKey]*mcpUpstreamGroup{}
	for _, e := range f.reg.Snapshot().List() {
		t := e.Tool
		if t.Spec == nil || t.Spec.MCPTool == nil || !t.ImportedFrom(t.Spec.MCPTool.URL) {
			continue // an admin's tool: no upstream changes or deletes it
		}
		m := t.Spec.MCPTool
		k := mcpGroupKey{url: m.URL, mcpT: m.Transport, ref: mcpupstream.Reference{Env: m.CredentialEnv, File: m.CredentialFile}}
		if t.Spec.TLS != nil {
			k.tls, k.has = *t.Spec.TLS, true
		}
		g := out[k]
		if g == nil {
			g = &mcpUpstreamGroup{url: k.url, ref: k.ref, key: k, tools: map[string]registry.Tool{}}
			out[k] = g
		}
		g.tools[m.Tool] = t
	}
	return out
}

// Run follows until Close.
func (f *Follower) Run() {
	defer close(f.done)
	changes, cancel := f.reg.Changes()
	defer cancel()
	tick := time.NewTicker(f.interval)
	defer tick.Stop()
	defer f.pacer.stop()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		<-f.stop
		stop()
	}()
	f.listen(ctx)
	for {
		select {
		case <-f.stop:
			f.closeListeners()
			return
		case _, ok := <-changes:
			if !ok {
				changes = nil // the registry closed; the gateway is closing too
				continue
			}
			f.listen(ctx)
		case <-f.kick:
			f.relistDue(ctx)
		case <-tick.C:
			f.listen(ctx)
			f.sync(ctx)
		}
	}
}

// Close stops Run's loop and its sessions, and returns once it stopped.
func (f *Follower) Close() {
	close(f.stop)
	<-f.done
}

// listen keeps one notification session per upstream in use (bounded:
// one attempt per upstream per change or interval), and ends the sessions
// of upstreams no registered tool uses any more.
func (f *Follower) listen(ctx context.Context) {
	groups := f.groups()
	f.endUnused(groups)
	for k := range groups {
		if _, stdio := registry.StdioName(k.url); stdio {
			continue // its list_changed comes over the calls' session
		}
		f.mu.Lock()
		_, ok := f.listeners[k.ref][k.url]
		f.mu.Unlock()
		if ok {
			continue
		}
		h, _, err := f.loadReference(k.url, k.ref)
		if err != nil {
			f.log.Warn("mcp upstream: credential", "url", k.url, "credential", k.ref.String(), "err", err)
			f.health.record(k.url, time.Now(), err, false)
			continue
		}
		base, err := k.transport()
		if err != nil {
			f.log.Warn("mcp upstream: transport", "url", k.url, "err", err)
			f.health.record(k.url, time.Now(), err, false)
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		id := upstreamID{url: k.url, ref: k.ref}
		cs, err := mcpupstream.Connect(cctx, k.url, h, mcpupstream.ConnectOptions{Base: base, Listen: true, MaxResponseBytes: f.bounds.ListBytes,
			Transport: mcpupstream.Transport(k.mcpT),
			Client:    &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { f.pacer.notify(id) }}})
		cancel()
		if err != nil {
			f.log.Debug("mcp upstream: no notification session; re-listing on the interval", "url", k.url, "err", err)
			if ctx.Err() == nil { // unreachable now: a failure until a listing succeeds
				f.health.record(k.url, time.Now(), err, false)
			}
			continue
		}
		f.mu.Lock()
		if f.listeners[k.ref] == nil {
			f.listeners[k.ref] = map[string]*mcp.ClientSession{}
		}
		f.listeners[k.ref][k.url] = cs
		f.mu.Unlock()
		go func() { // a session that ends is made again at the next interval
			_ = cs.Wait()
			f.mu.Lock()
			if f.listeners[k.ref][k.url] == cs {
				delete(f.listeners[k.ref], k.url)
			}
			f.mu.Unlock()
		}()
	}
}

// endUnused closes the notification sessions of upstreams in no group.
func (f *Follower) endUnused(groups map[mcpGroupKey]*mcpUpstreamGroup) {
	type upstream struct {
		ref mcpupstream.Reference
		url string
	}
	inUse := map[upstream]bool{}
	for k := range groups {
		inUse[upstream{k.ref, k.url}] = true
	}
	var unused []*mcp.ClientSession
	f.mu.Lock()
	for ref, byURL := range f.listeners {
		for url, cs := range byURL {
			if !inUse[upstream{ref, url}] {
				unused = append(unused, cs)
				delete(byURL, url)
			}
		}
		if len(byURL) == 0 {
			delete(f.listeners, ref)
		}
	}
	f.mu.Unlock()
	for _, cs := range unused {
		_ = cs.Close()
	}
}

// wake asks the loop to re-list the upstreams due (relistDue).
func (f *Follower) wake() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// NotifyStdio hears a running stdio server's list_changed
// (backend.MCPUpstream.OnToolListChanged).
func (f *Follower) NotifyStdio(url string) { f.pacer.notify(upstreamID{url: url}) }

func (f *Follower) closeListeners() {
	f.mu.Lock()
	var all []*mcp.ClientSession
	for _, byURL := range f.listeners {
		for _, cs := range byURL {
			all = append(all, cs)
		}
	}
	f.mu.Unlock()
	for _, cs := range all {
		_ = cs.Close()
	}
}

// sync re-lists every upstream and applies what changed.
func (f *Follower) sync(ctx context.Context) {
	groups := f.groups()
	inUse := map[upstreamID]bool{}
	urls := map[string]bool{}
	for _, g := range groups {
		f.syncGroup(ctx, g)
		id := upstreamID{url: g.url, ref: g.ref}
		inUse[id] = true
		urls[g.url] = true
		f.pacer.listed(id, time.Now())
	}
	f.pacer.forget(inUse)
	f.health.forget(urls)
}

// relistDue re-lists the upstreams that notified and are due
// (relistPacer), each alone.
func (f *Follower) relistDue(ctx context.Context) {
	due := f.pacer.due(time.Now())
	if len(due) == 0 {
		return
	}
	groups := f.groups()
	for _, id := range due {
		f.pacer.listed(id, time.Now())
		for _, g := range groups {
			if g.url == id.url && g.ref == id.ref {
				f.syncGroup(ctx, g)
			}
		}
	}
}

func (f *Follower) syncGroup(parent context.Context, g *mcpUpstreamGroup) {
	ctx, cancel := context.WithTimeout(parent, 10*time.Second)
	defer cancel()
	listed, oversized, err := f.list(ctx, g)
	notRunning := errors.Is(err, backend.ErrNotRunning)
	if parent.Err() == nil { // a listing cut short by Close says nothing of the upstream
		f.health.record(g.url, time.Now(), err, notRunning)
	}
	if notRunning {
		return // a stdio server not running: nothing to follow now
	}
	if err != nil {
		f.log.Warn("mcp upstream: cannot list its tools; keeping them as registered", "url", g.url, "err", err)
		return
	}
	upstream := map[string]*mcp.Tool{}
	for _, t := range listed {
		upstream[t.Name] = t
	}
	f.follow(ctx, withoutHeld(g, f.skipOversized(ctx, g, oversized)), upstream)
}

// list is the upstream's tools within f.bounds, and those left out for
// being over one: over its notification session, or one made for the
// listing; a stdio server's over its calls' session.
func (f *Follower) list(ctx context.Context, g *mcpUpstreamGroup) ([]*mcp.Tool, []mcpimport.Oversized, error) {
	if _, stdio := registry.StdioName(g.url); stdio {
		if f.stdio == nil {
			return nil, nil, backend.ErrNotRunning
		}
		return f.stdio.ListRunning(ctx, g.url, f.bounds)
	}
	f.mu.Lock()
	cs := f.listeners[g.ref][g.url]
	f.mu.Unlock()
	if cs == nil {
		h, _, err := f.loadReference(g.url, g.ref)
		if err != nil {
			return nil, nil, err
		}
		base, err := g.key.transport()
		if err != nil {
			return nil, nil, err
		}
		if cs, err = mcpupstream.Connect(ctx, g.url, h, mcpupstream.ConnectOptions{Base: base, MaxResponseBytes: f.bounds.ListBytes,
			Transport: mcpupstream.Transport(g.key.mcpT)}); err != nil {
			return nil, nil, err
		}
		defer cs.Close()
	}
	return mcpimport.ListWithin(ctx, cs, f.bounds)
}

// followerCaller is who the follower's audit lines name: the gateway.
var followerCaller = policy.Caller{Subject: "flowdrop-gateway", Method: policy.MethodInternal}

// write makes one of the follower's registry writes and gives it an audit
// line as a caller's write has. Under fail-closed audit it is not made
// while the log cannot be written (the next re-list tries again). A write
// another writer got to first (an admin, another replica: revision
// mismatch, already deleted) changed nothing and has no line.
func (f *Follower) write(ctx context.Context, op, tool, url, reason, what string, do func() (revision int64, err error)) {
	if e := f.audit.BeginRegistryWrite(tool); e != nil {
		f.log.Warn("mcp upstream: the audit log cannot be written; the tool is left as registered until the next re-list",
			"tool", tool, "url", url, "reason", reason)
		return
	}
	w := pipeline.RegistryWrite{Start: time.Now(), Caller: followerCaller, HasCaller: true, Operation: op, Tool: tool,
		Decision: policy.DecisionAllow, Reason: reason}
	rev, err := do()
	if f.logWrite(what, tool, url, err) {
		return
	}
	if err != nil {
		w.Decision = policy.DecisionError
	}
	w.Revision = rev
	if e := f.audit.RecordRegistryWrite(ctx, w); e != nil {
		f.log.Error("mcp upstream: tool "+what+", but its audit line could not be written", "tool", tool, "url", url)
	}
}

// logWrite logs a write's outcome and reports whether another writer got
// to it first (theirs stands; nothing was changed).
func (f *Follower) logWrite(what, tool, url string, err error) (beaten bool) {
	var mismatch *registry.RevisionMismatchError
	switch {
	case err == nil:
		f.log.Info("mcp upstream: tool "+what, "tool", tool, "url", url)
	case errors.As(err, &mismatch), errors.Is(err, registry.ErrNotFound):
		return true
	default:
		f.log.Warn("mcp upstream: tool "+what+", but the registry write failed", "tool", tool, "url", url, "err", err)
	}
	return false
}

// loadReference reads ref to reach url, if the policy declares it.
func (f *Follower) loadReference(url string, ref mcpupstream.Reference) (mcpupstream.Header, bool, error) {
	if f.referenceAllowed != nil {
		if err := f.referenceAllowed(url, ref); err != nil {
			return mcpupstream.Header{}, false, err
		}
	}
	return ref.Load()
}
