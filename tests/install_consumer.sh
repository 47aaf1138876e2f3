#!/usr/bin/env bash
# Installs the build into a scratch prefix, then builds tests/consumer out
# of tree against the installed files only - once with pkg-config, once with
# find_package - and runs both against the installed vortexd.
#   install_consumer.sh BUILD_DIR
set -euo pipefail
build=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}"/vxd-consumer-XXXXXX)
chmod 700 "$work"
prefix=$work/prefix
trap 'kill $daemon 2>/dev/null || true; rm -rf "$work"' EXIT
daemon=
cmake --install "$build" --prefix "$prefix" >/dev/null
# the library directory the build installs to (lib/<multiarch> on Debian)
libdir=$(dirname "$(find "$prefix" -name libvxc.so.0 | head -1)")
export LD_LIBRARY_PATH=$libdir
# the installed daemon, on a private socket and cache
"$prefix/bin/vortexd" --socket "$work/s.sock" --cache-dir "$work/cache" --workers 1 2>"$work/log" &
daemon=$!
for _ in $(seq 200); do [ -S "$work/s.sock" ] && break; sleep 0.05; done
[ -S "$work/s.sock" ] || { echo "the installed vortexd did not start:" >&2; cat "$work/log" >&2; exit 1; }
kernel=$here/../examples/saxpy.mlir

# 1. pkg-config
cc -Wall -Werror -o "$work/consumer-pc" "$here/consumer/consumer.c" \
  $(PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --cflags --libs vortexd)
"$work/consumer-pc" "$work/s.sock" "$kernel"
# 2. find_package
cmake -S "$here/consumer" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
"$work/cmake-build/consumer" "$work/s.sock" "$kernel"
# the consumers use the installed shared library, not a copy of it
# (ldd's output first: grep -q stopping early would break ldd's pipe under pipefail)
libs_pc=$(ldd "$work/consumer-pc")
libs_cmake=$(ldd "$work/cmake-build/consumer")
grep -q "$libdir/libvxc.so.0" <<<"$libs_pc"
grep -q "libvxc.so.0" <<<"$libs_cmake"
# 3. a C host program: a program's host side compiled by vortexd, linked with
# libvortexd_runtime through pkg-config and its installed header; its kernel
# compiled by vortexd at the first launch, run on the emulated device
VORTEXD_SOCKET=$work/s.sock "$prefix/bin/vxc" --no-spawn compile --host "$here/consumer/scale.mlir" \
  -o "$work/scale.host.o"
cc -Wall -Werror -o "$work/host-consumer" "$here/consumer/host_consumer.c" "$work/scale.host.o" \
  $(PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --cflags --libs vortexd-runtime)
out=$(VORTEXD_SOCKET=$work/s.sock "$work/host-consumer")
[ "$out" = "0 3 6 9 12 15 18 21 24 27" ] || { echo "install_consumer: the C host program printed: $out" >&2; exit 1; }
grep -q "$libdir/libvortexd_runtime.so.0" <<<"$(ldd "$work/host-consumer")"
# 4. a project compiling kernels with vortexd_add_kernels, built by ninja: one
# compile per kernel file, nothing when nothing changed, exactly one after an
# edit, and from a clean build directory every compile a cache hit
proj=$work/kernels
mkdir -p "$proj"
cp "$here"/../examples/saxpy.mlir "$here"/../examples/two_kernels.mlir "$proj/"
# a HIP file for cgeist: a stand-in cgeist (no Polygeist here) that checks it
# got the default flags and writes the GPU dialect its input carries
cp "$here"/../examples/mixed_args.mlir "$proj/mixed_args.hip"
cat >"$work/cgeist" <<'SH'
#!/bin/sh
in=$1; shift
[ "$1 $2 $3" = "--function=* --emit-cuda -S" ] || { echo "cgeist: unexpected flags $*" >&2; exit 1; }
[ "$4" = "-o" ] || exit 1
cp "$in" "$5"
SH
chmod +x "$work/cgeist"
cat >"$proj/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.25)
project(kernels NONE)
find_package(vortexd 0.1 REQUIRED)
vortexd_add_kernels(device_kernels FILES saxpy.mlir two_kernels.mlir mixed_args.hip WARP_SIZE 8
                    CGEIST $work/cgeist)
# the device's target, warp and options on the call: an RV64 3.0 object
vortexd_add_kernels(wide_kernels FILES saxpy.mlir TARGET vortex3-rv64 WARP_SIZE 16 OPT_LEVEL 1
                    FLAGS --shuffle-insns)
get_target_property(objects device_kernels VORTEXD_KERNEL_OBJECTS)
list(LENGTH objects n)
message(STATUS "kernel objects: \${n}")
CMAKE
export VORTEXD_SOCKET=$work/s.sock VORTEXD_CACHE_DIR=$work/cache # the daemon this script started
counter() { "$prefix/bin/vxc" --no-spawn stats --json | sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p"; }
configure() {
  local log
  log=$(cmake -G Ninja -S "$proj" -B "$proj/build" -DCMAKE_PREFIX_PATH="$prefix")
  grep -q "kernel objects: 3" <<<"$log"
}
compiles() {
  local log
  log=$(ninja -C "$proj/build")
  grep -c "Compiling Vortex kernels" <<<"$log" || true
}
expect() { [ "$2" = "$3" ] || { echo "install_consumer: $1: $2, expected $3" >&2; exit 1; }; }
configure
m0=$(counter misses)
expect "first build" "$(compiles)" 4
expect "misses after the first build" "$(counter misses)" $((m0 + 4))
[ -s "$proj/build/device_kernels.kernels/two_kernels.o" ] || { echo "install_consumer: no object" >&2; exit 1; }
# TARGET, WARP_SIZE, OPT_LEVEL and FLAGS reached the compile: an ELF64 object
# (EI_CLASS 2) whose cache entry names the options
wide=$proj/build/wide_kernels.kernels/saxpy.o
[ "$(od -An -tu1 -j4 -N1 "$wide" | tr -d ' ')" = 2 ] || { echo "install_consumer: TARGET not applied" >&2; exit 1; }
"$prefix/bin/vxc" --no-spawn ls --json | grep -q 'vortex_abi=3;xlen=64' ||
  { echo "install_consumer: no vortex3-rv64 entry" >&2; exit 1; }
expect "an up-to-date build" "$(compiles)" 0
echo "// edited" >>"$proj/two_kernels.mlir"
expect "after editing one kernel" "$(compiles)" 1
expect "misses after the edit" "$(counter misses)" $((m0 + 5))
[ -s "$proj/build/device_kernels.kernels/mixed_args.o" ] || { echo "install_consumer: no object of the .hip" >&2; exit 1; }
echo "// edited" >>"$proj/mixed_args.hip"
expect "after editing the HIP file" "$(compiles)" 1
expect "misses after that edit" "$(counter misses)" $((m0 + 6))
h0=$(counter hits)
rm -rf "$proj/build"
configure
expect "a clean build directory" "$(compiles)" 4
expect "misses of the clean build" "$(counter misses)" $((m0 + 6))
expect "hits of the clean build" "$(counter hits)" $((h0 + 4))
unset VORTEXD_SOCKET VORTEXD_CACHE_DIR

# the man pages and the shell completion, where man(1) and bash-completion look
for f in share/man/man1/vxc.1.gz share/man/man8/vortexd.8.gz share/man/man5/vortexd.conf.5.gz \
  share/bash-completion/completions/vxc; do
  [ -s "$prefix/$f" ] || { echo "install_consumer: $f not installed" >&2; exit 1; }
done
MANPATH=$prefix/share/man man -w vortexd.conf >/dev/null
echo "install_consumer: pkg-config and find_package consumers built and ran; vortexd_add_kernels rebuilt" \
  "exactly what changed; man pages and completion installed"
