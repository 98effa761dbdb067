// Package etcdstore is the registry.Store for several gateway replicas: the
// tools live in etcd under <prefix>/tools/<name>, encoded with toolcodec.
//
// Revisions are etcd's: a tool's Revision is its key's ModRevision and the
// store revision is the etcd header revision (shared with anything else in
// the cluster, so revisions are increasing but not dense). Conditional writes
// are etcd transactions comparing the key's revision.
//
// Every call is bounded by a per-call timeout (WithTimeout): when etcd is
// unreachable the call fails with an error wrapping registry.ErrUnavailable
// (through this package's ErrUnavailable, whose text names etcd) instead of
// hanging, so replicas keep serving their last snapshot and refuse writes.
//
// It imports the registry, its internal codec and etcd's client (and so gRPC, for etcd's status codes).
package etcdstore
