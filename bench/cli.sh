#!/usr/bin/env bash
# A whole `vxc compile` process on a cache hit against a whole ccache hit
# (`ccache gcc -c` of a small C file), paired: each round times one of each
# (bench/vxd_procs.c), with the output already there and with it removed.
#   bash bench/cli.sh [BUILD_DIR] [FILE.mlir]       (BENCH_ROUNDS=300)
# Needs ccache (apt-get install ccache).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
file=${2:-$root/../shared/corpus/vortex-hip/metadata_test.mlir}
[ -f "$file" ] || file=$root/tests/kernels/polygeist_style.mlir
command -v ccache >/dev/null || { echo "bench/cli.sh: ccache is not installed" >&2; exit 2; }
source "$root/bench/daemon.sh"
bench_init cli
bench_daemon d
printf 'int add(int a, int b) { return a + b; }\n' >"$dir/x.c"
export CCACHE_DIR=$dir/ccache
vxc=("$build/vxc" --no-spawn --socket "$sock" compile -o "$dir/out/" "$file")
cc=("$(command -v ccache)" gcc -c "$dir/x.c" -o "$dir/x.o")
"${vxc[@]}" >/dev/null
"${cc[@]}"
"${cc[@]}" # the second is a hit
rounds=${BENCH_ROUNDS:-300}
# started as ninja starts a compiler (posix_spawn, no shell): a shell in
# between would add its own fork to both sides
echo "== the object already there (a rebuild whose input came out the same)"
"$build/bench/vxd_procs" "$rounds" /bin/true -- "${vxc[@]}" -- "${cc[@]}"
echo "== the object removed before each run (a clean build directory)"
"$build/bench/vxd_procs" "$rounds" --rm "$dir/out/$(basename "${file%.mlir}").o" "${vxc[@]}" \
  -- --rm "$dir/x.o" "${cc[@]}"
ccache -s | grep -iE 'hits|direct' | head -3 >&2 || true
