#!/usr/bin/env bash
# The installed man pages and bash completion, checked against the programs:
# man(1) formats each page without a warning, vortexd.conf(5) documents
# every configuration key `vxc config` knows, vxc(1) and the completion
# know every command `vxc --help` lists, and the completion answers.
#   man_pages.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
fail=0
for page in vxc.1 vortexd.8 vortexd.conf.5; do
  warnings=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$build/man/$page" 2>&1 >/dev/null)
  if [ -n "$warnings" ]; then
    echo "man_pages: $page: $warnings" >&2
    fail=1
  fi
done
conf=$(MANWIDTH=200 man -l "$build/man/vortexd.conf.5" 2>/dev/null)
keys=$(VORTEXD_CONFIG=/nonexistent "$build/vxc" config | sed -n 's/^\([a-z_]*\) *=.*/\1/p')
[ -n "$keys" ] || { echo "man_pages: vxc config listed no keys" >&2; exit 1; }
for key in $keys; do
  grep -q "^ *$key (VORTEXD_" <<<"$conf" || { echo "man_pages: vortexd.conf(5) lacks the key $key" >&2; fail=1; }
done
# the keys the page documents are keys
for key in $(sed -n 's/^ *\([a-z_]*\) (VORTEXD_.*/\1/p' <<<"$conf"); do
  grep -qx "$key" <<<"$keys" || { echo "man_pages: vortexd.conf(5) documents an unknown key $key" >&2; fail=1; }
done
vxc_page=$(MANWIDTH=200 man -l "$build/man/vxc.1" 2>/dev/null)
commands=$("$build/vxc" --help | sed -n '/^commands:/,/^$/s/^  \([a-z-]*\) .*/\1/p')
[ -n "$commands" ] || { echo "man_pages: vxc --help listed no commands" >&2; exit 1; }
for c in $commands; do
  grep -q "^ *$c\b" <<<"$vxc_page" || { echo "man_pages: vxc(1) lacks the command $c" >&2; fail=1; }
  got=$(bash -c "source '$src/client/vxc.bash'; COMP_WORDS=(vxc '${c:0:2}'); COMP_CWORD=1; _vxc; echo \"\${COMPREPLY[*]}\"")
  grep -qw -- "$c" <<<"$got" || { echo "man_pages: completing '${c:0:2}' gave '$got', not $c" >&2; fail=1; }
done
got=$(bash -c "source '$src/client/vxc.bash'; COMP_WORDS=(vxc compile --warp); COMP_CWORD=2; _vxc; echo \"\${COMPREPLY[*]}\"")
[ "$got" = "--warp-size" ] || { echo "man_pages: completing 'compile --warp' gave '$got'" >&2; fail=1; }
[ $fail = 0 ] && echo "man_pages: 3 pages format cleanly; $(wc -w <<<"$keys") keys and $(wc -w <<<"$commands") commands documented and completed"
exit $fail
