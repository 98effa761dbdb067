package registry

import (
	"context"
	"errors"
)

// ErrNotFound is returned by stores for a tool that does not exist.
var ErrNotFound = errors.New("tool not found")

// ErrBundleNotFound is returned by stores for a bundle that does not exist.
var ErrBundleNotFound = errors.New("bundle not found")

// ErrCompacted is returned by Store.Watch when the requested start revision
// is older than the history the store still keeps; the caller re-lists and
// watches from the revision of that list.
var ErrCompacted = errors.New("watch revision has been compacted")

// ErrClosed is returned by a store that has been closed.
var ErrClosed = errors.New("store closed")

// ErrUnavailable is wrapped by every store error caused by the store's
// backing service being unreachable or not answering in time (etcd down,
// partitioned). The registry keeps serving its last snapshot meanwhile;
// writes fail with it. Stores wrap it with an error naming the service, so
// the message says what is down ("etcd unavailable: ...").
var ErrUnavailable = errors.New("store unavailable")

// EventType says what happened to a tool.
type EventType uint8

const (
	EventPut EventType = iota + 1
	EventDelete
)

// String returns "PUT" or "DELETE".
func (t EventType) String() string {
	switch t {
	case EventPut:
		return "PUT"
	case EventDelete:
		return "DELETE"
	}
	return "UNKNOWN"
}

// Event is one change in a store: a tool's, or when Bundle is set a
// bundle's (Tool is then zero). For EventDelete only the name is set.
type Event struct {
	Type     EventType
	Tool     Tool
	Bundle   *Bundle
	Revision int64
}

// Store is the durable source of truth for tools. Implementations live in
// subpackages and are chosen explicitly by the caller.
//
// Tools returned by a store (Get, List, Watch) share their InputSchema with
// the store and with other readers: treat them as read-only.
type Store interface {
	// Get returns the tool or ErrNotFound.
	Get(ctx context.Context, name string) (Tool, error)
	// List returns every tool sorted by name and the store revision the list reflects.
	List(ctx context.Context) ([]Tool, int64, error)
	// Put creates or replaces a tool and returns it with its new Revision. If
	// expected is non-nil the tool's current revision must equal *expected
	// (0: must not exist), else a *RevisionMismatchError.
	Put(ctx context.Context, t Tool, expected *int64) (Tool, error)
	// Delete removes a tool and returns the store revision of the deletion.
	Delete(ctx context.Context, name string, expected *int64) (int64, error)
	// Watch delivers every event with Revision > after, in order, until ctx ends.
	// A channel closed while ctx is still live means the watch was lost
	// (the watcher fell behind, the store closed or failed): re-list and
	// watch again. It returns ErrCompacted when after is older than the
	// store's retained history.
	Watch(ctx context.Context, after int64) (<-chan Event, error)

	// Bundles (bundle.go) share the tools' revisions and watch: the same
	// contract, with ErrBundleNotFound and a *RevisionMismatchError naming
	// the bundle.
	GetBundle(ctx context.Context, name string) (Bundle, error)
	ListBundles(ctx context.Context) ([]Bundle, int64, error)
	PutBundle(ctx context.Context, b Bundle, expected *int64) (Bundle, error)
	DeleteBundle(ctx context.Context, name string, expected *int64) (int64, error)

	Close() error
}

// Pinger is a Store that can be unreachable while its watch stays open (a
// networked store: etcd's client resumes a watch silently). Ping answers
// nil when the store serves current reads; the registry pings it to know
// whether its snapshot is current (Registry.StaleFor).
type Pinger interface {
	Ping(ctx context.Context) error
}
