#!/usr/bin/env bash
# Build the scope supervisor program `pidguard-scope` (core/src/bin/pidguard-scope.rs) the way the
# packages ship it, and install it (mode 0755) into each DIR given:
#   release profile, linked with zig (`maturin zig cc`, the `ziglang` package in .venv: what
#   `maturin build --zig` links the wheel with) against glibc 2.17, the manylinux2014 floor, so
#   the one program serves the wheel, the Node gnu platform package and the C install on any
#   glibc >= 2.17. It calls only libc. Output under target/scope-glibc2.17/ (its own target
#   directory: another linker would make cargo rebuild the workspace's).
# usage: scripts/build-scope.sh DIR...
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
bash scripts/setup-python.sh
VPY=$ROOT/.venv/bin/python
"$VPY" -c 'import ziglang' 2>/dev/null || "$VPY" -m pip install --quiet --disable-pip-version-check ziglang
arch=$(uname -m)
target=$arch-unknown-linux-gnu
tdir=$ROOT/target/scope-glibc2.17
mkdir -p "$tdir"
wrapper=$tdir/zigcc-$arch-glibc2.17
printf '#!/bin/sh\nexec "%s" zig cc -- -target %s-linux-gnu.2.17 -g "$@"\n' "$ROOT/.venv/bin/maturin" "$arch" > "$wrapper"
chmod 0755 "$wrapper"
var=CARGO_TARGET_$(echo "$target" | tr 'a-z-' 'A-Z_')_LINKER
env PATH="$ROOT/.venv/bin:$PATH" "$var=$wrapper" CARGO_TARGET_DIR="$tdir" \
  cargo build --quiet --locked --release -p pidguard-core --bin pidguard-scope --target "$target"
prog=$tdir/$target/release/pidguard-scope
# The floor is checked, not assumed: no symbol version above GLIBC_2.17.
newest=$(objdump -T "$prog" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
if [ "$(printf '%s\nGLIBC_2.17\n' "$newest" | sort -V | tail -1)" != GLIBC_2.17 ]; then
  echo "build-scope: $prog needs $newest (above glibc 2.17)" >&2
  exit 1
fi
for d in "$@"; do
  install -D -m 0755 "$prog" "$d/pidguard-scope"
done
echo "build-scope: $prog ($newest at most, $(stat -c %s "$prog") bytes) -> ${*:-nowhere}"
