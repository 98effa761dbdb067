#!/usr/bin/env bash
# The fleet chaos soak (internal/chaos; docs/fleet.md, "The chaos soak"):
# three gateway replicas built from ./cmd/flowdrop-gateway on one etcd and
# on Redis behind Sentinel, backends, mixed gRPC and MCP callers, and a
# schedule killing and restoring a backend address, a replica, etcd, the
# Redis primary and a Redis replica. Writes the report (JSON, and a text
# summary next to it) and exits non-zero when an invariant or a recovery
# bound is broken.
#
# usage: tools/chaos/run.sh [--ci] [--duration 10m] [--workers 8] [--pause 20ms]
#          [--keyed 0.3] [--limited 0.15] [--mcp-tool 0.3] [--rate 5] [--burst 10]
#          [--faults backend,replica,etcd,redis-primary,redis-replica]
#          [--outage 7s] [--gap 5s] [--report chaos-report.json]
# --ci is the CI-sized variant (.ci/run): one cycle of the faults, ~80 s.
# Needs redis-server (Debian's redis-server package) on PATH.
set -euo pipefail
cd "$(dirname "$0")/../.."

args=() report="$PWD/chaos-report.json" duration=10m
while [ $# -gt 0 ]; do
  case "$1" in
    --ci) duration=80s ;;
    --duration) duration="$2"; shift ;;
    --report) report="$(realpath -m "$2")"; shift ;;
    --workers|--pause|--keyed|--limited|--mcp-tool|--rate|--burst|--faults|--outage|--gap)
      args+=("-chaos.${1#--}=$2"); shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/flowdrop-gateway" ./cmd/flowdrop-gateway
FLOWDROP_CHAOS=1 go test -count=1 -v -run '^TestChaosSoak$' -timeout 60m ./internal/chaos/ \
  -args -chaos.gateway="$work/flowdrop-gateway" -chaos.duration="$duration" -chaos.report="$report" "${args[@]}"
echo "report: $report and ${report%.json}.txt"
