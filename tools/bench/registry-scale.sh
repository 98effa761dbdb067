#!/usr/bin/env bash
# The registry at 100,000 tools (issue 35 item 3; BENCHMARKS.md, "Registry at
# 100,000 tools"), every measure in one sequence so a quiet machine is used
# once: cold load (bolt, then etcd), MCP tools/list and gRPC ListTools pages
# per caller, watch fan-out to three replicas, and search.
#
# usage: tools/bench/registry-scale.sh
# env: TOOLS (100000) WARM (false: skip compiling every tool after the
#      start, minutes on 2 CPUs) ETCD (an etcd server binary; default `etcd`
#      on PATH — Debian's etcd-server — run as a separate process on
#      loopback so the measured process's CPU is the gateway's alone, as in a
#      deployment; empty ETCD= uses the embedded member) ETCD_PORT (23790)
#      OUT (a directory for the logs; default a temporary one)
# Prints each benchmark's result lines and the load average before each.
set -euo pipefail

cd "$(dirname "$0")/../.."
TOOLS=${TOOLS:-100000}
WARM=${WARM:-false}
ETCD=${ETCD-etcd}
ETCD_PORT=${ETCD_PORT:-23790}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"

etcd_pid=
cleanup() {
	if [[ -n $etcd_pid ]]; then
		kill "$etcd_pid" 2>/dev/null || true
		wait "$etcd_pid" 2>/dev/null || true
	fi
	rm -rf "$OUT/etcd-data"
}
trap cleanup EXIT

endpoints=
if [[ -n $ETCD ]]; then
	command -v "$ETCD" >/dev/null || { echo "registry-scale: no $ETCD on PATH (apt-get install etcd-server, or ETCD= for the embedded member)" >&2; exit 2; }
	"$ETCD" --name scale --data-dir "$OUT/etcd-data" \
		--listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
		--listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 10))" --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 10))" \
		--initial-cluster "scale=http://127.0.0.1:$((ETCD_PORT + 10))" \
		--quota-backend-bytes 8589934592 --log-level warn >"$OUT/etcd.log" 2>&1 &
	etcd_pid=$!
	for _ in $(seq 50); do
		curl -fs "http://127.0.0.1:$ETCD_PORT/health" >/dev/null 2>&1 && break
		sleep 0.2
	done
	curl -fs "http://127.0.0.1:$ETCD_PORT/health" >/dev/null || { echo "registry-scale: etcd did not start (see $OUT/etcd.log)" >&2; exit 1; }
	endpoints="http://127.0.0.1:$ETCD_PORT"
	echo "# etcd: $("$ETCD" --version | head -1), separate process on $endpoints"
fi

go test -c -o "$OUT/storetest.test" ./registry/storetest/
go test -c -o "$OUT/mcpapi.test" ./server/mcpapi/
go test -c -o "$OUT/grpcapi.test" ./server/grpcapi/
go test -c -o "$OUT/search.test" ./registry/search/

step() {
	echo "# $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg): $*"
}

step "cold load, bolt then etcd"
(cd registry/storetest && "$OUT/storetest.test" -test.run '^$' -test.bench 'BenchmarkRegistryScale' -test.benchtime 1x \
	-test.timeout 60m -scale-tools="$TOOLS" -scale-warm="$WARM" -scale-etcd-endpoints="$endpoints" 2>&1 |
	tee "$OUT/scale.log" | grep -E 'serving after|first call|^Benchmark')

step "watch fan-out to three replicas"
(cd registry/storetest && "$OUT/storetest.test" -test.run '^$' -test.bench 'BenchmarkWatchFanout' -test.benchtime 1x \
	-test.timeout 60m -fanout-tools="$TOOLS" -scale-etcd-endpoints="$endpoints" 2>&1 |
	tee "$OUT/fanout.log" | grep -E '^Benchmark')

step "MCP tools/list pages per caller"
(cd server/mcpapi && "$OUT/mcpapi.test" -test.run '^$' -test.bench 'BenchmarkToolsListScale' -test.benchmem -test.benchtime 30x \
	-list-tools="$TOOLS" 2>&1 | tee "$OUT/toolslist.log" | grep -E '^Benchmark')

step "gRPC ListTools pages per caller"
(cd server/grpcapi && "$OUT/grpcapi.test" -test.run '^$' -test.bench 'BenchmarkListToolsScale' -test.benchmem \
	-list-tools="$TOOLS" 2>&1 | tee "$OUT/listtools.log" | grep -E '^Benchmark')

step "search"
(cd registry/search && "$OUT/search.test" -test.run '^$' -test.bench 'BenchmarkSearch' -test.benchmem 2>&1 |
	tee "$OUT/search.log" | grep -E '^Benchmark')

step "done; logs in $OUT"
