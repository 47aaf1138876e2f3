#!/usr/bin/env bash
# A program's start with many modules against one: 16 kernels in 16
# gpu.modules, and the same 16 kernels in one gpu.module, each pair on a
# cold cache (every pair's kernels differ by a constant, so the daemon
# compiles them all; one daemon, WORKERS workers).  A program loads its
# modules in its constructors; the runtime loads them side by side
# (lazily) and a module's first use waits for it.
#   start: the milliseconds from the first mgpuModuleLoad until every
#          kernel was had (bench/vxr_modules_load.c);
#   run:   `vxc run` of the whole program (its host side lowered, every
#          kernel launched once on the emulated device, one device per
#          module's image), whose two programs must print the same.
# Prints each pair's figures and ratios, then the medians.
#   bash bench/modules.sh [BUILD_DIR] [PAIRS] [WORKERS]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
pairs=${2:-5}
workers=${3:-2}
source "$root/bench/daemon.sh"
bench_init modules
bench_daemon d --workers "$workers"

# kernel K of a run with seed S: a chain of arithmetic over its thread id,
# printed (the same lines from either program)
kernel() {
  local k=$1 s=$2 i
  echo "    gpu.func @k$k() kernel {"
  echo "      %t = gpu.thread_id x"
  echo "      %v0 = arith.index_cast %t : index to i32"
  echo "      %c = arith.constant $((s * 131 + k * 7 + 3)) : i32"
  for i in $(seq 1 40); do
    echo "      %w$i = arith.muli %v$((i - 1)), %c : i32"
    echo "      %v$i = arith.addi %w$i, %c : i32"
  done
  echo "      gpu.printf \"k$k %d\\n\", %v40 : i32"
  echo "      gpu.return"
  echo "    }"
}

# the program of seed s: 16 modules of one kernel (many=1), or one of 16
program() {
  local s=$1 many=$2 k
  echo "module attributes {gpu.container_module} {"
  [ "$many" = 1 ] || echo "  gpu.module @kernels {"
  for k in $(seq 0 15); do
    [ "$many" = 1 ] && echo "  gpu.module @m$k {"
    kernel "$k" "$s"
    [ "$many" = 1 ] && echo "  }"
  done
  [ "$many" = 1 ] || echo "  }"
  echo "  func.func @main() {"
  echo "    %c1 = arith.constant 1 : index"
  for k in $(seq 0 15); do
    if [ "$many" = 1 ]; then
      echo "    gpu.launch_func @m$k::@k$k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)"
    else
      echo "    gpu.launch_func @kernels::@k$k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)"
    fi
  done
  echo "    return"
  echo "  }"
  echo "}"
}

# wall milliseconds of `vxc run FILE`, its output into FILE.out
run_ms() {
  local t0 t1
  t0=$(date +%s%N)
  "$build/vxc" --no-spawn --socket "$sock" run "$1" >"$1.out" 2>&1
  t1=$(date +%s%N)
  echo $(((t1 - t0) / 1000000))
}

# the modules alone, as a runtime loads them: seed s's kernels in 16
# files (many=1: m<k>.mlir) or one (all.mlir), in directory d
modules() {
  local s=$1 d=$2 k
  mkdir -p "$d"
  for k in $(seq 0 15); do
    { echo "module attributes {gpu.container_module} {"; echo "  gpu.module @m$k {"; kernel "$k" "$s"
      echo "  }"; echo "}"; } >"$d/m$k.mlir"
  done
  { echo "module attributes {gpu.container_module} {"; echo "  gpu.module @all {"
    for k in $(seq 0 15); do kernel "$k" "$s"; done
    echo "  }"; echo "}"; } >"$d/all.mlir"
}
start_ms() { # modules seed: 16 modules (1) or one (0)
  local d=$dir/start$1 args=() k
  modules "$1" "$d"
  if [ "$2" = 1 ]; then
    for k in $(seq 0 15); do args+=("$d/m$k.mlir" "k$k" --); done
  else
    args=("$d/all.mlir")
    for k in $(seq 0 15); do args+=("k$k"); done
  fi
  VORTEXD_SOCKET=$sock "$build/bench/vxr_modules_load" "${args[@]}"
}

sm=() so=() sr=()
echo "start (modules loaded until every kernel was had):"
echo "pair  16 modules  1 module  ratio"
for p in $(seq 1 "$pairs"); do
  a=$(start_ms "$((1000 + 2 * p))" 1)
  b=$(start_ms "$((1001 + 2 * p))" 0)
  sm+=("$a") so+=("$b")
  r=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", a / b }')
  sr+=("$r")
  printf "%4d  %7d ms  %6d ms  %5s\n" "$p" "$a" "$b" "$r"
done

many=() one=() ratio=()
echo "run (vxc run: host lowering, modules, a first launch of each kernel):"
echo "pair  16 modules  1 module  ratio"
for p in $(seq 1 "$pairs"); do
  program "$((2 * p))" 1 >"$dir/many$p.mlir"
  program "$((2 * p + 1))" 0 >"$dir/one$p.mlir"
  program "$((2 * p))" 0 >"$dir/same$p.mlir" # the many-module program's kernels in one module
  a=$(run_ms "$dir/many$p.mlir")
  b=$(run_ms "$dir/one$p.mlir")
  run_ms "$dir/same$p.mlir" >/dev/null
  if ! diff <(sort "$dir/many$p.mlir.out") <(sort "$dir/same$p.mlir.out") >/dev/null; then
    echo "bench/modules.sh: the two programs printed different results:" >&2
    diff <(sort "$dir/many$p.mlir.out") <(sort "$dir/same$p.mlir.out") >&2 || true
    exit 1
  fi
  many+=("$a") one+=("$b")
  r=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", a / b }')
  ratio+=("$r")
  printf "%4d  %7d ms  %6d ms  %5s\n" "$p" "$a" "$b" "$r"
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "median start: 16 modules $(median "${sm[@]}") ms, 1 module $(median "${so[@]}") ms," \
  "ratio $(median "${sr[@]}")"
echo "median run: 16 modules $(median "${many[@]}") ms, 1 module $(median "${one[@]}") ms," \
  "ratio $(median "${ratio[@]}") (results identical)"
