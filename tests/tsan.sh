#!/usr/bin/env bash
# ThreadSanitizer over the daemon's threads: the loop, the store thread and
# the shared level's reader and writer (all on daemon/vxd_qthread.c), and
# the forks of workers while they are paused, under real traffic.
# Criterion cannot run under ThreadSanitizer (its sandbox maps memory where
# TSan keeps its shadow), so this drives a TSan-built vortexd from the
# outside: a private redis-server as the shared level, distinct kernels
# compiled at once (misses, joined requests, then hits), a module of 96
# kernels, explain, stats, list, verify, a second daemon reading what the
# first shared, and stops.  The helper threads that compile a module's
# pieces run with piece_helpers 0 here: they start in a worker forked from
# a process with threads, which ThreadSanitizer cannot follow ("dup thread
# with used id"); tests/tsan_pieces.c drives them in a process that never
# forks instead.  It fails when the daemon or a worker reports a race
# (halt_on_error: the report, then exit 66) or the daemon does not exit 0.
#   bash tests/tsan.sh BUILD_DIR   (a build with -DVORTEXD_TSAN=ON)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/vxt-tsan-XXXXXX")
daemon= redis=
cleanup() {
  [ -n "$daemon" ] && kill -TERM "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  [ -n "$redis" ] && kill -TERM "$redis" 2>/dev/null && wait "$redis" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "tsan: $*" >&2
  grep -v "^$" "$work/daemon.log" | head -120 >&2 || true
  exit 1
}
wait_for() { # wait_for PATH PID: until PATH exists (at most 120 s), or PID ended
  for _ in $(seq 2400); do
    [ -e "$1" ] && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}
mkdir -m 700 "$work/run"
redis-server --port 0 --unixsocket "$work/redis.sock" --unixsocketperm 700 --save '' --appendonly no \
  --dir "$work" >"$work/redis.log" 2>&1 &
redis=$!
wait_for "$work/redis.sock" "$redis" || fail "redis-server did not start"
# the workers are forked by a process that has threads: TSan must not end
# them for it; no address-space limit (TSan reserves its shadow up front)
export TSAN_OPTIONS="halt_on_error=1:die_after_fork=0:second_deadlock_stack=1"
"$build/vortexd" --socket "$work/run/s.sock" --cache-dir "$work/cache" --workers 2 --piece-helpers 0 \
  --worker-memory 0 --remote-storage "redis+unix://$work/redis.sock" 2>"$work/daemon.log" &
daemon=$!
wait_for "$work/run/s.sock" "$daemon" || fail "vortexd did not start"
vxc=("$build/vxc" --no-spawn --socket "$work/run/s.sock")
for i in $(seq 12); do
  sed "s/%a/%a$i/g" "$root/examples/saxpy.mlir" >"$work/k$i.mlir"
done
for round in miss hit; do # distinct kernels at once, each twice at once: misses and joined, then hits
  pids=()
  for i in $(seq 12); do
    "${vxc[@]}" compile -o "$work/k$i-a.o" "$work/k$i.mlir" >/dev/null &
    pids+=($!)
    "${vxc[@]}" compile -o "$work/k$i-b.o" "$work/k$i.mlir" >/dev/null &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || fail "$round: a compile failed"; done
  cmp -s "$work/k1-a.o" "$work/k1-b.o" || fail "$round: one source, two objects"
done
# a module of many kernels: pieces on the helper threads
{
  echo "gpu.module @many {"
  for k in $(seq 0 95); do
    printf '  gpu.func @k%d(%%p: memref<?xi32>) kernel {\n    %%t = gpu.thread_id x\n' "$k"
    printf '    %%v = arith.constant %d : i32\n    memref.store %%v, %%p[%%t] : memref<?xi32>\n' "$k"
    printf '    gpu.return\n  }\n'
  done
  echo "}"
} >"$work/many.mlir"
"${vxc[@]}" compile -o "$work/many.o" "$work/many.mlir" >/dev/null
"${vxc[@]}" explain "$work/k1.mlir" >/dev/null
"${vxc[@]}" stats --json >"$work/stats.json"
grep -q '"remote":{[^}]*"writes":[1-9]' "$work/stats.json" || fail "no write reached the shared level: $(cat "$work/stats.json")"
"${vxc[@]}" ls >/dev/null
"${vxc[@]}" verify >/dev/null
# a second daemon reads what the first wrote to the shared level: the reader thread's hits
"$build/vortexd" --socket "$work/run/t.sock" --cache-dir "$work/cache2" --workers 1 --worker-memory 0 \
  --remote-storage "redis+unix://$work/redis.sock" 2>>"$work/daemon.log" &
second=$!
wait_for "$work/run/t.sock" "$second" || fail "the second vortexd did not start"
pids=()
for i in $(seq 12); do
  "$build/vxc" --no-spawn --socket "$work/run/t.sock" compile -o "$work/k$i-c.o" "$work/k$i.mlir" >/dev/null &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "a compile through the second daemon failed"; done
"$build/vxc" --no-spawn --socket "$work/run/t.sock" stats --json >"$work/stats2.json"
grep -q '"remote":{[^}]*"hits":[1-9]' "$work/stats2.json" || fail "the second daemon read nothing shared: $(cat "$work/stats2.json")"
"$build/vxc" --no-spawn --socket "$work/run/t.sock" stop >/dev/null
st=0
wait "$second" || st=$?
[ "$st" -eq 0 ] || fail "the second vortexd exited with status $st"
"${vxc[@]}" stop >/dev/null
st=0
wait "$daemon" || st=$?
daemon=
[ "$st" -eq 0 ] || fail "vortexd exited with status $st"
if grep -q "ThreadSanitizer" "$work/daemon.log"; then fail "ThreadSanitizer reported:"; fi
# the piece helpers, in a process that never forks (tests/tsan_pieces.c)
"$build/tests/tsan_pieces" 2>"$work/pieces.log" || { cat "$work/pieces.log" >&2; fail "tsan_pieces failed"; }
echo "tsan: 2 daemons, $(grep -o '"misses":[0-9]*' "$work/stats.json" | head -1 | cut -d: -f2) misses," \
  "joined and hit requests, shared-level reads and writes, a 96-kernel module, piece helpers: no race reported"
