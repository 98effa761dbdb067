// Package boltstore is the embedded, durable registry.Store: one bbolt file in
// the gateway's data directory. Every write is a bbolt read-write transaction,
// which bbolt fsyncs before Commit returns, so an acknowledged Put or Delete
// survives a crash or an exit without Close.
//
// Layout: bucket "meta" holds the global revision counter under "revision"
// (8-byte big-endian); bucket "tools" maps a tool name to its toolcodec
// encoding, which includes the tool's revision.
//
// Watch is served in-process (bbolt is single-process): live fan-out plus a
// bounded replay history, with the same semantics as memstore. History is not
// persisted, so after Open a Watch older than the revision at Open returns
// registry.ErrCompacted and the caller re-lists.
//
// It imports the registry, its internal codec and watch hub, and bbolt; no gRPC, no net/http.
package boltstore
