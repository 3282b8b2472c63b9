#!/usr/bin/env bash
# Run the aarch64 artefacts of a release (dist/, scripts/release.sh) under qemu-user on an x86_64
# machine, and the musl ones under Debian's musl loader:
#
#   aarch64 glibc  the CLI's `pidguard demo` (C tarball), the README's Python example with the
#                  aarch64 wheel and Debian's arm64 Python 3.11, a supervisor-mode spawn that
#                  execs the wheel's own pidguard-scope, the README's Node example with the
#                  arm64 npm packages and Debian's arm64 Node;
#   x86_64 musl    the CLI's `pidguard demo` through /lib/ld-musl-x86_64.so.1 (Debian's `musl`);
#   aarch64 musl   the CLI's `pidguard demo` under qemu with Debian's arm64 musl;
#   the musl wheels and npm packages are checked by their ELF headers only (scripts/check-dist.py:
#   musl loader, no glibc symbol version): Debian has no musl Python or Node to load them.
#
# How: Debian's arm64 packages (libc6, python3.11-minimal and its libraries, nodejs and its
# libraries, musl) are fetched with `apt-get download` (after `dpkg --add-architecture arm64`)
# and unpacked into target/qemu-arm64/root, qemu-user's -L root (QEMU_LD_PREFIX). Programs that
# exec other aarch64 programs (the demo re-execs itself, a supervisor execs pidguard-scope) need
# the kernel to hand aarch64 ELF files to qemu: a binfmt_misc entry is registered in a private
# user and mount namespace (`unshare --user --map-root-user --mount`; sandboxed binfmt_misc,
# Linux >= 6.7), so the machine's own binfmt_misc is never touched.
#
# usage: scripts/qemu-release.sh [DIST]   (root: apt-get; qemu-user-static, musl installed)
# An artefact missing from DIST is reported as not run; any run that fails fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DIST=$(cd "${1:-dist}" && pwd)
V=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
CACHE=$ROOT/target/qemu-arm64
SYSROOT=$CACHE/root
W=$(mktemp -d /tmp/pidguard-qemu-XXXXXX)
trap 'rm -rf "$W"' EXIT
pass=0; fail=0; notrun=0
ok()  { pass=$((pass + 1)); echo "ok      - $1"; }
bad() { fail=$((fail + 1)); echo "FAIL    - $1"; }
nor() { notrun=$((notrun + 1)); echo "not run - $1"; }
command -v qemu-aarch64-static >/dev/null || { echo "qemu-release: qemu-aarch64-static is needed (apt-get install qemu-user-static)" >&2; exit 1; }

# --- the arm64 root -----------------------------------------------------------------------
PKGS=(libc6 libgcc-s1 libstdc++6 zlib1g libexpat1 libffi8 python3.11-minimal libpython3.11-minimal
  libpython3.11-stdlib nodejs libnode108 libuv1 libicu72 libssl3 libc-ares2 libbrotli1 libnghttp2-14 musl)
if [ ! -f "$CACHE/.done" ]; then
  dpkg --print-foreign-architectures | grep -qx arm64 || { dpkg --add-architecture arm64 && apt-get update -qq; }
  rm -rf "$CACHE"; mkdir -p "$CACHE/debs" "$SYSROOT"
  (cd "$CACHE/debs" && apt-get download "${PKGS[@]/%/:arm64}" >/dev/null 2>&1) \
    || (cd "$CACHE/debs" && for p in "${PKGS[@]}"; do apt-get download "$p:arm64" >/dev/null 2>&1 || echo "qemu-release: no $p:arm64"; done)
  for d in "$CACHE"/debs/*.deb; do dpkg-deb -x "$d" "$SYSROOT"; done
  touch "$CACHE/.done"
fi
export QEMU_LD_PREFIX=$SYSROOT
# Run "$@" where the kernel hands aarch64 ELF files to qemu (a private binfmt_misc).
in_qemu_ns() {
  unshare --user --map-root-user --mount bash -c '
    set -e
    mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
    printf "%s" ":qemu-aarch64:M::\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00:\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff:$(command -v qemu-aarch64-static):F" >/proc/sys/fs/binfmt_misc/register
    exec "$@"' bash "$@"
}
readme_block() { # TITLE LANG
  awk -v h="## $1" -v f='```'"$2" '$0 == h {s = 1; next} s && $0 == f {p = 1; next} p && $0 == "```" {exit} p' README.md
}

# --- the CLI demos ------------------------------------------------------------------------
demo() { # TRIPLE RUNNER...
  local t=$1; shift
  local tgz=$DIST/c/pidguard-$V-$t.tar.gz
  [ -f "$tgz" ] || { nor "$t: pidguard demo (no $tgz)"; return; }
  tar -C "$W" -xzf "$tgz"
  local out rc=0
  out=$(cd "$W" && "$@" timeout 600 "$W/pidguard-$V-$t/bin/pidguard" demo 2>&1) || rc=$?
  if [ $rc = 0 ] && grep -q 'demo passed' <<<"$out"; then
    ok "$t: pidguard demo ($(grep -c '\[ ok \]' <<<"$out") checks ok; $(grep -m1 'pidguard demo —' <<<"$out"))"
  else
    bad "$t: pidguard demo exited $rc:"; echo "$out" | tail -30
  fi
}
demo aarch64-unknown-linux-gnu in_qemu_ns
if [ -e /lib/ld-musl-x86_64.so.1 ]; then
  demo x86_64-unknown-linux-musl env
else
  nor "x86_64-unknown-linux-musl: no /lib/ld-musl-x86_64.so.1 (apt-get install musl)"
fi
if [ -e "$SYSROOT/lib/ld-musl-aarch64.so.1" ] || [ -e "$SYSROOT/usr/lib/ld-musl-aarch64.so.1" ]; then
  [ -e "$SYSROOT/lib/ld-musl-aarch64.so.1" ] || ln -s ../usr/lib/ld-musl-aarch64.so.1 "$SYSROOT/lib/ld-musl-aarch64.so.1"
  demo aarch64-unknown-linux-musl in_qemu_ns
else
  nor "aarch64-unknown-linux-musl: Debian's musl:arm64 did not unpack a loader"
fi

# --- Python: the aarch64 wheel with an arm64 Python ---------------------------------------
whl=$(ls "$DIST"/pidguard-"$V"-cp39-abi3-*manylinux*aarch64*.whl 2>/dev/null | head -1 || true)
PY=$SYSROOT/usr/bin/python3.11
if [ -z "$whl" ]; then
  nor "aarch64 wheel: none in $DIST"
elif [ ! -x "$PY" ]; then
  nor "aarch64 wheel: no arm64 Python unpacked ($PY)"
else
  site=$W/site
  mkdir -p "$site"
  "$ROOT/.venv/bin/python" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$whl" "$site"
  chmod 0755 "$site/pidguard/pidguard-scope"
  readme_block Python python >"$W/example.py"
  if out=$(cd "$W" && PYTHONPATH=$site in_qemu_ns timeout 600 "$PY" "$W/example.py" 2>&1) && [ "${out#valid}" != "$out" ]; then
    ok "aarch64 wheel: the README's Python example under qemu ($(echo "$out" | tr '\n' '|'))"
  else
    bad "aarch64 wheel: the README's Python example: $out"
  fi
  cat >"$W/supervised.py" <<'PY'
import json, os, signal, tempfile, time, platform
import pidguard
d = tempfile.mkdtemp(prefix="pidguard-supervised-")
s = pidguard.spawn(["sleep", "300"], os.path.join(d, "on_supervised.bg.pid"), scope="supervisor")
sup = s.supervisor_pid
# Under qemu-user the kernel runs the program through qemu: its cmdline names the program.
deadline = time.monotonic() + 60
while True:
    cmd = open(f"/proc/{sup}/cmdline", "rb").read().split(b"\0")
    if any(c.endswith(b"/pidguard-scope") for c in cmd) or time.monotonic() > deadline:
        break
    time.sleep(0.05)
os.kill(s.pid, signal.SIGKILL)
_, status = os.waitpid(sup, 0)
print(json.dumps({"machine": platform.machine(), "scope": s.scope, "cmdline": [c.decode() for c in cmd if c]}))
PY
  if out=$(cd "$W" && PYTHONPATH=$site in_qemu_ns timeout 600 "$PY" "$W/supervised.py" 2>&1) \
     && grep -q '"machine": "aarch64"' <<<"$out" && grep -q "$site/pidguard/pidguard-scope" <<<"$out"; then
    ok "aarch64 wheel: a supervisor-mode spawn execs the wheel's aarch64 pidguard-scope ($out)"
  else
    bad "aarch64 wheel: supervisor-mode spawn: $out"
  fi
fi

# --- Node: the arm64 packages with an arm64 Node ------------------------------------------
NODE=$SYSROOT/usr/bin/node
main=$DIST/npm/pidguard-$V.tgz plat=$DIST/npm/pidguard-linux-arm64-gnu-$V.tgz
if [ ! -f "$main" ] || [ ! -f "$plat" ]; then
  nor "arm64 npm packages: not in $DIST/npm"
elif [ ! -x "$NODE" ]; then
  nor "arm64 npm packages: no arm64 Node unpacked ($NODE)"
else
  proj=$W/node-project
  mkdir -p "$proj/node_modules/pidguard" "$proj/node_modules/pidguard-linux-arm64-gnu"
  tar -C "$proj/node_modules/pidguard" --strip-components=1 -xzf "$main"
  tar -C "$proj/node_modules/pidguard-linux-arm64-gnu" --strip-components=1 -xzf "$plat"
  readme_block Node js >"$proj/example.js"
  expected=$(sed -n 's/.*console\.log(.*\/\/ \(.*\)$/\1/p' "$proj/example.js" | sed 's/ *$//')
  if out=$(cd "$proj" && in_qemu_ns env -u PIDGUARD_NATIVE_PATH timeout 600 "$NODE" example.js 2>&1) && [ "$out" = "$expected" ]; then
    ok "arm64 npm packages: the README's Node example under qemu ($(echo "$out" | tr '\n' '|'))"
  else
    bad "arm64 npm packages: the README's Node example: got [$out], expected [$expected]"
  fi
fi

echo "qemu-release: $pass passed, $fail failed, $notrun not run"
[ "$fail" = 0 ]
