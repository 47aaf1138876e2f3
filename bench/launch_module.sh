#!/usr/bin/env bash
# A program launching the three kernels of one module in turn on the
# emulated device (bench/vxr_module_launch.c, tests/kernels/
# else_if_chain.mlir): the first launch of each kernel, and the p50 of
# round-robin steady launches with the default kept devices and with
# one kept device (VORTEXD_EMULATED_DEVICES=1).  One image per module
# links once and keeps one device for all three.
#   bash bench/launch_module.sh [BUILD_DIR] [RUNS] [LAUNCHES]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
runs=${2:-3}
launches=${3:-60}
source "$root/bench/daemon.sh"
bench_init modlaunch
bench_daemon d
export VORTEXD_SOCKET=$sock
module=$root/tests/kernels/else_if_chain.mlir
for r in $(seq "$runs"); do
  echo "== run $r, default kept devices"
  "$build/bench/vxr_module_launch" "$module" 256 "$launches" ladder switch_break nested_ladder
  echo "== run $r, one kept device"
  VORTEXD_EMULATED_DEVICES=1 "$build/bench/vxr_module_launch" "$module" 256 "$launches" \
    ladder switch_break nested_ladder
done
