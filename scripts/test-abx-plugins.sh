#!/usr/bin/env bash
# Proof inside abx-plugins' real code: install the abx-plugins release (pinned) into a
# project-local virtual environment from a Python >= 3.12 (abx-plugins needs one), find its
# chrome_utils.js, make two copies of its chrome and base plugins under target/abx-plugins/ —
# `original` as released and `patched` with tests/abx_plugins/chrome_utils.patch applied (its
# helpers taken from `pidguard/abx-plugins`); the installed package is never changed — and run
# tests/abx_plugins/side_by_side.js inside a private PID namespace: each scenario once per copy,
# one table. Installs Debian's `chromium` with apt-get when it is missing (the scenarios launch a
# real browser, as root with --no-sandbox). Then runs tests/node/abx-plugins.test.js against the
# installed release (its exported names and shapes).
# Without a Python >= 3.12, namespaces or root it skips (exit 77, the reason in $PIDGUARD_SKIP_FILE:
# scripts/lib/steps.sh); one that is installed but cannot be run, or an unshare that fails for
# another reason than permission (no free process slot), is a failure.
#
# Requiring chrome_utils.js needs no npm package: puppeteer and abxbus are loaded lazily by the
# functions that use them, none of which run here. It needs NODE_MODULES_DIR set (abx-plugins'
# hooks get it from abxpkg); here it is target/abx-plugins/node_modules, where `pidguard` links
# to node/ — the way abx-plugins finds the packages it requires.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
ABX_PLUGINS_VERSION=1.13.572
VENV=.venv-abx-plugins
WORK=target/abx-plugins

. scripts/lib/skip.sh
. scripts/lib/find-python.sh
rc=0
find_python 12 || rc=$?
PY=$FOUND_PYTHON
case $rc in
  0) ;;
  1) skip_step "abx-plugins: $FIND_PYTHON_WHY (abx-plugins $ABX_PLUGINS_VERSION needs one; set ABX_PYTHON)" ;;
  *) echo "test-abx-plugins: FAILED: a Python $FIND_PYTHON_WHY" >&2; exit 1 ;;
esac
rc=0
can_unshare --pid --fork --mount-proc true || rc=$?
case $rc in
  0) ;;
  1) skip_step "abx-plugins: cannot make a private PID namespace here ($UNSHARE_WHY)" ;;
  *) echo "test-abx-plugins: FAILED: $UNSHARE_WHY" >&2; exit 1 ;;
esac
if [ "$(id -u)" != 0 ]; then
  skip_step "abx-plugins: needs root (ns_last_pid, and processes of uids 65534 and 65533)"
fi

echo "== abx-plugins $ABX_PLUGINS_VERSION in $VENV ($("$PY" --version)) =="
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "abx-plugins==$ABX_PLUGINS_VERSION"
PKG=$("$VENV/bin/python" -c 'import abx_plugins, os; print(os.path.dirname(abx_plugins.__file__))')
UTILS=$PKG/plugins/chrome/chrome_utils.js
[ -f "$UTILS" ] || { echo "test-abx-plugins: no chrome_utils.js in $PKG" >&2; exit 1; }
echo "chrome_utils.js: $UTILS"

if ! command -v chromium >/dev/null; then
  echo "== apt-get install chromium =="
  apt-get -o DPkg::Lock::Timeout=600 install -y -q chromium >/dev/null
fi
CHROMIUM=$(command -v chromium)
echo "browser: $("$CHROMIUM" --version 2>/dev/null | head -1)"

echo "== the Node addon (cargo build -p pidguard-node) =="
bash scripts/setup-node.sh
cargo build --quiet -p pidguard-node
rm -rf "$WORK"
mkdir -p "$WORK/node_modules"
cp target/debug/libpidguard_node.so "$WORK/pidguard.node"
ln -s "$ROOT/node" "$WORK/node_modules/pidguard"

echo "== two copies of the chrome and base plugins: original, patched =="
for v in original patched; do
  mkdir -p "$WORK/$v/abx_plugins/plugins"
  cp -r "$PKG/plugins/chrome" "$PKG/plugins/base" "$WORK/$v/abx_plugins/plugins/"
done
patch --quiet -p1 -d "$WORK/patched" < tests/abx_plugins/chrome_utils.patch
mkdir -p "$WORK/scratch"
# Everything the scenarios' other users (65534, 65533) read must be readable by them.
chmod -R a+rX "$WORK"

export ABX_PLUGINS_VERSION CHROMIUM
export PIDGUARD_NATIVE_PATH=$ROOT/$WORK/pidguard.node
export NODE_MODULES_DIR=$ROOT/$WORK/node_modules
export ABX_CHROME_UTILS_ORIGINAL=$ROOT/$WORK/original/abx_plugins/plugins/chrome/chrome_utils.js
export ABX_CHROME_UTILS_PATCHED=$ROOT/$WORK/patched/abx_plugins/plugins/chrome/chrome_utils.js
export ABX_SCRATCH=$ROOT/$WORK/scratch
export ABX_PLUGINS_DIR=$PKG/plugins

echo "== the names and shapes of pidguard/abx-plugins against the release (node --test) =="
node --test tests/node/abx-plugins.test.js

echo "== side by side (private PID namespace; pid 1 is a shell that reaps orphans) =="
# `; exit $?` keeps the shell as pid 1 instead of letting it exec node.
unshare --pid --fork --mount-proc sh -c 'node "$0"; exit $?' tests/abx_plugins/side_by_side.js
