#!/usr/bin/env bash
# `vxc explain` of an edited module against a cache holding many entries
# of its source name, paired with a hit of the same size (`vxc compile` of
# the unedited text) and /bin/true (bench/vxd_procs): what answering "why
# did this miss?" costs a user, whole process.
#   bash bench/explain.sh [BUILD_DIR] [KERNELS] [VARIANTS]   (BENCH_ROUNDS=100)
# The module has KERNELS kernels (default 64, ~10 lines each); VARIANTS
# (default 32, the most an explanation compares) edits of it, each at
# another line, are compiled first, so the explanation ranks that many.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
kernels=${2:-64}
variants=${3:-32}
source "$root/bench/daemon.sh"
bench_init explain
bench_daemon d
module() { # module FILE EDITED_KERNEL (-1: none)
  {
    echo "gpu.module @bench {"
    for k in $(seq 0 $((kernels - 1))); do
      local c=$k
      [ "$k" = "$2" ] && c=$((k + 100000))
      cat <<K
  gpu.func @k$k(%p: memref<?xi32>) kernel {
    %t = gpu.thread_id x
    %v = arith.constant $c : i32
    %i = arith.index_cast %t : index to i32
    %s = arith.addi %v, %i : i32
    memref.store %s, %p[%t] : memref<?xi32>
    gpu.return
  }
K
    done
    echo "}"
  } >"$1"
}
vxc=("$build/vxc" --no-spawn --socket "$sock")
mkdir -p "$dir/variants" "$dir/out"
for v in $(seq 0 $((variants - 1))); do
  module "$dir/variants/module.mlir" "$v"
  "${vxc[@]}" compile -o "$dir/out/" "$dir/variants/module.mlir" >/dev/null
done
module "$dir/module.mlir" -1
"${vxc[@]}" compile -o "$dir/out/" "$dir/module.mlir" >/dev/null
module "$dir/edited.mlir" $((kernels - 1))
cp "$dir/edited.mlir" "$dir/variants/module.mlir" # same source name as the entries
echo "== $kernels kernels ($(wc -l <"$dir/module.mlir") lines), $((variants + 1)) entries of the name"
"${vxc[@]}" explain "$dir/variants/module.mlir" | head -6 || true
rounds=${BENCH_ROUNDS:-100}
echo "== explain (a miss, ranked among the entries) | compile hit | /bin/true"
"$build/bench/vxd_procs" "$rounds" --status 1 "${vxc[0]}" "${vxc[@]:1}" explain "$dir/variants/module.mlir" \
  -- "${vxc[0]}" "${vxc[@]:1}" compile -o "$dir/out/" "$dir/module.mlir" -- /bin/true
