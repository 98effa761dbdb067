// Package loadgen drives unary gRPC load in a closed loop (fixed
// concurrency) or an open loop (fixed rate, latency measured from the
// intended send time) and summarizes throughput and latency percentiles.
//
// It imports gRPC, the generated contract and bareproxy; nothing of the gateway.
package loadgen
