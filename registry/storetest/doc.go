// Package storetest is the one contract suite every registry.Store runs, so
// memstore, boltstore and etcdstore are interchangeable behind the registry.
//
// Revisions are only compared relative to each other: a store may share its
// revision counter with other data (etcd does), so the suite never assumes a
// store starts at 0 or that revisions are dense.
//
// It imports the registry and protobuf; it is for the stores' tests.
package storetest
