package memstore

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/internal/watchhub"
)

// DefaultHistory is how many events a Store retains for Watch replay.
const DefaultHistory = 1024

// DefaultWatchBuffer is the per-watcher channel capacity for live events.
const DefaultWatchBuffer = 256

// Option configures a Store.
type Option func(*Store)

// WithHistory sets how many events are retained for Watch replay (n >= 1).
func WithHistory(n int) Option {
	return func(s *Store) {
		if n >= 1 {
			s.historyCap = n
		}
	}
}

// WithWatchBuffer sets the per-watcher live-event buffer (n >= 1).
func WithWatchBuffer(n int) Option {
	return func(s *Store) {
		if n >= 1 {
			s.watchBuf = n
		}
	}
}

// Store is an in-memory registry.Store, safe for concurrent use.
type Store struct {
	historyCap int
	watchBuf   int

	mu      sync.Mutex
	closed  bool
	rev     int64
	tools   map[string]registry.Tool
	bundles map[string]registry.Bundle
	// history is each live tool's last registry.HistoryDepth definitions,
	// oldest first (history.go).
	history map[string][]registry.ToolRevision
	hub     *watchhub.Hub // history and watchers; published under mu, in revision order
}

var (
	_ registry.Store     = (*Store)(nil)
	_ registry.Historian = (*Store)(nil)
)

// New returns an empty store at revision 0.
func New(opts ...Option) *Store {
	s := &Store{
		historyCap: DefaultHistory,
		watchBuf:   DefaultWatchBuffer,
		tools:      make(map[string]registry.Tool),
		bundles:    make(map[string]registry.Bundle),
		history:    make(map[string][]registry.ToolRevision),
	}
	for _, o := range opts {
		o(s)
	}
	s.hub = watchhub.New(s.historyCap, s.watchBuf, 0)
	return s
}

// Revision returns the store's current revision.
func (s *Store) Revision() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rev
}

// Get returns the tool or registry.ErrNotFound.
func (s *Store) Get(ctx context.Context, name string) (registry.Tool, error) {
	if err := ctx.Err(); err != nil {
		return registry.Tool{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return registry.Tool{}, registry.ErrClosed
	}
	t, ok := s.tools[name]
	if !ok {
		return registry.Tool{}, registry.ErrNotFound
	}
	return t, nil
}

// List returns every tool sorted by name and the current revision.
func (s *Store) List(ctx context.Context) ([]registry.Tool, int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, 0, registry.ErrClosed
	}
	out := make([]registry.Tool, 0, len(s.tools))
	for _, t := range s.tools {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b registry.Tool) int { return strings.Compare(a.Name, b.Name) })
	return out, s.rev, nil
}

// Put creates or replaces a tool; see the package comment for expected.
func (s *Store) Put(ctx context.Context, t registry.Tool, expected *int64) (registry.Tool, error) {
	if err := ctx.Err(); err != nil {
		return registry.Tool{}, err
	}
	if t.Name == "" {
		return registry.Tool{}, &registry.ToolError{Field: "name", Reason: "must not be empty"}
	}
	// Copy outside the lock: the caller's value may be reused after Put.
	if t.InputSchema != nil {
		t.InputSchema = proto.Clone(t.InputSchema).(*structpb.Struct)
	}
	if t.Labels != nil {
		t.Labels = maps.Clone(t.Labels)
	}
	if t.Origin != nil {
		o := *t.Origin
		t.Origin = &o
	}
	if t.Pending != nil {
		p := *t.Pending
		t.Pending = &p
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return registry.Tool{}, registry.ErrClosed
	}
	cur, exists := s.tools[t.Name]
	if expected != nil {
		var actual int64
		if exists {
			actual = cur.Revision
		}
		if actual != *expected {
			return registry.Tool{}, &registry.RevisionMismatchError{Tool: t.Name, Expected: *expected, Actual: actual}
		}
	}
	s.rev++
	t.Revision = s.rev
	s.tools[t.Name] = t
	s.record(registry.ToolRevision{Revision: t.Revision, Time: time.Now(), Writer: registry.WriterFrom(ctx), Tool: t})
	s.publish(registry.Event{Type: registry.EventPut, Tool: t, Revision: s.rev})
	return t, nil
}

// Delete removes a tool and returns the revision of the deletion.
func (s *Store) Delete(ctx context.Context, name string, expected *int64) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, registry.ErrClosed
	}
	cur, exists := s.tools[name]
	if expected != nil {
		var actual int64
		if exists {
			actual = cur.Revision
		}
		if actual != *expected || !exists {
			return 0, &registry.RevisionMismatchError{Tool: name, Expected: *expected, Actual: actual}
		}
	}
	if !exists {
		return 0, registry.ErrNotFound
	}
	s.rev++
	delete(s.tools, name)
	delete(s.history, name)
	s.publish(registry.Event{Type: registry.EventDelete, Tool: registry.Tool{Name: name}, Revision: s.rev})
	return s.rev, nil
}

// publish records ev for watchers. Caller holds s.mu, so events are
// published in revision order.
func (s *Store) publish(ev registry.Event) { s.hub.Publish(ev) }

// Watch replays retained events with Revision > after, then live events,
// until ctx ends or the store is closed. See the package comment for slow
// watchers.
func (s *Store) Watch(ctx context.Context, after int64) (<-chan registry.Event, error) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, registry.ErrClosed
	}
	return s.hub.Watch(ctx, after)
}

// Close closes every watch channel; later calls fail with registry.ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.hub.Close()
	return nil
}
