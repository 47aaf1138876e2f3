#!/usr/bin/env bash
# Steady-state launches on the emulated device with the device kept
# between launches (the default) against a new device per launch
# (VORTEXD_EMULATED_DEVICES=0, what every launch paid before), paired:
# each run measures both, at 32 and at 1024 threads (bench/vxr_launch.c,
# saxpy, p50 of the steady launches).  Prints each run and the min / median
# / max over the runs.
#   bash bench/launch_reuse.sh [BUILD_DIR] [RUNS] [LAUNCHES]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
runs=${2:-3}
launches=${3:-40}
source "$root/bench/daemon.sh"
bench_init reuse
bench_daemon d
export VORTEXD_SOCKET=$sock
p50() { sed -n 's/^launch p50 *\([0-9]*\) us.*/\1/p'; }
for n in 32 1024; do
  kept=() fresh=() ratio=()
  for r in $(seq "$runs"); do
    k=$("$build/bench/vxr_launch" "$root/examples/saxpy.mlir" "$n" "$launches" | p50)
    f=$(VORTEXD_EMULATED_DEVICES=0 "$build/bench/vxr_launch" "$root/examples/saxpy.mlir" "$n" "$launches" | p50)
    kept+=("$k") fresh+=("$f") ratio+=("$(awk -v a="$f" -v b="$k" 'BEGIN { printf "%.2f", a / b }')")
    echo "$n threads, run $r: kept ${k} us, new device ${f} us, new/kept ${ratio[-1]}"
  done
  stats() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { printf "%s / %s / %s", v[1], v[int((NR + 1) / 2)], v[NR] }'; }
  echo "== $n threads (min / median / max over $runs runs): kept $(stats "${kept[@]}") us," \
    "new device $(stats "${fresh[@]}") us, new/kept $(stats "${ratio[@]}")"
done
