#!/usr/bin/env bash
# Builds the Debian package (cpack -G DEB), unpacks it into a scratch root
# (dpkg -x: what dpkg install would put in place, without touching this
# system), and uses it as installed: its dependencies are declared, its
# daemon serves, its vxc compiles, its runtime runs a whole program on the
# emulated device, its man pages open.
#   debian_package.sh BUILD_DIR SOURCE_DIR static-llvm|shared-llvm
set -euo pipefail
build=$1
src=$2
llvm_link=$3 # how the build links vortexd (VORTEXD_STATIC_LLVM)
work=$(mktemp -d /tmp/vxd-deb-XXXXXX)
chmod 700 "$work"
daemon=
trap 'kill $daemon 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
fail() { echo "debian_package: $*" >&2; exit 1; }
cpack --config "$build/CPackConfig.cmake" -G DEB -B "$work/out" >"$work/cpack.log" 2>&1 ||
  { cat "$work/cpack.log" >&2; fail "cpack failed"; }
deb=$(ls "$work"/out/vortexd_*.deb)
depends=$(dpkg-deb -f "$deb" Depends)
root=$work/root
dpkg -x "$deb" "$root"
needs=(libuv1 libsqlite3-0 libssl3 lld-22 mlir-22-tools binutils-riscv64-unknown-elf picolibc-riscv64-unknown-elf)
# the daemon holds LLVM and MLIR (VORTEXD_STATIC_LLVM, on by default: its
# cold start binds no symbols of theirs); libmlir-22 only when it loads it
if [ "$llvm_link" = static-llvm ]; then
  ! objdump -p "$root/usr/bin/vortexd" | grep -E 'NEEDED +lib(MLIR|LLVM)' ||
    fail "the packaged vortexd loads LLVM or MLIR, built with VORTEXD_STATIC_LLVM=ON"
else
  needs+=(libmlir-22)
fi
for d in "${needs[@]}"; do
  grep -q "\b$d\b" <<<"$depends" || fail "Depends lacks $d: $depends"
done
for f in usr/bin/vortexd usr/bin/vxc usr/share/man/man1/vxc.1 usr/share/bash-completion/completions/vxc; do
  [ -e "$root/$f" ] || fail "$f is not in the package"
done
runtime=$(find "$root/usr/lib" -name 'libvortexd_runtime.so.0')
[ -n "$runtime" ] || fail "no libvortexd_runtime.so.0 (versioned SONAME) in the package"
objdump -p "$runtime" | grep -q 'SONAME *libvortexd_runtime.so.0' || fail "the runtime's SONAME"
export LD_LIBRARY_PATH=$(dirname "$runtime")
mkdir -m 700 "$work/run"
"$root/usr/bin/vortexd" --socket "$work/run/s.sock" --cache-dir "$work/cache" --workers 1 2>"$work/log" &
daemon=$!
for _ in $(seq 200); do [ -S "$work/run/s.sock" ] && break; sleep 0.05; done
[ -S "$work/run/s.sock" ] || { cat "$work/log" >&2; fail "the packaged vortexd did not start"; }
vxc=("$root/usr/bin/vxc" --no-spawn --socket "$work/run/s.sock")
"${vxc[@]}" compile "$src/examples/saxpy.mlir" -o "$work/saxpy.o"
[ "$(head -c 4 "$work/saxpy.o" | od -An -c | tr -d ' ')" = "177ELF" ] || fail "no ELF object"
out=$("${vxc[@]}" run "$src/tests/programs/launch_and_copy.mlir")
grep -q "\[1,  4,  7,  10,  13,  16,  19,  22\]" <<<"$out" || fail "the packaged runtime ran the program wrong: $out"
man -l "$root/usr/share/man/man8/vortexd.8" >/dev/null
echo "debian_package: $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB) installs and runs: compile, run, man"
