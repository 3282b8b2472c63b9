#!/usr/bin/env bash
# Link libpidguard.so from the static library cargo builds (ffi-c's staticlib), with the soname
# libpidguard.so.0 and the symbol versions of ffi-c/pidguard.map (every exported pidguard_
# function at PIDGUARD_0.1; nothing else exported).
#
# Why not cargo's cdylib: rustc hands the linker its own, anonymous version script listing the
# exported names, and an anonymous version tag cannot be combined with named ones (GNU ld
# refuses; lld lets the anonymous one win, so the symbols stay unversioned). The static library
# holds the same code; linking it whole into a shared object with our script gives the versions.
#
# usage: scripts/link-c.sh LIBPIDGUARD.A OUT.so [CC [CC-ARGS...]]
#   CC defaults to cc (this machine); scripts/release.sh passes `maturin zig cc -- -target ...`.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: scripts/link-c.sh LIBPIDGUARD.A OUT.so [CC [CC-ARGS...]]" >&2; exit 2; }
archive=$1 out=$2
shift 2
[ $# -gt 0 ] || set -- cc
mkdir -p "$(dirname "$out")"
"$@" -shared -o "$out" -Wl,-soname,libpidguard.so.0 -Wl,--version-script="$PWD/ffi-c/pidguard.map" \
  -Wl,--gc-sections -Wl,-z,relro,-z,now -Wl,--whole-archive "$archive" -Wl,--no-whole-archive \
  -lpthread -ldl -lm -lrt -lutil -lc
