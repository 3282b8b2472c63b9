#!/usr/bin/env bash
# Proof inside abx-dl's real code: install the current abx-dl release (pinned) into a
# project-local virtual environment from a Python >= 3.12 (abx-dl needs one), install the
# pidguard wheel there, and run tests/abx_dl: lifecycles driven through abx-dl's own process
# service and kill paths, each without and then with pidguard.abx_dl swapped in for
# abx_dl.process_utils. Everything runs inside a private PID namespace (the pid-reuse scenario
# forces a pid; nothing outside can be signalled) and a loopback-only network namespace.
# Without a Python >= 3.12 or namespaces it skips (exit 77, the reason in $PIDGUARD_SKIP_FILE:
# scripts/lib/steps.sh); one that is installed but cannot be run, or an unshare that fails for
# another reason than permission (no free process slot), is a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
ABX_DL_VERSION=1.13.273
VENV=.venv-abx-dl

. scripts/lib/skip.sh
. scripts/lib/find-python.sh
rc=0
find_python 12 || rc=$?
PY=$FOUND_PYTHON
case $rc in
  0) ;;
  1) skip_step "abx-dl: $FIND_PYTHON_WHY (abx-dl $ABX_DL_VERSION needs one; set ABX_PYTHON)" ;;
  *) echo "test-abx-dl: FAILED: a Python $FIND_PYTHON_WHY" >&2; exit 1 ;;
esac
rc=0
can_unshare --net --pid --fork --mount-proc sh -c 'ip link set lo up' || rc=$?
case $rc in
  0) ;;
  1) skip_step "abx-dl: cannot make a private PID and network namespace here ($UNSHARE_WHY)" ;;
  *) echo "test-abx-dl: FAILED: $UNSHARE_WHY" >&2; exit 1 ;;
esac
command -v node >/dev/null || echo "test-abx-dl: note: node is not installed; the node hook runs through a /bin/sh shebang instead"

echo "== abx-dl $ABX_DL_VERSION in $VENV ($("$PY" --version)) =="
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "abx-dl==$ABX_DL_VERSION" "pytest>=7" "maturin>=1.9,<2"
echo "== pidguard wheel (maturin, debug profile) =="
rm -rf target/abx-dl-wheel
"$VENV/bin/maturin" build --quiet --profile dev -m py/Cargo.toml -i "$VENV/bin/python" -o target/abx-dl-wheel
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --force-reinstall target/abx-dl-wheel/*.whl
echo "== pytest tests/abx_dl (private PID namespace, loopback-only network) =="
cd tests/abx_dl
exec unshare --net --pid --fork --mount-proc sh -c \
  'ip link set lo up && exec "$0" -m pytest -q -p no:cacheprovider "$@" .' "../../$VENV/bin/python" "$@"
