# shellcheck shell=bash
# The integration matrix shared by scripts/test-integrations.sh (the pinned releases) and
# scripts/check-upstream.sh (the newest ones): set ABX_DL_VERSIONS, PLUGINS_VERSIONS and
# ARCHIVEBOX_VERSIONS (space-separated), then call `integrations_main TITLE`. It
#
# - installs each release in its own virtual environment (a copy of pyenv's Python 3.13, readable
#   by ArchiveBox's user and by uid 65534), abx-plugins with `pip install --no-deps --target`;
# - builds the pidguard wheel (maturin, debug profile) and the Node addon, installs the wheel in
#   each environment and writes pidguard's `.pth` there (`python -m pidguard.integrations
#   enable`): `PIDGUARD_INTEGRATIONS=abx_dl,archivebox` then turns the integrations on;
# - checks that each integration applies: the Python ones load (`install()` accepts the release:
#   in its declared range, every wrapped name there), abx-plugins' patch applies with `patch -p1`
#   (the patch of that release, else the newest patch not newer than it);
# - runs every scenario once as released and once integrated, each in a private PID namespace
#   (`unshare --pid --fork --mount-proc --kill-child`, with a loopback-only network for abx-dl's
#   command line) with a timeout, at most $INTEGRATION_JOBS at a time;
# - prints the table (tests/integrations/report.py); fails when an integrated column does not
#   hold (or, with UPSTREAM=1, says so in the table and exits 0: a new upstream release is news,
#   not a broken build).
#
# Needs root (ns_last_pid, ArchiveBox's user, the privilege-drop shape), unshare and node; without
# them it skips (exit 77, scripts/lib/skip.sh). ArchiveBox run as root keeps real uid 0 and takes
# effective uid 999-ish (its `archivebox` user): the user is created for the run when missing and
# removed afterwards. Everything lives under target/integrations (or /var/tmp/pidguard-integrations
# when the clone is not traversable by other users).

. scripts/lib/skip.sh

T=${INTEGRATION_TIMEOUT:-240} # seconds per scenario (a busy CI machine runs Django slowly)
JOBS=${INTEGRATION_JOBS:-4}
# Per-run directories (results, wheel, overlays, node_modules, data) are apart for the two
# commands, so check-upstream.sh may run while test-integrations.sh does; venvs are shared.
RUN=${UPSTREAM:+upstream}
RUN=${RUN:-pinned}
CLI_RUNS=${CLI_RUNS:-5}        # abx-dl command-line runs per integrated cell (released: 1)

integrations_prereqs() {
  [ "$(id -u)" = 0 ] || skip_step "integrations: needs root (ns_last_pid for the reuse scenarios, ArchiveBox's real uid 0 / effective uid of its user)"
  unshare --pid --fork --mount-proc --kill-child true 2>/dev/null || skip_step "integrations: cannot make a private PID namespace here (unshare --pid --fork --mount-proc --kill-child)"
  unshare --net --pid --fork --mount-proc sh -c 'ip link set lo up' 2>/dev/null || skip_step "integrations: cannot make a loopback-only network namespace here (unshare --net; ip)"
  command -v node >/dev/null || skip_step "integrations: node is not installed (abx-plugins' chrome_utils.js runs in it)"
  PYENV_ROOT=$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-/root/.pyenv}")
  PY_HOME=$(ls -d "$PYENV_ROOT"/versions/3.13* 2>/dev/null | sort -V | tail -1 || true)
  [ -n "$PY_HOME" ] && [ -x "$PY_HOME/bin/python3" ] || skip_step "integrations: no Python 3.13 under $PYENV_ROOT/versions (ArchiveBox 0.9.74 needs >= 3.13; pyenv install 3.13)"
}

integrations_setup() {
  W=$ROOT/target/integrations
  mkdir -p "$W"
  if ! setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$W"; then
    W=/var/tmp/pidguard-integrations
    mkdir -p "$W" && chmod 755 "$W"
  fi
  echo "== work directory: $W =="
  CREATED_USER=
  # ArchiveBox run as root leaves abxpkg's lock directory in the temp directory: removed on exit
  # when this run made it.
  LOCKS=${TMPDIR:-/tmp}/abxpkg-mutation-locks
  MADE_LOCKS=; [ -e "$LOCKS" ] || MADE_LOCKS=1
  trap 'if [ -n "$CREATED_USER" ]; then userdel "$CREATED_USER" 2>/dev/null || true; fi; if [ -n "$MADE_LOCKS" ]; then rm -rf "$LOCKS"; fi' EXIT
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
}

venv() { # NAME REQUIREMENT...: a venv with these installed (pip does nothing when they are)
  local v=$W/venv/$1
  [ -x "$v/bin/python" ] || "$PY" -m venv "$v"
  "$v/bin/python" -m pip install --quiet --disable-pip-version-check "${@:2}"
}
wait_all() { local rc=0 j; for j in $(jobs -p); do wait "$j" || rc=1; done; return $rc; }

integrations_install() {
  echo "== the releases, each in its own virtual environment ($("$PY" --version)) =="
  venv tools "maturin>=1.9,<2" &
  local v
  for v in $ABX_DL_VERSIONS; do venv "abx-dl-$v" "abx-dl==$v" & done
  for v in $ARCHIVEBOX_VERSIONS; do venv "archivebox-$v" "archivebox==$v" & done
  for v in $PLUGINS_VERSIONS; do
    [ -d "$W/plugins/$v/abx_plugins" ] || "$PY" -m pip install --quiet --disable-pip-version-check --no-deps --target "$W/plugins/$v" "abx-plugins==$v" &
  done
  wait_all || { echo "integrations: a pip install failed (above)" >&2; exit 1; }
  chmod -R a+rX "$W/venv" "$W/plugins"

  echo "== pidguard: the wheel (maturin, debug profile) and the Node addon =="
  rm -rf "$W/wheel-$RUN"
  "$W/venv/tools/bin/maturin" build --quiet --profile dev -m py/Cargo.toml -i "$W/venv/tools/bin/python" -o "$W/wheel-$RUN"
  for v in $ABX_DL_VERSIONS; do PYENVS+=("abx-dl-$v"); done
  for v in $ARCHIVEBOX_VERSIONS; do PYENVS+=("archivebox-$v"); done
  for v in "${PYENVS[@]}"; do
    "$W/venv/$v/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --force-reinstall "$W"/wheel-$RUN/*.whl
    "$W/venv/$v/bin/python" -m pidguard.integrations enable >/dev/null
  done
  chmod -R a+rX "$W/venv"
  bash scripts/setup-node.sh
  cargo build --quiet -p pidguard-node
  rm -rf "$W/node_modules-$RUN"
  mkdir -p "$W/node_modules-$RUN"
  cp target/debug/libpidguard_node.so "$W/pidguard-$RUN.node"
  ln -s "$ROOT/node" "$W/node_modules-$RUN/pidguard"
  export PIDGUARD_NATIVE_PATH=$W/pidguard-$RUN.node
}

patch_for() { # VERSION: integrations/abx-plugins/<VERSION>.patch, else the newest one not newer
  local v=$1 best=
  for p in $(ls integrations/abx-plugins/*.patch | sed 's#.*/##; s#\.patch$##' | sort -V); do
    if [ "$(printf '%s\n%s\n' "$p" "$v" | sort -V | tail -1)" = "$v" ]; then best=$p; fi
  done
  [ -n "$best" ] && echo "integrations/abx-plugins/$best.patch"
}

integrations_apply() {
  echo "== the integrations apply to the installed releases =="
  R=$W/results-$RUN
  rm -rf "$R" && mkdir -p "$R"
  local v p
  for v in $ABX_DL_VERSIONS; do
    if out=$("$W/venv/abx-dl-$v/bin/python" -c 'import pidguard.integrations.abx_dl as i; print(i.install())' 2>&1); then
      echo "{\"applies\": \"loads\", \"version\": \"$out\"}" >"$R/abx-dl@$v.applies.json"
    else
      "$PY" -c 'import json,sys; print(json.dumps({"applies": "refused", "why": sys.argv[1][-300:]}))' "$out" >"$R/abx-dl@$v.applies.json"
    fi
    "$W/venv/abx-dl-$v/bin/abx-dl" --help >/dev/null
    echo "abx-dl $v: $(cat "$R/abx-dl@$v.applies.json")"
  done
  for v in $PLUGINS_VERSIONS; do
    local o=$W/overlay-$RUN/abx-plugins-$v
    rm -rf "$o" && mkdir -p "$o"
    p=$(patch_for "$v" || true)
    if [ -n "$p" ] && (cd "$W/plugins/$v" && patch -p1 --dry-run --quiet <"$ROOT/$p" >/dev/null 2>&1); then
      cp -r "$W/plugins/$v/abx_plugins" "$o/"
      patch -p1 --quiet -d "$o" <"$ROOT/$p"
      find "$o" -name '*.orig' -delete
      for f in "$o"/abx_plugins/plugins/chrome/*.js; do node --check "$f"; done
      echo "{\"applies\": \"$(basename "$p" .patch).patch\"}" >"$R/abx-plugins@$v.applies.json"
    else
      echo "{\"applies\": \"no (${p:-no patch})\"}" >"$R/abx-plugins@$v.applies.json"
      rm -rf "$o"
    fi
    chmod -R a+rX "$W/overlay-$RUN" 2>/dev/null || true
    echo "abx-plugins $v: $(cat "$R/abx-plugins@$v.applies.json")"
  done
  for v in $ARCHIVEBOX_VERSIONS; do
    local d=$W/data-$RUN-$v
    if [ ! -f "$d/.initialised" ]; then
      rm -rf "$d" && mkdir -p "$d"
      (cd "$d" && timeout -k 5 600 unshare --net "$W/venv/archivebox-$v/bin/archivebox" init >"$W/archivebox-init-$v.log" 2>&1) ||
        { tail -20 "$W/archivebox-init-$v.log" >&2; echo "integrations: archivebox $v init failed" >&2; exit 1; }
      touch "$d/.initialised"
    fi
    if out=$(cd "$d" && "$W/venv/archivebox-$v/bin/python" -c '
import archivebox
from archivebox.config.django import setup_django
setup_django()
import pidguard.integrations.archivebox as i
print(i.install())' 2>&1); then
      echo "{\"applies\": \"loads\"}" >"$R/archivebox@$v.applies.json"
    else
      "$PY" -c 'import json,sys; print(json.dumps({"applies": "refused", "why": sys.argv[1][-300:]}))' "$out" >"$R/archivebox@$v.applies.json"
    fi
    echo "archivebox $v: $(cat "$R/archivebox@$v.applies.json")"
  done
}

run_one() { # OUT DIR NET ENV... -- CMD...: one scenario in a private PID namespace, JSON in $R/OUT.json
  local out=$1 dir=$2 net=$3; shift 3
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  local rc=0 ns=(unshare --pid --fork --mount-proc --kill-child)
  [ "$net" = net ] && ns=(unshare --net --pid --fork --mount-proc --kill-child)
  (cd "$dir" && env "${envs[@]}" SCENARIO_TIMEOUT=$((T - 10)) timeout -k 5 "$T" \
    "${ns[@]}" sh -c '[ "$PIDGUARD_NET" != net ] || ip link set lo up; "$0" "$@"' "$@") >"$R/$out.json" 2>"$R/$out.log" || rc=$?
  if [ $rc != 0 ] || [ ! -s "$R/$out.json" ]; then
    echo "{\"error\": \"exit $rc$([ $rc = 124 ] && echo ": timed out after $T s")\"}" >"$R/$out.json"
  fi
}
throttle() { while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do sleep 0.5; done; }

integrations_scenarios() {
  echo "== scenarios: released | integrated, each in a private PID namespace =="
  local SC=$ROOT/tests/integrations v col integ runs shape p u d s
  for v in $ABX_DL_VERSIONS; do
    local pyx=$W/venv/abx-dl-$v/bin/python
    for col in released integrated; do
      integ=; runs=1
      [ $col = integrated ] && integ=abx_dl && runs=$CLI_RUNS
      for shape in root archivebox; do
        throttle
        run_one "abx-dl@$v.cli-$shape.$col" /tmp net PIDGUARD_NET=net PIDGUARD_INTEGRATIONS=$integ -- "$pyx" "$SC/abx_dl_cli.py" "$runs" "$shape" &
      done
      for s in ordering memory force_kill; do
        throttle
        run_one "abx-dl@$v.$s.$col" /tmp nonet PIDGUARD_INTEGRATIONS=$integ -- "$pyx" "$SC/abx_dl_paths.py" "$s" &
      done
    done
    throttle
    run_one "abx-dl@$v.ordering.old-patch" /tmp nonet PIDGUARD_INTEGRATIONS=abx_dl -- "$pyx" "$SC/abx_dl_paths.py" ordering to_thread &
  done
  for p in $PLUGINS_VERSIONS; do
    for col in released integrated; do
      if [ $col = integrated ]; then u=$W/overlay-$RUN/abx-plugins-$p; else u=$W/plugins/$p; fi
      [ -d "$u/abx_plugins" ] || { echo '{"error": "no patch applies"}' >"$R/abx-plugins@$p.lock.$col.json"; continue; }
      throttle
      run_one "abx-plugins@$p.lock.$col" /tmp nonet NODE_MODULES_DIR="$W/node_modules-$RUN" PIDGUARD_NATIVE_PATH="$PIDGUARD_NATIVE_PATH" -- node "$SC/session_lock.js" "$u/abx_plugins/plugins/chrome/chrome_utils.js" &
    done
  done
  for v in $ARCHIVEBOX_VERSIONS; do
    d=$W/data-$RUN-$v
    for col in released integrated; do
      integ=; [ $col = integrated ] && integ=archivebox,abx_dl
      for s in terminate kill_tree crawl_cleanup; do
        throttle
        run_one "archivebox@$v.$s.$col" "$d" nonet PIDGUARD_INTEGRATIONS=$integ -- "$W/venv/archivebox-$v/bin/python" "$SC/archivebox_scenarios.py" "$s" &
      done
    done
  done
  wait_all || true
}

integrations_main() { # TITLE
  ROOT=$PWD
  integrations_prereqs
  integrations_setup
  PYENVS=()
  integrations_install
  integrations_apply
  integrations_scenarios
  "$PY" tests/integrations/report.py "$R" "$1" --abx-dl "$ABX_DL_VERSIONS" --plugins "$PLUGINS_VERSIONS" --archivebox "$ARCHIVEBOX_VERSIONS" ${PINNED:+--pinned "$PINNED"} ${UPSTREAM:+--upstream}
}
