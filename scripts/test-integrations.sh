#!/usr/bin/env bash
# The patches of integrations/ proven in their projects' released code: installs abx-dl 1.13.273,
# abx-plugins 1.13.572 and 1.13.162, and ArchiveBox 0.9.74rc408 (each pinned, each in its own
# virtual environment from a Python 3.13 of pyenv), the pidguard wheel (maturin, as
# scripts/test-abx-dl.sh does) and the Node addon; checks that each patch applies with `patch -p1`
# at the root of the installed site-packages; applies it to a copy of the package (the `patched`
# column; the installed package stays as released); runs the checks the releases allow offline;
# then runs each scenario once as released and once patched, each in a private PID namespace
# (`unshare --pid --fork --mount-proc --kill-child`) with a timeout (a Python scenario dumps its
# stacks when it runs out of time), and prints one table. Fails if a patched column does not hold.
#
# Needs root (ns_last_pid, ArchiveBox's user), unshare and node; without them it says why and
# exits 77 (skipped). ArchiveBox run as root keeps real uid 0 and takes effective uid 999-ish (its
# `archivebox` user): the user is created for the run when missing, and removed afterwards.
# Everything it installs lives under target/integrations (or /var/tmp/pidguard-integrations when
# the clone is not traversable by other users, as ArchiveBox's user must read its Python).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
ABX_DL=1.13.273
PLUGINS=(1.13.572 1.13.162)
ARCHIVEBOX=0.9.74rc408
T=${INTEGRATION_TIMEOUT:-90} # seconds per scenario
skip() { # REASON: exit 77, the reason on stdout and, for test.sh's step runner, in $PIDGUARD_SKIP_FILE
  echo "test-integrations: skipped: $*"
  if [ -n "${PIDGUARD_SKIP_FILE:-}" ]; then printf '%s\n' "$*" >"$PIDGUARD_SKIP_FILE"; fi
  exit 77
}

[ "$(id -u)" = 0 ] || skip "needs root (ns_last_pid for the reuse scenarios, ArchiveBox's real uid 0 / effective uid of its user)"
unshare --pid --fork --mount-proc --kill-child true 2>/dev/null || skip "cannot make a private PID namespace here (unshare --pid --fork --mount-proc --kill-child)"
command -v node >/dev/null || skip "node is not installed (abx-plugins' chrome_utils.js runs in it)"
PYENV_ROOT=$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-/root/.pyenv}")
PY_HOME=$(ls -d "$PYENV_ROOT"/versions/3.13* 2>/dev/null | sort -V | tail -1 || true)
[ -n "$PY_HOME" ] && [ -x "$PY_HOME/bin/python3" ] || skip "no Python 3.13 under $PYENV_ROOT/versions (ArchiveBox $ARCHIVEBOX needs >= 3.13; pyenv install 3.13)"

W=$ROOT/target/integrations
mkdir -p "$W"
if ! setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$W"; then
  W=/var/tmp/pidguard-integrations
  mkdir -p "$W" && chmod 755 "$W"
fi
echo "== work directory: $W =="

# ArchiveBox's user: its Python must be readable by it, hence a copy of the pyenv Python (pyenv's
# tree is below root's home). A user created here is removed on exit.
CREATED_USER=
cleanup() { if [ -n "$CREATED_USER" ]; then userdel "$CREATED_USER" 2>/dev/null || true; fi; }
trap cleanup EXIT
if ! id archivebox >/dev/null 2>&1; then
  useradd --system --no-create-home --shell /usr/sbin/nologin archivebox
  CREATED_USER=archivebox
fi
PY=$W/python-3.13/bin/python3
if [ ! -f "$W/python-3.13/.copied" ]; then # a copy cut short is made again
  rm -rf "$W/python-3.13" "$W/python-3.13.tmp" "$W/venv"
  cp -a "$PY_HOME" "$W/python-3.13.tmp"
  touch "$W/python-3.13.tmp/.copied"
  mv "$W/python-3.13.tmp" "$W/python-3.13"
fi
chmod -R a+rX "$W/python-3.13"

echo "== the pinned releases, each in its own virtual environment ($("$PY" --version)) =="
venv() { # NAME REQUIREMENT...: a venv with these installed (pip does nothing when they are)
  local v=$W/venv/$1
  [ -x "$v/bin/python" ] || "$PY" -m venv "$v"
  "$v/bin/python" -m pip install --quiet --disable-pip-version-check "${@:2}"
}
venv abx-dl "abx-dl==$ABX_DL" "maturin>=1.9,<2" &
for p in "${PLUGINS[@]}"; do venv "abx-plugins-$p" "abx-plugins==$p" & done
venv archivebox "archivebox==$ARCHIVEBOX" &
wait_all() { local rc=0; for j in $(jobs -p); do wait "$j" || rc=1; done; return $rc; }
wait_all || { echo "test-integrations: a pip install failed (above)" >&2; exit 1; }

echo "== pidguard: the wheel (maturin, debug profile) and the Node addon =="
rm -rf "$W/wheel"
"$W/venv/abx-dl/bin/maturin" build --quiet --profile dev -m py/Cargo.toml -i "$W/venv/abx-dl/bin/python" -o "$W/wheel"
for v in abx-dl archivebox; do
  "$W/venv/$v/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --force-reinstall "$W"/wheel/*.whl
done
bash scripts/setup-node.sh
cargo build --quiet -p pidguard-node
rm -rf "$W/node_modules" "$W/node_modules.none"
mkdir -p "$W/node_modules" "$W/node_modules.none"
cp target/debug/libpidguard_node.so "$W/pidguard.node"
ln -s "$ROOT/node" "$W/node_modules/pidguard"
export PIDGUARD_NATIVE_PATH=$W/pidguard.node

site() { "$W/venv/$1/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }
overlay() { # NAME VENV PACKAGE PATCH: a copy of the installed package with the patch applied
  local o=$W/overlay/$1 sp
  sp=$(site "$2")
  echo "-- $4: patch -p1 --dry-run in $sp"
  (cd "$sp" && patch -p1 --dry-run --quiet < "$ROOT/$4")
  rm -rf "$o" && mkdir -p "$o"
  cp -r "$sp/$3" "$o/"
  patch -p1 --quiet -d "$o" < "$ROOT/$4"
  find "$o" -name '*.orig' -delete
  chmod -R a+rX "$o"
}
echo "== the patches apply to the installed releases =="
overlay abx-dl abx-dl abx_dl "integrations/abx-dl/$ABX_DL.patch"
for p in "${PLUGINS[@]}"; do overlay "abx-plugins-$p" "abx-plugins-$p" abx_plugins "integrations/abx-plugins/$p.patch"; done
overlay archivebox archivebox archivebox "integrations/archivebox/$ARCHIVEBOX.patch"

echo "== the projects' own checks, offline =="
# None of the three ships its test suite in its PyPI release (wheel or sdist): what runs here is
# what the releases allow — every patched module compiles and imports (Python), parses (Node),
# and abx-dl's CLI starts — and the scenarios below drive the projects' own classes.
"$W/venv/abx-dl/bin/python" -m compileall -q "$W/overlay/abx-dl/abx_dl/process_utils.py" "$W/overlay/abx-dl/abx_dl/services/process_service.py"
PYTHONPATH=$W/overlay/abx-dl "$W/venv/abx-dl/bin/python" -c 'import abx_dl.services.process_service as s, abx_dl.process_utils as u; assert u.pidguard is not None and s.spawn_hook'
PYTHONPATH=$W/overlay/abx-dl "$W/venv/abx-dl/bin/abx-dl" --help >/dev/null
echo "abx-dl: patched modules compile and import (with pidguard); abx-dl --help starts"
for p in "${PLUGINS[@]}"; do
  node --check "$W/overlay/abx-plugins-$p/abx_plugins/plugins/chrome/chrome_utils.js"
  echo "abx-plugins $p: patched chrome_utils.js parses"
done
"$W/venv/archivebox/bin/python" -m compileall -q "$W/overlay/archivebox/archivebox/machine/models.py" "$W/overlay/archivebox/archivebox/crawls/models.py" "$W/overlay/archivebox/archivebox/core/models.py" "$W/overlay/archivebox/archivebox/services/process_service.py"
echo "archivebox: patched models compile (they import in the scenarios, through Django)"

echo "== an ArchiveBox data directory (archivebox init) =="
DATA=$W/data
rm -rf "$DATA" && mkdir -p "$DATA"
(cd "$DATA" && timeout -k 5 180 "$W/venv/archivebox/bin/archivebox" init >"$W/archivebox-init.log" 2>&1) ||
  { tail -20 "$W/archivebox-init.log" >&2; echo "test-integrations: archivebox init failed" >&2; exit 1; }

echo "== scenarios: released | patched, each in a private PID namespace =="
R=$W/results
rm -rf "$R" && mkdir -p "$R"
run() { # OUT DIR ENV... -- CMD...: one scenario, its JSON in $R/OUT.json, its output in $R/OUT.log
  local out=$1 dir=$2; shift 2
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  local rc=0
  (cd "$dir" && env "${envs[@]}" SCENARIO_TIMEOUT=$((T - 10)) timeout -k 5 "$T" \
    unshare --pid --fork --mount-proc --kill-child "$@") >"$R/$out.json" 2>"$R/$out.log" || rc=$?
  if [ $rc != 0 ]; then
    echo "{\"error\": \"exit $rc$([ $rc = 124 ] && echo ": timed out after $T s")\"}" >"$R/$out.json"
  fi
}
SC=$ROOT/tests/integrations
for col in released patched; do
  pp=; [ $col = patched ] && pp=$W/overlay/abx-dl
  run "abx-dl.$col" /tmp PYTHONPATH="$pp" -- "$W/venv/abx-dl/bin/python" "$SC/abx_dl_daemon.py" &
  for p in "${PLUGINS[@]}"; do
    if [ $col = patched ]; then u=$W/overlay/abx-plugins-$p; else u=$(site "abx-plugins-$p"); fi
    run "lock-$p.$col" /tmp NODE_MODULES_DIR="$W/node_modules" -- node "$SC/session_lock.js" "$u/abx_plugins/plugins/chrome/chrome_utils.js" &
  done
done
for col in released patched; do
  pp=; [ $col = patched ] && pp=$W/overlay/archivebox
  for s in terminate kill_tree crawl_cleanup; do
    run "archivebox-$s.$col" "$DATA" PYTHONPATH="$pp" -- "$W/venv/archivebox/bin/python" "$SC/archivebox_scenarios.py" "$s"
  done
done
wait_all || true

# The table, and the verdict on every patched column.
"$PY" - "$R" "${PLUGINS[@]}" <<'EOF'
import json, sys
from pathlib import Path
R, plugins = Path(sys.argv[1]), sys.argv[2:]
def get(name):
    try:
        return json.loads((R / f"{name}.json").read_text() or '{"error": "no output"}')
    except ValueError as e:
        return {"error": f"not JSON: {e}"}
rows, failed = [], []
def row(label, name, show, holds):
    cells = []
    for col in ("released", "patched"):
        r = get(f"{name}.{col}")
        cells.append(f"ERROR ({r['error']})" if "error" in r else show(r))
        if col == "patched" and ("error" in r or not holds(r)):
            failed.append(label)
    rows.append((label, *cells))
row(f"abx-dl: hook's setsid daemon after stop_background_hooks", "abx-dl",
    lambda r: f"{r['survivors']} survivor(s)", lambda r: r["survivors"] == 0 and r["scoped"])
for s, what in (("terminate", "Process.terminate()"), ("kill_tree", "Process.kill_tree()")):
    row(f"archivebox: {what}, a stranger took the pid", f"archivebox-{s}",
        lambda r: ("stranger hit" if r["stranger_hit"] else "never") + ("" if r["reused"] else " (pid not reused)"),
        lambda r: r["reused"] and not r["stranger_hit"])
row("archivebox: Crawl.cleanup_runtime(), browser running", "archivebox-crawl_cleanup",
    lambda r: r["browser"], lambda r: r["browser"] == "stopped")
for p in plugins:
    row(f"abx-plugins {p}: session lock, holder's pid reused", f"lock-{p}",
        lambda r: (f"taken at once" if r["taken"] and r["waited_s"] < 1 else f"blocked {r['waited_s']:g} s") + ("" if r["reused"] else " (pid not reused)"),
        lambda r: r["reused"] and r["taken"] and r["waited_s"] < 1 and r["startToken"])
w = [max(len(str(x[i])) for x in rows + [("scenario", "released", "patched")]) for i in range(3)]
print(f"  {'scenario':<{w[0]}} | {'released':<{w[1]}} | patched")
print(f"  {'-' * w[0]}-+-{'-' * w[1]}-+-{'-' * w[2]}")
for label, a, b in rows:
    print(f"  {label:<{w[0]}} | {a:<{w[1]}} | {b}")
if failed:
    print("\ntest-integrations: the patched column does not hold for: " + "; ".join(failed))
    print(f"(each run's stderr: {R}/<scenario>.<column>.log)")
    sys.exit(1)
print(f"\nintegrations: {len(rows)} passed, 0 failed")
EOF
