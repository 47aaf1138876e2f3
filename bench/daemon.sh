# bench/daemon.sh - sourced by the benchmark scripts: one temporary
# directory per script, the vortexd daemons it starts there, all stopped
# and the directory removed when the script exits.
#   bench_init NAME             $dir: a new /tmp/vxd-NAME-XXXXXX
#   bench_daemon SUB [ARGS...]  starts $build/vortexd with the socket
#                               $dir/SUB/s.sock, the cache $dir/SUB/cache and
#                               ARGS (stderr in $dir/SUB.log) and waits until
#                               it listens: its socket in $sock, pid in $pid
#   bench_stop PID              stops one daemon before the script ends
# $build must be set.  Other processes the script starts and wants stopped
# go into bench_pids too.
bench_pids=()

bench_cleanup() {
  local p
  for p in "${bench_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${bench_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}

bench_init() {
  dir=$(mktemp -d "/tmp/vxd-$1-XXXXXX")
  trap bench_cleanup EXIT
}

bench_daemon() {
  local sub=$1
  shift
  mkdir -p -m 700 "$dir/$sub"
  "$build/vortexd" --socket "$dir/$sub/s.sock" --cache-dir "$dir/$sub/cache" "$@" 2>"$dir/$sub.log" &
  pid=$!
  bench_pids+=("$pid")
  sock=$dir/$sub/s.sock
  local _
  for _ in $(seq 200); do [ -S "$sock" ] && return 0; sleep 0.05; done
  echo "bench: vortexd did not start ($dir/$sub.log):" >&2
  cat "$dir/$sub.log" >&2
  return 1
}

bench_stop() {
  kill -TERM "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}
