#!/usr/bin/env bash
# Benchmark harness (issue 3 §5): the gateway vs a direct backend call vs a
# bare pass-through gRPC proxy vs a decode-walk-re-encode proxy, same ~1 KiB
# 10-parameter payload, interleaved rounds on 127.0.0.1. See BENCHMARKS.md,
# section "Gateway vs direct vs bare proxy".
#
# usage: tools/bench/run.sh [--quick] [--pprof DIR] [--payload clean|repair] [--keep]
#   --quick        smoke run: 1 round, 2s per run, 1s warm-up
#   --pprof DIR    after the measured rounds, one extra closed-loop run each for
#                  the gateway and the bare proxy with a CPU profile written to DIR
#   --payload K    clean (default, needs no repair) or repair
#   --keep         keep the work directory (binaries, logs, raw JSON lines)
# env: ROUNDS (3) DURATION (10s) CONCURRENCY (16) RATE (1000) WARMUP (3s)
#      BASE_PORT (17100: uses BASE_PORT..BASE_PORT+12, +13..+16 for the
#      in-flight phase, +20..+22 for baseline-prod, +23..+24 for the
#      gateway's and the baseline's admin metrics, +30..+52 for the MCP
#      targets, baseline-mcp's included)
#      CONNS (4: gRPC client connections per target, every gRPC target;
#      calls spread over them round-robin)
#      FACES (both: grpc, mcp or both — which targets are measured)
#      PEER_MCP_PROXY (unset: no peer; the path of a tbxark/mcp-proxy binary,
#      see tools/bench/build-mcp-proxy.sh, measured as mcp-peer)
#      GATEWAY_FLAGS (extra flags) BASELINE_REF (unset: no baseline)
#      PEERS (1: also nginx and HAProxy; 0: not) PROD (1: also gateway-prod; 0: not)
#      REPAIR (1: with the clean payload, also gateway-repair and
#      gateway-prod-repair, the same gateways sent the repair payload, so
#      repair/clean is measured in one run; 0: not)
#      INFLIGHT (1000: with gateway-prod on, the in-flight memory phase
#      holds this many calls open at once; 0: no phase; at most 4096, the
#      policy's max_in_flight_per_tool) INFLIGHT_DELAY (2s: how long its
#      backend holds each call, whole seconds)
# Peers (issue 14): nginx 1.22 `grpc_pass` and HAProxy 2.6 (h2 both sides),
# each proxying the direct target's Invoke to the same backend, from the
# Debian packages nginx-light and haproxy — installed with apt-get when
# missing and run as root, otherwise skipped with the reason printed.
# gateway-prod: a second gateway from the same build running
# tools/bench/prod-policy.yaml (API-key auth on every call, audit to a file
# with the arguments, a CEL rule on bench_tool, limits, a rate limit it never
# reaches, admin metrics on), called with the bench key.
# In-flight memory (issue 14 target 6: gateway-prod's resident memory with
# 1,000 calls in flight under 96 MB): after the measured rounds, a backend
# that answers after INFLIGHT_DELAY (loadgen backend --delay, BASE_PORT+13)
# and a separate gateway-prod instance (same build, policy and
# GATEWAY_FLAGS, its own work directory and ports +14..+16, bench_tool
# pointed at that backend) so the measured gateway-prod's memory is
# untouched; a closed loop of INFLIGHT calls for 3 × INFLIGHT_DELAY while
# VmRSS is read from /proc every 100 ms, then VmHWM. The calls are spread
# over ceil(INFLIGHT / 100) client connections: the gateway allows 100
# streams a connection by default (--grpc-max-streams), so one connection
# would hold only 100 of them and queue the rest. The gateway's own metrics (InvokeTool
# grpc_server_started_total minus handled) say how many calls it held; the
# verdict is on VmHWM, which bounds every sample; MB = 2^20 bytes. Midway
# through the last wave of calls (2.5 × INFLIGHT_DELAY, after every call has
# started) the Go runtime's memory statistics and a heap profile are taken;
# when the target is not met the summary prints where the runtime says the
# memory is and the profile's top. The profile is kept with --keep (or in
# --pprof DIR).
# MCP targets (issue 30), FACES=mcp or both: one echo upstream
# (flowdrop-loadgen mcp-upstream: a go-sdk v1.8.0 MCP server over
# streamable HTTP, tool echo, BASE_PORT+30, its /stats on +31) and, in
# front of it, mcp-direct (the upstream itself), mcp-peer (PEER_MCP_PROXY,
# +32, with a config this script writes), gateway-mcp (the MCP face, auth
# off; bench_tool registered in the tools file as the upstream's echo),
# gateway-mcp-prod (the same on tools/bench/prod-policy.yaml),
# gateway-grpc-mcp (gRPC InvokeTool → the same upstream tool) and
# gateway-mcp-backend (the MCP face → the bench ToolBackendService), each
# gateway its own process (+33.., four ports each) so each peak RSS is its
# own target's. The driver: closed loop, CONCURRENCY workers, one MCP
# session each over HTTP/1.1 keep-alive, raw JSON-RPC (not the go-sdk
# client: it would cost more CPU than some targets), ~940 B of arguments,
# every answer checked (the echo's text equal to the arguments; the
# backend's result). MCP targets run in the closed loop only.
# Every target (both faces) also reports the measured process's CPU per
# call (/proc/PID/stat), its peak RSS over the run (VmHWM, reset through
# /proc/PID/clear_refs before each run where allowed), bytes allocated per
# call where it is a gateway (its admin /metrics, go_memstats_alloc_bytes_total),
# and, in front of the echo upstream, the upstream's newly accepted TCP
# connections per call. nginx is measured as its master and workers.
# BASELINE_REF=<git ref> (e.g. HEAD, main, a commit): before/after in one run.
# ./cmd/flowdrop-gateway is also built from that commit and measured as
# "baseline" in every round, interleaved like the rest, with the gateway's
# flags, its own port (BASE_PORT+6, pprof +7) and its own data directory; the
# summary adds gateway/baseline throughput and added-p50 ratios (per round and
# median). With gateway-prod on, the baseline also runs the production
# policy as "baseline-prod" (BASE_PORT+20..+22; the baseline commit's
# tools/bench/prod-policy.yaml when it has one), with the same two ratios
# against gateway-prod. With the MCP targets on, the baseline's MCP face (auth
# off, in front of the same echo upstream) runs as "baseline-mcp", with
# gateway-mcp/baseline-mcp throughput and added-p50 ratios. The gateway
# itself is built from the work tree,
# uncommitted edits included.
# The gateway runs with --auth-off (the bench measures the pipeline without
# credentials) unless GATEWAY_FLAGS gives --policy or --auth-off itself.
# GC: the gateway runs at its default --gc-percent 400, the other processes at
# Go's 100; GATEWAY_FLAGS="--gc-percent 100" or GOGC=400 in the environment
# compares like for like (BENCHMARKS.md, "Exact commands").
set -euo pipefail

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10s}
CONCURRENCY=${CONCURRENCY:-16}
RATE=${RATE:-1000}
WARMUP=${WARMUP:-3s}
BASE_PORT=${BASE_PORT:-17100}
GATEWAY_FLAGS=${GATEWAY_FLAGS:-}
BASELINE_REF=${BASELINE_REF:-}
PAYLOAD=clean
PPROF_DIR=""
KEEP=0

die() { echo "run.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) ROUNDS=1; DURATION=2s; WARMUP=1s; shift ;;
    --pprof) [ $# -ge 2 ] || die "--pprof needs a directory"; PPROF_DIR=$2; shift 2 ;;
    --payload) [ $# -ge 2 ] || die "--payload needs clean or repair"; PAYLOAD=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -h|--help) awk 'NR == 1 { next } /^#/ { print; next } { exit }' "$0"; exit 0 ;; # the header, however long
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS='$ROUNDS': want a positive integer"
[[ $DURATION =~ ^[1-9][0-9]*s$ ]] || die "DURATION='$DURATION': want whole seconds such as 10s"
[[ $CONCURRENCY =~ ^[1-9][0-9]*$ ]] || die "CONCURRENCY='$CONCURRENCY': want a positive integer"
[[ $RATE =~ ^[1-9][0-9]*$ ]] || die "RATE='$RATE': want a positive integer (calls/s)"
[[ $BASE_PORT =~ ^[1-9][0-9]*$ ]] || die "BASE_PORT='$BASE_PORT': want a port number"
CONNS=${CONNS:-4}
FACES=${FACES:-both}
PEER_MCP_PROXY=${PEER_MCP_PROXY:-}
[[ $CONNS =~ ^[1-9][0-9]*$ ]] && [ "$CONNS" -le 256 ] || die "CONNS='$CONNS': want 1..256 client connections"
case "$FACES" in grpc|mcp|both) ;; *) die "FACES='$FACES': want grpc, mcp or both" ;; esac
GRPC_ON=0 MCP_ON=0
case "$FACES" in grpc) GRPC_ON=1 ;; mcp) MCP_ON=1 ;; both) GRPC_ON=1 MCP_ON=1 ;; esac
if [ -n "$PEER_MCP_PROXY" ]; then
  [ -x "$PEER_MCP_PROXY" ] || die "PEER_MCP_PROXY='$PEER_MCP_PROXY': not an executable file"
  [ "$MCP_ON" = 1 ] || die "PEER_MCP_PROXY is an MCP peer: it needs FACES=mcp or both"
fi
INFLIGHT=${INFLIGHT:-1000}
INFLIGHT_DELAY=${INFLIGHT_DELAY:-2s}
[[ $INFLIGHT =~ ^[0-9]+$ ]] && [ "$INFLIGHT" -le 4096 ] ||
  die "INFLIGHT='$INFLIGHT': want 0..4096 (prod-policy.yaml's max_in_flight_per_tool)"
INFLIGHT=$((10#$INFLIGHT)) # 010 is ten, not octal eight, in the arithmetic below
[[ $INFLIGHT_DELAY =~ ^[1-9][0-9]*s$ ]] || die "INFLIGHT_DELAY='$INFLIGHT_DELAY': want whole seconds such as 2s"
case "$PAYLOAD" in clean|repair) ;; *) die "--payload '$PAYLOAD': want clean or repair" ;; esac

root=$(cd "$(dirname "$0")/../.." && pwd)
BASELINE_REV=""
if [ -n "$BASELINE_REF" ]; then
  BASELINE_REV=$(git -C "$root" rev-parse --verify --quiet "$BASELINE_REF^{commit}") ||
    die "BASELINE_REF='$BASELINE_REF': not a commit in $root"
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/flowdrop-bench.XXXXXX")
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ "$KEEP" = 1 ]; then echo "work directory kept: $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

BE=127.0.0.1:$BASE_PORT
PX=127.0.0.1:$((BASE_PORT + 1))
DX=127.0.0.1:$((BASE_PORT + 2))
GW=127.0.0.1:$((BASE_PORT + 3))
GW_PPROF=127.0.0.1:$((BASE_PORT + 4))
PX_PPROF=127.0.0.1:$((BASE_PORT + 5))
BGW=127.0.0.1:$((BASE_PORT + 6))
BGW_PPROF=127.0.0.1:$((BASE_PORT + 7))
NX=127.0.0.1:$((BASE_PORT + 8))
HX=127.0.0.1:$((BASE_PORT + 9))
PGW=127.0.0.1:$((BASE_PORT + 10))
PGW_PPROF=127.0.0.1:$((BASE_PORT + 11))
PGW_ADMIN=127.0.0.1:$((BASE_PORT + 12))
SBE=127.0.0.1:$((BASE_PORT + 13))
IGW=127.0.0.1:$((BASE_PORT + 14))
IGW_PPROF=127.0.0.1:$((BASE_PORT + 15))
IGW_ADMIN=127.0.0.1:$((BASE_PORT + 16))
BPGW=127.0.0.1:$((BASE_PORT + 20))
BPGW_PPROF=127.0.0.1:$((BASE_PORT + 21))
BPGW_ADMIN=127.0.0.1:$((BASE_PORT + 22))
GW_ADMIN=127.0.0.1:$((BASE_PORT + 23))
BGW_ADMIN=127.0.0.1:$((BASE_PORT + 24))
UP=127.0.0.1:$((BASE_PORT + 30))
UP_STATS=127.0.0.1:$((BASE_PORT + 31))
PEER=127.0.0.1:$((BASE_PORT + 32))
PEERS=${PEERS:-1}
PROD=${PROD:-1}
REPAIR=${REPAIR:-1}
if [ "$GRPC_ON" = 0 ]; then
  # FACES=mcp: none of the gRPC targets, nor the phases built on them.
  PEERS=0 PROD=0 REPAIR=0 INFLIGHT=0
fi
[ "$PAYLOAD" = clean ] || REPAIR=0 # every target already gets the repair payload
BENCH_API_KEY=flowdrop-bench-key-not-a-secret # its hash is in tools/bench/prod-policy.yaml

LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "== build" >&2
(cd "$root" && go build -o "$tmp/flowdrop-loadgen" ./cmd/flowdrop-loadgen)
LG=$tmp/flowdrop-loadgen
HAVE_GATEWAY=0
if (cd "$root" && go build -o "$tmp/flowdrop-gateway" ./cmd/flowdrop-gateway) 2>"$tmp/gateway-build.log"; then
  HAVE_GATEWAY=1
else
  echo "run.sh: the gateway does not build; its rows are PENDING:" >&2
  sed 's/^/  /' "$tmp/gateway-build.log" >&2
fi
if [ -n "$BASELINE_REV" ]; then
  # git archive rather than a worktree: it leaves nothing in the repository's
  # worktree list (shared with other checkouts), and the trap's rm -rf of
  # $tmp is all the cleanup it needs.
  echo "== build baseline gateway at $BASELINE_REF (${BASELINE_REV:0:12})" >&2
  mkdir "$tmp/baseline-src"
  git -C "$root" archive "$BASELINE_REV" | tar -x -C "$tmp/baseline-src"
  if ! (cd "$tmp/baseline-src" && go build -o "$tmp/flowdrop-gateway-baseline" ./cmd/flowdrop-gateway) \
    2>"$tmp/baseline-build.log"; then
    sed 's/^/  /' "$tmp/baseline-build.log" >&2
    die "the baseline gateway ($BASELINE_REF) does not build"
  fi
fi

# Each server is bounded by --lifetime as well as by the trap, so nothing
# outlives a killed script for long.
LIFETIME=2h
echo "== start servers" >&2
"$LG" backend --listen "$BE" --lifetime $LIFETIME 2>"$tmp/backend.log" & pids+=($!); BE_PID=$!
if [ "$GRPC_ON" = 1 ]; then
  "$LG" proxy --listen "$PX" --backend "$BE" --pprof-listen "$PX_PPROF" --lifetime $LIFETIME 2>"$tmp/proxy.log" & pids+=($!); PX_PID=$!
  "$LG" proxy --decode --listen "$DX" --backend "$BE" --lifetime $LIFETIME 2>"$tmp/decode-proxy.log" & pids+=($!); DX_PID=$!
fi

# start_gateway NAME BINARY LISTEN PPROF_LISTEN ADMIN_LISTEN: the gateway
# and the baseline start through here so both get the same flags; NAME
# names the log files and the data directory. Sets GW_STARTED_PID, and
# GW_STARTED_PPROF=1 if the binary has --pprof-listen.
start_gateway() {
  local name=$1 bin=$2 listen=$3 pprof=$4 admin=$5 gw_help data=$tmp/data
  local gw_extra=()
  [ "$name" = gateway ] || data=$tmp/$name-data
  # The gateway refuses to serve a tools file without an auth choice; the
  # bench measures the pipeline without credentials.
  case " $GATEWAY_FLAGS " in
    *" --policy"*|*" -policy"*|*" --auth-off"*|*" -auth-off"*) ;;
    *) gw_extra+=(--auth-off) ;;
  esac
  # -h exits non-zero; capture first so pipefail does not hide the flag.
  gw_help=$("$bin" -h 2>&1 || true)
  GW_STARTED_PPROF=0
  if grep -q -- '-pprof-listen' <<<"$gw_help"; then
    gw_extra+=(--pprof-listen "$pprof"); GW_STARTED_PPROF=1
  fi
  # Its own data directory: the default (./flowdrop-data) would leave bench_tool
  # in the registry of whoever runs the bench from a checkout.
  # No MCP listener (the gRPC targets do not use it; its default port may
  # be taken by a gateway already running on this machine); the admin
  # listener on a port of the bench's own, for its allocation counter.
  # shellcheck disable=SC2086 # GATEWAY_FLAGS is a list of flags on purpose
  "$bin" --tools "$tmp/tools.json" --data-dir "$data" --mcp-listen "" --admin-listen "$admin" \
    --listen "$listen" "${gw_extra[@]}" $GATEWAY_FLAGS \
    >"$tmp/$name.out" 2>"$tmp/$name.log" & GW_STARTED_PID=$!; pids+=("$GW_STARTED_PID")
}

# start_gateway_prod NAME BINARY POLICY LISTEN PPROF ADMIN [TOOLS]: a build
# with the production policy, working in $tmp/NAME (its audit file lands
# there), admin metrics on, registering TOOLS ($tmp/tools.json unless
# given). Sets PROD_STARTED_PID (the gateway's own: the subshell execs it).
start_gateway_prod() {
  local name=$1 bin=$2 policy=$3 listen=$4 pprof=$5 admin=$6 tools=${7:-$tmp/tools.json}
  mkdir -p "$tmp/$name"
  # shellcheck disable=SC2086 # GATEWAY_FLAGS is a list of flags on purpose
  (cd "$tmp/$name" && exec "$bin" --tools "$tools" --data-dir "$tmp/$name/data" \
    --mcp-listen "" --admin-listen "$admin" --pprof-listen "$pprof" --listen "$listen" \
    --policy "$policy" $GATEWAY_FLAGS \
    >"$tmp/$name.out" 2>"$tmp/$name.log") & PROD_STARTED_PID=$!; pids+=("$PROD_STARTED_PID")
}

# forget PID...: drop waited-for processes from the trap's list, so it
# never signals a reused PID. stop PID...: end processes this script
# started, before the trap would, and forget them.
forget() {
  local p q keep=()
  for q in "${pids[@]}"; do
    for p; do [ "$p" = "$q" ] && continue 2; done
    keep+=("$q")
  done
  pids=("${keep[@]}")
}
stop() {
  local p
  for p; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  forget "$@"
}

# have_or_install CMD PACKAGE: CMD on PATH, installing PACKAGE with apt-get
# when run as root; prints why not otherwise and returns 1.
have_or_install() {
  command -v "$1" >/dev/null && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "== apt-get install $2" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y "$2" >"$tmp/apt-$2.log" 2>&1 || true
    command -v "$1" >/dev/null && return 0
    SKIPPED+=("$1: apt-get install $2 failed (see $tmp/apt-$2.log with --keep)")
  else
    SKIPPED+=("$1: not installed and not root (apt-get install $2)")
  fi
  return 1
}
SKIPPED=()

# start_nginx / start_haproxy: the peers, proxying gRPC to the backend in
# the foreground (killed by the trap), logs and state in $tmp.
start_nginx() {
  mkdir -p "$tmp/nginx"
  cat >"$tmp/nginx/nginx.conf" <<CONF
daemon off;
worker_processes $(nproc);
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $tmp/nginx/body;
  proxy_temp_path $tmp/nginx/proxy;
  fastcgi_temp_path $tmp/nginx/fastcgi;
  uwsgi_temp_path $tmp/nginx/uwsgi;
  scgi_temp_path $tmp/nginx/scgi;
  upstream backend { server $BE; keepalive 64; }
  server {
    listen $NX http2;
    location / { grpc_pass grpc://backend; }
  }
}
CONF
  nginx -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" 2>"$tmp/nginx.log" & pids+=($!)
}
start_haproxy() {
  cat >"$tmp/haproxy.cfg" <<CONF
global
  nbthread $(nproc)
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 60s
frontend fe
  bind $HX proto h2
  default_backend be
backend be
  server s1 $BE proto h2
CONF
  haproxy -db -f "$tmp/haproxy.cfg" 2>"$tmp/haproxy.log" & pids+=($!)
}

# write_mcp_proxy_config FILE: tbxark/mcp-proxy's v2 configuration (its
# docs/CONFIGURATION.md): one streamable-HTTP server on PEER, serving the
# echo upstream as "bench" (so at http://PEER/bench/mcp), no tokens, no
# request log, and failing at start-up if the upstream cannot be reached.
write_mcp_proxy_config() {
  cat >"$1" <<JSON
{
  "mcpProxy": {
    "baseURL": "http://$PEER",
    "addr": "$PEER",
    "name": "flowdrop-bench-peer",
    "version": "1.0.0",
    "type": "streamable-http",
    "options": {"panicIfInvalid": true, "logEnabled": false}
  },
  "mcpServers": {
    "bench": {"transportType": "streamable-http", "url": "http://$UP/mcp"}
  }
}
JSON
}

# start_gateway_mcp NAME TOOLS PROD GRPC MCP ADMIN PPROF [BINARY]: a gateway
# for one MCP target, in $tmp/NAME (its audit file lands there), with its
# MCP face on MCP; PROD=prod runs tools/bench/prod-policy.yaml, anything else
# auth off (unless GATEWAY_FLAGS chooses). BINARY defaults to this tree's
# build (the baseline's MCP target passes its own). Sets MCPGW_STARTED_PID.
start_gateway_mcp() {
  local name=$1 tools=$2 prod=$3 listen=$4 mcp=$5 admin=$6 pprof=$7 bin=${8:-$tmp/flowdrop-gateway}
  local extra=()
  if [ "$prod" = prod ]; then
    extra+=(--policy "$root/tools/bench/prod-policy.yaml")
  else
    case " $GATEWAY_FLAGS " in
      *" --policy"*|*" -policy"*|*" --auth-off"*|*" -auth-off"*) ;;
      *) extra+=(--auth-off) ;;
    esac
  fi
  mkdir -p "$tmp/$name"
  # shellcheck disable=SC2086 # GATEWAY_FLAGS is a list of flags on purpose
  (cd "$tmp/$name" && exec "$bin" --tools "$tools" --data-dir "$tmp/$name/data" \
    --mcp-listen "$mcp" --admin-listen "$admin" --pprof-listen "$pprof" --listen "$listen" \
    "${extra[@]}" $GATEWAY_FLAGS \
    >"$tmp/$name.out" 2>"$tmp/$name.log") & MCPGW_STARTED_PID=$!; pids+=("$MCPGW_STARTED_PID")
}

GW_PPROF_OK=0
GW_PID=""
if [ "$HAVE_GATEWAY" = 1 ] || [ -n "$BASELINE_REV" ]; then
  # The tools file registers bench_tool at the backend with the schema that
  # matches the payload (printed by the loadgen so the two cannot drift).
  cat >"$tmp/tools.json" <<JSON
{"tools": [{"name": "bench_tool", "description": "Benchmark tool: 10 parameters, ~1 KiB.",
  "backend": "$BE", "timeout": "5s", "input_schema": $("$LG" schema)}]}
JSON
fi
if [ "$HAVE_GATEWAY" = 1 ] && [ "$GRPC_ON" = 1 ]; then
  start_gateway gateway "$tmp/flowdrop-gateway" "$GW" "$GW_PPROF" "$GW_ADMIN"
  GW_PID=$GW_STARTED_PID; GW_PPROF_OK=$GW_STARTED_PPROF
fi
BGW_PID="" PGW_PID="" BPGW_PID=""
if [ -n "$BASELINE_REV" ] && [ "$GRPC_ON" = 1 ]; then
  start_gateway baseline "$tmp/flowdrop-gateway-baseline" "$BGW" "$BGW_PPROF" "$BGW_ADMIN"
  BGW_PID=$GW_STARTED_PID
fi
HAVE_PROD=0
if [ "$HAVE_GATEWAY" = 1 ] && [ "$PROD" = 1 ]; then
  start_gateway_prod gateway-prod "$tmp/flowdrop-gateway" "$root/tools/bench/prod-policy.yaml" "$PGW" "$PGW_PPROF" "$PGW_ADMIN"
  HAVE_PROD=1 PGW_PID=$PROD_STARTED_PID
fi
HAVE_BASELINE_PROD=0
if [ "$HAVE_PROD" = 1 ] && [ -n "$BASELINE_REV" ]; then
  bpolicy=$tmp/baseline-src/tools/bench/prod-policy.yaml
  [ -f "$bpolicy" ] || bpolicy=$root/tools/bench/prod-policy.yaml
  start_gateway_prod baseline-prod "$tmp/flowdrop-gateway-baseline" "$bpolicy" "$BPGW" "$BPGW_PPROF" "$BPGW_ADMIN"
  HAVE_BASELINE_PROD=1 BPGW_PID=$PROD_STARTED_PID
fi
HAVE_NGINX=0 HAVE_HAPROXY=0 NX_PID="" HX_PID=""
if [ "$PEERS" = 1 ]; then
  if have_or_install nginx nginx-light; then start_nginx; HAVE_NGINX=1; NX_PID=$!; fi
  if have_or_install haproxy haproxy; then start_haproxy; HAVE_HAPROXY=1; HX_PID=$!; fi
fi

# The MCP side (FACES=mcp or both): the echo upstream, the peer, and one
# gateway process per MCP target (see the header).
HAVE_MCP=0 HAVE_PEER_MCP=0
declare -A MCPGW_PID MCPGW_ADDR MCPGW_MCP MCPGW_ADMIN # by label
if [ "$MCP_ON" = 1 ]; then
  "$LG" mcp-upstream --listen "$UP" --stats-listen "$UP_STATS" --lifetime $LIFETIME 2>"$tmp/mcp-direct.log" & pids+=($!); UP_PID=$!
  HAVE_MCP=1
  # The peer lists the upstream's tools once, at start-up: the upstream
  # must answer first.
  "$LG" wait --face mcp --url "http://$UP/mcp" --timeout 20s ||
    { cat "$tmp/mcp-direct.log" >&2; die "the MCP echo upstream never answered"; }
  if [ -n "$PEER_MCP_PROXY" ]; then
    write_mcp_proxy_config "$tmp/mcp-proxy.json"
    "$PEER_MCP_PROXY" -config "$tmp/mcp-proxy.json" -expand-env=false -log-level warn >"$tmp/mcp-peer.out" 2>"$tmp/mcp-peer.log" &
    pids+=($!); PEER_PID=$!
    HAVE_PEER_MCP=1
  fi
  # bench_tool, the upstream's echo: same name and schema as the gRPC
  # targets' tool, so the production policy's rule runs on it too.
  cat >"$tmp/tools-mcp.json" <<JSON
{"tools": [{"name": "bench_tool", "description": "Benchmark tool: the MCP echo upstream's echo, 10 parameters, ~1 KiB.",
  "timeout": "5s", "spec": {"mcp_tool": {"url": "http://$UP/mcp", "tool": "echo"}}, "input_schema": $("$LG" schema)}]}
JSON
  if [ "$HAVE_GATEWAY" = 1 ]; then
    p=$((BASE_PORT + 33))
    specs=(gateway-mcp:tools-mcp.json:: gateway-mcp-prod:tools-mcp.json:prod: \
      gateway-grpc-mcp:tools-mcp.json:: gateway-mcp-backend:tools.json::)
    # BASELINE_REF: the baseline build's MCP face too (auth off), so the
    # MCP face's before/after is in the same interleaved rounds.
    [ -z "$BASELINE_REV" ] || specs+=("baseline-mcp:tools-mcp.json::$tmp/flowdrop-gateway-baseline")
    for spec in "${specs[@]}"; do
      IFS=: read -r name tf prod bin <<<"$spec"
      start_gateway_mcp "$name" "$tmp/$tf" "$prod" "127.0.0.1:$p" "127.0.0.1:$((p + 1))" "127.0.0.1:$((p + 2))" "127.0.0.1:$((p + 3))" "$bin"
      MCPGW_PID[$name]=$MCPGW_STARTED_PID MCPGW_ADDR[$name]=127.0.0.1:$p
      MCPGW_MCP[$name]=http://127.0.0.1:$((p + 1))/mcp MCPGW_ADMIN[$name]=127.0.0.1:$((p + 2))
      p=$((p + 4))
    done
  fi
fi

# labels[i] kinds[i] targets[i] addrs[i] payloads[i] expects[i]: the things
# measured. kinds: grpc (targets: the loadgen's gRPC target, addrs: its
# address) or mcp (targets: the tool called, addrs: the endpoint's URL,
# expects: the answer checked).
labels=() kinds=() targets=() addrs=() payloads=() expects=()
add() { labels+=("$1"); kinds+=("$2"); targets+=("$3"); addrs+=("$4"); payloads+=("$5"); expects+=("${6:-}"); }
if [ "$GRPC_ON" = 1 ]; then
  add direct grpc direct "$BE" "$PAYLOAD"
  add proxy grpc proxy "$PX" "$PAYLOAD"
  add decode-proxy grpc proxy "$DX" "$PAYLOAD"
  if [ "$HAVE_GATEWAY" = 1 ]; then add gateway grpc gateway "$GW" "$PAYLOAD"; fi
  if [ -n "$BASELINE_REV" ]; then add baseline grpc gateway "$BGW" "$PAYLOAD"; fi
  # The peers carry the direct target's call (Invoke on the backend): a proxy
  # cannot rename the method, and the bytes are the same.
  if [ "$HAVE_NGINX" = 1 ]; then add nginx grpc direct "$NX" "$PAYLOAD"; fi
  if [ "$HAVE_HAPROXY" = 1 ]; then add haproxy grpc direct "$HX" "$PAYLOAD"; fi
  if [ "$HAVE_PROD" = 1 ]; then add gateway-prod grpc gateway "$PGW" "$PAYLOAD"; fi
  if [ "$HAVE_BASELINE_PROD" = 1 ]; then add baseline-prod grpc gateway "$BPGW" "$PAYLOAD"; fi
  if [ "$REPAIR" = 1 ] && [ "$HAVE_GATEWAY" = 1 ]; then
    add gateway-repair grpc gateway "$GW" repair
    if [ "$HAVE_PROD" = 1 ]; then add gateway-prod-repair grpc gateway "$PGW" repair; fi
  fi
fi
if [ "$HAVE_MCP" = 1 ]; then
  # The MCP face is driven with the clean payload: a repaired call's echo
  # is not the arguments sent.
  add mcp-direct mcp echo "http://$UP/mcp" clean echo
  if [ "$HAVE_PEER_MCP" = 1 ]; then add mcp-peer mcp echo "http://$PEER/bench/mcp" clean echo; fi
  if [ "$HAVE_GATEWAY" = 1 ]; then
    add gateway-mcp mcp bench_tool "${MCPGW_MCP[gateway-mcp]}" clean echo
    add gateway-mcp-prod mcp bench_tool "${MCPGW_MCP[gateway-mcp-prod]}" clean echo
    add gateway-grpc-mcp grpc gateway "${MCPGW_ADDR[gateway-grpc-mcp]}" clean
    add gateway-mcp-backend mcp bench_tool "${MCPGW_MCP[gateway-mcp-backend]}" clean backend
    if [ -n "$BASELINE_REV" ]; then add baseline-mcp mcp bench_tool "${MCPGW_MCP[baseline-mcp]}" clean echo; fi
  fi
fi
# keyflags LABEL: the API key for the targets that need one.
keyflags() { case $1 in gateway-prod|baseline-prod|gateway-prod-repair|gateway-mcp-prod) echo "--api-key $BENCH_API_KEY" ;; esac; }
# callflags I: what target I is and how it is called (wait, warm-up, drive).
callflags() {
  local i=$1
  if [ "${kinds[$i]}" = mcp ]; then
    echo "--face mcp --url ${addrs[$i]} --tool ${targets[$i]} --expect ${expects[$i]} --payload ${payloads[$i]} $(keyflags "${labels[$i]}")"
  else
    echo "--target ${targets[$i]} --addr ${addrs[$i]} --conns $CONNS --payload ${payloads[$i]} $(keyflags "${labels[$i]}")"
  fi
}
# pidof_label LABEL: the process(es) a target's costs are read from, comma-
# separated: the proxy, or the server itself for direct and mcp-direct;
# nginx's master and its workers (read now: a worker may have been replaced).
pidof_label() {
  case $1 in
    direct) echo "$BE_PID" ;;
    proxy) echo "$PX_PID" ;;
    decode-proxy) echo "$DX_PID" ;;
    gateway|gateway-repair) echo "$GW_PID" ;;
    baseline) echo "$BGW_PID" ;;
    gateway-prod|gateway-prod-repair) echo "$PGW_PID" ;;
    baseline-prod) echo "$BPGW_PID" ;;
    haproxy) echo "$HX_PID" ;;
    nginx)
      local w
      w=$(cat "/proc/$NX_PID/task/$NX_PID/children" 2>/dev/null || true)
      w=${w% }
      echo "$NX_PID${w:+,${w// /,}}" ;;
    mcp-direct) echo "$UP_PID" ;;
    mcp-peer) echo "$PEER_PID" ;;
    gateway-mcp|gateway-mcp-prod|gateway-grpc-mcp|gateway-mcp-backend|baseline-mcp) echo "${MCPGW_PID[$1]}" ;;
  esac
}
# probeflags LABEL: where drive reads the target's costs.
probeflags() {
  local pid admin=""
  pid=$(pidof_label "$1")
  [ -z "$pid" ] || printf -- '--pid %s ' "$pid"
  case $1 in
    gateway|gateway-repair) admin=$GW_ADMIN ;;
    baseline) admin=$BGW_ADMIN ;;
    gateway-prod|gateway-prod-repair) admin=$PGW_ADMIN ;;
    baseline-prod) admin=$BPGW_ADMIN ;;
    gateway-mcp|gateway-mcp-prod|gateway-grpc-mcp|gateway-mcp-backend|baseline-mcp) admin=${MCPGW_ADMIN[$1]} ;;
  esac
  [ -z "$admin" ] || printf -- '--metrics-url http://%s/metrics ' "$admin"
  case $1 in
    mcp-direct|mcp-peer|gateway-mcp|gateway-mcp-prod|gateway-grpc-mcp|baseline-mcp) printf -- '--upstream-stats http://%s/stats ' "$UP_STATS" ;;
  esac
}

echo "== wait for readiness (one real call each, bounded)" >&2
for i in "${!labels[@]}"; do
  # shellcheck disable=SC2046 # callflags prints flags to split
  if ! "$LG" wait $(callflags "$i") --timeout 20s; then
    echo "run.sh: ${labels[$i]} never answered; its log:" >&2
    cat "$tmp/${labels[$i]}.log" >&2 2>/dev/null || true
    exit 1
  fi
done

echo "== warm up ($WARMUP each)" >&2
for i in "${!labels[@]}"; do
  # shellcheck disable=SC2046
  "$LG" drive $(callflags "$i") --mode closed --concurrency "$CONCURRENCY" --duration "$WARMUP" >/dev/null
done

results=$tmp/results.jsonl
: >"$results"
n=${#labels[@]}
# Interleaved: every round runs every target once, starting one target later
# each round so no target always follows the same neighbour. The open loop
# (a fixed rate, for the added p50) is the gRPC targets' only: the MCP
# targets, gateway-grpc-mcp among them, run the closed loop.
for mode in closed open; do
  for ((r = 1; r <= ROUNDS; r++)); do
    for ((k = 0; k < n; k++)); do
      i=$(((k + r - 1) % n))
      if [ "$mode" = closed ]; then
        load=(--mode closed --concurrency "$CONCURRENCY")
      else
        case ${labels[$i]} in mcp-*|gateway-mcp*|gateway-grpc-mcp|baseline-mcp) continue ;; esac
        load=(--mode open --rate "$RATE")
      fi
      echo "-- $mode round $r/$ROUNDS: ${labels[$i]}" >&2
      # shellcheck disable=SC2046
      "$LG" drive $(callflags "$i") --label "${labels[$i]}" --round "$r" \
        --duration "$DURATION" "${load[@]}" $(probeflags "${labels[$i]}") | tee -a "$results" >&2
    done
  done
done

if [ -n "$PPROF_DIR" ]; then
  mkdir -p "$PPROF_DIR"
  secs=${DURATION%s}
  prof() { # prof NAME PPROF_ADDR TARGET ADDR: one profiled closed-loop run
    echo "== profile $1 (${secs}s closed loop)" >&2
    curl -fsS -o "$PPROF_DIR/$1.cpu.pprof" "http://$2/debug/pprof/profile?seconds=$secs" & local c=$!
    "$LG" drive --target "$3" --addr "$4" --conns "$CONNS" --label "$1" --payload "$PAYLOAD" --mode closed \
      --concurrency "$CONCURRENCY" --duration "$((secs + 1))s" >"$PPROF_DIR/$1.run.json"
    wait "$c"
    go tool pprof -top -nodecount=40 "$PPROF_DIR/$1.cpu.pprof" >"$PPROF_DIR/$1.top.txt" 2>/dev/null || true
  }
  prof proxy "$PX_PPROF" proxy "$PX"
  if [ "$HAVE_GATEWAY" = 1 ] && [ "$GW_PPROF_OK" = 1 ]; then
    prof gateway "$GW_PPROF" gateway "$GW"
    if [ "$HAVE_PROD" = 1 ]; then # prof's drive has no key: profile gateway-prod here
      echo "== profile gateway-prod (${secs}s closed loop)" >&2
      curl -fsS -o "$PPROF_DIR/gateway-prod.cpu.pprof" "http://$PGW_PPROF/debug/pprof/profile?seconds=$secs" & c=$!
      "$LG" drive --target gateway --addr "$PGW" --conns "$CONNS" --label gateway-prod --payload "$PAYLOAD" --mode closed \
        --concurrency "$CONCURRENCY" --duration "$((secs + 1))s" --api-key "$BENCH_API_KEY" >"$PPROF_DIR/gateway-prod.run.json"
      wait "$c"
      go tool pprof -top -nodecount=40 "$PPROF_DIR/gateway-prod.cpu.pprof" >"$PPROF_DIR/gateway-prod.top.txt" 2>/dev/null || true
    fi
  elif [ "$HAVE_GATEWAY" = 1 ] && command -v perf >/dev/null && perf record -o /dev/null -- true >/dev/null 2>&1; then
    # The gateway has no --pprof-listen: sample its process with perf instead.
    echo "== profile gateway with perf (no --pprof-listen flag)" >&2
    perf record -F 499 -g -o "$PPROF_DIR/gateway.perf.data" -p "$GW_PID" -- sleep "$secs" 2>/dev/null & c=$!
    "$LG" drive --target gateway --addr "$GW" --conns "$CONNS" --label gateway --payload "$PAYLOAD" --mode closed \
      --concurrency "$CONCURRENCY" --duration "$((secs + 1))s" >"$PPROF_DIR/gateway.run.json"
    wait "$c" || true
    # Inclusive ("children") time per function: Go's own frames show where
    # the request path spends it; the flat view is mostly runtime and kernel.
    perf report -i "$PPROF_DIR/gateway.perf.data" --stdio --children -g none --sort symbol \
      --percent-limit 0.3 >"$PPROF_DIR/gateway.perf.txt" 2>/dev/null || true
  elif [ "$HAVE_GATEWAY" = 1 ]; then
    echo "run.sh: cannot profile the gateway: it has no --pprof-listen flag and perf is unusable here" >&2
  fi
  echo "profiles in $PPROF_DIR" >&2
fi

# The in-flight memory phase (see the header). Runs last, so nothing it
# leaves behind (memory in the kernel, load) reaches the measured rounds.
INFLIGHT_LINES=()
if [ "$HAVE_PROD" = 1 ] && [ "$INFLIGHT" -gt 0 ]; then
  d=${INFLIGHT_DELAY%s}
  echo "== in flight: $INFLIGHT calls held ${d}s each (gateway-inflight, $((3 * d))s closed loop)" >&2
  "$LG" backend --listen "$SBE" --delay "$INFLIGHT_DELAY" --lifetime $LIFETIME 2>"$tmp/slow-backend.log" &
  sbe_pid=$!; pids+=("$sbe_pid")
  # The tool's timeout is well above the delay (the main tools file's 5s
  # could be below a long INFLIGHT_DELAY); the caller's deadline, above the
  # delay too, is the tighter of the two.
  cat >"$tmp/tools-slow.json" <<JSON
{"tools": [{"name": "bench_tool", "description": "Benchmark tool: 10 parameters, ~1 KiB; its backend answers after $INFLIGHT_DELAY.",
  "backend": "$SBE", "timeout": "$((2 * d + 10))s", "input_schema": $("$LG" schema)}]}
JSON
  start_gateway_prod gateway-inflight "$tmp/flowdrop-gateway" "$root/tools/bench/prod-policy.yaml" \
    "$IGW" "$IGW_PPROF" "$IGW_ADMIN" "$tmp/tools-slow.json"
  igw_pid=$PROD_STARTED_PID
  # One real call through the whole chain; each attempt outlives the delay.
  if ! "$LG" wait --target gateway --addr "$IGW" --payload "$PAYLOAD" --api-key "$BENCH_API_KEY" \
    --timeout "$((d + 20))s" --call-timeout "$((d + 5))s"; then
    echo "run.sh: gateway-inflight never answered; its log and the slow backend's:" >&2
    cat "$tmp/gateway-inflight.log" "$tmp/slow-backend.log" >&2 2>/dev/null || true
    exit 1
  fi
  # vmkb FIELD: the gateway's FIELD (VmRSS, VmHWM) in kB, read without a fork.
  vmkb() {
    local k v _
    while read -r k v _; do [ "$k" = "$1:" ] && { echo "$v"; return 0; }; done <"/proc/$igw_pid/status"
    return 1
  }
  rss_idle=$(vmkb VmRSS)
  # RSS every ~100 ms until stopped (or the gateway is gone).
  (while vmkb VmRSS 2>/dev/null; do sleep 0.1; done) >"$tmp/inflight-rss.txt" & sampler=$!
  pids+=("$sampler")
  "$LG" drive --target gateway --addr "$IGW" --conns "$(((INFLIGHT + 99) / 100))" --label gateway-inflight \
    --payload "$PAYLOAD" --api-key "$BENCH_API_KEY" \
    --mode closed --concurrency "$INFLIGHT" --duration "$((3 * d))s" --timeout "$((d + 5))s" \
    >"$tmp/inflight.json" & drv=$!
  pids+=("$drv")
  # Once a second, the calls the gateway holds (InvokeTool started minus
  # handled) and its goroutines from its own /metrics; a scrape a second is
  # more than production's, and cheap. Closed-loop workers start together,
  # so calls go in waves at 0, d and 2d; at 2.5d, after the last wave has
  # started, the runtime's MemStats (debug=1: current, no collection) and
  # then a heap profile with gc=1 (a profile is otherwise as of the last
  # collection, which at --gc-percent 400 can be start-up's). The forced
  # collection comes after every call has allocated its request, so it
  # cannot hide the peak.
  heap=${PPROF_DIR:-$tmp}/gateway-inflight.heap.pprof
  memstats=$tmp/gateway-inflight.memstats.txt
  : >"$tmp/inflight-metrics.txt"
  s=0
  while kill -0 "$drv" 2>/dev/null; do
    sleep 1; s=$((s + 1))
    curl -fsS --max-time 2 "http://$IGW_ADMIN/metrics" 2>/dev/null | awk '
      /^grpc_server_started_total\{.*grpc_method="InvokeTool"/ { st += $NF; n++ }
      /^grpc_server_handled_total\{.*grpc_method="InvokeTool"/ { hd += $NF }
      /^go_goroutines / { g = $2 }
      END { if (n) printf "%d %d\n", st - hd, g }' >>"$tmp/inflight-metrics.txt" || true
    if [ "$s" = "$((5 * d / 2))" ]; then
      curl -fsS --max-time 5 "http://$IGW_PPROF/debug/pprof/heap?debug=1" 2>/dev/null | grep '^# ' >"$memstats" || true
      curl -fsS --max-time 5 -o "$heap" "http://$IGW_PPROF/debug/pprof/heap?gc=1" 2>/dev/null || rm -f "$heap"
    fi
  done
  drv_ok=1
  wait "$drv" || drv_ok=0
  forget "$drv"
  hwm=$(vmkb VmHWM) || hwm=""
  load_phase=$(cut -d' ' -f1-3 /proc/loadavg)
  stop "$sampler" "$igw_pid" "$sbe_pid"

  mb() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
  rss_max=$(sort -n "$tmp/inflight-rss.txt" | tail -n 1)
  nsamples=$(wc -l <"$tmp/inflight-rss.txt")
  observed=$(awk '$1 > m { m = $1 } END { print m + 0 }' "$tmp/inflight-metrics.txt")
  gor=$(awk '$2 > m { m = $2 } END { print m + 0 }' "$tmp/inflight-metrics.txt")
  calls=$(grep -o '"calls":[0-9]*' "$tmp/inflight.json" | cut -d: -f2 || true)
  errs=$(grep -o '"errors":[0-9]*' "$tmp/inflight.json" | cut -d: -f2 || true)
  if [ "$drv_ok" != 1 ] || [ -z "$rss_max" ] || [ -z "$hwm" ]; then
    verdict="NOT measured (the drive failed or the gateway was gone: see $tmp/inflight.json and gateway-inflight.log with --keep)"
  elif [ $((observed * 100)) -lt $((INFLIGHT * 95)) ]; then
    verdict="NOT measured (the gateway held at most $observed of the $INFLIGHT calls)"
  elif [ "$hwm" -lt $((96 * 1024)) ]; then
    verdict=met
  else
    verdict="NOT met"
  fi
  INFLIGHT_LINES+=("gateway-prod in flight: $INFLIGHT calls (observed $observed) — RSS max $(mb "$rss_max") MB, VmHWM $(mb "$hwm") MB (target < 96 MB): $verdict")
  per_call=$(awk -v a="$rss_max" -v b="$rss_idle" -v n="$INFLIGHT" 'BEGIN { printf "%.1f", (a - b) / n }')
  INFLIGHT_LINES+=("  RSS idle before the phase $(mb "$rss_idle") MB, so ≈ $per_call KiB a call in flight; $nsamples samples; goroutines max $gor; backend delay $INFLIGHT_DELAY; ${calls:-?} calls, ${errs:-?} errors; loadavg at the end of the phase $load_phase")
  [ "${errs:-0}" = 0 ] || INFLIGHT_LINES+=("  first error: $(grep -o '"first_error":"[^"]*"' "$tmp/inflight.json" | cut -d'"' -f4)")
  if [ "$verdict" = "NOT met" ] && [ -s "$memstats" ]; then
    # MemStats in MB: what the runtime holds, against the RSS.
    INFLIGHT_LINES+=("  Go runtime at $((5 * d / 2))s (MB): $(awk '
      function m(v) { return sprintf("%.1f", v / 1048576) }
      $2 == "Sys" { sys = $4 } $2 == "HeapInuse" { hin = $4 } $2 == "HeapIdle" { hid = $4 }
      $2 == "HeapReleased" { hr = $4 } $2 == "HeapAlloc" { ha = $4 } $2 == "NextGC" { ng = $4 } $2 == "NumGC" { gc = $4 }
      $2 == "Stack" { st = $4 } $2 == "GCSys" { gs = $4 } $2 == "OtherSys" { os = $4 }
      $2 == "MSpan" { ms = $4 }
      END { print "Sys " m(sys) ", HeapAlloc " m(ha) ", HeapInuse " m(hin) ", heap idle not released " m(hid - hr) \
        ", stacks " m(st) ", MSpan " m(ms) ", GC metadata " m(gs) ", other " m(os) ", NextGC " m(ng) ", " gc " GCs" }' "$memstats")")
  fi
  if [ -f "$heap" ]; then
    if [ -n "$PPROF_DIR" ] || [ "$KEEP" = 1 ]; then INFLIGHT_LINES+=("  heap profile taken at $((5 * d / 2))s: $heap"); fi
    if [ "$verdict" = "NOT met" ]; then
      INFLIGHT_LINES+=("  heap in use at $((5 * d / 2))s, after a collection (go tool pprof -top -sample_index=inuse_space):")
      while IFS= read -r l; do INFLIGHT_LINES+=("    $l"); done < <(go tool pprof -top -nodecount=20 -sample_index=inuse_space "$tmp/flowdrop-gateway" "$heap" 2>/dev/null | sed -n '/^Showing\|flat%/,$p')
    fi
  fi
fi

echo
baseline_note=""
[ -z "$BASELINE_REV" ] || baseline_note=" baseline=$BASELINE_REF(${BASELINE_REV:0:12})"
peer_note=""
[ "$HAVE_PEER_MCP" != 1 ] || peer_note=" mcp-peer=$PEER_MCP_PROXY($("$PEER_MCP_PROXY" -version 2>&1 | head -n 1))"
echo "faces=$FACES payload=$PAYLOAD rounds=$ROUNDS duration=$DURATION concurrency=$CONCURRENCY grpc-conns=$CONNS rate=$RATE/s (gRPC open loop) mcp-sessions=$CONCURRENCY nproc=$(nproc) $(go version | cut -d' ' -f3-) loadavg(start→end)=$LOAD0 → $(cut -d' ' -f1-3 /proc/loadavg)$baseline_note$peer_note"
"$LG" summarize --in "$results"
for sk in "${SKIPPED[@]}"; do echo "skipped $sk"; done
if [ "${#INFLIGHT_LINES[@]}" -gt 0 ]; then
  echo
  printf '%s\n' "${INFLIGHT_LINES[@]}"
fi
if [ "$HAVE_GATEWAY" != 1 ]; then
  echo
  echo "gateway: PENDING (cmd/flowdrop-gateway did not build; see above)"
fi
if grep -q '"errors":[1-9]' "$results" || grep -q '"dropped":[1-9]' "$results"; then
  echo
  echo "WARNING: some runs had errors or dropped sends; see the errors/dropped columns" >&2
fi
