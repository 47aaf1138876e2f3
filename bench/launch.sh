#!/usr/bin/env bash
# Launch overhead of libvortexd_runtime (bench/vxr_launch.c): the first
# module load as a daemon miss (fresh cache) and as a hit (a second
# process), the first launch, and steady-state launches of saxpy.
#   bash bench/launch.sh [BUILD_DIR] [N] [LAUNCHES]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
n=${2:-1024}
launches=${3:-50}
dir=$(mktemp -d /tmp/vxd-launch-XXXXXX)
"$build/vortexd" --socket "$dir/s.sock" --cache-dir "$dir/cache" 2>/dev/null &
pid=$!
trap 'kill -TERM $pid; wait $pid 2>/dev/null || true; rm -rf "$dir"' EXIT
for _ in $(seq 200); do [ -S "$dir/s.sock" ] && break; sleep 0.05; done
export VORTEXD_SOCKET=$dir/s.sock
echo "== cold cache (the module load compiles)"
"$build/bench/vxr_launch" "$root/examples/saxpy.mlir" "$n" "$launches"
echo "== warm cache (a new process: the module load is a daemon hit)"
"$build/bench/vxr_launch" "$root/examples/saxpy.mlir" "$n" "$launches"
