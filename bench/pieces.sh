#!/usr/bin/env bash
# One module's kernels compiled in parallel pieces (daemon/vxd_pieces.c):
# three fresh daemons - one worker; two workers; two workers that never
# borrow a core (piece_helpers 0) - and bench/vxd_scale --workers over them.
#   bash bench/pieces.sh [BUILD_DIR] [N ...]      (BENCH_RUNS=5 per figure)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
shift || true
dir=$(mktemp -d /tmp/vxd-pieces-XXXXXX)
pids=()
trap 'kill -TERM "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null || true; rm -rf "$dir"' EXIT
start() { # NAME WORKERS HELPERS
  mkdir -m 700 "$dir/$1"
  "$build/vortexd" --socket "$dir/$1/s.sock" --cache-dir "$dir/$1/cache" --workers "$2" \
    --piece-helpers "$3" 2>"$dir/$1.log" &
  pids+=($!)
}
start one 1 15
start two 2 15
start alone 2 0
for name in one two alone; do
  for _ in $(seq 200); do [ -S "$dir/$name/s.sock" ] && break; sleep 0.05; done
done
"$build/bench/vxd_scale" --workers "$dir/one/s.sock" "$dir/two/s.sock" "$dir/alone/s.sock" "$@"
