#!/usr/bin/env bash
# Hit latency (random-key fetches through libvxc) for caches of 10 and
# 100 000 entries, each against a fresh daemon, at each LRU resolution of
# BENCH_LRU (default "60 0"): at 60 s (the default) the entries, filled just
# before, are read without a write; at 0 every read writes its entry's LRU
# time, as a cache last used more than a minute ago does.
#   bash bench/hits.sh [BUILD_DIR] [ENTRIES ...]     (BENCH_READS=20000)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(10 100000)
source "$root/bench/daemon.sh"
bench_init hits
for lru in ${BENCH_LRU:-60 0}; do
echo "== lru_resolution $lru s"
for n in "${sizes[@]}"; do
  d=lru$lru-$n
  mkdir -m 700 "$dir/$d"
  "$build/bench/vxd_hits" --fill "$dir/$d/cache" "$n"
  bench_daemon "$d" --lru-resolution "$lru"
  "$build/bench/vxd_hits" "$sock" "$dir/$d/cache" "${BENCH_READS:-20000}"
  bench_stop "$pid"
  rm -rf "${dir:?}/$d"
done
done
