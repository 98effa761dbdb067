#!/usr/bin/env bash
# Builds tbxark/mcp-proxy (https://github.com/tbxark/mcp-proxy, MIT), the Go
# peer MCP proxy tools/bench/run.sh measures when PEER_MCP_PROXY names its
# binary (issue 30). Its code is never part of this repository: the source
# is taken from a directory or a bare git mirror given here, copied into a
# temporary directory, built there and removed; only the binary is written,
# and never inside this repository.
#
# usage: tools/bench/build-mcp-proxy.sh SOURCE [OUT]
#   SOURCE  a checkout of tbxark/mcp-proxy (a directory with its go.mod), or
#           a bare git repository of it (e.g. a mirror: its HEAD is built;
#           REF=<commit or tag> picks another)
#   OUT     the binary to write (default /work/bin/mcp-proxy); must lie
#           outside this repository
# env: REF (HEAD: the commit of a git SOURCE to build)
#      GOPROXY, GOFLAGS: passed to go as usual; the script adds -mod=mod so
#      go.sum is checked and missing entries are fetched through GOPROXY.
set -euo pipefail

die() { echo "build-mcp-proxy.sh: $*" >&2; exit 2; }
[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: $0 SOURCE [OUT] (see the header)"
src=$1
out=${2:-/work/bin/mcp-proxy}
ref=${REF:-HEAD}
root=$(cd "$(dirname "$0")/../.." && pwd)

# OUT outside this repository: a built peer must never be committed.
outdir=$(mkdir -p "$(dirname "$out")" && cd "$(dirname "$out")" && pwd)
case "$outdir/" in
  "$root"/*) die "OUT '$out' is inside this repository ($root); put the binary elsewhere" ;;
esac
out=$outdir/$(basename "$out") # absolute: the build runs in another directory

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mcp-proxy-build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

if [ -f "$src/go.mod" ]; then
  cp -R "$src/." "$tmp/"
  rev="(a directory: $src)"
elif git --git-dir="$src" rev-parse --verify --quiet "$ref^{commit}" >/dev/null 2>&1; then
  git --git-dir="$src" archive "$ref" | tar -x -C "$tmp"
  rev=$(git --git-dir="$src" rev-parse "$ref^{commit}")
elif [ -d "$src/.git" ] && git -C "$src" rev-parse --verify --quiet "$ref^{commit}" >/dev/null 2>&1; then
  git -C "$src" archive "$ref" | tar -x -C "$tmp"
  rev=$(git -C "$src" rev-parse "$ref^{commit}")
else
  die "SOURCE '$src': neither a directory with a go.mod nor a git repository with commit '$ref'"
fi
mod=$(awk '$1 == "module" { print $2; exit }' "$tmp/go.mod")
[ "$mod" = github.com/tbxark/mcp-proxy ] || die "SOURCE '$src' is module '$mod', not github.com/tbxark/mcp-proxy"

echo "== building github.com/tbxark/mcp-proxy $rev with $(go version | cut -d' ' -f3), GOPROXY=$(go env GOPROXY)" >&2
# Its Makefile's build line, with the version stamped from the commit; the
# package is the module root (main.go), so ./... is not needed.
(cd "$tmp" && CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -mod=mod" \
  go build -ldflags "-X main.BuildVersion=${rev:0:12}" -o "$out.tmp" .)
mv "$out.tmp" "$out"
echo "$out"
