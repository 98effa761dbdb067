package registry

import (
	"context"
	"errors"
	"iter"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flowdrop/gateway/registry/lint"
	"github.com/flowdrop/gateway/registry/schema"
)

// Snapshot is an immutable view of the registry: every compiled entry at
// one point in the store's history. Readers share it without locks.
type Snapshot struct {
	// Revision is the highest store revision this view reflects.
	Revision int64
	entries  map[string]*Entry
	sorted   []*Entry
	// bundles are the servable bundles (bundle_registry.go).
	bundles map[string]*BundleEntry
	// exported maps provider-safe export names to their tools' names
	// (exportname.go).
	exported *ExportNames
}

// derive is a copy of s at revision rev: every index carried over, so a
// change of one part (the bundles, the revision) cannot drop another.
func (s *Snapshot) derive(rev int64) *Snapshot {
	c := *s
	c.Revision = rev
	return &c
}

// Lookup returns the compiled entry for a tool (compiling it now if it
// was loaded lazily and not compiled yet: lazy.go).
func (s *Snapshot) Lookup(name string) (*Entry, bool) {
	return s.entries[name].compiled()
}

// Len is the number of tools.
func (s *Snapshot) Len() int { return len(s.sorted) }

// List returns the entries sorted by name (a fresh slice; entries are
// shared). An entry's Tool is always set; under WithLazyCompile its
// compiled parts (Plan, Schema, Method, Output) may not be yet: a call
// takes its entry from Lookup, Resolve or LookupIn.
func (s *Snapshot) List() []*Entry { return slices.Clone(s.sorted) }

// Since yields the entries named from on (all when from is ""), sorted by
// name, without copying the list: a page of a listing costs its page, not
// the registry. Entries are as List's.
func (s *Snapshot) Since(from string) iter.Seq[*Entry] {
	i, _ := slices.BinarySearchFunc(s.sorted, from, compareName)
	return func(yield func(*Entry) bool) {
		for _, e := range s.sorted[i:] {
			if !yield(e) {
				return
			}
		}
	}
}

func compareName(e *Entry, name string) int { return strings.Compare(e.Tool.Name, name) }

// with is s at revision rev with e added or replacing its tool's entry.
// One change costs copies of the map and of the sorted slice (O(n)
// pointer copies, no sort and no per-tool allocation): at 100,000 tools a
// full rebuild per change cost tens of milliseconds (BENCHMARKS.md,
// "Registry at 100,000 tools").
func (s *Snapshot) with(e *Entry, rev int64) *Snapshot {
	c := s.derive(rev)
	name := e.Tool.Name
	c.entries = maps.Clone(s.entries)
	c.entries[name] = e
	i, found := slices.BinarySearchFunc(s.sorted, name, compareName)
	if found {
		c.sorted = slices.Clone(s.sorted)
		c.sorted[i] = e
		// Same names: the export-name index still holds.
		c.exported = s.exported.over(c.entries)
		return c
	}
	c.sorted = make([]*Entry, len(s.sorted)+1)
	copy(c.sorted, s.sorted[:i])
	c.sorted[i] = e
	copy(c.sorted[i+1:], s.sorted[i:])
	c.exported = s.exported.adding(name, c.entries)
	return c
}

// without is s at revision rev without the tool called name (which it
// holds).
func (s *Snapshot) without(name string, rev int64) *Snapshot {
	c := s.derive(rev)
	c.entries = maps.Clone(s.entries)
	delete(c.entries, name)
	c.sorted = slices.DeleteFunc(slices.Clone(s.sorted), func(e *Entry) bool { return e.Tool.Name == name })
	if _, shadowed := s.exported.exported[name]; !shadowed && ExportName(name) == name {
		// A provider-safe name no export name meets: the index holds.
		c.exported = s.exported.over(c.entries)
		return c
	}
	// Who else claims the export names it touched is not kept: re-derive
	// (O(n), an allocation per name that is not provider-safe).
	c.exported = exportIndex(c.entries)
	return c
}

func newSnapshot(rev int64, entries map[string]*Entry, bundles map[string]*BundleEntry) *Snapshot {
	sorted := slices.Collect(maps.Values(entries))
	slices.SortFunc(sorted, func(a, b *Entry) int { return strings.Compare(a.Tool.Name, b.Tool.Name) })
	return &Snapshot{Revision: rev, entries: entries, sorted: sorted, bundles: bundles, exported: exportIndex(entries)}
}

// Option configures a Registry.
type Option func(*Registry)

// WithLogger sets the logger for skipped tools and lost watches.
func WithLogger(l *slog.Logger) Option {
	return func(r *Registry) {
		if l != nil {
			r.log = l
		}
	}
}

// WithoutFastPaths compiles every tool without fast paths
// (schema.WithoutFastPaths): Entry.Validate always takes the jsonschema
// path and Entry.FastValidWire always returns false, so a raw request is
// always decoded. Verdicts and messages are the same either way; the
// switch exists to compare the paths and to rule the fast ones out.
func WithoutFastPaths() Option {
	return func(r *Registry) {
		if r.fastPaths {
			r.fastPaths = false
			r.compileOpts.Schema = append(r.compileOpts.Schema, schema.WithoutFastPaths())
		}
	}
}

// WithMaxSchemaEvaluations sets the evaluation bound every tool's schemas
// are compiled with (schema.WithMaxEvaluations; n <= 0: the default): a
// schema one argument value could cost more subschema evaluations is
// refused, whether registered, seeded, followed from an upstream or read
// from the store.
func WithMaxSchemaEvaluations(n int) Option {
	return func(r *Registry) {
		r.compileOpts.Schema = append(r.compileOpts.Schema, schema.WithMaxEvaluations(n))
	}
}

// FastPaths reports whether the registry compiles tools with fast paths
// (true unless WithoutFastPaths).
func (r *Registry) FastPaths() bool { return r.fastPaths }

// CompileOptions returns what the registry compiles every tool with, for
// compiling a tool exactly as the registry will (the slices are copies).
func (r *Registry) CompileOptions() CompileOptions {
	return CompileOptions{Normalize: slices.Clone(r.compileOpts.Normalize), Schema: slices.Clone(r.compileOpts.Schema)}
}

// WithAdmissionCheck makes check part of every Register's admission
// (Admission.Check): a tool it refuses is not written.
func WithAdmissionCheck(check func(Tool) *ToolError) Option {
	return func(r *Registry) { r.check = check }
}

// WithBackoff bounds the wait between attempts to re-list and re-watch the
// store after a watch is lost (defaults 50ms, doubling up to 5s).
func WithBackoff(min, max time.Duration) Option {
	return func(r *Registry) {
		if min > 0 && max >= min {
			r.backoffMin, r.backoffMax = min, max
		}
	}
}

// WithStaleProbe sets how often a store that can be unreachable while its
// watch stays open (a Pinger: etcd) is pinged to know whether the snapshot
// is current (default 1s).
func WithStaleProbe(every time.Duration) Option {
	return func(r *Registry) {
		if every > 0 {
			r.probeEvery = every
		}
	}
}

// Registry serves compiled tools lock-free from a copy-on-write snapshot
// kept current from a Store. Writers (Register, Delete, the watch) are
// serialized by a mutex; readers only load an atomic pointer.
type Registry struct {
	store       Store
	log         *slog.Logger
	compileOpts CompileOptions
	fastPaths   bool
	backoffMin  time.Duration
	backoffMax  time.Duration
	compile     func(Tool) (*Entry, error) // replaced in tests to count compilations
	check       func(Tool) *ToolError      // WithAdmissionCheck
	probeEvery  time.Duration
	lazy        bool // WithLazyCompile
	noWarmUp    bool // WithoutWarmUp

	// life ends at Close: it bounds the lazy warm-ups (lazy.go), which
	// warming counts.
	life    context.Context
	endLife context.CancelFunc
	warming sync.WaitGroup

	snap atomic.Pointer[Snapshot]

	// Staleness: currentAt is when the snapshot was last known current
	// (unix ns); stale is set while the store is unreachable or the watch is
	// down; watching while a watch is established.
	currentAt atomic.Int64
	stale     atomic.Bool
	watching  atomic.Bool

	mu sync.Mutex // serializes snapshot writers and guards the fields below
	// tombs holds deletions published locally (name → deletion revision)
	// so that an older Put still in flight on the watch cannot resurrect
	// the tool. Pruned once the watch has passed them.
	tombs map[string]int64
	// bundleTombs are tombs for bundles.
	bundleTombs map[string]int64
	watchRev    int64 // highest revision seen from List/Watch
	started     bool
	closed      bool
	cancel      context.CancelFunc
	done        chan struct{}
	subs        map[chan struct{}]struct{}
	warmDone    chan struct{} // closed when the latest warm-up ends; nil: none yet
}

// New returns a registry over store with an empty snapshot; call Start to
// load it. The Registry does not own the store: Close does not close it.
func New(store Store, opts ...Option) *Registry {
	r := &Registry{
		store:       store,
		log:         slog.Default(),
		fastPaths:   true,
		backoffMin:  50 * time.Millisecond,
		backoffMax:  5 * time.Second,
		probeEvery:  time.Second,
		tombs:       make(map[string]int64),
		bundleTombs: make(map[string]int64),
		subs:        make(map[chan struct{}]struct{}),
	}
	for _, o := range opts {
		o(r)
	}
	r.compile = r.compileOpts.Compile
	r.life, r.endLife = context.WithCancel(context.Background())
	r.snap.Store(newSnapshot(0, map[string]*Entry{}, map[string]*BundleEntry{}))
	return r
}

// Start lists the store, compiles every tool, publishes the snapshot and then
// keeps it current from the store's watch in a goroutine until Close. ctx
// bounds the initial load only. A stored tool that fails to compile is
// logged and skipped. When the initial list fails, Start returns its error
// and may be called again.
func (r *Registry) Start(ctx context.Context) error {
	r.mu.Lock()
	if r.started || r.closed {
		r.mu.Unlock()
		return errors.New("registry: Start called twice or after Close")
	}
	r.started = true
	r.mu.Unlock()

	tools, bundles, rev, err := r.listAll(ctx)
	if err != nil {
		// Not started: Start may be called again (e.g. once the store is
		// reachable).
		r.mu.Lock()
		r.started = false
		r.mu.Unlock()
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errors.New("registry: closed during Start")
	}
	r.replaceAllLocked(tools, rev)
	r.replaceBundlesLocked(bundles, rev)
	r.currentAt.Store(time.Now().UnixNano())
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancel = cancel
	r.done = make(chan struct{})
	go r.run(wctx, rev)
	return nil
}

// Close stops the watch goroutine, waits for it, and closes every Changes
// channel. It is safe to call more than once.
func (r *Registry) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	cancel, done := r.cancel, r.done
	for ch := range r.subs {
		delete(r.subs, ch)
		close(ch)
	}
	r.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	r.endLife()
	r.warming.Wait()
	return nil
}

// Snapshot returns the current snapshot without locking.
func (r *Registry) Snapshot() *Snapshot { return r.snap.Load() }

// Lookup returns the compiled entry for a tool without taking a lock.
func (r *Registry) Lookup(name string) (*Entry, bool) {
	return r.snap.Load().Lookup(name)
}

// Changes returns a channel that receives a value after the snapshot changes
// (coalesced: several changes may produce one value) and a cancel func that
// releases and closes it. The channel is also closed by Close.
func (r *Registry) Changes() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	r.mu.Lock()
	if r.closed {
		close(ch)
	} else {
		r.subs[ch] = struct{}{}
	}
	r.mu.Unlock()
	return ch, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if _, ok := r.subs[ch]; ok {
			delete(r.subs, ch)
			close(ch)
		}
	}
}

// RegisterOptions control Register.
type RegisterOptions struct {
	// ExpectedRevision, when set, makes the write conditional on the tool's
	// current revision (0: must not exist).
	ExpectedRevision *int64
	// RequireCompatible refuses an update with compatibility notes. Without
	// ExpectedRevision the write is then pinned to the revision the notes
	// were computed against, so a concurrent update fails with
	// *RevisionMismatchError instead of slipping past the check.
	RequireCompatible bool
	// StrictLint and LintProfiles are the admission's provider lint (see
	// Admission): no profiles, no lint.
	StrictLint   bool
	LintProfiles []lint.Profile
}

// RegisterResult is the stored tool and what changed.
type RegisterResult struct {
	Tool    Tool
	Created bool
	Notes   []CompatNote
	// Findings are the lint findings admission returned as warnings.
	Findings []lint.Finding
}

// Register admits t (see Admission: compiled with the registry's options,
// linted, checked for compatibility with the stored version), writes it to
// the store and publishes it at once, so a Lookup right after Register sees
// it (read-your-writes).
//
// An update of an imported tool (origin.go) that sets no Origin and still
// calls the same upstream keeps the stored Origin and PendingChange: an
// admin's edit pins the definition (Tool.Edited) and leaves the upstream's
// held change held. An Origin without an UpstreamDigest gets t's own
// definition's (an import: what the upstream listed is what is served).
func (r *Registry) Register(ctx context.Context, t Tool, o RegisterOptions) (RegisterResult, error) {
	for attempt := 0; ; attempt++ {
		res, carried, err := r.register(ctx, t, o)
		var mismatch *RevisionMismatchError
		if carried && errors.As(err, &mismatch) && attempt < 3 {
			continue // a concurrent write moved the origin kept: read it again
		}
		return res, err
	}
}

// register is one attempt of Register; carried reports that the write was
// pinned to the revision whose Origin it kept (not by the caller).
func (r *Registry) register(ctx context.Context, t Tool, o RegisterOptions) (res RegisterResult, carried bool, err error) {
	t.Revision = 0
	adm := Admission{StrictLint: o.StrictLint, LintProfiles: o.LintProfiles, RequireCompatible: o.RequireCompatible, Compile: r.compileOpts, Check: r.check}
	a, err := adm.admit(ctx, t, r.store.Get, r.compile)
	if err != nil {
		return RegisterResult{}, false, err
	}
	exists := a.Current != nil
	res = RegisterResult{Notes: a.Notes, Findings: a.Findings}
	expected := o.ExpectedRevision
	if o.RequireCompatible && expected == nil {
		var pin int64 // 0 when it did not exist
		if exists {
			pin = a.Current.Revision
		}
		expected = &pin
	}
	if t.Origin == nil && exists && a.Current.Origin != nil && a.Current.ImportedFrom(a.Current.Origin.MCPUpstream) &&
		t.Spec != nil && t.Spec.MCPTool != nil && t.Spec.MCPTool.URL == a.Current.Origin.MCPUpstream {
		t.Origin, t.Pending = a.Current.Origin, a.Current.Pending
		if expected == nil {
			pin := a.Current.Revision
			expected, carried = &pin, true
		}
	}
	if t.Origin != nil && t.Origin.UpstreamDigest == "" {
		origin := *t.Origin
		origin.UpstreamDigest = t.Definition().Digest()
		t.Origin = &origin
	}
	stored, err := r.store.Put(ctx, t, expected)
	if err != nil {
		return RegisterResult{}, carried, err
	}
	e := *a.Entry
	e.Tool = stored
	r.mu.Lock()
	r.putLocked(&e)
	r.mu.Unlock()
	res.Tool = stored
	res.Created = !exists
	if expected != nil && *expected == 0 {
		res.Created = true
	}
	return res, carried, nil
}

// ApprovePending serves the tool's pending upstream change: its definition
// replaces the served one (admitted as Register admits it, with o's lint),
// or, when the change is the tool's removal, the tool is deleted
// (deleted). expected, when set, must be the tool's current revision: the
// one the change was reviewed at. Without a pending change it fails with
// *NoPendingChangeError.
func (r *Registry) ApprovePending(ctx context.Context, name string, expected *int64, o RegisterOptions) (res RegisterResult, deleted bool, err error) {
	cur, err := r.pendingAt(ctx, name, expected)
	if err != nil {
		return RegisterResult{}, false, err
	}
	rev := cur.Revision
	if cur.Pending.Removed {
		return RegisterResult{}, true, r.Delete(ctx, name, &rev)
	}
	next := cur.WithDefinition(cur.Pending.Definition)
	origin := *cur.Origin
	origin.UpstreamDigest = cur.Pending.Digest
	next.Origin, next.Pending = &origin, nil
	o.ExpectedRevision, o.RequireCompatible = &rev, false
	res, err = r.Register(ctx, next, o)
	return res, false, err
}

// RejectPending drops the tool's pending upstream change: the served
// definition stays, and the upstream's definition (or its removal) is
// taken as seen, so it is not proposed again; the tool is then Edited
// (no later change is auto-approved over it). expected is as for
// ApprovePending.
func (r *Registry) RejectPending(ctx context.Context, name string, expected *int64) (Tool, error) {
	cur, err := r.pendingAt(ctx, name, expected)
	if err != nil {
		return Tool{}, err
	}
	rev := cur.Revision
	next := cur
	origin := *cur.Origin
	origin.UpstreamDigest = cur.Pending.Digest
	next.Origin, next.Pending = &origin, nil
	res, err := r.Register(ctx, next, RegisterOptions{ExpectedRevision: &rev})
	return res.Tool, err
}

// pendingAt reads a tool that has a pending change, at revision expected
// when set.
func (r *Registry) pendingAt(ctx context.Context, name string, expected *int64) (Tool, error) {
	cur, err := r.store.Get(ctx, name)
	if err != nil {
		return Tool{}, err
	}
	if expected != nil && *expected != cur.Revision {
		return Tool{}, &RevisionMismatchError{Tool: name, Expected: *expected, Actual: cur.Revision}
	}
	if cur.Pending == nil || cur.Origin == nil {
		return Tool{}, &NoPendingChangeError{Tool: name}
	}
	return cur, nil
}

// Get reads a tool from the store (the source of truth), or ErrNotFound.
func (r *Registry) Get(ctx context.Context, name string) (Tool, error) {
	return r.store.Get(ctx, name)
}

// Delete removes a tool from the store and from the snapshot at once.
func (r *Registry) Delete(ctx context.Context, name string, expected *int64) error {
	rev, err := r.store.Delete(ctx, name, expected)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.deleteLocked(name, rev)
	r.mu.Unlock()
	return nil
}

// run keeps the snapshot current until ctx ends: watch from rev; when the
// watch is lost or cannot start, wait (bounded backoff), re-list, re-watch.
// The last snapshot keeps serving meanwhile, and is marked stale
// (StaleFor) until the store answers again.
func (r *Registry) run(ctx context.Context, rev int64) {
	defer close(r.done)
	if p, ok := r.store.(Pinger); ok {
		probed := make(chan struct{})
		go r.probe(ctx, p, probed)
		defer func() { <-probed }()
	}
	backoff := r.backoffMin
	for {
		ch, err := r.store.Watch(ctx, rev)
		if err == nil {
			r.watching.Store(true)
			r.markCurrent()
			for ev := range ch {
				r.mu.Lock()
				r.applyLocked(ev)
				r.mu.Unlock()
				rev = ev.Revision
				backoff = r.backoffMin
				r.markCurrent()
			}
			r.watching.Store(false)
			if ctx.Err() != nil {
				return
			}
			r.stale.Store(true) // until the re-list: the snapshot may miss events
			r.log.Warn("registry: store watch lost; re-listing", "after_revision", rev)
		} else if ctx.Err() != nil {
			return
		} else if !errors.Is(err, ErrCompacted) {
			r.markStale(err)
			r.log.Warn("registry: store watch failed; re-listing", "after_revision", rev, "error", err)
		}
		for {
			if !sleep(ctx, backoff) {
				return
			}
			backoff = min(backoff*2, r.backoffMax)
			tools, bundles, lrev, err := r.listAll(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				r.markStale(err)
				r.log.Warn("registry: store list failed", "error", err)
				continue
			}
			r.mu.Lock()
			r.replaceAllLocked(tools, lrev)
			r.replaceBundlesLocked(bundles, lrev)
			r.mu.Unlock()
			rev = lrev
			r.markCurrent()
			break
		}
	}
}

// probe pings p every probeEvery until ctx ends: a failure marks the
// snapshot stale (etcd's client keeps a watch open through an outage, so
// the watch alone never says so); a success while the watch runs marks it
// current again.
func (r *Registry) probe(ctx context.Context, p Pinger, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(r.probeEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := p.Ping(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			r.markStale(err)
		case r.watching.Load():
			r.markCurrent()
		}
	}
}

// markStale records that the store is unreachable; the first time per
// outage it logs a WARN line.
func (r *Registry) markStale(err error) {
	if r.stale.CompareAndSwap(false, true) {
		r.log.Warn("registry: store unreachable; serving the last snapshot, which may be stale until it answers",
			"current_as_of", time.Unix(0, r.currentAt.Load()).UTC().Format(time.RFC3339), "error", err)
	}
}

// markCurrent records that the snapshot is current; after an outage it
// logs an INFO line.
func (r *Registry) markCurrent() {
	since := r.currentAt.Swap(time.Now().UnixNano())
	if r.stale.CompareAndSwap(true, false) {
		r.log.Info("registry: store reachable again; snapshot current", "stale_for", time.Since(time.Unix(0, since)).Round(time.Millisecond))
	}
}

// StaleFor is how long the snapshot may have been out of date: 0 while it
// is current (the store answers and the watch runs), else the time since
// it was last known current. Serving goes on from the snapshot either way.
func (r *Registry) StaleFor() time.Duration {
	if !r.stale.Load() {
		return 0
	}
	return time.Since(time.Unix(0, r.currentAt.Load()))
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// replaceAllLocked publishes the store's full list at rev. Entries whose
// name and revision are unchanged are reused, never recompiled; entries and
// deletions published locally after rev are kept.
func (r *Registry) replaceAllLocked(tools []Tool, rev int64) {
	cur := r.snap.Load()
	next := make(map[string]*Entry, len(tools))
	var stubs []*Entry
	for _, t := range tools {
		if d, ok := r.tombs[t.Name]; ok && d > t.Revision {
			continue
		}
		if e, ok := cur.entries[t.Name]; ok && e.Tool.Revision >= t.Revision {
			next[t.Name] = e
			continue
		}
		if r.lazy {
			e := r.stub(t)
			stubs = append(stubs, e)
			next[t.Name] = e
			continue
		}
		if e := r.compileLogged(t); e != nil {
			next[t.Name] = e
		}
	}
	if len(stubs) > 0 && !r.noWarmUp {
		done := make(chan struct{})
		r.warming.Add(1)
		go r.warm(r.life, stubs, r.warmDone, done)
		r.warmDone = done
	}
	// Local writes newer than the list are not in it yet.
	for name, e := range cur.entries {
		if _, ok := next[name]; !ok && e.Tool.Revision > rev {
			next[name] = e
		}
	}
	r.watchRev = max(r.watchRev, rev)
	r.pruneTombsLocked()
	r.publishLocked(newSnapshot(max(cur.Revision, rev), next, cur.bundles))
}

// applyLocked applies one watch event; events no newer than what the
// snapshot already holds for that name are no-ops.
func (r *Registry) applyLocked(ev Event) {
	r.watchRev = max(r.watchRev, ev.Revision)
	defer r.pruneTombsLocked()
	if ev.Bundle != nil {
		r.applyBundleLocked(ev)
		return
	}
	switch ev.Type {
	case EventPut:
		cur := r.snap.Load()
		if e, ok := cur.entries[ev.Tool.Name]; ok && e.Tool.Revision >= ev.Revision {
			return
		}
		if d, ok := r.tombs[ev.Tool.Name]; ok && d >= ev.Revision {
			return
		}
		e := r.compileLogged(ev.Tool)
		if e == nil {
			// The stored definition cannot be served; do not keep serving an
			// older revision the store has replaced.
			r.deleteLocked(ev.Tool.Name, ev.Revision)
			return
		}
		r.putLocked(e)
	case EventDelete:
		r.deleteLocked(ev.Tool.Name, ev.Revision)
	}
}

func (r *Registry) compileLogged(t Tool) *Entry {
	e, err := r.compile(t)
	if err != nil {
		r.log.Error("registry: skipping stored tool that does not compile", "tool", t.Name, "revision", t.Revision, "error", err)
		return nil
	}
	return e
}

// putLocked publishes e unless the snapshot already holds a newer revision.
func (r *Registry) putLocked(e *Entry) {
	cur := r.snap.Load()
	if old, ok := cur.entries[e.Tool.Name]; ok && old.Tool.Revision >= e.Tool.Revision {
		return
	}
	if d, ok := r.tombs[e.Tool.Name]; ok && d >= e.Tool.Revision {
		return
	}
	r.publishLocked(cur.with(e, max(cur.Revision, e.Tool.Revision)))
}

// deleteLocked removes name as of revision rev unless a newer entry is held.
func (r *Registry) deleteLocked(name string, rev int64) {
	cur := r.snap.Load()
	old, ok := cur.entries[name]
	if ok && old.Tool.Revision > rev {
		return
	}
	if rev > r.watchRev {
		r.tombs[name] = max(r.tombs[name], rev)
	}
	if !ok {
		if rev > cur.Revision {
			r.publishLocked(cur.derive(rev))
		}
		return
	}
	r.publishLocked(cur.without(name, max(cur.Revision, rev)))
}

func (r *Registry) pruneTombsLocked() {
	for name, rev := range r.tombs {
		if rev <= r.watchRev {
			delete(r.tombs, name)
		}
	}
	for name, rev := range r.bundleTombs {
		if rev <= r.watchRev {
			delete(r.bundleTombs, name)
		}
	}
}

func (r *Registry) publishLocked(s *Snapshot) {
	r.snap.Store(s)
	for ch := range r.subs {
		select {
		case ch <- struct{}{}:
		default: // a notification is already pending: coalesce
		}
	}
}
