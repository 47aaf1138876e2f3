#!/usr/bin/env bash
# The README's two commands on a shared machine: with another vortexd
# already serving the default socket, the demo runs with a daemon, socket
# and cache of its own, leaves the other daemon alone (it compiles nothing
# for the demo and still serves after it) and stops exactly its own; the
# test command's check of leftovers looks only at the directory its run
# made (another process's files beside it do not fail it; a test that
# leaves a file does).  Usage: tests/readme_commands.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
root=$(cd "$2" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/vxd-readme-XXXXXX")
foreign=
cleanup() {
  if [ -n "$foreign" ]; then
    "$build/vxc" --no-spawn stop >/dev/null 2>&1 || kill -TERM "$foreign" 2>/dev/null || true
    wait "$foreign" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "readme_commands: $*" >&2; exit 1; }

# a user's environment of the test's own: the default socket and cache live here
mkdir -m 700 "$work/run" "$work/home"
export XDG_RUNTIME_DIR="$work/run" HOME="$work/home" XDG_CACHE_HOME="$work/home/.cache" \
  XDG_CONFIG_HOME="$work/home/.config" TMPDIR="$work"
unset VORTEXD_SOCKET VORTEXD_CACHE_DIR VORTEXD_CONFIG VORTEXD_TARGET

# another vortexd, serving the default socket
"$build/vortexd" --idle-timeout 0 2>"$work/foreign.log" &
foreign=$!
for _ in $(seq 300); do
  "$build/vxc" --no-spawn stats >/dev/null 2>&1 && break
  kill -0 "$foreign" 2>/dev/null || { cat "$work/foreign.log" >&2; fail "the other vortexd did not start"; }
  sleep 0.1
done

# 1. the demo
bash "$root/tests/demo.sh" "$build" >"$work/demo.out" 2>&1 || { cat "$work/demo.out" >&2; fail "the demo failed"; }
grep -q "^demo: a vortexd of its own at $work/vortexd-demo-" "$work/demo.out" ||
  { cat "$work/demo.out" >&2; fail "the demo did not use a daemon of its own"; }
grep -qF "[1,  3,  5,  7,  9,  11,  13,  15]" "$work/demo.out" ||
  { cat "$work/demo.out" >&2; fail "the demo's vxc run did not print saxpy's result"; }
stats=$("$build/vxc" --no-spawn stats) || fail "the other vortexd no longer serves after the demo"
echo "$stats" | grep -Eq '^misses +0$' || { echo "$stats" >&2; fail "the demo compiled through the other vortexd"; }
kill -0 "$foreign" || fail "the demo stopped the other vortexd"
if compgen -G "$work/vortexd-demo-*" >/dev/null; then fail "the demo left its directory behind"; fi

# 2. the test command's leftover check, on two small trees of tests
mkdir "$work/clean" "$work/leaky"
cat >"$work/clean/CTestTestfile.cmake" <<'T'
add_test(clean "/bin/sh" "-c" "touch \"$ENV{TMPDIR}/vxt-mine\" && rm \"$ENV{TMPDIR}/vxt-mine\"")
T
cat >"$work/leaky/CTestTestfile.cmake" <<'T'
add_test(leaky "/bin/sh" "-c" "mkdir \"$ENV{TMPDIR}/vxt-left\"")
T
touch "$work/vxt-another-process" # another process's file, beside the run's directory
bash "$root/tests/bootstrap.sh" check "$work/clean" >"$work/clean.out" 2>&1 ||
  { cat "$work/clean.out" >&2; fail "a clean run failed the leftover check"; }
if bash "$root/tests/bootstrap.sh" check "$work/leaky" >"$work/leaky.out" 2>&1; then
  fail "a test that leaves a file passed the leftover check"
fi
grep -q "vxt-left" "$work/leaky.out" || { cat "$work/leaky.out" >&2; fail "the leftover is not named"; }
echo "readme_commands: ok"
