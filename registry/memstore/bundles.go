package memstore

import (
	"context"
	"slices"
	"strings"

	"github.com/flowdrop/gateway/registry"
)

// GetBundle returns the bundle or registry.ErrBundleNotFound.
func (s *Store) GetBundle(ctx context.Context, name string) (registry.Bundle, error) {
	if err := ctx.Err(); err != nil {
		return registry.Bundle{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return registry.Bundle{}, registry.ErrClosed
	}
	b, ok := s.bundles[name]
	if !ok {
		return registry.Bundle{}, registry.ErrBundleNotFound
	}
	return b.Clone(), nil
}

// ListBundles returns every bundle sorted by name and the current revision.
func (s *Store) ListBundles(ctx context.Context) ([]registry.Bundle, int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, 0, registry.ErrClosed
	}
	out := make([]registry.Bundle, 0, len(s.bundles))
	for _, b := range s.bundles {
		out = append(out, b.Clone())
	}
	slices.SortFunc(out, func(a, b registry.Bundle) int { return strings.Compare(a.Name, b.Name) })
	return out, s.rev, nil
}

// PutBundle creates or replaces a bundle; expected as for Put.
func (s *Store) PutBundle(ctx context.Context, b registry.Bundle, expected *int64) (registry.Bundle, error) {
	if err := ctx.Err(); err != nil {
		return registry.Bundle{}, err
	}
	if b.Name == "" {
		return registry.Bundle{}, &registry.BundleError{Field: "name", Reason: "must not be empty"}
	}
	b = b.Clone() // the caller's slices may be reused after PutBundle
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return registry.Bundle{}, registry.ErrClosed
	}
	cur, exists := s.bundles[b.Name]
	if expected != nil {
		var actual int64
		if exists {
			actual = cur.Revision
		}
		if actual != *expected {
			return registry.Bundle{}, &registry.RevisionMismatchError{Bundle: b.Name, Expected: *expected, Actual: actual}
		}
	}
	s.rev++
	b.Revision = s.rev
	s.bundles[b.Name] = b
	ev := b.Clone()
	s.publish(registry.Event{Type: registry.EventPut, Bundle: &ev, Revision: s.rev})
	return b.Clone(), nil
}

// DeleteBundle removes a bundle and returns the revision of the deletion.
func (s *Store) DeleteBundle(ctx context.Context, name string, expected *int64) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, registry.ErrClosed
	}
	cur, exists := s.bundles[name]
	if expected != nil {
		var actual int64
		if exists {
			actual = cur.Revision
		}
		if actual != *expected || !exists {
			return 0, &registry.RevisionMismatchError{Bundle: name, Expected: *expected, Actual: actual}
		}
	}
	if !exists {
		return 0, registry.ErrBundleNotFound
	}
	s.rev++
	delete(s.bundles, name)
	s.publish(registry.Event{Type: registry.EventDelete, Bundle: &registry.Bundle{Name: name}, Revision: s.rev})
	return s.rev, nil
}
