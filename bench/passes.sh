#!/usr/bin/env bash
# What LLVM's O2 pipeline and code generation cost on the corpus kernels,
# pass by pass, and whether a cheaper pipeline gives the same .text.
#   bash bench/passes.sh BUILD CORPUS_DIR [RUNS]
# 1. per-pass times: vxl_passes with LLVM's -time-passes over every corpus
#    file and target, summed by pass name (bench/passes_report.py);
# 2. candidates: each compiles every file for every target, its objects'
#    .text compared with O2's (llvm-objcopy-22) and its CPU time (the sum
#    of per-compile medians) paired with O2's, alternating, RUNS rounds
#    (default 3).  A candidate is worth a keyed option only with .text
#    identical everywhere and >= 15% less time.
set -euo pipefail
build=$1
corpus=$2
runs=${3:-3}
bin=$build/bench/vxl_passes
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/vxd-passes-XXXXXX")
trap 'rm -rf "$work"' EXIT
mapfile -t files < <(find "$corpus" -name '*.mlir' | LC_ALL=C sort)

echo "== per pass (O2, every corpus file and target, 4 runs each)"
"$bin" --runs 4 --llvm -time-passes --llvm "-info-output-file=$work/report.txt" "${files[@]}" | tail -1
python3 "$root/bench/passes_report.py" "$work/report.txt" 25

# name | vxl_passes options
candidates=(
  "no vectorizers|--llvm -vectorize-loops=false --llvm -vectorize-slp=false --llvm -interleave-loops=false"
  "O1|--O 1"
)
total() { "$bin" --runs 3 "$@" "${files[@]}" | tail -1 | awk '{print $2}'; }
mkdir "$work/o2"
"$bin" --runs 1 --objects "$work/o2" "${files[@]}" >/dev/null
for c in "${candidates[@]}"; do
  name=${c%%|*}
  read -r -a opts <<<"${c#*|}"
  rm -rf "$work/c" && mkdir "$work/c"
  "$bin" --runs 1 --objects "$work/c" "${opts[@]}" "${files[@]}" >/dev/null
  same=0 n=0
  for o in "$work"/o2/*.o; do
    n=$((n + 1))
    llvm-objcopy-22 -O binary --only-section=.text "$o" "$work/a.text"
    llvm-objcopy-22 -O binary --only-section=.text "$work/c/$(basename "$o")" "$work/b.text"
    cmp -s "$work/a.text" "$work/b.text" && same=$((same + 1))
  done
  ratios=()
  for _ in $(seq "$runs"); do
    a=$(total) b=$(total "${opts[@]}")
    ratios+=("$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", b / a }')")
  done
  sorted=$(printf '%s\n' "${ratios[@]}" | sort -n | tr '\n' ' ')
  echo "== $name: .text identical in $same of $n objects; time / O2 per round (sorted): $sorted"
done
