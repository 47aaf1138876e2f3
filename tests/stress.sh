#!/usr/bin/env bash
# The test suite again and again on a machine kept busy: what a shared CI
# runner does to tests that race the clock.  Each round runs the suites of
# BUILD_DIR as the test command does (tests/bootstrap.sh check: a TMPDIR of
# their own, nothing left behind) while stress-ng keeps HOGS CPU hogs
# running (default 4: twice the cores of the machines this project runs
# on); the script fails at the first round that fails.
#   bash tests/stress.sh [BUILD_DIR] [ROUNDS] [ctest args...]
#     ROUNDS default 20; HOGS=N for another load; e.g.
#     bash tests/stress.sh build 20 -R 'test_(hardening|pieces|remote|e2e)'
#     bash tests/stress.sh build 20 -j2   (the whole suite, two tests at a time)
# Needs stress-ng (Debian's package of that name).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
rounds=${2:-20}
shift $(($# < 2 ? $# : 2))
command -v stress-ng >/dev/null || { echo "stress.sh: needs stress-ng (apt-get install stress-ng)" >&2; exit 2; }
hogs=${HOGS:-4}
stress-ng --cpu "$hogs" --cpu-method matrixprod --timeout 0 --quiet &
hog=$!
trap 'kill -TERM "$hog" 2>/dev/null; wait "$hog" 2>/dev/null || true' EXIT
start=$(date +%s)
for r in $(seq "$rounds"); do
  t0=$(date +%s)
  if ! VORTEXD_SKIP_SANITIZERS=1 bash "$root/tests/bootstrap.sh" check "$build" "$@" >"$build/stress-round.log" 2>&1; then
    echo "stress.sh: round $r of $rounds failed under $hogs CPU hogs ($build/stress-round.log):" >&2
    grep -E "Failed|FAILED|\*\*\*" "$build/stress-round.log" >&2 || tail -20 "$build/stress-round.log" >&2
    exit 1
  fi
  echo "stress.sh: round $r of $rounds passed ($(($(date +%s) - t0)) s)"
done
rm -f "$build/stress-round.log"
echo "stress.sh: $rounds of $rounds rounds passed under $hogs CPU hogs in $(($(date +%s) - start)) s"
