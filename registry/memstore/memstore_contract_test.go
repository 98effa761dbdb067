package memstore_test

import (
	"testing"

	"github.com/flowdrop/gateway/registry"
	"github.com/flowdrop/gateway/registry/memstore"
	"github.com/flowdrop/gateway/registry/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) registry.Store { return memstore.New() })
}
