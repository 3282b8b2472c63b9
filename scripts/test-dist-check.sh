#!/usr/bin/env bash
# The release check's own test: scripts/check-dist.py against a small dist/ of real ELF files
# built here for the four targets (a two-line C program and shared object per target, linked by
# zig as the release links: glibc 2.17 or musl), laid out exactly as scripts/release.sh lays out
# a release. The complete set must pass; each deliberately wrong copy must fail, naming what is
# wrong: an aarch64 wheel holding an x86_64 extension, a platform package without its
# pidguard-scope, a manylinux wheel needing a glibc above 2.17, a musl package holding a glibc
# program, a C library without symbol versions, an extra file, a missing target, an sdist
# holding a binary, a main package without its optionalDependencies.
#
# The full release build (scripts/release.sh: ~12 release builds and std for three targets) is
# not run here: it takes far longer than the test command's budget on 2 cores. zig's first
# compile per target builds its libc stubs (a minute or more each, cached in ~/.cache/zig).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
bash scripts/setup-python.sh
VPY=$ROOT/.venv/bin/python
"$VPY" -c 'import ziglang' 2>/dev/null || "$VPY" -m pip install --quiet --disable-pip-version-check ziglang
W=$(mktemp -d /tmp/pidguard-distcheck-XXXXXX)
trap 'rm -rf "$W"' EXIT
V=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "ok   - $1"; }
bad() { fail=$((fail + 1)); echo "FAIL - $1"; }
zcc() { "$VPY" -m ziglang cc "$@"; }

printf 'int main(void) { return 0; }\n' >"$W/prog.c"
printf 'int pidguard_answer(void) { return 42; }\nint other_answer(void) { return 1; }\n' >"$W/lib.c"
printf 'PIDGUARD_0.1 { global: pidguard_*; local: *; };\n' >"$W/lib.map"
declare -A ZT=([x86_64-unknown-linux-gnu]=x86_64-linux-gnu.2.17 [aarch64-unknown-linux-gnu]=aarch64-linux-gnu.2.17
  [x86_64-unknown-linux-musl]=x86_64-linux-musl [aarch64-unknown-linux-musl]=aarch64-linux-musl)
declare -A PLAT=([x86_64-unknown-linux-gnu]=linux-x64-gnu [aarch64-unknown-linux-gnu]=linux-arm64-gnu
  [x86_64-unknown-linux-musl]=linux-x64-musl [aarch64-unknown-linux-musl]=linux-arm64-musl)
declare -A WHEEL=([x86_64-unknown-linux-gnu]=manylinux_2_17_x86_64.manylinux2014_x86_64
  [aarch64-unknown-linux-gnu]=manylinux_2_17_aarch64.manylinux2014_aarch64
  [x86_64-unknown-linux-musl]=musllinux_1_2_x86_64 [aarch64-unknown-linux-musl]=musllinux_1_2_aarch64)
for t in "${!ZT[@]}"; do
  mkdir -p "$W/bin/$t"
  zcc -target "${ZT[$t]}" -O2 -o "$W/bin/$t/prog" "$W/prog.c"
  zcc -target "${ZT[$t]}" -O2 -shared -fPIC -Wl,-soname,libpidguard.so.0 -Wl,--version-script="$W/lib.map" -o "$W/bin/$t/lib.so" "$W/lib.c"
  zcc -target "${ZT[$t]}" -O2 -shared -fPIC -Wl,-soname,libpidguard.so.0 -o "$W/bin/$t/lib-plain.so" "$W/lib.c"
done
# A program of this machine's glibc (above 2.17: Debian 12 has 2.36; __libc_start_main@GLIBC_2.34).
cc -O2 -o "$W/bin/host-prog" "$W/prog.c"

make_wheel() { # DIST TRIPLE EXT SCOPE
  "$VPY" - "$@" "$V" <<'PY'
import sys, zipfile
dist, t, ext, scope, v = sys.argv[1:]
tags = {"x86_64-unknown-linux-gnu": "manylinux_2_17_x86_64.manylinux2014_x86_64",
        "aarch64-unknown-linux-gnu": "manylinux_2_17_aarch64.manylinux2014_aarch64",
        "x86_64-unknown-linux-musl": "musllinux_1_2_x86_64", "aarch64-unknown-linux-musl": "musllinux_1_2_aarch64"}[t]
name = f"{dist}/pidguard-{v}-cp39-abi3-{tags}.whl"
with zipfile.ZipFile(name, "w") as z:
    z.writestr("pidguard/__init__.py", "")
    z.write(ext, "pidguard/_pidguard.abi3.so")
    if scope != "-":
        i = zipfile.ZipInfo("pidguard/pidguard-scope"); i.external_attr = 0o100755 << 16
        z.writestr(i, open(scope, "rb").read())
    wheel = "Wheel-Version: 1.0\n" + "".join(f"Tag: cp39-abi3-{p}\n" for p in tags.split("."))
    z.writestr(f"pidguard-{v}.dist-info/WHEEL", wheel)
PY
}
make_npm_platform() { # DIST TRIPLE ADDON SCOPE
  local dist=$1 t=$2 p=${PLAT[$2]} s=$W/stage-npm-$2
  rm -rf "$s"; mkdir -p "$s/package"
  local cpu=${p#linux-}; cpu=${cpu%-*}; local libc=${p##*-}; [ "$libc" = gnu ] && libc=glibc
  printf '{"name":"pidguard-%s","version":"%s","os":["linux"],"cpu":["%s"],"libc":["%s"],"main":"pidguard.%s.node","files":["pidguard.%s.node","pidguard-scope"]}\n' \
    "$p" "$V" "$cpu" "$libc" "$p" "$p" >"$s/package/package.json"
  echo readme >"$s/package/README.md"
  install -m 0644 "$3" "$s/package/pidguard.$p.node"
  [ "$4" = - ] || install -m 0755 "$4" "$s/package/pidguard-scope"
  tar -C "$s" -czf "$dist/npm/pidguard-$p-$V.tgz" package
}
make_c() { # DIST TRIPLE LIB PROG
  local n=pidguard-$V-$2 s=$W/stage-c-$2
  rm -rf "$s"; mkdir -p "$s/$n/bin" "$s/$n/lib/pkgconfig" "$s/$n/include" "$s/$n/share/man/man1"
  install -m 0755 "$3" "$s/$n/lib/libpidguard.so.$V"
  ln -s "libpidguard.so.$V" "$s/$n/lib/libpidguard.so.0"; ln -s libpidguard.so.0 "$s/$n/lib/libpidguard.so"
  echo '!<arch>' >"$s/$n/lib/libpidguard.a"
  install -m 0755 "$4" "$s/$n/lib/pidguard-scope"; install -m 0755 "$4" "$s/$n/bin/pidguard"
  cp include/pidguard.h "$s/$n/include/"; cp cli/pidguard.1 "$s/$n/share/man/man1/"
  printf 'Name: pidguard\nVersion: %s\n' "$V" >"$s/$n/lib/pkgconfig/pidguard.pc"
  tar -C "$s" -czf "$1/c/$n.tar.gz" "$n"
}
make_good() { # DIST
  local d=$1 t
  rm -rf "$d"; mkdir -p "$d/npm" "$d/c" "$d/crates"
  for t in "${!ZT[@]}"; do
    make_wheel "$d" "$t" "$W/bin/$t/lib.so" "$W/bin/$t/prog"
    make_npm_platform "$d" "$t" "$W/bin/$t/lib.so" "$W/bin/$t/prog"
    make_c "$d" "$t" "$W/bin/$t/lib.so" "$W/bin/$t/prog"
  done
  local s=$W/stage-main; rm -rf "$s"; mkdir -p "$s/package"
  printf '{"name":"pidguard","version":"%s","optionalDependencies":{"pidguard-linux-x64-gnu":"%s","pidguard-linux-arm64-gnu":"%s","pidguard-linux-x64-musl":"%s","pidguard-linux-arm64-musl":"%s"}}\n' \
    "$V" "$V" "$V" "$V" "$V" >"$s/package/package.json"
  for f in index.js index.mjs index.d.ts; do echo '//' >"$s/package/$f"; done
  tar -C "$s" -czf "$d/npm/pidguard-$V.tgz" package
  s=$W/stage-sdist; rm -rf "$s"; mkdir -p "$s/pidguard-$V/py" "$s/pidguard-$V/core/src/bin" "$s/pidguard-$V/python/pidguard"
  touch "$s/pidguard-$V/pyproject.toml" "$s/pidguard-$V/py/build.rs" "$s/pidguard-$V/core/src/bin/pidguard-scope.rs" "$s/pidguard-$V/python/pidguard/__init__.py"
  tar -C "$s" -czf "$d/pidguard-$V.tar.gz" "pidguard-$V"
  for c in core ffi-c cli; do echo crate >"$d/crates/pidguard-$c-$V.crate"; done
}
expect() { # WHAT PATTERN DIST [ARGS]: the check fails and says PATTERN
  local what=$1 pat=$2 d=$3; shift 3
  local out rc=0
  out=$("$VPY" scripts/check-dist.py "$@" "$d" 2>&1) || rc=$?
  if [ $rc = 1 ] && grep -qE "$pat" <<<"$out"; then
    ok "$what: the check fails ($(grep -E "$pat" <<<"$out" | head -1))"
  else
    bad "$what: expected failure matching [$pat], got exit $rc: $out"
  fi
}

G=$W/good
make_good "$G"
if out=$("$VPY" scripts/check-dist.py "$G" 2>&1); then ok "the complete set passes: $(tail -1 <<<"$out")"; else bad "the complete set: $out"; fi

D=$W/d1; rm -rf "$D"; cp -a "$G" "$D"
make_wheel "$D" aarch64-unknown-linux-gnu "$W/bin/x86_64-unknown-linux-gnu/lib.so" "$W/bin/aarch64-unknown-linux-gnu/prog"
expect "an aarch64 wheel holding an x86_64 extension" 'aarch64.*_pidguard.abi3.so: machine .*X86-64, expected AArch64' "$D"

D=$W/d2; rm -rf "$D"; cp -a "$G" "$D"
make_npm_platform "$D" x86_64-unknown-linux-musl "$W/bin/x86_64-unknown-linux-musl/lib.so" -
expect "a platform package without pidguard-scope" 'linux-x64-musl.*lacks package/pidguard-scope' "$D"

D=$W/d3; rm -rf "$D"; cp -a "$G" "$D"
make_wheel "$D" x86_64-unknown-linux-gnu "$W/bin/x86_64-unknown-linux-gnu/lib.so" "$W/bin/host-prog"
expect "a manylinux2014 wheel whose program needs a newer glibc" 'pidguard-scope: needs GLIBC_2\.(3[0-9]|[4-9][0-9]), above the floor 2.17' "$D"

D=$W/d4; rm -rf "$D"; cp -a "$G" "$D"
make_npm_platform "$D" aarch64-unknown-linux-musl "$W/bin/aarch64-unknown-linux-musl/lib.so" "$W/bin/aarch64-unknown-linux-gnu/prog"
expect "a musl package holding a glibc program" 'linux-arm64-musl.*pidguard-scope: (needs glibc|loader /lib/ld-linux-aarch64)' "$D"

D=$W/d5; rm -rf "$D"; cp -a "$G" "$D"
make_c "$D" x86_64-unknown-linux-gnu "$W/bin/x86_64-unknown-linux-gnu/lib-plain.so" "$W/bin/x86_64-unknown-linux-gnu/prog"
expect "a C library without symbol versions" 'without a PIDGUARD_ version' "$D"

D=$W/d6; rm -rf "$D"; cp -a "$G" "$D"
echo stray >"$D/npm/notes.txt"
expect "an extra file" 'notes.txt: not an artefact' "$D"

D=$W/d7; rm -rf "$D"; cp -a "$G" "$D"
rm "$D"/*musllinux_1_2_aarch64.whl
expect "a missing wheel" 'missing: the wheel for aarch64-unknown-linux-musl' "$D"
if "$VPY" scripts/check-dist.py --partial "$D" >/dev/null 2>&1; then ok "--partial accepts the same incomplete set"; else bad "--partial rejects an incomplete but correct set"; fi

D=$W/d8; rm -rf "$D"; cp -a "$G" "$D"
s=$W/stage-sdist; cp "$W/bin/host-prog" "$s/pidguard-$V/python/pidguard/pidguard-scope"
tar -C "$s" -czf "$D/pidguard-$V.tar.gz" "pidguard-$V"
expect "an sdist holding a prebuilt program" 'holds a (binary|prebuilt)' "$D"

D=$W/d9; rm -rf "$D"; cp -a "$G" "$D"
s=$W/stage-main; printf '{"name":"pidguard","version":"%s"}\n' "$V" >"$s/package/package.json"
tar -C "$s" -czf "$D/npm/pidguard-$V.tgz" package
expect "a main package without optionalDependencies" 'optionalDependencies None' "$D"

echo "dist check: $pass passed, $fail failed"
[ "$fail" = 0 ]
