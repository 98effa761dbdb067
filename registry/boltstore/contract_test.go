package boltstore_test

import (
	"path/filepath"
	"testing"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/boltstore"
	"github.com/flowdrop/gateway/registry/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) registry.Store {
		s, err := boltstore.Open(filepath.Join(t.TempDir(), "registry.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}
