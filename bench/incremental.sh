#!/usr/bin/env bash
# A module compiled again after one kernel was edited, against the same
# module compiled whole (docs/benchmarks.md, "Incremental modules").
#
#   bash bench/incremental.sh [BUILD] [N]      (default: build, 256 kernels)
#
# Starts one daemon (two workers, the default) in a temporary directory and
# runs vxd_scale --incremental on it: BENCH_RUNS (default 5) paired runs of
# a whole compile, a constant edited in the middle kernel, and a line added
# there; wall and CPU (the daemon and its workers), ratios min-median-max.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
shift || true
source "$root/bench/daemon.sh"
bench_init incremental
bench_daemon d
"$build/bench/vxd_scale" --incremental "$sock" "$pid" "$@"
