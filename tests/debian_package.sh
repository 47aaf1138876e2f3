#!/usr/bin/env bash
# Builds the Debian package (cpack -G DEB), checks it with lintian (no
# error), installs it with dpkg into a scratch root (its own dpkg database,
# the maintainer scripts run for that root: the system's group vortexd made
# there by systemd-sysusers) and removes and purges it again, then uses it
# as unpacked: its dependencies are declared, its daemon serves, its vxc
# compiles, its runtime runs a whole program on the emulated device, its
# man pages open.
#   debian_package.sh BUILD_DIR SOURCE_DIR static-llvm|shared-llvm
set -euo pipefail
build=$1
src=$2
llvm_link=$3 # how the build links vortexd (VORTEXD_STATIC_LLVM)
work=$(mktemp -d "${TMPDIR:-/tmp}"/vxd-deb-XXXXXX)
chmod 700 "$work"
daemon=
trap 'kill $daemon 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
fail() { echo "debian_package: $*" >&2; exit 1; }
cpack --config "$build/CPackConfig.cmake" -G DEB -B "$work/out" >"$work/cpack.log" 2>&1 ||
  { cat "$work/cpack.log" >&2; fail "cpack failed"; }
deb=$(ls "$work"/out/vortexd_*.deb)
depends=$(dpkg-deb -f "$deb" Depends)
# Debian's own checks: no error (overrides, with their reasons, in
# systemd/debian/lintian-overrides)
TMPDIR=$work lintian --tag-display-limit 0 --fail-on error "$deb" >"$work/lintian.log" 2>&1 ||
  { cat "$work/lintian.log" >&2; fail "lintian reports errors"; }
# installed and removed by dpkg in a scratch root (dependencies are the
# real system's business: not installed there)
scratch=$work/scratch
mkdir -p "$scratch/var/lib/dpkg/info" "$scratch/var/lib/dpkg/updates" "$scratch/etc"
touch "$scratch/var/lib/dpkg/status"
sdpkg=(dpkg --root="$scratch" --force-script-chrootless --force-depends --force-not-root --log=/dev/null)
"${sdpkg[@]}" -i "$deb" >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log" >&2; fail "dpkg -i failed"; }
[ -x "$scratch/usr/bin/vortexd" ] || fail "dpkg -i installed no vortexd"
grep -q '^vortexd:' "$scratch/etc/group" || fail "postinst made no group vortexd (systemd-sysusers)"
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
[ -e "$scratch/usr/lib/$multiarch/libvxc.so.0" ] || fail "libvxc is not in the multiarch directory"
zcat "$scratch/usr/share/man/man1/vxc.1.gz" | grep -q '^.TH' || fail "no compressed vxc(1)"
grep -q '^Documentation=man:vortexd(8)' "$scratch/usr/lib/systemd/system/vortexd.service" ||
  fail "the unit's Documentation is not a man page"
"${sdpkg[@]}" -r vortexd >>"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log" >&2; fail "dpkg -r failed"; }
[ ! -e "$scratch/usr/bin/vortexd" ] || fail "dpkg -r left usr/bin/vortexd"
"${sdpkg[@]}" -P vortexd >>"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log" >&2; fail "dpkg -P failed"; }
[ -z "$(find "$scratch/usr" -type f 2>/dev/null)" ] || fail "files left after purge: $(find "$scratch/usr" -type f)"
root=$work/root
dpkg -x "$deb" "$root"
# the host's code generator (libllvm22) and the HTTP storage module
# (libcurl4) beside the daemon, where it looks for them
[ -x "$root/usr/libexec/vortexd/vortexd-hostcc" ] || fail "no usr/libexec/vortexd/vortexd-hostcc"
ls "$root"/usr/lib/*/vortexd/vortexd-http.so >/dev/null 2>&1 || fail "no usr/lib/*/vortexd/vortexd-http.so"
# libsystemd0 named by hand: the daemon loads it with dlopen, unseen by dpkg-shlibdeps
needs=(libuv1 libsqlite3-0 libssl3 libsystemd0 libllvm22 libcurl4 llvm-22-runtime binutils-riscv64-unknown-elf
  picolibc-riscv64-unknown-elf)
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
for f in usr/bin/vortexd usr/bin/vxc usr/share/man/man1/vxc.1.gz usr/share/bash-completion/completions/vxc \
  usr/share/doc/vortexd/copyright usr/share/doc/vortexd/changelog.gz; do
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
man -l "$root/usr/share/man/man8/vortexd.8.gz" >/dev/null
echo "debian_package: $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB) installs and runs: compile, run, man"
