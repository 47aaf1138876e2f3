#!/usr/bin/env bash
# Compile time against kernels per module, against a fresh daemon and cache.
#   bash bench/scale.sh [BUILD_DIR] [N ...]      (BENCH_RUNS=5 per figure)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
shift || true
source "$root/bench/daemon.sh"
bench_init scale
bench_daemon d
"$build/bench/vxd_scale" "$sock" "$@"
