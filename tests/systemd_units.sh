#!/usr/bin/env bash
# Installs the build into a scratch prefix and checks the systemd units
# generated there: `systemd-analyze verify` on the system and the user
# units, and `systemd-analyze security` (offline) at most 2.5 for both
# services.  Prints the exposure figures.   systemd_units.sh BUILD_DIR
set -euo pipefail
build=$1
prefix=$(mktemp -d "${TMPDIR:-/tmp}"/vxd-units-XXXXXX)
rt=$(mktemp -d "${TMPDIR:-/tmp}"/vxd-units-rt-XXXXXX) # a runtime directory for the --user checks
trap 'rm -rf "$prefix" "$rt"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
units=$prefix/lib/systemd
grep -q "^ExecStart=$prefix/bin/vortexd " "$units/system/vortexd.service" || {
  echo "ExecStart does not name the install prefix" >&2; exit 1; }
test -f "$prefix/lib/sysusers.d/vortexd.conf"
# the units' Documentation= names man pages: found where this install put them
export MANPATH=$prefix/share/man
systemd-analyze verify "$units/system/vortexd.socket" "$units/system/vortexd.service"
XDG_RUNTIME_DIR=$rt systemd-analyze --user verify "$units/user/vortexd.socket" "$units/user/vortexd.service"
systemd-analyze security --offline=yes --threshold=25 "$units/system/vortexd.service" | tail -1
XDG_RUNTIME_DIR=$rt systemd-analyze security --offline=yes --user --threshold=25 \
  "$units/user/vortexd.service" | tail -1
