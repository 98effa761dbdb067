package boltstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/internal/toolcodec"
	"github.com/flowdrop/gateway/registry/internal/watchhub"
)

// Defaults for the options.
const (
	DefaultHistory     = 1024
	DefaultWatchBuffer = 256
	DefaultOpenTimeout = time.Second
)

var (
	bucketMeta  = []byte("meta")
	bucketTools = []byte("tools")
	// bucketBundles holds the bundles (bundles.go), under the same revision.
	bucketBundles = []byte("bundles")
	// bucketHistory holds a bucket per live tool of its last
	// registry.HistoryDepth definitions keyed by revision (history.go).
	bucketHistory = []byte("history")
	keyRevision   = []byte("revision")
)

// Option configures a Store.
type Option func(*options)

type options struct {
	history     int
	watchBuf    int
	openTimeout time.Duration
}

// WithHistory sets how many events are retained for Watch replay (n >= 1).
func WithHistory(n int) Option {
	return func(o *options) {
		if n >= 1 {
			o.history = n
		}
	}
}

// WithWatchBuffer sets the per-watcher live-event buffer (n >= 1).
func WithWatchBuffer(n int) Option {
	return func(o *options) {
		if n >= 1 {
			o.watchBuf = n
		}
	}
}

// WithOpenTimeout bounds how long Open waits for the file lock held by
// another process (d > 0).
func WithOpenTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.openTimeout = d
		}
	}
}

// Store is a bbolt-backed registry.Store, safe for concurrent use.
type Store struct {
	db   *bolt.DB
	path string
	opts options

	// mu serialises writes with their publication so events reach watchers
	// in revision order. bbolt allows one writer at a time anyway, so this
	// costs no write concurrency.
	mu     sync.Mutex
	closed bool
	hub    *watchhub.Hub // history (in memory only: none before the open revision) and watchers
}

var (
	_ registry.Store     = (*Store)(nil)
	_ registry.Historian = (*Store)(nil)
)

// Open opens (creating if needed) the store file at path. If another process
// holds the file, Open fails after the open timeout with an error naming path.
func Open(path string, opts ...Option) (*Store, error) {
	o := options{history: DefaultHistory, watchBuf: DefaultWatchBuffer, openTimeout: DefaultOpenTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	if path == "" {
		return nil, errors.New("boltstore: empty path")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("boltstore: create data directory for %s: %w", path, err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: o.openTimeout})
	if err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, fmt.Errorf("boltstore: open %s: file is locked by another process (waited %s): %w", path, o.openTimeout, err)
		}
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	var rev int64
	err = db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		if _, err := tx.CreateBucketIfNotExists(bucketTools); err != nil {
			return err
		}
		if _, err := tx.CreateBucketIfNotExists(bucketBundles); err != nil {
			return err
		}
		if _, err := tx.CreateBucketIfNotExists(bucketHistory); err != nil {
			return err
		}
		rev, err = readRevision(meta)
		return err
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("boltstore: open %s: %w", path, err)
	}
	return &Store{
		db:   db,
		path: path,
		opts: o,
		hub:  watchhub.New(o.history, o.watchBuf, rev),
	}, nil
}

// Path returns the file the store uses.
func (s *Store) Path() string { return s.path }

func readRevision(meta *bolt.Bucket) (int64, error) {
	v := meta.Get(keyRevision)
	if v == nil {
		return 0, nil
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("meta/revision: corrupt value of %d bytes, want 8", len(v))
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

// bumpRevision stores and returns the next global revision.
func bumpRevision(tx *bolt.Tx) (int64, error) {
	meta := tx.Bucket(bucketMeta)
	rev, err := readRevision(meta)
	if err != nil {
		return 0, err
	}
	rev++
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], uint64(rev))
	return rev, meta.Put(keyRevision, buf[:])
}

func decodeAt(name string, v []byte) (registry.Tool, error) {
	t, err := toolcodec.Decode(v)
	if err != nil {
		return registry.Tool{}, fmt.Errorf("boltstore: stored tool %q: %w", name, err)
	}
	return t, nil
}

// Get returns the tool or registry.ErrNotFound.
func (s *Store) Get(ctx context.Context, name string) (registry.Tool, error) {
	if err := ctx.Err(); err != nil {
		return registry.Tool{}, err
	}
	var t registry.Tool
	err := s.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketTools).Get([]byte(name))
		if v == nil {
			return registry.ErrNotFound
		}
		var err error
		t, err = decodeAt(name, v)
		return err
	})
	return t, err
}

// List returns every tool sorted by name (bbolt keeps keys in byte order,
// which is Go string order) and the revision of that snapshot.
func (s *Store) List(ctx context.Context) ([]registry.Tool, int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	var (
		out []registry.Tool
		rev int64
	)
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		if rev, err = readRevision(tx.Bucket(bucketMeta)); err != nil {
			return err
		}
		// The keys and values are bbolt's mapped pages, valid for this
		// read: collected in one pass, then decoded on all CPUs
		// (toolcodec.Loader) before it ends.
		var keys, vals [][]byte
		if err := tx.Bucket(bucketTools).ForEach(func(k, v []byte) error {
			keys, vals = append(keys, k), append(vals, v)
			return nil
		}); err != nil {
			return err
		}
		out, err = toolcodec.NewLoader().DecodeAll(vals, func(i int, _ *registry.Tool, err error) error {
			if err != nil {
				return fmt.Errorf("boltstore: stored tool %q: %w", keys[i], err)
			}
			return nil
		})
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	return out, rev, nil
}

// Put creates or replaces a tool; expected follows registry.Store.
func (s *Store) Put(ctx context.Context, t registry.Tool, expected *int64) (registry.Tool, error) {
	if err := ctx.Err(); err != nil {
		return registry.Tool{}, err
	}
	if err := registry.ValidateName(t.Name); err != nil {
		// Also keeps bbolt from seeing an empty key.
		return registry.Tool{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return registry.Tool{}, registry.ErrClosed
	}
	var stored registry.Tool
	err := s.db.Update(func(tx *bolt.Tx) error {
		tools := tx.Bucket(bucketTools)
		if expected != nil {
			actual, err := currentRevision(tools, t.Name)
			if err != nil {
				return err
			}
			if actual != *expected {
				return &registry.RevisionMismatchError{Tool: t.Name, Expected: *expected, Actual: actual}
			}
		}
		rev, err := bumpRevision(tx)
		if err != nil {
			return err
		}
		t.Revision = rev
		v, err := toolcodec.Encode(t)
		if err != nil {
			return err
		}
		// Hand back and publish a decoded copy, not the caller's value
		// (which it may reuse or mutate).
		if stored, err = toolcodec.Decode(v); err != nil {
			return err
		}
		if err := record(tx, registry.ToolRevision{Revision: rev, Time: time.Now(), Writer: registry.WriterFrom(ctx), Tool: t}); err != nil {
			return err
		}
		return tools.Put([]byte(t.Name), v)
	})
	if err != nil {
		return registry.Tool{}, s.wrap("put", err)
	}
	s.publish(registry.Event{Type: registry.EventPut, Tool: stored, Revision: stored.Revision})
	return stored, nil
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
	if name == "" {
		return 0, registry.ErrNotFound
	}
	var rev int64
	err := s.db.Update(func(tx *bolt.Tx) error {
		tools := tx.Bucket(bucketTools)
		actual, err := currentRevision(tools, name)
		if err != nil {
			return err
		}
		if expected != nil && (actual != *expected || actual == 0) {
			return &registry.RevisionMismatchError{Tool: name, Expected: *expected, Actual: actual}
		}
		if actual == 0 {
			return registry.ErrNotFound
		}
		if rev, err = bumpRevision(tx); err != nil {
			return err
		}
		if err := forget(tx, name); err != nil {
			return err
		}
		return tools.Delete([]byte(name))
	})
	if err != nil {
		return 0, s.wrap("delete", err)
	}
	s.publish(registry.Event{Type: registry.EventDelete, Tool: registry.Tool{Name: name}, Revision: rev})
	return rev, nil
}

// currentRevision is the stored tool's revision, 0 when it does not exist.
func currentRevision(tools *bolt.Bucket, name string) (int64, error) {
	v := tools.Get([]byte(name))
	if v == nil {
		return 0, nil
	}
	t, err := decodeAt(name, v)
	if err != nil {
		return 0, err
	}
	return t.Revision, nil
}

func (s *Store) view(fn func(*bolt.Tx) error) error {
	return s.wrap("read", s.db.View(fn))
}

// wrap passes the registry's sentinel and typed errors through unchanged and
// names the file for everything else.
func (s *Store) wrap(op string, err error) error {
	var mismatch *registry.RevisionMismatchError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, registry.ErrNotFound), errors.Is(err, registry.ErrBundleNotFound), errors.As(err, &mismatch):
		return err
	case errors.Is(err, berrors.ErrDatabaseNotOpen):
		return registry.ErrClosed
	}
	var te *registry.ToolError
	var be *registry.BundleError
	if errors.As(err, &te) || errors.As(err, &be) {
		return err
	}
	return fmt.Errorf("boltstore %s: %s: %w", s.path, op, err)
}

// publish records ev for watchers. Caller holds s.mu, so events are
// published in revision order.
func (s *Store) publish(ev registry.Event) { s.hub.Publish(ev) }

// Watch replays retained events with Revision > after, then live events,
// until ctx ends or the store is closed.
func (s *Store) Watch(ctx context.Context, after int64) (<-chan registry.Event, error) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, registry.ErrClosed
	}
	ch, err := s.hub.Watch(ctx, after)
	if err != nil && errors.Is(err, registry.ErrCompacted) {
		return nil, fmt.Errorf("boltstore %s: %w", s.path, err)
	}
	return ch, err
}

// Close ends every watch, flushes and releases the file lock. Later calls
// fail with registry.ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.hub.Close()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("boltstore %s: close: %w", s.path, err)
	}
	return nil
}
