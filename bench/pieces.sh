#!/usr/bin/env bash
# One module's kernels compiled in parallel pieces (daemon/vxd_pieces.c):
# three fresh daemons - one worker; two workers; two workers that never
# borrow a core (piece_helpers 0) - and bench/vxd_scale --workers over them.
#   bash bench/pieces.sh [BUILD_DIR] [N ...]      (BENCH_RUNS=5 per figure)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
shift || true
source "$root/bench/daemon.sh"
bench_init pieces
bench_daemon one --workers 1 --piece-helpers 15
bench_daemon two --workers 2 --piece-helpers 15
bench_daemon alone --workers 2 --piece-helpers 0
"$build/bench/vxd_scale" --workers "$dir/one/s.sock" "$dir/two/s.sock" "$dir/alone/s.sock" "$@"
