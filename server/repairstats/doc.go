// Package repairstats is repair analytics: per tool × field (JSON Pointer)
// × caller × client, how many calls the gateway had to repair (each
// normalize.RepairKind) and how many failed validation (each JSON Schema
// keyword), with suggested schema changes where a pattern persists.
//
// A *Stats is a pipeline Recorder (every call's outcome) that keeps the
// counts in memory, exports them as Prometheus counters in a registry the
// caller gives, and answers Snapshot for the admin API, flowdropctl and the
// console. Everything it keys by is caller-influenced (field names, the
// caller's subject, the client's name), so every dimension is capped and
// what is over a cap is counted under "_other" (limits.go).
//
// Counts are per replica, since start (a tool deleted from the registry
// is forgotten: Prune). Prometheus sums the replicas; Snapshot is the
// answering replica's view.
//
// It imports the pipeline and Prometheus; no transport.
package repairstats
