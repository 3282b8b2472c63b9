#!/usr/bin/env bash
# Build every artefact of a release into dist/, then check them (scripts/check-dist.py):
#
#   dist/pidguard-V-cp39-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl   (and aarch64)
#   dist/pidguard-V-cp39-abi3-musllinux_1_2_x86_64.whl                         (and aarch64)
#   dist/pidguard-V.tar.gz                      the sdist (pip builds pidguard-scope from it)
#   dist/npm/pidguard-V.tgz                     the main package, optionalDependencies as napi-rs
#   dist/npm/pidguard-linux-{x64,arm64}-{gnu,musl}-V.tgz   addon + pidguard-scope
#   dist/c/pidguard-V-TRIPLE.tar.gz             bin/pidguard, lib/libpidguard.so.V (soname .so.0,
#                                               symbol versions), .so.0/.so links, libpidguard.a,
#                                               lib/pidguard-scope, lib/pkgconfig/pidguard.pc,
#                                               include/pidguard.h, share/man/man1/pidguard.1
#   dist/crates/pidguard-{core,ffi-c,cli}-V.crate   `cargo package` (each verified by a build)
#   dist/SHA256SUMS, dist/MANIFEST.txt (sizes)
#
# Each target's programs are built once, in release, and every artefact of that target takes
# its pidguard-scope from that one build. Targets: x86_64/aarch64 × glibc/musl Linux.
#
# Toolchain (docs/release.md): Debian's rustc-web/cargo-web for every target — the host's with
# its prebuilt std, the other three with `-Zbuild-std` from rust-web-src (rustup cannot add
# targets on the build machines; RUSTC_BOOTSTRAP=1 for the unstable flag), std built once per
# target into target/dist-cross. Everything links with zig (PyPI `ziglang`, in
# .venv): glibc artefacts against glibc 2.17 (the manylinux2014 floor), musl artefacts
# dynamically against musl (`-C target-feature=-crt-static`: a Python extension or Node addon
# must share the process's libc; the programs then need /lib/ld-musl-ARCH.so.1, as on Alpine).
#
# usage: scripts/release.sh [--targets T1,T2,...]   (default: all four; a subset is checked
#        with --partial). Needs: scripts/setup-python.sh's .venv (maturin, ziglang), node/npm,
#        and for the cross targets `apt-get install rustc-web cargo-web rust-web-src`.
# CPU: about 3 release builds of the core (C+CLI, Node, Python) per target plus std for three
# targets; run it under `nice` on a shared machine.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
ALL=(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-unknown-linux-musl aarch64-unknown-linux-musl)
TARGETS=("${ALL[@]}")
if [ "${1:-}" = --targets ]; then
  IFS=, read -r -a TARGETS <<<"${2:?--targets needs a comma-separated list}"
fi
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
DIST=$ROOT/dist
HOST_TDIR=$ROOT/target/dist-host
CROSS_TDIR=$ROOT/target/dist-cross
ZIGDIR=$ROOT/target/dist-zig
t0=$SECONDS
say() { echo "== release: $* ($((SECONDS - t0)) s)"; }

bash scripts/setup-python.sh
VENV=$ROOT/.venv
"$VENV/bin/python" -c 'import ziglang' 2>/dev/null || "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check ziglang
# One compiler for every target: Debian's rustc-web (its std source for -Zbuild-std), never
# rustup's (whose std cannot be rebuilt here); RUSTC_BOOTSTRAP=1 for -Zbuild-std.
# .venv/bin first: `maturin zig cc` (the linker wrapper) finds zig through .venv's python.
DEB_ENV=(PATH="$VENV/bin:/usr/bin:$PATH" RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc RUSTC_BOOTSTRAP=1 CARGO=/usr/bin/cargo)
rm -rf "$DIST"
mkdir -p "$DIST/npm" "$DIST/c" "$DIST/crates" "$ZIGDIR"

zig_target() { # TRIPLE -> zig's target name
  case $1 in
    x86_64-unknown-linux-gnu) echo x86_64-linux-gnu.2.17 ;;
    aarch64-unknown-linux-gnu) echo aarch64-linux-gnu.2.17 ;;
    x86_64-unknown-linux-musl) echo x86_64-linux-musl ;;
    aarch64-unknown-linux-musl) echo aarch64-linux-musl ;;
    *) echo "release: unknown target $1" >&2; return 1 ;;
  esac
}
npm_platform() { # TRIPLE -> napi-rs platform
  case $1 in
    x86_64-unknown-linux-gnu) echo linux-x64-gnu ;;
    aarch64-unknown-linux-gnu) echo linux-arm64-gnu ;;
    x86_64-unknown-linux-musl) echo linux-x64-musl ;;
    aarch64-unknown-linux-musl) echo linux-arm64-musl ;;
  esac
}

# cargo for TRIPLE: prints nothing, sets the arrays CARGO_ENV and CARGO_ARGS and TDIR.
toolchain() {
  local t=$1 zt wrapper var
  zt=$(zig_target "$t")
  wrapper=$ZIGDIR/cc-$t
  printf '#!/bin/sh\nexec "%s" zig cc -- -target %s "$@"\n' "$VENV/bin/maturin" "$zt" >"$wrapper"
  chmod 0755 "$wrapper"
  var=CARGO_TARGET_$(echo "$t" | tr 'a-z-' 'A-Z_')_LINKER
  CARGO_ENV=(PATH="$VENV/bin:$PATH" "$var=$wrapper")
  case $t in *musl) CARGO_ENV+=("CARGO_TARGET_$(echo "$t" | tr 'a-z-' 'A-Z_')_RUSTFLAGS=-C target-feature=-crt-static") ;; esac
  [ -x /usr/bin/cargo ] && [ -f /usr/lib/rustlib/src/rust/library/Cargo.lock ] || {
    echo "release: needs Debian's rustc-web, cargo-web and rust-web-src (apt-get install -y rustc-web cargo-web rust-web-src)" >&2
    return 1
  }
  CARGO_BIN=/usr/bin/cargo
  if [ "$t" = "$(/usr/bin/rustc -vV | sed -n 's/^host: //p')" ]; then
    # The host's target: Debian's prebuilt std.
    TDIR=$HOST_TDIR
    CARGO_ARGS=()
  else
    TDIR=$CROSS_TDIR
    CARGO_ARGS=(-Zbuild-std=std,panic_abort)
  fi
  CARGO_ENV=("${DEB_ENV[@]}" CARGO_TARGET_DIR="$TDIR" "${CARGO_ENV[@]:1}")
  CC_WRAPPER=$wrapper
}

for t in "${TARGETS[@]}"; do
  plat=$(npm_platform "$t")
  toolchain "$t"
  out=$TDIR/$t/release
  say "$t: C library, CLI, pidguard-scope (cargo build --release)"
  env "${CARGO_ENV[@]}" "$CARGO_BIN" build --locked --release --target "$t" "${CARGO_ARGS[@]}" \
    -p pidguard-ffi-c -p pidguard-cli -p pidguard-core --lib --bins
  scope=$out/pidguard-scope

  say "$t: C tarball"
  name=pidguard-$VERSION-$t
  stage=$TDIR/stage/$name
  rm -rf "$stage"
  mkdir -p "$stage/bin" "$stage/lib/pkgconfig" "$stage/include" "$stage/share/man/man1"
  bash scripts/link-c.sh "$out/libpidguard.a" "$stage/lib/libpidguard.so.$VERSION" "$CC_WRAPPER"
  ln -s "libpidguard.so.$VERSION" "$stage/lib/libpidguard.so.0"
  ln -s libpidguard.so.0 "$stage/lib/libpidguard.so"
  install -m 0644 "$out/libpidguard.a" "$stage/lib/libpidguard.a"
  install -m 0755 "$scope" "$stage/lib/pidguard-scope"
  install -m 0755 "$out/pidguard" "$stage/bin/pidguard"
  install -m 0644 include/pidguard.h "$stage/include/pidguard.h"
  install -m 0644 cli/pidguard.1 "$stage/share/man/man1/pidguard.1"
  # Relocatable: the prefix is where the tarball was unpacked (pkg-config's ${pcfiledir}).
  sed -e 's|@PREFIX@|${pcfiledir}/../..|' -e "s|@VERSION@|$VERSION|" ffi-c/pidguard.pc.in >"$stage/lib/pkgconfig/pidguard.pc"
  tar -C "$TDIR/stage" --owner=0 --group=0 --numeric-owner --sort=name -czf "$DIST/c/$name.tar.gz" "$name"

  say "$t: Node addon (cargo build --release -p pidguard-node) and the npm packages"
  env "${CARGO_ENV[@]}" "$CARGO_BIN" build --locked --release --target "$t" "${CARGO_ARGS[@]}" -p pidguard-node
  env PIDGUARD_ADDON="$out/libpidguard_node.so" PIDGUARD_SCOPE_PROGRAM="$scope" \
    node node/scripts/build.js --target "$t" --pack "$DIST/npm"

  say "$t: Python wheel (maturin build --release --zig)"
  case $t in *gnu) compat=manylinux2014 ;; *musl) compat=musllinux_1_2 ;; esac
  # maturin sets its own zig linker; the program comes from the build above (py/build.rs copies it).
  mat_env=()
  for e in "${CARGO_ENV[@]}"; do case $e in CARGO_TARGET_*_LINKER=*) ;; *) mat_env+=("$e") ;; esac; done
  mat_args=()
  [ ${#CARGO_ARGS[@]} = 0 ] || mat_args=("${CARGO_ARGS[@]}")
  (cd py && env "${mat_env[@]}" PIDGUARD_SCOPE_PROGRAM="$scope" \
    "$VENV/bin/maturin" build --release --locked --target "$t" --compatibility "$compat" --zig --out "$DIST" "${mat_args[@]}")
done

say "sdist (maturin sdist)"
(cd py && "$VENV/bin/maturin" sdist --out "$DIST")

say "crates (cargo package: each packaged crate is built from its .crate)"
# One command for all three: cargo resolves pidguard-core for the other two from the packages it
# just made (a local registry overlay), as crates.io will once pidguard-core is published.
env "${DEB_ENV[@]}" CARGO_TARGET_DIR="$HOST_TDIR" /usr/bin/cargo package --locked -p pidguard-core -p pidguard-ffi-c -p pidguard-cli
cp "$HOST_TDIR"/package/pidguard-{core,ffi-c,cli}-"$VERSION".crate "$DIST/crates/"

partial=()
[ ${#TARGETS[@]} = ${#ALL[@]} ] || partial=(--partial)
(cd "$DIST" && find . -type f ! -name SHA256SUMS ! -name MANIFEST.txt -printf '%P\n' | sort | xargs sha256sum >SHA256SUMS)
(cd "$DIST" && find . -type f ! -name SHA256SUMS ! -name MANIFEST.txt -printf '%s\t%P\n' | sort -k2 >MANIFEST.txt)
say "check (scripts/check-dist.py ${partial[*]} dist)"
"$VENV/bin/python" scripts/check-dist.py "${partial[@]}" "$DIST"
cat "$DIST/MANIFEST.txt"
say "done: dist/ for ${TARGETS[*]}"
