// Package registry is the gateway's tool domain: tool definitions and their
// rules (name, backend target, object root schema), compilation of a tool's
// input schema into the RT-TOOL-8 normalization plan and a JSON Schema
// validator, argument validation with model-facing messages, compatibility
// checks between revisions, the declarative tools file, and the live
// Registry.
//
// The live Registry holds an immutable Snapshot behind an atomic.Pointer:
// Lookup takes no lock and never compiles. Writers (Register, Delete and the
// store watch) build a new snapshot copy-on-write, reusing the compiled
// Entry of every tool whose name and revision did not change. The Store
// (memstore, boltstore, etcdstore) is the source of truth; a Registry
// follows it through Store.Watch and re-lists with bounded backoff when a
// watch is lost, serving its last snapshot meanwhile.
//
// Schemas are compiled with santhosh-tekuri/jsonschema/v6: drafts 4, 6, 7,
// 2019-09 and 2020-12 chosen by $schema (2020-12 when absent); nothing is
// fetched, so any $ref outside the schema is refused at registration.
// Integers must be whole and within ±2^53, enforced by a keyword extension
// (a custom vocabulary) on every schema whose type allows "integer" but not
// "number", since structpb numbers are float64.
//
// This package imports no gRPC; the server maps its errors (*ToolError,
// *ValidationError, *IncompatibleError, *RevisionMismatchError, ErrNotFound)
// to status codes.
package registry
