#!/usr/bin/env bash
# What vortexd weighs: the daemon stripped as Debian ships it, and the
# Debian package (cpack, as tests/debian_package.sh builds it) with what
# it installs.  Sizes in MB (10^6 bytes).
#   bash bench/size.sh [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mb() { awk -v b="$1" 'BEGIN { printf "%.1f MB", b / 1e6 }'; }
strip -o "$tmp/vortexd" "$build/vortexd"
echo "vortexd stripped: $(mb "$(stat -c %s "$tmp/vortexd")") (target <= 80 MB)"
cpack --config "$build/CPackConfig.cmake" -G DEB -B "$tmp/deb" >"$tmp/cpack.log" 2>&1 ||
  { cat "$tmp/cpack.log" >&2; exit 1; }
deb=$(ls "$tmp"/deb/*.deb)
installed_kib=$(dpkg-deb -f "$deb" Installed-Size)
echo "Debian package: $(mb "$(stat -c %s "$deb")") (target <= 20 MB), installs $(mb $((installed_kib * 1024)))"
