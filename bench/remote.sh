#!/usr/bin/env bash
# The shared second cache level against one redis-server (private Unix
# socket): latency of an L2 hit beside a miss and an L1 hit, then N daemons
# (machines of a farm, each with its own cache) building the same kernels
# at once, and the share of compiles the farm avoided.
#   bash bench/remote.sh [BUILD_DIR]        (BENCH_KERNELS=64 BENCH_DAEMONS="2 4")
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
k=${BENCH_KERNELS:-64}
dir=$(mktemp -d /tmp/vxd-remote-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
redis_start() {
  redis-server --port 0 --unixsocket "$dir/redis.sock" --unixsocketperm 700 --save '' --appendonly no \
    --dir "$dir" >/dev/null 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do [ -S "$dir/redis.sock" ] && break; sleep 0.05; done
}
daemon_start() { # NAME
  mkdir -m 700 -p "$dir/$1"
  VORTEXD_REMOTE_STORAGE="redis+unix://$dir/redis.sock" "$build/vortexd" --socket "$dir/$1/s" \
    --cache-dir "$dir/$1/cache" --workers 1 2>/dev/null &
  pids+=($!)
  for _ in $(seq 200); do [ -S "$dir/$1/s" ] && break; sleep 0.05; done
}
redis_start
daemon_start a
daemon_start b
"$build/bench/vxd_remote" latency "$k" "$dir/a/s" "$dir/b/s"
for n in ${BENCH_DAEMONS:-2 4}; do
  redis-cli -s "$dir/redis.sock" flushall >/dev/null
  socks=()
  for i in $(seq "$n"); do daemon_start "farm$n-$i"; socks+=("$dir/farm$n-$i/s"); done
  "$build/bench/vxd_remote" farm "$k" "${socks[@]}"
done
