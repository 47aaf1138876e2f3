#!/usr/bin/env bash
# One-step set-up on a fresh Debian 12 machine: installs what is missing,
# builds, then either runs the demo on the bundled example kernels or the
# whole test suite.  The README's two commands are exactly:
#   bash tests/bootstrap.sh demo
#   bash tests/bootstrap.sh test
# `test` also builds and tests an ASan+UBSan configuration (set
# VORTEXD_SKIP_SANITIZERS=1 to skip that second pass locally).  The
# conformance suites over third-party GPU-dialect files run when a corpus is
# found: $VORTEXD_CORPUS_DIR, else ../shared/corpus beside the checkout;
# the suite over upstream Vortex's own tools (conformance_upstream) when its
# files are: $VORTEXD_VORTEX_UPSTREAM_DIR, else ../shared/vortex-upstream.
# `test-without-corpus` (used by .ci/run) tests a copy of the tracked tree
# that can reach no corpus, as a clone of this repository alone would.
set -euo pipefail

mode=${1:-test}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
jobs=$(nproc)
corpus=${VORTEXD_CORPUS_DIR:-$root/../shared/corpus}
upstream=${VORTEXD_VORTEX_UPSTREAM_DIR:-$root/../shared/vortex-upstream}

# ---- dependencies: Debian 12 packages only (LLVM/MLIR 22 from bookworm-security)
pkgs=(build-essential cmake pkg-config
      llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools clang-22 lld-22
      liblld-22-dev  # lld's ELF driver, linked into vortexd for the pieces' links
      llvm-22-runtime  # lli-22, which runs `vxc run`'s programs
      libclang-rt-22-dev  # libFuzzer for the fuzz targets (tests/fuzz)
      libuv1-dev libmsgpack-dev libsqlite3-dev libssl-dev libsystemd-dev
      libcriterion-dev procps clang-format libjansson-dev libinih-dev
      universal-ctags  # the layering test's function lengths
      libjemalloc-dev  # the daemon's allocator
      libzstd-dev  # LLVM's compression, for the daemon linked with LLVM's static archives
      libhiredis-dev liburiparser-dev  # the shared second cache level (Redis) and its URL
      redis-server  # test_remote starts its own on a private socket
      libcurl4-openssl-dev nginx openssl  # the HTTP(S) shared level; test_remote runs nginx (WebDAV, TLS)
      systemd  # systemd-analyze checks the installed units
      scdoc man-db groff-base  # the man pages: built with scdoc, checked with man --warnings
      ninja-build  # the install test builds a project of kernels with ninja
      libunicorn-dev libelf-dev libdw-dev  # the lockstep SIMT emulator of a Vortex device (runtime/simt)
      gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf  # libgcc and libm the emulated kernels link
      binutils-riscv64-unknown-elf  # GNU ld, which links kernels' executables (as upstream Vortex's toolchain)
      lintian dpkg-dev  # the Debian package's checks (debian_package: lintian, dpkg-architecture)
      python3)  # upstream Vortex's config generator and vxbin.py, for conformance_upstream
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "bootstrap: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# build DIR [cmake args...]: optimized with debug info, and with assertions:
# RelWithDebInfo's flags without its -DNDEBUG, so that every assert() and
# vxd_fails_assert the tests reach is checked in this build too, not only
# in the sanitizer build
build() {
  local dir=$1; shift
  cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVORTEXD_WERROR=ON \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g" \
    -DVORTEXD_CORPUS_DIR="$corpus" -DVORTEXD_VORTEX_UPSTREAM_DIR="$upstream" "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
}

corpus_note() {
  if [ -f "$corpus/vortex-hip/metadata_test.mlir" ]; then
    echo "bootstrap: conformance suites conformance_layout, conformance_e2e and conformance_device" \
         "over $corpus added (ctest label conformance)"
  else
    echo "bootstrap: conformance suites conformance_layout, conformance_e2e and conformance_device" \
         "not added: no corpus at $corpus (set VORTEXD_CORPUS_DIR=DIR; docs/tests.md, \"Conformance corpus\")"
  fi
  if [ -f "$upstream/sw/kernel/src/vx_start.S" ]; then
    echo "bootstrap: conformance suite conformance_upstream over upstream Vortex's files at $upstream added"
  else
    echo "bootstrap: conformance suite conformance_upstream not added: no upstream Vortex files at $upstream" \
         "(set VORTEXD_VORTEX_UPSTREAM_DIR=DIR; docs/tests.md)"
  fi
}

# check BUILD_DIR [ctest args...]: runs the tests of BUILD_DIR in a
# temporary directory of their own (TMPDIR), so that what other processes
# make in /tmp meanwhile is not theirs; fails when they fail or leave
# anything behind in it (the tests clean up what they make).
check() {
  local dir=$1; shift
  local tmp rc=0 left
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/vortexd-tests-XXXXXX")
  chmod 711 "$tmp" # the tests that act as another user (nobody) reach their directories through it
  (cd "$dir" && TMPDIR="$tmp" ctest --output-on-failure "$@") || rc=$?
  left=$(find "$tmp" -mindepth 1 -maxdepth 1 2>/dev/null | sort)
  rm -rf "$tmp"
  if [ "$rc" -ne 0 ]; then return "$rc"; fi
  if [ -n "$left" ]; then
    echo "bootstrap: the tests left these behind:" >&2
    echo "$left" >&2
    return 1
  fi
}

case "$mode" in
test)
  corpus_note
  # the C sources follow .clang-format (Debian's clang-format 14)
  (cd "$root" && find bench cache client daemon lowering protocol runtime tests -name '*.[ch]' -print0 |
     xargs -0 clang-format --dry-run --Werror) || { echo "bootstrap: run clang-format -i on the files above" >&2; exit 1; }
  echo "bootstrap: sources follow .clang-format"
  build "$root/build"
  check "$root/build"
  if [ "${VORTEXD_SKIP_SANITIZERS:-0}" != 1 ]; then
    echo "bootstrap: ASan + UBSan build"
    build "$root/build-asan" -DVORTEXD_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      LSAN_OPTIONS=suppressions="$root/tests/lsan.supp" check "$root/build-asan"
    # Criterion cannot run under ThreadSanitizer: the daemon's threads are
    # driven from outside instead (tests/tsan.sh; tsan_pieces is a target of tests/)
    echo "bootstrap: ThreadSanitizer build of the daemon"
    cmake -S "$root" -B "$root/build-tsan" -DCMAKE_BUILD_TYPE=Debug -DVORTEXD_TSAN=ON -DVORTEXD_WERROR=ON \
      -DVORTEXD_TESTS=ON >/dev/null
    cmake --build "$root/build-tsan" -j "$jobs" --target vortexd vxc tsan_pieces
    bash "$root/tests/tsan.sh" "$root/build-tsan"
  fi
  ;;
check)
  # an already built tree's tests, as `test` runs them (tests/readme_commands.sh)
  shift
  check "$@"
  ;;
test-without-corpus)
  copy=$(mktemp -d /tmp/vortexd-alone-XXXXXX)
  trap 'rm -rf "$copy"' EXIT
  (cd "$root" && git ls-files -z | xargs -0 tar -cf - | tar -xf - -C "$copy")
  echo "bootstrap: testing a copy of the tree with no corpus reachable ($copy)"
  VORTEXD_CORPUS_DIR="$copy/no-corpus" VORTEXD_VORTEX_UPSTREAM_DIR="$copy/no-upstream" VORTEXD_SKIP_SANITIZERS=1 \
    bash "$copy/tests/bootstrap.sh" test
  ;;
demo)
  build "$root/build"
  exec bash "$root/tests/demo.sh" "$root/build"
  ;;
*)
  echo "usage: $0 demo|test|test-without-corpus|check BUILD_DIR [ctest args...]" >&2
  exit 64
  ;;
esac
