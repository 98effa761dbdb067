package boltstore_test

import (
	"context"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/boltstore"
)

// TestHistoryBucketBounded checks what the file holds, not what History
// reads: every write past registry.HistoryDepth drops the oldest entry in
// its own transaction.
func TestHistoryBucketBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "registry.db")
	s, err := boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for range registry.HistoryDepth + 7 {
		if _, err := s.Put(context.Background(), registry.Tool{Name: "t"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket([]byte("history")).Bucket([]byte("t")).Stats().KeyN
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != registry.HistoryDepth {
		t.Fatalf("the file holds %d history entries after %d writes, want %d", n, registry.HistoryDepth+7, registry.HistoryDepth)
	}
}
