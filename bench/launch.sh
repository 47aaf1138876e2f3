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
source "$root/bench/daemon.sh"
bench_init launch
bench_daemon d
export VORTEXD_SOCKET=$sock
echo "== cold cache (the module load compiles)"
"$build/bench/vxr_launch" "$root/examples/saxpy.mlir" "$n" "$launches"
echo "== warm cache (a new process: the module load is a daemon hit)"
"$build/bench/vxr_launch" "$root/examples/saxpy.mlir" "$n" "$launches"
