package etcdstore

import (
	"context"
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/internal/toolcodec"
)

// Bundles live under "<prefix>/bundles/<name>", revisioned by etcd like
// the tools; Watch delivers both in one order.

func (s *Store) bundleKey(name string) string { return s.bundles + name }

func decodeBundleKV(kv *mvccpb.KeyValue, prefix string) (registry.Bundle, error) {
	b, err := toolcodec.DecodeBundle(kv.Value)
	if err != nil {
		return registry.Bundle{}, fmt.Errorf("etcdstore: key %q: %w", kv.Key, err)
	}
	if name := strings.TrimPrefix(string(kv.Key), prefix); b.Name != name {
		return registry.Bundle{}, fmt.Errorf("etcdstore: key %q holds bundle %q", kv.Key, b.Name)
	}
	b.Revision = kv.ModRevision
	return b, nil
}

// bundleEvent is a watch event under the bundles prefix as a registry
// event; ok is false for an unreadable record.
func (s *Store) bundleEvent(ev *clientv3.Event) (registry.Event, bool) {
	switch ev.Type {
	case clientv3.EventTypePut:
		b, err := decodeBundleKV(ev.Kv, s.bundles)
		if err != nil {
			return registry.Event{}, false
		}
		return registry.Event{Type: registry.EventPut, Bundle: &b}, true
	case clientv3.EventTypeDelete:
		return registry.Event{Type: registry.EventDelete, Bundle: &registry.Bundle{Name: strings.TrimPrefix(string(ev.Kv.Key), s.bundles)}}, true
	}
	return registry.Event{}, false
}

// GetBundle returns the bundle or registry.ErrBundleNotFound.
func (s *Store) GetBundle(ctx context.Context, name string) (registry.Bundle, error) {
	var b registry.Bundle
	err := s.call(ctx, fmt.Sprintf("get bundle %q", name), func(ctx context.Context) error {
		resp, err := s.cli.Get(ctx, s.bundleKey(name))
		if err != nil {
			return err
		}
		if len(resp.Kvs) == 0 {
			return registry.ErrBundleNotFound
		}
		b, err = decodeBundleKV(resp.Kvs[0], s.bundles)
		return err
	})
	return b, err
}

// ListBundles returns every bundle sorted by name and the etcd revision of
// the read.
func (s *Store) ListBundles(ctx context.Context) ([]registry.Bundle, int64, error) {
	var out []registry.Bundle
	rev, err := s.listPrefix(ctx, "list bundles", s.bundles, func(count int64) { out = make([]registry.Bundle, 0, count) }, func(kvs []*mvccpb.KeyValue) error {
		for _, kv := range kvs {
			b, err := decodeBundleKV(kv, s.bundles)
			if err != nil {
				return err
			}
			out = append(out, b)
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return out, rev, nil
}

// PutBundle creates or replaces a bundle; expected follows registry.Store.
func (s *Store) PutBundle(ctx context.Context, b registry.Bundle, expected *int64) (registry.Bundle, error) {
	if !registry.ValidBundleName(b.Name) {
		// Also keeps names from escaping the key layout (no "/").
		return registry.Bundle{}, &registry.BundleError{Bundle: b.Name, Field: "name", Reason: "must match " + registry.NamePattern}
	}
	b.Revision = 0 // the key's ModRevision, not stored in the value
	val, err := toolcodec.EncodeBundle(b)
	if err != nil {
		return registry.Bundle{}, err
	}
	stored, err := toolcodec.DecodeBundle(val) // a copy the caller's slices do not share
	if err != nil {
		return registry.Bundle{}, err
	}
	key := s.bundleKey(b.Name)
	err = s.call(ctx, fmt.Sprintf("put bundle %q", b.Name), func(ctx context.Context) error {
		if expected == nil {
			resp, err := s.cli.Put(ctx, key, string(val))
			if err != nil {
				return err
			}
			stored.Revision = resp.Header.Revision
			return nil
		}
		cmp := clientv3.Compare(clientv3.ModRevision(key), "=", *expected)
		if *expected == 0 {
			cmp = clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
		}
		resp, err := s.cli.Txn(ctx).If(cmp).Then(clientv3.OpPut(key, string(val))).Else(clientv3.OpGet(key)).Commit()
		if err != nil {
			return err
		}
		if !resp.Succeeded {
			return &registry.RevisionMismatchError{Bundle: b.Name, Expected: *expected, Actual: actualRevision(resp)}
		}
		stored.Revision = resp.Header.Revision
		return nil
	})
	if err != nil {
		return registry.Bundle{}, err
	}
	return stored, nil
}

// DeleteBundle removes a bundle and returns the etcd revision of the deletion.
func (s *Store) DeleteBundle(ctx context.Context, name string, expected *int64) (int64, error) {
	var rev int64
	key := s.bundleKey(name)
	err := s.call(ctx, fmt.Sprintf("delete bundle %q", name), func(ctx context.Context) error {
		if expected == nil {
			resp, err := s.cli.Delete(ctx, key)
			if err != nil {
				return err
			}
			if resp.Deleted == 0 {
				return registry.ErrBundleNotFound
			}
			rev = resp.Header.Revision
			return nil
		}
		resp, err := s.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", *expected), clientv3.Compare(clientv3.CreateRevision(key), ">", 0)).
			Then(clientv3.OpDelete(key)).
			Else(clientv3.OpGet(key)).
			Commit()
		if err != nil {
			return err
		}
		if !resp.Succeeded {
			return &registry.RevisionMismatchError{Bundle: name, Expected: *expected, Actual: actualRevision(resp)}
		}
		rev = resp.Header.Revision
		return nil
	})
	return rev, err
}
