package registry

import (
	"sync/atomic"
)

// Snapshot is an immutable view of the registry.
type Snapshot struct {
	Revision int64
	entries  map[string]*Entry
}

// Lookup returns the compiled entry for a tool.
func (s *Snapshot) Lookup(name string) (*Entry, bool) {
	e, ok := s.entries[name]
	return e, ok
}

// Registry serves compiled tools lock-free from a copy-on-write snapshot.
// SKELETON: store-backed loading, watch and registration to be completed.
type Registry struct {
	snap atomic.Pointer[Snapshot]
}

// Lookup returns the compiled entry for a tool without taking a lock.
func (r *Registry) Lookup(name string) (*Entry, bool) {
	return r.snap.Load().Lookup(name)
}
