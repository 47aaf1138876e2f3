#!/usr/bin/env bash
# The main job on the bundled examples: start vortexd (default socket and
# SQLite cache), compile every examples/*.mlir through vxc, print the
# argument-buffer metadata, then ask again and show the answer coming from
# the cache.  Usage: tests/demo.sh BUILD_DIR
set -euo pipefail
build=$1
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$build/demo-objects"

"$build/vortexd" &
daemon=$!
trap 'kill -TERM $daemon 2>/dev/null; wait $daemon 2>/dev/null || true' EXIT
# wait until it answers (if another vortexd already serves the default
# socket, this one exits and the running one answers)
for _ in $(seq 100); do
  "$build/vxc" --no-spawn stats >/dev/null 2>&1 && break
  sleep 0.1
done
for f in "$root"/examples/*.mlir; do
  echo "=== vxc compile $(basename "$f")"
  "$build/vxc" compile -v -o "$out/" "$f"  # -v: each kernel's entry and argument table
  echo
done
echo "=== the same requests again: served from the cache"
for f in "$root"/examples/*.mlir; do
  "$build/vxc" compile --json -o "$out/" "$f" | head -c 120; echo " ..."
done
echo
echo "=== vxc stats"
"$build/vxc" stats
echo
echo "objects written to $out:"
ls -l "$out"
