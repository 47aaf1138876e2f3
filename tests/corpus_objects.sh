#!/usr/bin/env bash
# The object of every corpus file for every target, by its SHA-256, against
# the list kept in tests/corpus_objects.txt: a change that was to keep
# behaviour (a refactoring, a build flag) must keep every byte; a change
# that means to change objects updates the list in the same commit
# (--update), so the diff shows which objects moved.
#   bash tests/corpus_objects.sh BUILD_DIR CORPUS_DIR [--update]
# Lines: "FILE TARGET SHA256", or "FILE TARGET refused" for a file the
# lowering refuses for that target.  Objects carry no path and no time
# (docs/cache.md), so the list is the same on every machine with the same
# LLVM packages.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$1
corpus=$2
list=$root/tests/corpus_objects.txt
work=$(mktemp -d "${TMPDIR:-/tmp}/vxt-objects-XXXXXX")
pid=
cleanup() {
  [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -m 700 "$work/run"
"$build/vortexd" --socket "$work/run/s.sock" --cache-dir "$work/cache" 2>"$work/daemon.log" &
pid=$!
for _ in $(seq 2400); do # until it listens (at most 120 s on a loaded machine)
  [ -S "$work/run/s.sock" ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$work/daemon.log" >&2; exit 1; }
  sleep 0.05
done
(cd "$corpus" && find . -name '*.mlir' | LC_ALL=C sort) | while read -r f; do
  for target in vortex2-rv32 vortex2-rv64 vortex3-rv32 vortex3-rv64; do
    out=$work/out.o
    rm -f "$out"
    if "$build/vxc" --no-spawn --socket "$work/run/s.sock" compile --target "$target" -o "$out" \
      "$corpus/$f" >/dev/null 2>&1; then
      echo "${f#./} $target $(sha256sum "$out" | cut -d' ' -f1)"
    else
      echo "${f#./} $target refused"
    fi
  done
done >"$work/now.txt"
if [ "${3:-}" = --update ]; then
  cp "$work/now.txt" "$list"
  echo "corpus_objects: $(wc -l <"$list") objects written to $list"
  exit 0
fi
if ! diff -u "$list" "$work/now.txt"; then
  echo "corpus_objects: objects differ from tests/corpus_objects.txt (above: - kept, + now);" \
       "a change meant to change them updates the list: bash tests/corpus_objects.sh BUILD CORPUS --update" >&2
  exit 1
fi
echo "corpus_objects: $(grep -vc refused "$list") objects and $(grep -c refused "$list") refusals as kept"
