#!/usr/bin/env bash
# Compile time against kernels per module, against a fresh daemon and cache.
#   bash bench/scale.sh [BUILD_DIR] [N ...]      (BENCH_RUNS=5 per figure)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
shift || true
dir=$(mktemp -d /tmp/vxd-scale-XXXXXX)
"$build/vortexd" --socket "$dir/s.sock" --cache-dir "$dir/cache" &
pid=$!
trap 'kill -TERM $pid; wait $pid || true; rm -rf "$dir"' EXIT
for _ in $(seq 100); do [ -S "$dir/s.sock" ] && break; sleep 0.05; done
"$build/bench/vxd_scale" "$dir/s.sock" "$@"
