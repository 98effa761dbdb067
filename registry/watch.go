package registry

import "context"

// Watch streams the store's events with Revision > after, in order, until
// ctx ends; see Store.Watch for the contract (a channel closed while ctx is
// live means the watch was lost; ErrCompacted for history no longer kept).
// It reads the store directly, not the snapshot: the snapshot may publish a
// local write before an older one, so only the store's order is gap-free.
func (r *Registry) Watch(ctx context.Context, after int64) (<-chan Event, error) {
	return r.store.Watch(ctx, after)
}

// List returns every stored tool sorted by name and the store revision the
// list reflects, read from the store. A Watch from that revision continues
// the list without a gap or a duplicate; Snapshot gives no such guarantee.
func (r *Registry) List(ctx context.Context) ([]Tool, int64, error) {
	return r.store.List(ctx)
}
