package registry

import (
	"context"
	"errors"
	"slices"
	"strings"
)

// The registry's bundles: stored like tools (same store, revisions and
// watch), compiled (CompileBundle) into the snapshot, so a request reads
// a bundle and the tools it selects from one consistent view.

// Bundle returns the servable bundle named name.
func (s *Snapshot) Bundle(name string) (*BundleEntry, bool) {
	b, ok := s.bundles[name]
	return b, ok
}

// Bundles returns the servable bundles sorted by name.
func (s *Snapshot) Bundles() []*BundleEntry {
	out := make([]*BundleEntry, 0, len(s.bundles))
	for _, b := range s.bundles {
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b *BundleEntry) int { return strings.Compare(a.Bundle.Name, b.Bundle.Name) })
	return out
}

// LookupIn returns the tool's entry when the bundle exists and selects it;
// bundle "" is the whole registry (Lookup).
func (s *Snapshot) LookupIn(bundle, name string) (*Entry, bool) {
	e, ok := s.entries[name]
	if !ok || bundle == "" {
		return e.compiled()
	}
	b, ok := s.bundles[bundle]
	if !ok || !b.Selects(&e.Tool) {
		return nil, false
	}
	return e.compiled()
}

// LookupIn is Snapshot.LookupIn on the current snapshot.
func (r *Registry) LookupIn(bundle, name string) (*Entry, bool) {
	return r.snap.Load().LookupIn(bundle, name)
}

// PutBundleResult is the stored bundle and whether it was created.
type PutBundleResult struct {
	Bundle  Bundle
	Created bool
}

// PutBundle checks b (CompileBundle), writes it to the store (expected:
// as for RegisterOptions.ExpectedRevision) and publishes it at once.
func (r *Registry) PutBundle(ctx context.Context, b Bundle, expected *int64) (PutBundleResult, error) {
	b.Revision = 0
	if _, err := CompileBundle(b); err != nil {
		return PutBundleResult{}, err
	}
	_, err := r.store.GetBundle(ctx, b.Name)
	existed := err == nil
	if err != nil && !errors.Is(err, ErrBundleNotFound) {
		return PutBundleResult{}, err
	}
	stored, err := r.store.PutBundle(ctx, b, expected)
	if err != nil {
		return PutBundleResult{}, err
	}
	e, err := CompileBundle(stored)
	if err != nil {
		return PutBundleResult{}, err // the store handed back another bundle than it was given
	}
	r.mu.Lock()
	r.putBundleLocked(e)
	r.mu.Unlock()
	created := !existed || (expected != nil && *expected == 0)
	return PutBundleResult{Bundle: stored, Created: created}, nil
}

// GetBundle reads a bundle from the store, or ErrBundleNotFound.
func (r *Registry) GetBundle(ctx context.Context, name string) (Bundle, error) {
	return r.store.GetBundle(ctx, name)
}

// ListBundles reads every bundle from the store, sorted by name, and the
// store revision of the read.
func (r *Registry) ListBundles(ctx context.Context) ([]Bundle, int64, error) {
	return r.store.ListBundles(ctx)
}

// DeleteBundle removes a bundle from the store and from the snapshot at once.
func (r *Registry) DeleteBundle(ctx context.Context, name string, expected *int64) error {
	rev, err := r.store.DeleteBundle(ctx, name, expected)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.deleteBundleLocked(name, rev)
	r.mu.Unlock()
	return nil
}

// listAll lists the store's tools and bundles. The revision is the tools'
// list's (the earlier): a watch from it replays what the bundles' list
// already holds, which applying ignores.
func (r *Registry) listAll(ctx context.Context) ([]Tool, []Bundle, int64, error) {
	tools, rev, err := r.store.List(ctx)
	if err != nil {
		return nil, nil, 0, err
	}
	bundles, _, err := r.store.ListBundles(ctx)
	if err != nil {
		return nil, nil, 0, err
	}
	return tools, bundles, rev, nil
}

// compileBundleLogged is the bundle's entry, or nil (logged) for a stored
// bundle this build cannot serve: its endpoint then answers as for an
// unknown bundle (fail closed).
func (r *Registry) compileBundleLogged(b Bundle) *BundleEntry {
	e, err := CompileBundle(b)
	if err != nil {
		r.log.Error("registry: skipping stored bundle that does not compile", "bundle", b.Name, "revision", b.Revision, "error", err)
		return nil
	}
	return e
}

// replaceBundlesLocked publishes the store's bundles as listed at rev or
// later, keeping what is held at the same or a newer revision and the
// local writes newer than rev.
func (r *Registry) replaceBundlesLocked(bundles []Bundle, rev int64) {
	cur := r.snap.Load()
	next := make(map[string]*BundleEntry, len(bundles))
	for _, b := range bundles {
		if d, ok := r.bundleTombs[b.Name]; ok && d > b.Revision {
			continue
		}
		if e, ok := cur.bundles[b.Name]; ok && e.Bundle.Revision >= b.Revision {
			next[b.Name] = e
			continue
		}
		if e := r.compileBundleLogged(b); e != nil {
			next[b.Name] = e
		}
	}
	for name, e := range cur.bundles {
		if _, ok := next[name]; !ok && e.Bundle.Revision > rev {
			next[name] = e
		}
	}
	n := cur.derive(cur.Revision)
	n.bundles = next
	r.publishLocked(n)
}

// applyBundleLocked applies one bundle event; one no newer than what the
// snapshot holds for that name is a no-op.
func (r *Registry) applyBundleLocked(ev Event) {
	switch ev.Type {
	case EventPut:
		e := r.compileBundleLogged(*ev.Bundle)
		if e == nil {
			// Not servable: do not keep serving the older revision the
			// store has replaced.
			r.deleteBundleLocked(ev.Bundle.Name, ev.Revision)
			return
		}
		r.putBundleLocked(e)
	case EventDelete:
		r.deleteBundleLocked(ev.Bundle.Name, ev.Revision)
	}
}

// putBundleLocked publishes e unless the snapshot holds a newer revision.
func (r *Registry) putBundleLocked(e *BundleEntry) {
	cur := r.snap.Load()
	name, rev := e.Bundle.Name, e.Bundle.Revision
	if old, ok := cur.bundles[name]; ok && old.Bundle.Revision >= rev {
		return
	}
	if d, ok := r.bundleTombs[name]; ok && d >= rev {
		return
	}
	next := make(map[string]*BundleEntry, len(cur.bundles)+1)
	for k, v := range cur.bundles {
		next[k] = v
	}
	next[name] = e
	n := cur.derive(max(cur.Revision, rev))
	n.bundles = next
	r.publishLocked(n)
}

// deleteBundleLocked removes name as of revision rev unless a newer entry
// is held.
func (r *Registry) deleteBundleLocked(name string, rev int64) {
	cur := r.snap.Load()
	old, ok := cur.bundles[name]
	if ok && old.Bundle.Revision > rev {
		return
	}
	if rev > r.watchRev {
		r.bundleTombs[name] = max(r.bundleTombs[name], rev)
	}
	next := make(map[string]*BundleEntry, len(cur.bundles))
	for k, v := range cur.bundles {
		if k != name {
			next[k] = v
		}
	}
	n := cur.derive(max(cur.Revision, rev))
	n.bundles = next
	r.publishLocked(n)
}
