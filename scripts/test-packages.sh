#!/usr/bin/env bash
# The packages a user installs, built the way a release builds them, each installed and used
# OUTSIDE the clone (a temporary directory under /tmp, fresh virtual environments, an empty npm
# project):
#
#   Rust    cargo package -p pidguard-core (metadata, builds from the packaged sources) and
#           cargo doc --no-deps with warnings as errors
#   Scope   scripts/build-scope.sh: the supervisor program pidguard-scope (release, glibc 2.17
#           through zig), put beside the native library of the wheel and the Node platform
#           package; each installed package (and the C install) must exec it for a
#           supervisor-mode spawn (/proc/<supervisor>/exe), also the one pip builds from the sdist
#           (py/build.rs builds the program during the extension's build).
#   Python  maturin build --release: an abi3 wheel tagged manylinux2014 (glibc 2.17), linked with
#           zig (the `ziglang` package, in .venv) because this machine's glibc is newer; maturin's
#           own manylinux audit runs on it. maturin sdist: an sdist that pip builds from source.
#           Each goes into a fresh venv, which runs the README's Python example.
#   Node    npm run build (@napi-rs/cli: napi build --platform --release), the platform package
#           node/npm/linux-x64-gnu with the addon, npm pack of both; both tarballs go into an empty
#           npm project, which runs a smoke test (require, validate, terminate) and the README's
#           Node example.
#   C       scripts/install-c.sh into a temporary prefix; a supervisor-mode spawn through the
#           installed libpidguard.
#
# Each artifact is built once; they are left in target/packages/. Release builds: a few minutes
# on 2 cores. Run by scripts/test.sh; on its own: bash scripts/test-packages.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/target/packages
WORK=$(mktemp -d /tmp/pidguard-packages-XXXXXX)
children=()
cleanup() {
  for p in "${children[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
rm -rf "$OUT"
mkdir -p "$OUT"
bash scripts/setup-python.sh
bash scripts/setup-node.sh
VPY=$ROOT/.venv/bin/python
pass=0; fail=0
ok()  { pass=$((pass + 1)); echo "ok   - $1"; }
bad() { fail=$((fail + 1)); echo "FAIL - $1"; }
t0=$SECONDS
step() { echo "== $* ($((SECONDS - t0)) s) =="; }

# The README's first fenced block of LANG after the heading "## TITLE".
readme_block() { # TITLE LANG
  awk -v h="## $1" -v f='```'"$2" '$0 == h {s = 1; next} s && $0 == f {p = 1; next} p && $0 == "```" {exit} p' README.md
}

# --- Rust ---------------------------------------------------------------------------------
step "cargo package -p pidguard-core"
if cargo package -p pidguard-core --allow-dirty --quiet >"$WORK/cargo-package.log" 2>&1; then
  ok "cargo package -p pidguard-core builds from the packaged sources"
else
  bad "cargo package -p pidguard-core"; tail -20 "$WORK/cargo-package.log"
fi
grep -q '^warning' "$WORK/cargo-package.log" && bad "cargo package warns: $(grep '^warning' "$WORK/cargo-package.log" | head -3)" || ok "cargo package: no warnings (metadata complete)"
step "cargo doc --no-deps (warnings are errors)"
if RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --quiet >"$WORK/doc.log" 2>&1 && ! grep -q '^warning' "$WORK/doc.log"; then
  ok "cargo doc --no-deps without warnings"
else
  bad "cargo doc --no-deps"; grep -A5 -E '^(warning|error)' "$WORK/doc.log" | head -30
fi

# --- The scope supervisor program ----------------------------------------------------------
step "scripts/build-scope.sh (pidguard-scope beside the wheel's and the Node package's library)"
rm -f py/python/pidguard/pidguard-scope node/npm/linux-x64-gnu/pidguard-scope
if bash scripts/build-scope.sh py/python/pidguard node/npm/linux-x64-gnu >"$WORK/scope.log" 2>&1; then
  ok "$(tail -1 "$WORK/scope.log")"
else
  bad "scripts/build-scope.sh"; tail -20 "$WORK/scope.log"
fi

# --- Python -------------------------------------------------------------------------------
step "maturin build --release (manylinux2014 through zig)"
"$VPY" -c 'import ziglang' 2>/dev/null || "$VPY" -m pip install --quiet --disable-pip-version-check ziglang
# The wheel's pidguard-scope: the one build-scope.sh made (py/build.rs copies it; unset, it would
# build its own, as pip from the sdist does below).
scope_prog=$ROOT/target/scope-glibc2.17/$(uname -m)-unknown-linux-gnu/release/pidguard-scope
if (cd py && PIDGUARD_SCOPE_PROGRAM="$scope_prog" PATH="$ROOT/.venv/bin:$PATH" maturin build --release --compatibility manylinux2014 --zig --out "$OUT" >"$WORK/wheel.log" 2>&1); then
  ok "maturin build --release, its manylinux2014 audit passed"
else
  bad "maturin build"; tail -20 "$WORK/wheel.log"
fi
wheel=$(ls "$OUT"/pidguard-*.whl 2>/dev/null | head -1)
case "$wheel" in *-cp39-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl) ok "wheel tag: $(basename "$wheel")";; *) bad "wheel name: ${wheel:-none}";; esac
mode=$("$VPY" -c 'import sys, zipfile; print(oct(zipfile.ZipFile(sys.argv[1]).getinfo("pidguard/pidguard-scope").external_attr >> 16))' "$wheel" 2>&1) || true
[ "$mode" = 0o100755 ] && ok "the wheel carries pidguard/pidguard-scope (mode $mode)" || bad "wheel: pidguard/pidguard-scope: $mode"
step "maturin sdist"
(cd py && PATH="$ROOT/.venv/bin:$PATH" maturin sdist --out "$OUT" >"$WORK/sdist.log" 2>&1) && ok "maturin sdist" || { bad "maturin sdist"; tail -20 "$WORK/sdist.log"; }
sdist=$(ls "$OUT"/pidguard-*.tar.gz 2>/dev/null | head -1)
tar tzf "$sdist" | grep -q 'pidguard-scope$' && bad "the sdist carries a prebuilt pidguard-scope" || ok "the sdist carries no prebuilt program"

readme_block Python python > "$WORK/example.py"
[ -s "$WORK/example.py" ] || bad "no python block in the README's Python section"
py_try() { # NAME ARTIFACT [pip args...]: a fresh venv outside the clone, install, run the example
  local name=$1 art=$2; shift 2
  local venv="$WORK/venv-$name"
  "$VPY" -c 'import sys; print(sys.base_prefix)' >/dev/null
  # A venv from the interpreter that made .venv (not .venv itself): nothing shared but the stdlib.
  "$("$VPY" -c 'import sys, os; print(os.path.join(sys.base_prefix, "bin", "python3"))')" -m venv "$venv"
  if ! (cd "$WORK" && "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$@" "$art" >"$WORK/pip-$name.log" 2>&1); then
    bad "pip install of the $name"; tail -20 "$WORK/pip-$name.log"; return
  fi
  ok "the $name installs into a fresh venv"
  local where
  where=$(cd "$WORK" && "$venv/bin/python" -c 'import pidguard, os; print(os.path.dirname(pidguard.__file__))')
  case "$where" in "$ROOT"*) bad "$name: pidguard imported from the clone ($where)";; *) ok "$name: pidguard imported from $where";; esac
  if out=$(cd "$WORK" && timeout 120 "$venv/bin/python" "$WORK/example.py" 2>&1); then
    case "$out" in valid*) ok "$name: the README's Python example runs ($(echo "$out" | tr '\n' '|'))";; *) bad "$name: example printed: $out";; esac
  else
    bad "$name: README example failed: $out"
  fi
  # A supervisor-mode spawn: the supervisor must be the shipped program (exec'd from beside
  # _pidguard.abi3.so), not a fork of this Python (which keeps the spawner's whole heap). The
  # sdist ships the program's source; py/build.rs builds it while pip builds the extension.
  local exe="$where/pidguard-scope" what="execs the installed pidguard-scope"
  [ -x "$where/pidguard-scope" ] && ok "$name: $where/pidguard-scope is installed executable" || bad "$name: $where/pidguard-scope missing or not executable"
  if out=$(cd "$WORK" && timeout 60 "$venv/bin/python" "$WORK/supervised.py" 2>&1); then
    case "$out" in *'"exe": "'"$exe"'"'*'"reaped": true'*) ok "$name: a supervisor-mode spawn $what ($out)";;
      *) bad "$name: supervisor-mode spawn: $out";; esac
  else
    bad "$name: supervisor-mode spawn failed: $out"
  fi
}
cat > "$WORK/supervised.py" <<'PY'
import json, os, signal, tempfile, time
import pidguard
d = tempfile.mkdtemp(prefix="pidguard-supervised-")
s = pidguard.spawn(["sleep", "300"], os.path.join(d, "on_supervised.bg.pid"), scope="supervisor")
sup = s.supervisor_pid
# The supervisor execs the program right after forking the command: poll, with a deadline.
deadline = time.monotonic() + 10
while True:
    exe = os.readlink(f"/proc/{sup}/exe")
    if exe.endswith("/pidguard-scope") or time.monotonic() > deadline:
        break
    time.sleep(0.02)
os.kill(s.pid, signal.SIGKILL)  # the command; its supervisor then exits with its status
_, status = os.waitpid(sup, 0)
print(json.dumps({"scope": s.scope, "exe": exe, "reaped": not os.path.exists(f"/proc/{sup}"), "status": status}))
PY
step "wheel into a fresh venv"
[ -n "$wheel" ] && py_try wheel "$wheel"
step "sdist into a fresh venv (pip builds it from source with maturin from PyPI)"
# A debug build of the sdist is enough to prove it builds; its cargo output is kept under target/.
[ -n "$sdist" ] && CARGO_TARGET_DIR="$ROOT/target/sdist-build" MATURIN_PEP517_ARGS="--profile dev" py_try sdist "$sdist" --no-binary pidguard

# The release check on the Python artefacts built here (host target only: --partial). The Node
# tarballs below are left out: node/scripts/build.js links with this machine's cc (glibc 2.36),
# which the check rightly refuses for a -gnu package (the release links with zig against 2.17).
if out=$("$VPY" scripts/check-dist.py --partial "$OUT" 2>&1); then
  ok "scripts/check-dist.py --partial on the wheel and the sdist: $(tail -1 <<<"$out")"
else
  bad "scripts/check-dist.py --partial target/packages:"; echo "$out"
fi

# --- Node ---------------------------------------------------------------------------------
step "npm run package (node/scripts/build.js --pack: addon, pidguard-scope, both tarballs as the release packs them)"
if (cd node && PIDGUARD_SCOPE_PROGRAM="$scope_prog" node scripts/build.js --pack "$OUT/npm" >"$WORK/napi.log" 2>&1); then
  ok "node/scripts/build.js --pack"
else
  bad "node/scripts/build.js --pack"; tail -20 "$WORK/napi.log"
fi
addon=node/pidguard.linux-x64-gnu.node
[ -f "$addon" ] && ok "the build wrote $addon" || bad "no $addon"
main_tgz=$OUT/npm/pidguard-0.1.0.tgz
plat_tgz=$OUT/npm/pidguard-linux-x64-gnu-0.1.0.tgz
tar tzf "$plat_tgz" | grep 'package/pidguard.linux-x64-gnu.node' >/dev/null && ok "the platform tarball carries the addon" || bad "platform tarball: $(tar tzf "$plat_tgz" | tr '\n' ' ')"
mode=$(tar tvzf "$plat_tgz" | awk '$NF == "package/pidguard-scope" {print $1}')
[ "$mode" = -rwxr-xr-x ] && ok "the platform tarball carries pidguard-scope ($mode)" || bad "platform tarball: pidguard-scope: ${mode:-absent}"
tar tzf "$main_tgz" | grep '\.node$' >/dev/null && bad "the main tarball carries an addon" || ok "the main tarball carries no addon (the platform package does)"
for f in index.js index.mjs index.d.ts package.json; do
  tar tzf "$main_tgz" | grep -x "package/$f" >/dev/null || bad "main tarball lacks $f"
done
deps=$(tar xzf "$main_tgz" -O package/package.json | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(Object.keys(JSON.parse(s).optionalDependencies||{}).sort().join(",")))')
[ "$deps" = pidguard-linux-arm64-gnu,pidguard-linux-arm64-musl,pidguard-linux-x64-gnu,pidguard-linux-x64-musl ] \
  && ok "the main package's optionalDependencies name the four platform packages" || bad "main optionalDependencies: $deps"
proj=$WORK/node-project
mkdir -p "$proj"
(cd "$proj" && npm init -y >/dev/null && npm install --silent --offline --no-audit --no-fund "$main_tgz" "$plat_tgz" >/dev/null 2>"$WORK/npm-install.log") \
  && ok "both tarballs install into an empty npm project" || { bad "npm install of the tarballs"; cat "$WORK/npm-install.log"; }
cat > "$proj/smoke.js" <<'JS'
const { spawn } = require('child_process');
const fs = require('fs'), os = require('os'), path = require('path');
const pidguard = require('pidguard');
(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pidguard-smoke-'));
  const child = spawn('sleep', ['300'], { detached: true, stdio: 'ignore' });
  const pidfile = path.join(dir, 'on_smoke.bg.pid');
  pidguard.writePidFileWithMtime(pidfile, child.pid, Date.now() / 1000);
  const valid = pidguard.validatePidFile(pidfile);
  const token = pidguard.startToken(child.pid);
  const r = await pidguard.terminate(child.pid, { token, schedule: 'TERM/5/KILL/2' });
  fs.rmSync(dir, { recursive: true });
  const abx = typeof require('pidguard/abx-plugins').killChrome;
  console.log(JSON.stringify({ from: require.resolve('pidguard'), addon: path.dirname(require.resolve('pidguard-linux-x64-gnu')), valid, outcome: r.outcome, abx }));
})().catch((e) => { console.error(e); process.exit(1); });
JS
if out=$(cd "$proj" && env -u PIDGUARD_NATIVE_PATH timeout 60 node smoke.js 2>&1); then
  case "$out" in *'"valid":true'*'"outcome":"exited"'*'"abx":"function"'*) ok "smoke test: require, validate, terminate, pidguard/abx-plugins ($out)";; *) bad "smoke test printed: $out";; esac
  case "$out" in *"$ROOT"*) bad "the smoke test loaded something from the clone: $out";; esac
else
  bad "smoke test failed: $out"
fi
cat > "$proj/supervised.js" <<'JS'
const fs = require('fs'), os = require('os'), path = require('path');
const pidguard = require('pidguard');
(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pidguard-supervised-'));
  const s = pidguard.spawn(['sleep', '300'], path.join(dir, 'on_supervised.bg.pid'), { scope: 'supervisor' });
  const sup = s.supervisorPid;
  // The supervisor execs the program right after forking the command: poll, with a deadline.
  const deadline = Date.now() + 10000;
  let exe;
  for (;;) {
    exe = fs.readlinkSync(`/proc/${sup}/exe`);
    if (exe.endsWith('/pidguard-scope') || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const ref = pidguard.ProcessRef.openChild(sup); // our child: pinned without a token
  process.kill(s.pid, 'SIGKILL'); // the command; its supervisor then exits with its status
  const exited = await ref.wait(30);
  const r = await ref.terminate({ reap: true });
  fs.rmSync(dir, { recursive: true });
  const addon = path.dirname(require.resolve('pidguard-linux-x64-gnu'));
  console.log(JSON.stringify({ scope: s.scope, exe, addon, exited, outcome: r.outcome, reaped: !fs.existsSync(`/proc/${sup}`) }));
})().catch((e) => { console.error(e); process.exit(1); });
JS
addon_dir=$(cd "$proj" && node -e "console.log(require('path').dirname(require.resolve('pidguard-linux-x64-gnu')))")
[ -x "$addon_dir/pidguard-scope" ] && ok "npm installed $addon_dir/pidguard-scope executable" || bad "npm install: $addon_dir/pidguard-scope missing or not executable"
if out=$(cd "$proj" && env -u PIDGUARD_NATIVE_PATH timeout 60 node supervised.js 2>&1); then
  case "$out" in *'"exe":"'"$addon_dir"'/pidguard-scope"'*'"reaped":true'*) ok "a supervisor-mode spawn from Node execs the installed pidguard-scope ($out)";;
    *) bad "Node supervisor-mode spawn: $out";; esac
else
  bad "Node supervisor-mode spawn failed: $out"
fi
readme_block Node js > "$proj/example.js"
if out=$(cd "$proj" && env -u PIDGUARD_NATIVE_PATH timeout 60 node example.js 2>&1); then
  expected=$(sed -n 's/.*console\.log(.*\/\/ \(.*\)$/\1/p' "$proj/example.js" | sed 's/ *$//')
  [ "$out" = "$expected" ] && ok "the README's Node example runs from the installed tarballs" || bad "README Node example: got [$out], expected [$expected]"
else
  bad "README Node example failed: $out"
fi

# --- C ------------------------------------------------------------------------------------
step "C: scripts/install-c.sh into a temporary prefix"
cprefix=$WORK/c-prefix
if bash scripts/install-c.sh "$cprefix" >"$WORK/install-c.log" 2>&1; then
  ok "scripts/install-c.sh installs under a temporary prefix"
else
  bad "scripts/install-c.sh"; tail -20 "$WORK/install-c.log"
fi
# The installed library: soname, every exported pidguard_ function at a symbol version of
# ffi-c/pidguard.map, nothing else of ours exported; a program records the version it needs and
# reads the library's version at run time.
lib=$(readlink -f "$cprefix/lib/libpidguard.so")
soname=$(objdump -p "$lib" | awk '$1 == "SONAME" {print $2}')
[ "$soname" = libpidguard.so.0 ] && ok "C: soname $soname" || bad "C: soname: ${soname:-none}"
exported=$(objdump -T "$lib" | awk '$2 == "g" && $4 != "*UND*" && $NF ~ /^pidguard_/' | wc -l)
unversioned=$(objdump -T "$lib" | awk '$2 == "g" && $4 != "*UND*" && $NF ~ /^pidguard_/ && $(NF-1) != "PIDGUARD_0.1"' | wc -l)
foreign=$(objdump -T "$lib" | awk '$2 == "g" && $4 != "*UND*" && $NF !~ /^pidguard_/ && $NF !~ /^PIDGUARD_/' | wc -l)
[ "$exported" -gt 80 ] && [ "$unversioned" = 0 ] && [ "$foreign" = 0 ] \
  && ok "C: all $exported exported functions at PIDGUARD_0.1, nothing else exported" \
  || bad "C: symbol versions: $exported exported, $unversioned without PIDGUARD_0.1, $foreign not ours"
cat > "$WORK/version.c" <<'C'
#include <pidguard.h>
#include <stdio.h>
#include <string.h>
int main(void) {
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", PIDGUARD_VERSION_MAJOR, PIDGUARD_VERSION_MINOR, PIDGUARD_VERSION_PATCH);
    printf("%s %s %u\n", pidguard_version(), want, pidguard_version_number());
    return strcmp(pidguard_version(), want) != 0 || pidguard_version_number() != PIDGUARD_VERSION_NUMBER;
}
C
if cc -std=c11 -Wall -Wextra -Werror "$WORK/version.c" -I"$cprefix/include" -L"$cprefix/lib" -lpidguard \
     -Wl,-rpath,"$cprefix/lib" -o "$WORK/version" 2>"$WORK/cc-version.log" && out=$("$WORK/version" 2>&1); then
  ok "C: pidguard_version() agrees with the header ($out)"
  objdump -p "$WORK/version" | grep -q 'PIDGUARD_0.1' && ok "C: a program linked against it records PIDGUARD_0.1" || bad "C: the program records no PIDGUARD_0.1"
else
  bad "C: version check: $(cat "$WORK/cc-version.log") ${out:-}"
fi
cat > "$WORK/supervised.c" <<'C'
#define _POSIX_C_SOURCE 200809L
#include <pidguard.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A supervisor-mode spawn through the installed library: print its supervisor's /proc exe. */
int main(int argc, char **argv) {
    if (argc != 2) return 2;
    const char *const cmd[] = {"sleep", "300"};
    pidguard_spawn_options o = {0};
    o.scope = PIDGUARD_SCOPE_MODE_SUPERVISOR;
    pidguard_spawn_result s;
    if (pidguard_spawn(argv[1], cmd, 2, &o, &s) != 0 || s.supervisor_pid <= 0) return 1;
    char link[64], exe[4096] = "";
    snprintf(link, sizeof link, "/proc/%d/exe", (int)s.supervisor_pid);
    /* The supervisor execs the program right after forking the command: poll, with a deadline. */
    for (int i = 0; i < 500; i++) {
        ssize_t n = readlink(link, exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = '\0';
        size_t len = strlen(exe);
        if (len >= 15 && strcmp(exe + len - 15, "/pidguard-scope") == 0) break;
        struct timespec t = {0, 20 * 1000 * 1000};
        nanosleep(&t, NULL);
    }
    kill(s.pid, SIGKILL); /* the command; its supervisor then exits with its status */
    int status;
    pid_t r = waitpid(s.supervisor_pid, &status, 0);
    printf("exe=%s reaped=%s\n", exe, r == s.supervisor_pid ? "yes" : "no");
    return 0;
}
C
if cc -std=c11 -Wall -Wextra -Werror "$WORK/supervised.c" -I"$cprefix/include" -L"$cprefix/lib" -lpidguard \
     -Wl,-rpath,"$cprefix/lib" -o "$WORK/supervised" 2>"$WORK/cc.log"; then
  mkdir -p "$WORK/c-run"
  if out=$(cd "$WORK/c-run" && timeout 60 "$WORK/supervised" "$WORK/c-run/on_supervised.bg.pid" 2>&1); then
    [ "$out" = "exe=$cprefix/lib/pidguard-scope reaped=yes" ] && ok "C: a supervisor-mode spawn through the installed libpidguard execs $cprefix/lib/pidguard-scope" \
      || bad "C supervisor-mode spawn: $out"
  else
    bad "C supervisor-mode spawn failed: $out"
  fi
else
  bad "cc of the C supervisor check"; cat "$WORK/cc.log"
fi

echo "== packages in target/packages: $(cd "$OUT" && find . -type f | sort | tr '\n' ' ')"
echo "packages: $pass passed, $fail failed ($((SECONDS - t0)) s)"
[ "$fail" = 0 ]
