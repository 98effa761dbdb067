package boltstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/internal/toolcodec"
)

// record adds rev to its tool's history bucket in the tool's write
// transaction and drops the oldest past registry.HistoryDepth.
func record(tx *bolt.Tx, rev registry.ToolRevision) error {
	b, err := tx.Bucket(bucketHistory).CreateBucketIfNotExists([]byte(rev.Tool.Name))
	if err != nil {
		return err
	}
	v, err := toolcodec.EncodeRevision(rev)
	if err != nil {
		return err
	}
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], uint64(rev.Revision))
	if err := b.Put(k[:], v); err != nil {
		return err
	}
	n := 0
	c := b.Cursor()
	for k, _ := c.Last(); k != nil; k, _ = c.Prev() {
		n++
	}
	for ; n > registry.HistoryDepth; n-- {
		k, _ := c.First()
		if err := c.Delete(); err != nil {
			return fmt.Errorf("history %q: drop revision %x: %w", rev.Tool.Name, k, err)
		}
	}
	return nil
}

// forget drops a deleted tool's history in its delete transaction.
func forget(tx *bolt.Tx, name string) error {
	err := tx.Bucket(bucketHistory).DeleteBucket([]byte(name))
	if errors.Is(err, berrors.ErrBucketNotFound) {
		return nil
	}
	return err
}

// History returns the tool's kept definitions, newest first.
func (s *Store) History(ctx context.Context, name string, limit int) ([]registry.ToolRevision, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	limit = registry.HistoryLimit(limit)
	var out []registry.ToolRevision
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketHistory).Bucket([]byte(name))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Last(); k != nil && len(out) < limit; k, v = c.Prev() {
			rev, err := toolcodec.DecodeRevision(v)
			if err != nil {
				return fmt.Errorf("stored history of %q: %w", name, err)
			}
			out = append(out, rev)
		}
		return nil
	})
	return out, err
}
