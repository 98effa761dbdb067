package boltstore

import (
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/internal/toolcodec"
)

// Bundles live in their own bucket under the tools' revision counter, so
// one watch orders both.

func decodeBundleAt(name string, v []byte) (registry.Bundle, error) {
	b, err := toolcodec.DecodeBundle(v)
	if err != nil {
		return registry.Bundle{}, fmt.Errorf("boltstore: stored bundle %q: %w", name, err)
	}
	return b, nil
}

// GetBundle returns the bundle or registry.ErrBundleNotFound.
func (s *Store) GetBundle(ctx context.Context, name string) (registry.Bundle, error) {
	if err := ctx.Err(); err != nil {
		return registry.Bundle{}, err
	}
	var b registry.Bundle
	err := s.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketBundles).Get([]byte(name))
		if v == nil {
			return registry.ErrBundleNotFound
		}
		var err error
		b, err = decodeBundleAt(name, v)
		return err
	})
	return b, err
}

// ListBundles returns every bundle sorted by name and the revision of
// that snapshot.
func (s *Store) ListBundles(ctx context.Context) ([]registry.Bundle, int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	var (
		out []registry.Bundle
		rev int64
	)
	err := s.view(func(tx *bolt.Tx) error {
		var err error
		if rev, err = readRevision(tx.Bucket(bucketMeta)); err != nil {
			return err
		}
		return tx.Bucket(bucketBundles).ForEach(func(k, v []byte) error {
			b, err := decodeBundleAt(string(k), v)
			if err != nil {
				return err
			}
			out = append(out, b)
			return nil
		})
	})
	if err != nil {
		return nil, 0, err
	}
	return out, rev, nil
}

// PutBundle creates or replaces a bundle; expected follows registry.Store.
func (s *Store) PutBundle(ctx context.Context, b registry.Bundle, expected *int64) (registry.Bundle, error) {
	if err := ctx.Err(); err != nil {
		return registry.Bundle{}, err
	}
	if !registry.ValidBundleName(b.Name) {
		// Also keeps bbolt from seeing an empty key.
		return registry.Bundle{}, &registry.BundleError{Bundle: b.Name, Field: "name", Reason: "must match " + registry.NamePattern}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return registry.Bundle{}, registry.ErrClosed
	}
	var stored registry.Bundle
	err := s.db.Update(func(tx *bolt.Tx) error {
		bundles := tx.Bucket(bucketBundles)
		if expected != nil {
			actual, err := currentBundleRevision(bundles, b.Name)
			if err != nil {
				return err
			}
			if actual != *expected {
				return &registry.RevisionMismatchError{Bundle: b.Name, Expected: *expected, Actual: actual}
			}
		}
		rev, err := bumpRevision(tx)
		if err != nil {
			return err
		}
		b.Revision = rev
		v, err := toolcodec.EncodeBundle(b)
		if err != nil {
			return err
		}
		// A decoded copy, not the caller's value (its slices).
		if stored, err = toolcodec.DecodeBundle(v); err != nil {
			return err
		}
		return bundles.Put([]byte(b.Name), v)
	})
	if err != nil {
		return registry.Bundle{}, s.wrap("put bundle", err)
	}
	ev := stored.Clone()
	s.publish(registry.Event{Type: registry.EventPut, Bundle: &ev, Revision: stored.Revision})
	return stored, nil
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
	if name == "" {
		return 0, registry.ErrBundleNotFound
	}
	var rev int64
	err := s.db.Update(func(tx *bolt.Tx) error {
		bundles := tx.Bucket(bucketBundles)
		actual, err := currentBundleRevision(bundles, name)
		if err != nil {
			return err
		}
		if expected != nil && (actual != *expected || actual == 0) {
			return &registry.RevisionMismatchError{Bundle: name, Expected: *expected, Actual: actual}
		}
		if actual == 0 {
			return registry.ErrBundleNotFound
		}
		if rev, err = bumpRevision(tx); err != nil {
			return err
		}
		return bundles.Delete([]byte(name))
	})
	if err != nil {
		return 0, s.wrap("delete bundle", err)
	}
	s.publish(registry.Event{Type: registry.EventDelete, Bundle: &registry.Bundle{Name: name}, Revision: rev})
	return rev, nil
}

// currentBundleRevision is the stored bundle's revision, 0 when it does
// not exist.
func currentBundleRevision(bundles *bolt.Bucket, name string) (int64, error) {
	v := bundles.Get([]byte(name))
	if v == nil {
		return 0, nil
	}
	b, err := decodeBundleAt(name, v)
	if err != nil {
		return 0, err
	}
	return b.Revision, nil
}
