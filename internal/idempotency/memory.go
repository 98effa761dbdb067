package idempotency

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// DefaultMaxEntries bounds a Memory store unless told otherwise.
const DefaultMaxEntries = 100_000

// Memory is a Store in this process's memory: at most maxEntries keys;
// past that the oldest completed entry is evicted (its key runs again),
// and a store holding only running claims refuses new ones (ErrFull).
// TTLs are checked on every access.
type Memory struct {
	mu      sync.Mutex
	max     int
	now     func() time.Time
	entries map[string]*list.Element // of *memEntry
	order   list.List                // by last write: front is oldest
	waiters waiters
}

type memEntry struct {
	key     string
	e       Entry
	expires time.Time
}

// NewMemory is a Memory store of at most maxEntries keys (0: DefaultMaxEntries).
func NewMemory(maxEntries int) *Memory {
	if maxEntries <= 0 {
		maxEntries = DefaultMaxEntries
	}
	return &Memory{max: maxEntries, now: time.Now, entries: map[string]*list.Element{}}
}

// live returns key's unexpired entry, dropping an expired one.
func (m *Memory) live(key string) (*memEntry, bool) {
	el, ok := m.entries[key]
	if !ok {
		return nil, false
	}
	me := el.Value.(*memEntry)
	if !m.now().Before(me.expires) {
		m.remove(el)
		return nil, false
	}
	return me, true
}

func (m *Memory) remove(el *list.Element) {
	me := m.order.Remove(el).(*memEntry)
	delete(m.entries, me.key)
	m.waiters.wake(me.key)
}

// makeRoom evicts expired entries from the front, then the oldest
// completed one if the store is still full.
func (m *Memory) makeRoom() error {
	now := m.now()
	for el := m.order.Front(); el != nil && len(m.entries) >= m.max; {
		next := el.Next()
		me := el.Value.(*memEntry)
		if !now.Before(me.expires) || me.e.State != Running {
			m.remove(el)
		}
		el = next
	}
	if len(m.entries) >= m.max {
		return ErrFull
	}
	return nil
}

func (m *Memory) Claim(_ context.Context, key string, hash Hash, token Token, lease time.Duration) (Entry, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if me, ok := m.live(key); ok {
		return me.e, false, nil
	}
	if err := m.makeRoom(); err != nil {
		return Entry{}, false, err
	}
	me := &memEntry{key: key, e: Entry{State: Running, ArgsHash: hash, Token: token}, expires: m.now().Add(lease)}
	m.entries[key] = m.order.PushBack(me)
	return Entry{}, true, nil
}

func (m *Memory) Complete(_ context.Context, key string, token Token, e Entry, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if me, ok := m.live(key); ok {
		if !me.e.Holds(token) {
			return ErrClaimLost
		}
		el := m.entries[key]
		m.order.Remove(el)
		delete(m.entries, key)
	} else if err := m.makeRoom(); err != nil {
		return err
	}
	m.entries[key] = m.order.PushBack(&memEntry{key: key, e: e, expires: m.now().Add(ttl)})
	m.waiters.wake(key)
	return nil
}

func (m *Memory) Release(_ context.Context, key string, token Token) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	me, ok := m.live(key)
	if !ok {
		return nil
	}
	if !me.e.Holds(token) {
		return ErrClaimLost
	}
	m.remove(m.entries[key])
	return nil
}

func (m *Memory) Wait(ctx context.Context, key string) (Entry, bool, error) {
	for {
		m.mu.Lock()
		me, ok := m.live(key)
		if !ok {
			m.mu.Unlock()
			return Entry{}, false, nil
		}
		if me.e.State != Running {
			e := me.e
			m.mu.Unlock()
			return e, true, nil
		}
		woken := m.waiters.watch(key)
		expiry := time.Until(me.expires)
		m.mu.Unlock()
		t := time.NewTimer(expiry)
		select {
		case <-woken:
		case <-t.C: // the lease ran out: live drops the claim
		case <-ctx.Done():
			t.Stop()
			return Entry{}, false, ctx.Err()
		}
		t.Stop()
	}
}

// Len is the number of keys held (tests hold it bounded).
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.entries)
}

func (m *Memory) Close() error { return nil }
