#!/usr/bin/env bash
# Installs the build into a scratch prefix, then builds tests/consumer out
# of tree against the installed files only - once with pkg-config, once with
# find_package - and runs both against the installed vortexd.
#   install_consumer.sh BUILD_DIR
set -euo pipefail
build=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d /tmp/vxd-consumer-XXXXXX)
chmod 700 "$work"
prefix=$work/prefix
trap 'kill $daemon 2>/dev/null || true; rm -rf "$work"' EXIT
daemon=
cmake --install "$build" --prefix "$prefix" >/dev/null
export LD_LIBRARY_PATH=$prefix/lib
# the installed daemon, on a private socket and cache
"$prefix/bin/vortexd" --socket "$work/s.sock" --cache-dir "$work/cache" --workers 1 2>"$work/log" &
daemon=$!
for _ in $(seq 200); do [ -S "$work/s.sock" ] && break; sleep 0.05; done
[ -S "$work/s.sock" ] || { echo "the installed vortexd did not start:" >&2; cat "$work/log" >&2; exit 1; }
kernel=$here/../examples/saxpy.mlir

# 1. pkg-config
cc -Wall -Werror -o "$work/consumer-pc" "$here/consumer/consumer.c" \
  $(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs vortexd)
"$work/consumer-pc" "$work/s.sock" "$kernel"
# 2. find_package
cmake -S "$here/consumer" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
"$work/cmake-build/consumer" "$work/s.sock" "$kernel"
# the consumers use the installed shared library, not a copy of it
# (ldd's output first: grep -q stopping early would break ldd's pipe under pipefail)
libs_pc=$(ldd "$work/consumer-pc")
libs_cmake=$(ldd "$work/cmake-build/consumer")
grep -q "$prefix/lib/libvxc.so.0" <<<"$libs_pc"
grep -q "libvxc.so.0" <<<"$libs_cmake"
# the man pages and the shell completion, where man(1) and bash-completion look
for f in share/man/man1/vxc.1 share/man/man8/vortexd.8 share/man/man5/vortexd.conf.5 \
  share/bash-completion/completions/vxc; do
  [ -s "$prefix/$f" ] || { echo "install_consumer: $f not installed" >&2; exit 1; }
done
MANPATH=$prefix/share/man man -w vortexd.conf >/dev/null
echo "install_consumer: pkg-config and find_package consumers built and ran; man pages and completion installed"
