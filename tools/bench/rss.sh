#!/usr/bin/env bash
# Peak resident memory and the collector's cost of one gateway under load
# (issue 30 target 2; BENCHMARKS.md, "Where the gateway's peak RSS goes").
#
# usage: tools/bench/rss.sh [--pagemap]
#   --pagemap   also print, midway through the load, where the file-backed
#               pages are (tools/bench/pagemap.py: per mapped file, per ELF
#               section of the binary, .text per module; needs root)
# env: FACE (mcp: the MCP face in front of the go-sdk echo upstream, 16
#      sessions; grpc: InvokeTool to the bench ToolBackendService over 4
#      client connections) DURATION (20: measured seconds, whole)
#      CONCURRENCY (16) GATEWAY_FLAGS (e.g. "--gc-percent 100")
#      GATEWAY (a prebuilt gateway binary; default: built from this tree)
#      LOADGEN (a prebuilt flowdrop-loadgen; default: built) BASE_PORT (17400:
#      uses BASE_PORT..+5) LABEL (printed first)
# One line out: calls, calls/s and CPU per call (both load-dependent: on a
# shared machine compare the rest), bytes allocated per call, peak RSS
# (VmHWM, reset before the run), the largest anonymous and file-backed
# shares seen (RssAnon / RssFile sampled every 50 ms), the collections in
# the run and per 1,000 calls (GODEBUG=gctrace=1), and the share of the
# gateway's CPU profile (DURATION-2 s, taken during the run) spent in the
# collector (mark workers, assists, sweeping, scavenging) and in stack
# growth and copying (what the collector's stack shrinking costs the next
# calls). Profile shares are of the process's own CPU samples, so they hold
# on a loaded machine where CPU per call does not; each is ± about
# 1/sqrt(samples).
set -euo pipefail

FACE=${FACE:-mcp}
DURATION=${DURATION:-20}
CONCURRENCY=${CONCURRENCY:-16}
GATEWAY_FLAGS=${GATEWAY_FLAGS:-}
BASE_PORT=${BASE_PORT:-17400}
LABEL=${LABEL:-$FACE}
PAGEMAP=0
die() { echo "rss.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --pagemap) PAGEMAP=1; shift ;;
    -h|--help) awk 'NR == 1 { next } /^#/ { print; next } { exit }' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
case "$FACE" in mcp|grpc) ;; *) die "FACE='$FACE': want mcp or grpc" ;; esac
[[ $DURATION =~ ^[1-9][0-9]*$ ]] && [ "$DURATION" -ge 4 ] || die "DURATION='$DURATION': want whole seconds, at least 4"
[[ $CONCURRENCY =~ ^[1-9][0-9]*$ ]] || die "CONCURRENCY='$CONCURRENCY': want a positive integer"
[[ $BASE_PORT =~ ^[1-9][0-9]*$ ]] || die "BASE_PORT='$BASE_PORT': want a port number"

root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/flowdrop-rss.XXXXXX")
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

LG=${LOADGEN:-$tmp/flowdrop-loadgen}
GW=${GATEWAY:-$tmp/flowdrop-gateway}
[ -n "${LOADGEN:-}" ] || (cd "$root" && go build -o "$LG" ./cmd/flowdrop-loadgen)
[ -n "${GATEWAY:-}" ] || (cd "$root" && go build -o "$GW" ./cmd/flowdrop-gateway)

UP=127.0.0.1:$BASE_PORT
GRPC=127.0.0.1:$((BASE_PORT + 2)) MCP=127.0.0.1:$((BASE_PORT + 3))
ADMIN=127.0.0.1:$((BASE_PORT + 4)) PPROF=127.0.0.1:$((BASE_PORT + 5))
if [ "$FACE" = mcp ]; then
  "$LG" mcp-upstream --listen "$UP" --stats-listen "127.0.0.1:$((BASE_PORT + 1))" 2>"$tmp/upstream.log" & pids+=($!)
  "$LG" wait --face mcp --url "http://$UP/mcp" --timeout 20s >/dev/null || die "the MCP echo upstream never answered"
  spec="\"spec\": {\"mcp_tool\": {\"url\": \"http://$UP/mcp\", \"tool\": \"echo\"}}"
  call=(--face mcp --url "http://$MCP/mcp" --tool bench_tool --expect echo)
else
  "$LG" backend --listen "$UP" 2>"$tmp/upstream.log" & pids+=($!)
  spec="\"backend\": \"$UP\""
  call=(--target gateway --addr "$GRPC" --conns 4)
fi
cat >"$tmp/tools.json" <<JSON
{"tools": [{"name": "bench_tool", "description": "Benchmark tool: 10 parameters, ~1 KiB.",
  "timeout": "5s", $spec, "input_schema": $("$LG" schema)}]}
JSON
auth=(--auth-off)
case " $GATEWAY_FLAGS " in *" --policy"*|*" --auth-off"*) auth=() ;; esac
# gctrace: one line per collection on stderr, counted over the run.
# shellcheck disable=SC2086 # GATEWAY_FLAGS is a list of flags on purpose
(cd "$tmp" && exec env GODEBUG=gctrace=1 "$GW" --tools "$tmp/tools.json" --data-dir "$tmp/data" \
  --listen "$GRPC" --mcp-listen "$MCP" --admin-listen "$ADMIN" --pprof-listen "$PPROF" \
  "${auth[@]}" $GATEWAY_FLAGS >"$tmp/gateway.out" 2>"$tmp/gateway.log") & GW_PID=$!; pids+=($GW_PID)
"$LG" wait "${call[@]}" --timeout 60s >/dev/null || { tail -5 "$tmp/gateway.log" >&2; die "the gateway never answered"; }
sleep 3

echo 5 >"/proc/$GW_PID/clear_refs" || die "cannot reset VmHWM (/proc/$GW_PID/clear_refs): run as the gateway's owner"
# The largest anonymous and file-backed shares seen during the run.
(
  ma=0 mf=0
  while [ ! -e "$tmp/stop" ] && read -r a f < <(awk '/^RssAnon/ {a = $2} /^RssFile/ {f = $2} END {print a, f}' "/proc/$GW_PID/status"); do
    [ "$a" -gt "$ma" ] && ma=$a
    [ "$f" -gt "$mf" ] && mf=$f
    sleep 0.05
  done
  echo "$ma $mf" >"$tmp/peaks"
) & SAMPLER=$!
before=$(wc -l <"$tmp/gateway.log")
"$LG" drive "${call[@]}" --concurrency "$CONCURRENCY" --duration "${DURATION}s" --warmup 1s \
  --pid "$GW_PID" --metrics-url "http://$ADMIN/metrics" >"$tmp/drive.json" 2>"$tmp/drive.err" & DRIVE=$!
sleep 2 # past the warm-up
curl -sf -o "$tmp/cpu.pprof" "http://$PPROF/debug/pprof/profile?seconds=$((DURATION - 2))" || die "no CPU profile from $PPROF"
[ "$PAGEMAP" = 0 ] || python3 "$root/tools/bench/pagemap.py" "$GW_PID" "$GW"
wait "$DRIVE" || { cat "$tmp/drive.err" >&2; die "the load failed"; }
after=$(wc -l <"$tmp/gateway.log")
touch "$tmp/stop"; wait "$SAMPLER"
cycles=$(sed -n "$((before + 1)),${after}p" "$tmp/gateway.log" | grep -c '^gc ' || true)

# share REGEX: the percentage of the profile's samples with a frame matching REGEX.
share() {
  local total part
  total=$(samples "")
  part=0
  if ! go tool pprof -raw -focus="$1" "$tmp/cpu.pprof" 2>&1 | grep -q 'matched no samples'; then part=$(samples "$1"); fi
  awk -v p="$part" -v t="$total" 'BEGIN { if (t == 0) print "n/a"; else printf "%.1f%% of %d samples", 100 * p / t, t }'
}
# samples [REGEX]: the profile's sample count (with a frame matching REGEX).
samples() {
  go tool pprof -raw ${1:+-focus="$1"} "$tmp/cpu.pprof" 2>/dev/null |
    awk '/^Samples:/ {s = 1; next} /^Locations/ {s = 0} s && $2 ~ /:$/ {n += $1} END {print n + 0}'
}
gc=$(share 'runtime\.(gcBgMarkWorker|gcAssistAlloc|bgsweep|bgscavenge|gcStart|markroot|gcDrain|scanobject|scanstack)$')
stacks=$(share 'runtime\.(newstack|copystack|shrinkstack)$')
read -r ma mf <"$tmp/peaks"
python3 - "$tmp/drive.json" "$LABEL" "$cycles" "$ma" "$mf" "$gc" "$stacks" <<'PY'
import json, sys
j = json.loads(open(sys.argv[1]).readline())
label, cycles, ma, mf, gc, stacks = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6], sys.argv[7]
print(f"{label}: calls={j['calls']} errors={j['errors']} calls/s={j['throughput_per_s']} cpu/call={j.get('cpu_us_per_call')}µs "
      f"alloc/call={j.get('alloc_bytes_per_call')}B VmHWM={j.get('peak_rss_mib')}MiB anon<={ma / 1024:.1f}MiB file<={mf / 1024:.1f}MiB "
      f"collections={cycles} ({1000 * cycles / max(j['calls'], 1):.2f} per 1,000 calls) gc={gc} stack-growth={stacks}")
PY
