#!/usr/bin/env bash
# The shared second cache level against one redis-server (private Unix
# socket) and against nginx with WebDAV over TLS: latency of an L2 hit
# beside a miss and an L1 hit on each, then N daemons
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
nginx_start() { # nginx with WebDAV over TLS on 127.0.0.1:$port (docs/cache.md's server block)
  local n=$dir/nginx
  mkdir -p -m 700 "$n/www" "$n/tmp"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  (cd "$n" &&
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.pem \
      -days 2 -subj /CN=bench-ca 2>/dev/null &&
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout srv.key -out srv.csr \
      -subj /CN=127.0.0.1 2>/dev/null &&
    printf 'subjectAltName=IP:127.0.0.1\n' >ext &&
    openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 2 \
      -extfile ext 2>/dev/null &&
    printf 'farm:%s\n' "$(openssl passwd -apr1 secret)" >htpasswd &&
    (umask 077 && printf 'basic farm:secret\n' >credentials))
  sed -n '/# vortexd-nginx-begin/,/# vortexd-nginx-end/p' "$root/docs/cache.md" |
    sed -e "s#listen 443 ssl#listen 127.0.0.1:$port ssl#" -e "s#/etc/nginx/vortexd-cache.pem#$n/srv.pem#" \
      -e "s#/etc/nginx/vortexd-cache.key#$n/srv.key#" -e "s#/srv/vortexd-cache#$n/www#" \
      -e "s#/etc/nginx/vortexd-cache.htpasswd#$n/htpasswd#" >"$n/server.conf"
  { [ "$(id -u)" -eq 0 ] && echo 'user root;'
    printf 'worker_processes 1;\npid %s/nginx.pid;\nevents { worker_connections 64; }\n' "$n"
    printf 'http {\n access_log off;\n client_body_temp_path %s/tmp/body;\n include %s/server.conf;\n}\n' "$n" "$n"
  } >"$n/nginx.conf"
  nginx -p "$n" -e "$n/error.log" -c "$n/nginx.conf" -g 'daemon off;' &
  bench_pids+=($!)
  for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0; sleep 0.05; done
  echo "bench: nginx did not start" >&2
  return 1
}
redis_start
daemon_start a
daemon_start b
echo "Redis (Unix socket):"
"$build/bench/vxd_remote" latency "$k" "$dir/a/s.sock" "$dir/b/s.sock"
nginx_start
for sub in ha hb; do
  bench_daemon "$sub" --workers 1 --remote-storage "https://127.0.0.1:$port/cache" \
    --remote-ca-file "$dir/nginx/ca.pem" --remote-credentials "$dir/nginx/credentials"
done
echo "HTTPS (nginx WebDAV, TLS, basic authentication for PUT, loopback):"
"$build/bench/vxd_remote" latency "$k" "$dir/ha/s.sock" "$dir/hb/s.sock"
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
