#!/usr/bin/env bash
# Build the C library and install it under PREFIX (default /usr/local):
#   PREFIX/lib/libpidguard.so.VERSION (soname libpidguard.so.0, symbol versions PIDGUARD_0.1:
#   linked from the static library by scripts/link-c.sh), libpidguard.so.0 -> it,
#   libpidguard.so -> libpidguard.so.0,
#   PREFIX/lib/libpidguard.a, PREFIX/include/pidguard.h, PREFIX/lib/pkgconfig/pidguard.pc,
#   PREFIX/lib/pidguard-scope (the scope supervisor program, 0755: libpidguard looks for it beside
#   itself, docs/design.md#scopes)
# usage: scripts/install-c.sh [PREFIX] [--release]
set -euo pipefail
cd "$(dirname "$0")/.."
prefix="${1:-/usr/local}"
profile=debug
flag=()
if [ "${2:-}" = "--release" ]; then profile=release; flag=(--release); fi
prefix="$(mkdir -p "$prefix" && cd "$prefix" && pwd)"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)"
echo "building libpidguard ($profile; cargo build --locked -p pidguard-ffi-c: a first build takes a minute or two) ..."
cargo build -q --locked -p pidguard-ffi-c "${flag[@]}"
cargo build -q --locked -p pidguard-core --bin pidguard-scope "${flag[@]}"
install -d "$prefix/lib/pkgconfig" "$prefix/include"
bash scripts/link-c.sh "target/$profile/libpidguard.a" "target/$profile/versioned/libpidguard.so.$version"
install -m 0755 "target/$profile/versioned/libpidguard.so.$version" "$prefix/lib/libpidguard.so.$version"
ln -sfn "libpidguard.so.$version" "$prefix/lib/libpidguard.so.0"
ln -sfn "libpidguard.so.0" "$prefix/lib/libpidguard.so"
install -m 0644 "target/$profile/libpidguard.a" "$prefix/lib/libpidguard.a"
install -m 0755 "target/$profile/pidguard-scope" "$prefix/lib/pidguard-scope"
install -m 0644 include/pidguard.h "$prefix/include/pidguard.h"
sed -e "s|@PREFIX@|$prefix|" -e "s|@VERSION@|$version|" ffi-c/pidguard.pc.in > "$prefix/lib/pkgconfig/pidguard.pc"
echo "installed libpidguard $version under $prefix"
