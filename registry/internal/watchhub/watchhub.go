package watchhub

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/flowdrop/gateway/registry"
)

// Hub retains recent events and fans new ones out to watchers. It is safe
// for concurrent use; callers publish in revision order (the stores do so
// under their write lock).
type Hub struct {
	capacity int // events retained for replay
	watchBuf int // live-event buffer per watcher

	mu       sync.Mutex
	history  []registry.Event // oldest first, at most capacity
	dropped  int64            // every event with Revision > dropped is in history
	watchers map[*watcher]struct{}
	closed   bool
}

type watcher struct {
	ch   chan registry.Event
	stop func() bool // unregisters the context.AfterFunc
}

// New returns a hub retaining capacity events (>= 1), giving each watcher
// watchBuf slots for live events. Nothing at or before revision start can be
// replayed (a store reopened at revision start has no history yet).
func New(capacity, watchBuf int, start int64) *Hub {
	return &Hub{
		capacity: max(capacity, 1),
		watchBuf: max(watchBuf, 1),
		dropped:  start,
		watchers: make(map[*watcher]struct{}),
	}
}

// Publish records ev in the history and fans it out.
func (h *Hub) Publish(ev registry.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.history) == h.capacity {
		h.dropped = h.history[0].Revision
		// Shift rather than reslice so the backing array does not grow forever.
		copy(h.history, h.history[1:])
		h.history = h.history[:len(h.history)-1]
	}
	h.history = append(h.history, ev)
	for w := range h.watchers {
		select {
		case w.ch <- ev:
		default:
			h.removeLocked(w) // fell behind: drop it rather than block the writer
		}
	}
}

// Watch replays retained events with Revision > after, then live events,
// until ctx ends or Close. An after older than the history is
// registry.ErrCompacted; after Close, registry.ErrClosed.
func (h *Hub) Watch(ctx context.Context, after int64) (<-chan registry.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, registry.ErrClosed
	}
	if after < h.dropped {
		return nil, fmt.Errorf("watch after revision %d, oldest replayable is %d: %w", after, h.dropped, registry.ErrCompacted)
	}
	i, _ := slices.BinarySearchFunc(h.history, after+1, func(e registry.Event, rev int64) int {
		return cmpInt64(e.Revision, rev)
	})
	replay := h.history[i:]
	w := &watcher{ch: make(chan registry.Event, len(replay)+h.watchBuf)}
	for _, ev := range replay {
		w.ch <- ev
	}
	h.watchers[w] = struct{}{}
	w.stop = context.AfterFunc(ctx, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.removeLocked(w)
	})
	return w.ch, nil
}

// Close ends every watch; later Watch calls fail with registry.ErrClosed.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for w := range h.watchers {
		h.removeLocked(w)
	}
}

// removeLocked closes a watcher's channel once. Caller holds h.mu.
func (h *Hub) removeLocked(w *watcher) {
	if _, ok := h.watchers[w]; !ok {
		return
	}
	delete(h.watchers, w)
	if w.stop != nil {
		w.stop()
	}
	close(w.ch)
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
