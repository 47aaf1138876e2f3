#!/usr/bin/env bash
# Runs the benchmark against a fresh daemon and cache in a temp directory.
#   bash bench/run.sh [BUILD_DIR] [FILE.mlir]
# Defaults: build/, ../shared/corpus/vortex-hip/metadata_test.mlir (the figures in
# docs/benchmarks.md), else the same-shaped tests/kernels/polygeist_style.mlir.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
file=${2:-$root/../shared/corpus/vortex-hip/metadata_test.mlir}
[ -f "$file" ] || file=$root/tests/kernels/polygeist_style.mlir # a clone without the corpus
source "$root/bench/daemon.sh"
bench_init bench
bench_daemon d
"$build/bench/vxd_bench" "$sock" "$file" "${BENCH_MISSES:-100}" "${BENCH_HITS:-5000}" "${BENCH_CHAIN:-20}"
