package mcptasks

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"time"
)

// DefaultMaxEntries bounds a Memory store.
const DefaultMaxEntries = 10000

// Memory is the store of one node: records in a map, expired ones dropped
// when met and swept when the store is full.
type Memory struct {
	mu      sync.Mutex
	max     int
	now     func() time.Time
	records map[string]Record
	owned   map[string]int
}

// NewMemory is a store of at most max records (0: DefaultMaxEntries).
func NewMemory(max int) *Memory {
	if max <= 0 {
		max = DefaultMaxEntries
	}
	return &Memory{max: max, now: time.Now, records: map[string]Record{}, owned: map[string]int{}}
}

var _ Store = (*Memory)(nil)

func (m *Memory) live(r Record) bool { return r.Expires > m.now().UnixMilli() }

func (m *Memory) dropLocked(id string, r Record) {
	delete(m.records, id)
	if m.owned[r.Owner]--; m.owned[r.Owner] <= 0 {
		delete(m.owned, r.Owner)
	}
}

func (m *Memory) sweepLocked() {
	for id, r := range m.records {
		if !m.live(r) {
			m.dropLocked(id, r)
		}
	}
}

func (m *Memory) Put(_ context.Context, id string, r Record) error {
	if err := r.Check(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.records[id]; ok {
		m.dropLocked(id, old)
	}
	if len(m.records) >= m.max || m.owned[r.Owner] >= MaxPerOwner {
		m.sweepLocked()
	}
	if len(m.records) >= m.max || m.owned[r.Owner] >= MaxPerOwner {
		return ErrFull
	}
	m.records[id] = r
	m.owned[r.Owner]++
	return nil
}

func (m *Memory) Get(_ context.Context, id string) (Record, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.records[id]
	if ok && !m.live(r) {
		m.dropLocked(id, r)
		return Record{}, false, nil
	}
	return r, ok, nil
}

func (m *Memory) List(_ context.Context, owner string) ([]Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Entry
	for id, r := range m.records {
		if r.Owner == owner && m.live(r) {
			out = append(out, Entry{ID: id, Record: r})
		}
	}
	slices.SortFunc(out, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(a.Expires, b.Expires), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

func (m *Memory) Delete(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.records[id]; ok {
		m.dropLocked(id, r)
	}
	return nil
}

func (m *Memory) Update(_ context.Context, id string, f func(*Record) error) (Record, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.records[id]
	if !ok || !m.live(r) {
		return Record{}, false, nil
	}
	n := r.clone()
	if err := f(&n); err != nil {
		return Record{}, true, err
	}
	n.Owner, n.Expires = r.Owner, r.Expires
	if err := n.Check(); err != nil {
		return Record{}, true, err
	}
	m.records[id] = n
	return n, true, nil
}
