// Package registry is the gateway's tool domain: tool definitions and their
// rules (name, backend target, object root schema), compilation of a tool's
// input schema into the RT-TOOL-8 normalization plan and a JSON Schema
// validator (registry/schema: the engine, its messages and fast paths),
// compatibility checks between revisions, the declarative tools file, and
// the live Registry.
//
// The live Registry holds an immutable Snapshot behind an atomic.Pointer:
// Lookup takes no lock and never compiles. Writers (Register, Delete and the
// store watch) build a new snapshot copy-on-write, reusing the compiled
// Entry of every tool whose name and revision did not change. The Store
// (memstore, boltstore, etcdstore) is the source of truth; a Registry
// follows it through Store.Watch and re-lists with bounded backoff when a
// watch is lost, serving its last snapshot meanwhile.
//
// This package imports no gRPC and no net/http; the server maps its errors
// (*ToolError, *ValidationError, *schema.RuntimeError, *IncompatibleError,
// *RevisionMismatchError, ErrNotFound) to status codes.
package registry
