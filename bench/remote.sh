#!/usr/bin/env bash
# The shared second cache level against one redis-server (private Unix
# socket): latency of an L2 hit beside a miss and an L1 hit, then N daemons
# (machines of a farm, each with its own cache) building the same kernels
# at once, with leases (remote_lease 5000: each key compiled once by the
# farm) and without (remote_lease 0), in alternating pairs: the compiles
# done against the distinct keys, and the farm's wall time.
#   bash bench/remote.sh [BUILD_DIR]   (BENCH_KERNELS=64 BENCH_DAEMONS="2 4 8" BENCH_SETS=3)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
k=${BENCH_KERNELS:-64}
source "$root/bench/daemon.sh"
bench_init remote
redis_start() {
  redis-server --port 0 --unixsocket "$dir/redis.sock" --unixsocketperm 700 --save '' --appendonly no \
    --dir "$dir" >/dev/null 2>&1 &
  bench_pids+=($!)
  for _ in $(seq 100); do [ -S "$dir/redis.sock" ] && break; sleep 0.05; done
}
daemon_start() { # NAME [ARGS...]
  local name=$1
  shift
  bench_daemon "$name" --workers 1 --remote-storage "redis+unix://$dir/redis.sock" "$@"
}
redis_start
daemon_start a
daemon_start b
"$build/bench/vxd_remote" latency "$k" "$dir/a/s.sock" "$dir/b/s.sock"
for n in ${BENCH_DAEMONS:-2 4 8}; do
  for set in $(seq "${BENCH_SETS:-3}"); do
    for lease in 5000 0; do # a pair: with leases, then without
      redis-cli -s "$dir/redis.sock" flushall >/dev/null
      socks=() pids=()
      for i in $(seq "$n"); do
        daemon_start "farm$n-$set-$lease-$i" --remote-lease "$lease"
        socks+=("$sock") pids+=("$pid")
      done
      printf 'set %s, remote_lease %-4s: ' "$set" "$lease"
      "$build/bench/vxd_remote" farm "$k" "${socks[@]}"
      for p in "${pids[@]}"; do bench_stop "$p"; done
      rm -rf "$dir"/farm*
    done
  done
done
