// Package chaos is the fleet chaos soak (issue 35 item 4): three gateway
// replicas — the real binary, separate processes — on one real etcd and on
// Redis behind Sentinel, ToolBackendService backends balanced over two
// addresses and a go-sdk MCP upstream, mixed gRPC and MCP callers with and
// without idempotency keys, and a schedule that kills and restores a backend
// address, a replica, etcd, the Redis primary and a Redis replica. Every
// answer is checked against its request, every accepted call against its
// replica's audit file, every idempotency key against the backends' run
// counts; the report (JSON and text) has the counts and the recovery times.
//
// TestChaosSoak runs it when FLOWDROP_CHAOS=1 (tools/chaos/run.sh sets it,
// with the knobs as -chaos.* flags; .ci/run runs its CI-sized variant).
// It is for tests only: it starts servers on loopback and needs
// redis-server on PATH.
package chaos
