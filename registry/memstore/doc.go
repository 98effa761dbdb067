// Package memstore is an in-memory registry.Store: the store for tests, for
// a single gateway fed from a tools file, and the reference the durable
// stores are checked against.
//
// Semantics shared with the durable stores:
//   - one global revision counter; every Put and Delete takes the next value,
//     and a tool's Revision is the revision of its last write;
//   - optimistic concurrency: expected == nil writes unconditionally,
//     *expected == 0 means "must not exist", otherwise it must equal the
//     tool's current Revision, else *registry.RevisionMismatchError
//     (Actual 0 when the tool does not exist);
//   - Delete of a missing tool without an expected revision is
//     registry.ErrNotFound;
//   - Watch replays retained history after the given revision, then live
//     events. History is bounded (WithHistory); asking for a revision older
//     than what is retained is registry.ErrCompacted.
//
// Slow watchers: each watcher has a buffered channel. A write never blocks on
// a watcher; when a watcher's buffer is full its channel is closed (the watch
// is lost) and the watcher must re-list and watch again, as it would after
// any watch failure. This keeps writers bounded at the cost of a re-list for
// a consumer that cannot keep up.
//
// Immutability: Put deep-copies the InputSchema (proto.Clone) and Labels, so
// the caller may reuse its value. Tools handed out by Get, List and Watch
// share that copy with the store: they must not be mutated.
//
// It imports the registry, its internal watch hub and protobuf.
package memstore
