#!/usr/bin/env bash
# A whole `vxc compile` process on a cache hit against a whole ccache hit
# (`ccache gcc -c` of a small C file), paired: each round times one of each.
#   bash bench/cli.sh [BUILD_DIR] [FILE.mlir]       (BENCH_ROUNDS=200)
# Needs ccache (apt-get install ccache).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
file=${2:-$root/../shared/corpus/vortex-hip/metadata_test.mlir}
[ -f "$file" ] || file=$root/tests/kernels/polygeist_style.mlir
command -v ccache >/dev/null || { echo "bench/cli.sh: ccache is not installed" >&2; exit 2; }
dir=$(mktemp -d /tmp/vxd-cli-XXXXXX)
"$build/vortexd" --socket "$dir/s.sock" --cache-dir "$dir/cache" 2>/dev/null &
pid=$!
trap 'kill -TERM $pid; wait $pid 2>/dev/null || true; rm -rf "$dir"' EXIT
for _ in $(seq 100); do [ -S "$dir/s.sock" ] && break; sleep 0.05; done
printf 'int add(int a, int b) { return a + b; }\n' >"$dir/x.c"
export CCACHE_DIR=$dir/ccache
vxc=("$build/vxc" --no-spawn --socket "$dir/s.sock" compile -o "$dir/out" "$file")
cc=(ccache gcc -c "$dir/x.c" -o "$dir/x.o")
"${vxc[@]}" >/dev/null
"${cc[@]}"
"${cc[@]}" # the second is a hit
rounds=${BENCH_ROUNDS:-200}
: >"$dir/t"
for _ in $(seq "$rounds"); do
  t0=$EPOCHREALTIME
  "${vxc[@]}" >/dev/null
  t1=$EPOCHREALTIME
  "${cc[@]}"
  t2=$EPOCHREALTIME
  echo "$t0 $t1 $t2" >>"$dir/t"
done
ccache -s | grep -iE 'hits|direct' | head -3 >&2 || true
awk '{ v = ($2 - $1) * 1e6; c = ($3 - $2) * 1e6; print v, c, v / c }' "$dir/t" >"$dir/r"
med() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
printf 'vxc hit process   p50 %8.0f us\n' "$(cut -d' ' -f1 "$dir/r" | med)"
printf 'ccache hit        p50 %8.0f us\n' "$(cut -d' ' -f2 "$dir/r" | med)"
printf 'vxc / ccache      %.2f (median of %d paired rounds)\n' "$(cut -d' ' -f3 "$dir/r" | med)" "$rounds"
