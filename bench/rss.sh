#!/usr/bin/env bash
# A compile worker's memory over many compiles: one vortexd with one
# worker compiles COMPILES distinct modules (each with a comment of its own,
# so each is a miss; --recache, so a 256-kernel one is compiled whole, not
# from the pieces an earlier one left), one kernel each but every 100th of 256 kernels
# (bench/vxd_scale --print), sent by `vxc compile -`; every STEP compiles it
# prints the worker's resident set (VmRSS of the daemon's child), its pid
# (a new pid: the worker was replaced) and the daemon's.
# With WORKERS=2 (default 1) two workers serve one client: the idle one's
# core is lent to the busy one's helper thread on every 256-kernel module,
# and the report shows both workers.
#   bash bench/rss.sh [BUILD_DIR] [COMPILES] [STEP]      (default 10000, 1000)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
compiles=${2:-10000}
step=${3:-1000}
source "$root/bench/daemon.sh"
bench_init rss
bench_daemon d --workers "${WORKERS:-1}"
"$build/bench/vxd_scale" --print 1 >"$dir/k1.mlir"
"$build/bench/vxd_scale" --print 256 >"$dir/k256.mlir"
rss() { awk '/^VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
report() {
  local w line=""
  for w in $(pgrep -P "$pid" -x vortexd-worker); do
    line+="worker $(rss "$w") MiB (pid $w), "
  done
  printf '%8d compiles: %sdaemon %s MiB\n' "$1" "$line" "$(rss "$pid")"
}
report 0
for ((i = 1; i <= compiles; i++)); do
  src=$dir/k1.mlir
  ((i % 100 == 0)) && src=$dir/k256.mlir
  { cat "$src"; echo "// compile $i"; } | "$build/vxc" --no-spawn --socket "$sock" compile - --recache -o /dev/null
  ((i % step == 0)) && report "$i"
done
"$build/vxc" --no-spawn --socket "$sock" stats | grep -E "misses|worker restarts"
