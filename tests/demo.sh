#!/usr/bin/env bash
# The main job on the bundled examples, with a vortexd of its own: its own
# socket and cache in a fresh private directory (never a daemon that
# already serves the default socket, never the user's cache), compiles
# every examples/*.mlir through vxc, prints the argument-buffer metadata,
# asks again and shows the answers coming from the cache, runs one whole
# program on the emulated device with `vxc run`, then stops exactly that
# daemon and removes its directory.  Usage: tests/demo.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$build/demo-objects"

work=$(mktemp -d "${TMPDIR:-/tmp}/vortexd-demo-XXXXXX") # mode 0700: the socket's directory is private
export VORTEXD_SOCKET="$work/vortexd.sock" VORTEXD_CACHE_DIR="$work/cache"
daemon=
cleanup() {
  # stop this demo's daemon (vxc stop waits until it has exited), never another
  if [ -n "$daemon" ]; then
    "$build/vxc" --no-spawn stop >/dev/null 2>&1 || kill -TERM "$daemon" 2>/dev/null || true
    wait "$daemon" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

"$build/vortexd" --idle-timeout 0 2>"$work/vortexd.log" &
daemon=$!
# wait until it answers (or has exited: then say why)
for _ in $(seq 300); do
  "$build/vxc" --no-spawn stats >/dev/null 2>&1 && break
  if ! kill -0 "$daemon" 2>/dev/null; then
    echo "demo: vortexd did not start:" >&2
    cat "$work/vortexd.log" >&2
    daemon=
    exit 1
  fi
  sleep 0.1
done
echo "demo: a vortexd of its own at $VORTEXD_SOCKET, cache $VORTEXD_CACHE_DIR"
echo

mkdir -p "$out"
for f in "$root"/examples/*.mlir; do
  echo "=== vxc compile $(basename "$f")"
  "$build/vxc" compile -v -o "$out/" "$f" # -v: each kernel's entry and argument table
  echo
done
echo "=== the same requests again: served from the cache"
for f in "$root"/examples/*.mlir; do
  "$build/vxc" compile --json -o "$out/" "$f" | head -c 120
  echo " ..."
done
echo
echo "=== vxc run examples/saxpy_program.mlir: a whole program, its kernel on the emulated device"
"$build/vxc" run "$root/examples/saxpy_program.mlir"
echo
echo "=== vxc stats"
"$build/vxc" stats
echo
echo "objects written to $out:"
ls -l "$out"
