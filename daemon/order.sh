#!/bin/bash
# order.sh - writes daemon/vortexd.order, the order in which the linker lays
# out vortexd's functions (lld --symbol-ordering-file).
#
#   bash daemon/order.sh BUILD_DIR            (needs valgrind)
#
# Why: vortexd carries ~55 MB of code, of which a start and a compile run
# ~8 MB spread over all of it.  Every page of it a process touches is a page
# fault (and, for a worker, again after its fork), so a start costs in
# proportion to how scattered those functions are.  Placing them together
# makes `vortexd --version`, a cold start and a worker's first compile touch
# fewer pages.  Nothing here changes what vortexd computes: a symbol missing
# from the file (or from the binary) is laid out where it would be anyway.
#
# How: callgrind lists every function that ran in
#   1. `vortexd --version`;
#   2. a daemon (1 worker) serving compiles of examples/*.mlir for every
#      target, each again as a cache hit, and a module of 40 kernels (its
#      pieces and their link), then stopped;
#   3. that daemon's worker and the processes it forks.
# The file lists (1), then what (2) adds, then what (3) adds, each sorted,
# keeping only functions of vortexd's own symbol table.  Run it again when
# LLVM or the lowering changes much; a stale file only costs speed.
set -euo pipefail
build=${1:?usage: order.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
command -v valgrind >/dev/null || { echo "order.sh: valgrind is needed (apt-get install valgrind)" >&2; exit 1; }
export LC_ALL=C

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -m 700 "$tmp/s" "$tmp/c" "$tmp/bin" "$tmp/out"
# Valgrind 3.19 cannot read the DWARF 5 clang writes: run a copy without it.
strip --strip-debug -o "$tmp/bin/vortexd" "$build/vortexd"
cp "$build/vxc" "$tmp/bin/vxc"
grind=(valgrind -q --tool=callgrind --demangle=no --dump-instr=no)

"${grind[@]}" --callgrind-out-file="$tmp/out/version.%p" "$tmp/bin/vortexd" --version >/dev/null

"${grind[@]}" --trace-children=yes --callgrind-out-file="$tmp/out/daemon.%p" "$tmp/bin/vortexd" \
  --socket "$tmp/s/s.sock" --cache-dir "$tmp/c" --workers 1 --idle-timeout 0 2>"$tmp/daemon.log" &
daemon=$! # valgrind runs the daemon as this process: its file is daemon.$daemon
for _ in $(seq 600); do [ -S "$tmp/s/s.sock" ] && break; sleep 0.1; done
[ -S "$tmp/s/s.sock" ] || { cat "$tmp/daemon.log" >&2; exit 1; }
# (vxc notes that the daemon's executable is valgrind's, not the vortexd beside it)
vxc() { "$tmp/bin/vxc" --socket "$tmp/s/s.sock" "$@" 2>"$tmp/vxc.err" || { cat "$tmp/vxc.err" >&2; return 1; }; }
for f in "$repo"/examples/*.mlir; do
  for t in vortex2-rv32 vortex2-rv64 vortex3-rv32 vortex3-rv64; do
    vxc compile "$f" --target "$t" -o "$tmp/k.o"
    vxc compile "$f" --target "$t" -o "$tmp/k.o"
  done
done
"$build/bench/vxd_scale" --print 40 >"$tmp/m40.mlir"
vxc compile "$tmp/m40.mlir" -o "$tmp/k.o"
vxc stop >/dev/null
wait "$daemon"

# Each callgrind file names the functions that ran as "fn=(N) NAME" or
# "cfn=(N) NAME" the first time it mentions them.
names() { sed -nE 's/^c?fn=\([0-9]+\) (.+)$/\1/p' "$@" | sort -u; }
nm --defined-only "$tmp/bin/vortexd" | awk '$2 ~ /^[tTwW]$/ {print $3}' | sort -u >"$tmp/text"
names "$tmp"/out/version.* | comm -12 - "$tmp/text" >"$tmp/v"
names "$tmp/out/daemon.$daemon" | comm -12 - "$tmp/text" | comm -23 - "$tmp/v" >"$tmp/d"
find "$tmp/out" -name 'daemon.*' ! -name "daemon.$daemon" -print0 | xargs -0 cat | names | comm -12 - "$tmp/text" |
  comm -23 - <(sort -u "$tmp/v" "$tmp/d") >"$tmp/w"

out="$here/vortexd.order"
{
  echo "# vortexd's functions in the order lld lays them out (--symbol-ordering-file)."
  echo "# Written by daemon/order.sh for $("$build/vortexd" --version | sed -n 3p | cut -d';' -f1 | tr = ' ');"
  echo "# $(wc -l <"$tmp/v") run by --version, $(wc -l <"$tmp/d") more by a daemon's start and requests,"
  echo "# $(wc -l <"$tmp/w") more by its worker's compiles."
  cat "$tmp/v" "$tmp/d" "$tmp/w"
} >"$out"
echo "order.sh: $out: $(grep -vc '^#' "$out") functions"
