package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/internal/toolcodec"
)

// ErrUnavailable is wrapped by every error caused by etcd being unreachable
// or not answering within the per-call timeout. It wraps
// registry.ErrUnavailable, which callers outside this package test for
// (errors.Is), and its text names etcd ("etcd unavailable: <op>: <cause>").
var ErrUnavailable error = unavailableError{}

type unavailableError struct{}

func (unavailableError) Error() string { return "etcd unavailable" }
func (unavailableError) Unwrap() error { return registry.ErrUnavailable }

// Defaults for the options.
const (
	DefaultTimeout     = 3 * time.Second
	DefaultPageSize    = 1000
	DefaultWatchBuffer = 256
)

// Option configures a Store.
type Option func(*options)

type options struct {
	timeout  time.Duration
	pageSize int64
	watchBuf int
}

// WithTimeout bounds each call to etcd (d > 0).
func WithTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.timeout = d
		}
	}
}

// WithPageSize sets how many tools List fetches per etcd request (n >= 1);
// pages are read at one revision, so the list stays consistent.
func WithPageSize(n int) Option {
	return func(o *options) {
		if n >= 1 {
			o.pageSize = int64(n)
		}
	}
}

// WithWatchBuffer sets the buffer of each Watch channel (n >= 1).
func WithWatchBuffer(n int) Option {
	return func(o *options) {
		if n >= 1 {
			o.watchBuf = n
		}
	}
}

// Store is an etcd-backed registry.Store, safe for concurrent use. It does
// not own the client: Close ends the watches, the caller closes the client.
type Store struct {
	cli   *clientv3.Client
	tools string // "<prefix>/tools/"
	// bundles is "<prefix>/bundles/" (bundles.go); one watch, over the
	// range from it to the end of tools, orders both.
	bundles string
	// versions is "<prefix>/versions/": each tool's history (history.go),
	// outside the watched range.
	versions string
	opts     options
	mu       sync.Mutex
	closed   bool
	stops    map[*int]context.CancelFunc // live watches, cancelled by Close
}

var (
	_ registry.Store     = (*Store)(nil)
	_ registry.Historian = (*Store)(nil)
)

// New returns a store keeping its tools under prefix (e.g. "/flowdrop/registry").
func New(client *clientv3.Client, prefix string, opts ...Option) (*Store, error) {
	if client == nil {
		return nil, errors.New("etcdstore: nil client")
	}
	prefix = strings.TrimRight(prefix, "/")
	if prefix == "" {
		return nil, errors.New("etcdstore: empty prefix: the registry needs its own key space")
	}
	o := options{timeout: DefaultTimeout, pageSize: DefaultPageSize, watchBuf: DefaultWatchBuffer}
	for _, opt := range opts {
		opt(&o)
	}
	return &Store{cli: client, tools: prefix + "/tools/", bundles: prefix + "/bundles/", versions: prefix + "/versions/", opts: o, stops: map[*int]context.CancelFunc{}}, nil
}

func (s *Store) key(name string) string { return s.tools + name }

func (s *Store) checkOpen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return registry.ErrClosed
	}
	return nil
}

// call runs fn with the per-call timeout and classifies its error.
func (s *Store) call(ctx context.Context, op string, fn func(ctx context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.checkOpen(); err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, s.opts.timeout)
	defer cancel()
	return s.classify(ctx, op, fn(cctx))
}

// classify turns transport failures into ErrUnavailable and passes the
// registry's own errors through.
func (s *Store) classify(parent context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	var mismatch *registry.RevisionMismatchError
	if errors.Is(err, registry.ErrNotFound) || errors.Is(err, registry.ErrBundleNotFound) || errors.As(err, &mismatch) {
		return err
	}
	if perr := parent.Err(); perr != nil {
		// The caller gave up; that is not etcd's fault.
		return fmt.Errorf("etcdstore: %s: %w", op, perr)
	}
	if unavailable(err) {
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, op, err)
	}
	return fmt.Errorf("etcdstore: %s: %w", op, err)
}

func unavailable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, clientv3.ErrNoAvailableEndpoints) {
		return true
	}
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		switch ee.Code() {
		case codes.Unavailable, codes.DeadlineExceeded:
			return true
		}
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	return false
}

func decodeKV(kv *mvccpb.KeyValue, prefix string) (registry.Tool, error) {
	t, err := toolcodec.Decode(kv.Value)
	if err := checkKV(kv, prefix, &t, err); err != nil {
		return registry.Tool{}, err
	}
	return t, nil
}

// checkKV checks the tool decoded from kv (err: its decode error) and sets
// its revision: the key's.
func checkKV(kv *mvccpb.KeyValue, prefix string, t *registry.Tool, err error) error {
	if err != nil {
		return fmt.Errorf("etcdstore: key %q: %w", kv.Key, err)
	}
	if name := strings.TrimPrefix(string(kv.Key), prefix); t.Name != name {
		return fmt.Errorf("etcdstore: key %q holds tool %q", kv.Key, t.Name)
	}
	t.Revision = kv.ModRevision
	return nil
}

// Get returns the tool or registry.ErrNotFound.
func (s *Store) Get(ctx context.Context, name string) (registry.Tool, error) {
	var t registry.Tool
	err := s.call(ctx, fmt.Sprintf("get %q", name), func(ctx context.Context) error {
		resp, err := s.cli.Get(ctx, s.key(name))
		if err != nil {
			return err
		}
		if len(resp.Kvs) == 0 {
			return registry.ErrNotFound
		}
		t, err = decodeKV(resp.Kvs[0], s.tools)
		return err
	})
	return t, err
}

// List returns every tool sorted by name and the etcd revision of the read.
func (s *Store) List(ctx context.Context) ([]registry.Tool, int64, error) {
	// Each page is decoded on all CPUs (toolcodec.Loader, its schemas
	// shared with the pages' before) while the next is fetched, so etcd's
	// round trips overlap the decoding; at most one page waits.
	var (
		total     int64 // written before the first page is sent
		out       []registry.Tool
		decodeErr error // the decoder's; read after decoded closes
		failed    atomic.Bool
		pages     = make(chan []*mvccpb.KeyValue, 1)
		decoded   = make(chan struct{})
		l         = toolcodec.NewLoader()
	)
	go func() {
		defer close(decoded)
		for kvs := range pages { // drained to the end: the sender never blocks for good
			if decodeErr != nil {
				continue
			}
			if out == nil {
				out = make([]registry.Tool, 0, total)
			}
			vals := make([][]byte, len(kvs))
			for i, kv := range kvs {
				vals[i] = kv.Value
			}
			tools, err := l.DecodeAll(vals, func(i int, t *registry.Tool, err error) error { return checkKV(kvs[i], s.tools, t, err) })
			if err != nil {
				decodeErr = err
				failed.Store(true)
				continue
			}
			out = append(out, tools...)
		}
	}()
	rev, err := s.listPrefix(ctx, "list", s.tools, func(count int64) { total = count }, func(kvs []*mvccpb.KeyValue) error {
		if failed.Load() {
			return errStopped // the list has failed: fetch no more
		}
		pages <- kvs
		return nil
	})
	close(pages)
	<-decoded
	if decodeErr != nil {
		return nil, 0, fmt.Errorf("etcdstore: list: %w", decodeErr)
	}
	if err != nil {
		return nil, 0, err
	}
	if out == nil {
		out = []registry.Tool{}
	}
	return out, rev, nil
}

// errStopped ends a paged read whose pages' consumer has failed (its error
// is the one reported).
var errStopped = errors.New("read stopped")

// listPrefix reads every key under prefix in pages, all at the revision
// of the first, in key order: sized is told the count first, page is
// called per page. It returns that revision. The timeout bounds each page's
// request, not the whole read: 100,000 tools are a hundred requests
// (BENCHMARKS.md, "Registry at 100,000 tools"), which one bound of a few
// seconds would refuse to load at all.
func (s *Store) listPrefix(ctx context.Context, op, prefix string, sized func(int64), page func([]*mvccpb.KeyValue) error) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	var rev int64
	end := clientv3.GetPrefixRangeEnd(prefix)
	from := prefix
	for {
		opts := []clientv3.OpOption{
			clientv3.WithRange(end),
			clientv3.WithLimit(s.opts.pageSize),
			clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend),
		}
		if rev != 0 {
			// Later pages read the same revision as the first.
			opts = append(opts, clientv3.WithRev(rev))
		}
		pctx, cancel := context.WithTimeout(ctx, s.opts.timeout)
		resp, err := s.cli.Get(pctx, from, opts...)
		cancel()
		if err != nil {
			return 0, s.classify(ctx, op, err)
		}
		pageFetched()
		if rev == 0 {
			rev = resp.Header.Revision
			sized(resp.Count)
		}
		if err := page(resp.Kvs); err != nil {
			return 0, s.classify(ctx, op, err)
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return rev, nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// pageFetched is called after each page a paged read fetched; tests slow
// reads down with it (export_test.go).
var pageFetched = func() {}

// Put creates or replaces a tool; expected follows registry.Store.
func (s *Store) Put(ctx context.Context, t registry.Tool, expected *int64) (registry.Tool, error) {
	if err := registry.ValidateName(t.Name); err != nil {
		// Also keeps names from escaping the key layout (no "/").
		return registry.Tool{}, err
	}
	t.Revision = 0 // the revision is the key's ModRevision, not stored in the value
	val, err := toolcodec.Encode(t)
	if err != nil {
		return registry.Tool{}, err
	}
	// Return a decoded copy so the caller may reuse its value.
	stored, err := toolcodec.Decode(val)
	if err != nil {
		return registry.Tool{}, err
	}
	key := s.key(t.Name)
	writer := registry.WriterFrom(ctx)
	err = s.call(ctx, fmt.Sprintf("put %q", t.Name), func(ctx context.Context) error {
		// The tool and its history entry go in one transaction, pinned to
		// the tool's revision read with the history's keys: a concurrent
		// write fails the pin and, unless the caller pinned a revision
		// itself, is read again (each retry follows another's success).
		for {
			cur, hist, seq, err := s.readHistoryKeys(ctx, t.Name)
			if err != nil {
				return err
			}
			if expected != nil && cur != *expected {
				return &registry.RevisionMismatchError{Tool: t.Name, Expected: *expected, Actual: cur}
			}
			hv, err := toolcodec.EncodeRevision(registry.ToolRevision{Time: time.Now(), Writer: writer, Tool: stored})
			if err != nil {
				return err
			}
			ops := []clientv3.Op{clientv3.OpPut(key, string(val)), clientv3.OpPut(s.historyKey(t.Name, seq), string(hv))}
			for i := 0; i < len(hist)+1-registry.HistoryDepth; i++ {
				ops = append(ops, clientv3.OpDelete(string(hist[i].Key)))
			}
			resp, err := s.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", cur)).Then(ops...).Else(clientv3.OpGet(key)).Commit()
			if err != nil {
				return err
			}
			if resp.Succeeded {
				stored.Revision = resp.Header.Revision
				return nil
			}
			if expected != nil {
				return mismatch(t.Name, *expected, resp)
			}
			if err := ctx.Err(); err != nil {
				return err
			}
		}
	})
	if err != nil {
		return registry.Tool{}, err
	}
	return stored, nil
}

// mismatch builds the error from the Else OpGet of a failed transaction.
func mismatch(name string, expected int64, resp *clientv3.TxnResponse) error {
	return &registry.RevisionMismatchError{Tool: name, Expected: expected, Actual: actualRevision(resp)}
}

// actualRevision is the revision the Else OpGet of a failed transaction
// read (0: no such key).
func actualRevision(resp *clientv3.TxnResponse) int64 {
	var actual int64
	if len(resp.Responses) == 1 {
		if r := resp.Responses[0].GetResponseRange(); r != nil && len(r.Kvs) == 1 {
			actual = r.Kvs[0].ModRevision
		}
	}
	return actual
}

// Delete removes a tool and returns the etcd revision of the deletion.
func (s *Store) Delete(ctx context.Context, name string, expected *int64) (int64, error) {
	var rev int64
	key := s.key(name)
	forget := clientv3.OpDelete(s.historyPrefix(name), clientv3.WithPrefix())
	err := s.call(ctx, fmt.Sprintf("delete %q", name), func(ctx context.Context) error {
		if expected == nil {
			resp, err := s.cli.Txn(ctx).
				If(clientv3.Compare(clientv3.CreateRevision(key), ">", 0)).
				Then(clientv3.OpDelete(key), forget).
				Commit()
			if err != nil {
				return err
			}
			if !resp.Succeeded {
				return registry.ErrNotFound
			}
			rev = resp.Header.Revision
			return nil
		}
		// Expected 0 ("must not exist") can never delete anything: the
		// comparison always fails, and Else reports the actual revision.
		resp, err := s.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", *expected), clientv3.Compare(clientv3.CreateRevision(key), ">", 0)).
			Then(clientv3.OpDelete(key), forget).
			Else(clientv3.OpGet(key)).
			Commit()
		if err != nil {
			return err
		}
		if !resp.Succeeded {
			return mismatch(name, *expected, resp)
		}
		rev = resp.Header.Revision
		return nil
	})
	return rev, err
}

// Ping is a linearizable read of one key (count only): it needs a quorum,
// so it fails while this replica cannot get current reads from etcd.
func (s *Store) Ping(ctx context.Context) error {
	return s.call(ctx, "ping", func(ctx context.Context) error {
		_, err := s.cli.Get(ctx, s.tools, clientv3.WithCountOnly())
		return err
	})
}

var _ registry.Pinger = (*Store)(nil)

// Watch delivers the events under the prefix with Revision > after. The
// channel closes when ctx ends, when the store is closed, or when the watch
// fails (compaction, cancellation by etcd): the caller re-lists. While etcd
// is unreachable the client keeps the watch and resumes it from the last
// delivered revision when etcd returns.
func (s *Store) Watch(ctx context.Context, after int64) (<-chan registry.Event, error) {
	// etcd's watch reports compaction asynchronously; a range read at the
	// first wanted revision fails the same way (rev < compact revision), so
	// the caller gets ErrCompacted up front.
	err := s.call(ctx, fmt.Sprintf("watch after revision %d", after), func(ctx context.Context) error {
		_, err := s.cli.Get(ctx, s.tools, clientv3.WithPrefix(), clientv3.WithCountOnly(), clientv3.WithRev(after+1))
		if errors.Is(err, rpctypes.ErrFutureRev) {
			return nil // watching ahead of the store is fine
		}
		return err
	})
	if err != nil {
		if errors.Is(err, rpctypes.ErrCompacted) {
			return nil, fmt.Errorf("etcdstore: watch after revision %d: %w", after, registry.ErrCompacted)
		}
		return nil, err
	}

	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cancel()
		return nil, registry.ErrClosed
	}
	id := new(int)
	s.stops[id] = cancel
	s.mu.Unlock()

	// bundles/ sorts before tools/: one range holds both, in one order.
	wch := s.cli.Watch(wctx, s.bundles, clientv3.WithRange(clientv3.GetPrefixRangeEnd(s.tools)), clientv3.WithRev(after+1))
	out := make(chan registry.Event, s.opts.watchBuf)
	go func() {
		defer close(out)
		defer func() {
			s.mu.Lock()
			delete(s.stops, id)
			s.mu.Unlock()
			cancel()
		}()
		for resp := range wch {
			if resp.Err() != nil {
				return // compacted or cancelled by etcd: the watch is lost
			}
			for _, ev := range resp.Events {
				e := registry.Event{Revision: ev.Kv.ModRevision}
				key := string(ev.Kv.Key)
				switch {
				case strings.HasPrefix(key, s.bundles):
					b, ok := s.bundleEvent(ev)
					if !ok {
						return // an unreadable record: ListBundles reports it precisely
					}
					e.Type, e.Bundle = b.Type, b.Bundle
					select {
					case out <- e:
					case <-wctx.Done():
						return
					}
					continue
				case !strings.HasPrefix(key, s.tools):
					continue // between the two prefixes: not the registry's
				}
				switch ev.Type {
				case clientv3.EventTypePut:
					t, err := decodeKV(ev.Kv, s.tools)
					if err != nil {
						return // an unreadable record: List reports it precisely
					}
					e.Type, e.Tool = registry.EventPut, t
				case clientv3.EventTypeDelete:
					e.Type = registry.EventDelete
					e.Tool = registry.Tool{Name: strings.TrimPrefix(string(ev.Kv.Key), s.tools)}
				default:
					continue
				}
				select {
				case out <- e:
				case <-wctx.Done():
					return
				}
			}
		}
	}()
	return out, nil
}

// Close ends every watch; later calls fail with registry.ErrClosed. The
// client stays open (the caller owns it).
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	for _, stop := range s.stops {
		stop()
	}
	return nil
}
