#!/usr/bin/env bash
# Proof inside abx-dl's real code: install the current abx-dl release (pinned) into a
# project-local virtual environment from a Python >= 3.12 (abx-dl needs one), install the
# pidguard wheel there, and run tests/abx_dl: lifecycles driven through abx-dl's own process
# service and kill paths, each without and then with pidguard.abx_dl swapped in for
# abx_dl.process_utils. Everything runs inside a private PID namespace (the pid-reuse scenario
# forces a pid; nothing outside can be signalled) and a loopback-only network namespace.
# Without a Python >= 3.12 or namespaces, says that it skipped and why, and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
ABX_DL_VERSION=1.13.273
VENV=.venv-abx-dl

find_python() {
  for c in "${ABX_PYTHON:-}" python3.12 python3.13 python3 /root/.pyenv/versions/3.12*/bin/python /root/.pyenv/versions/3.13*/bin/python; do
    [ -n "$c" ] || continue
    p=$(command -v "$c" 2>/dev/null) || continue
    "$p" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null && { echo "$p"; return 0; }
  done
  return 1
}
if ! PY=$(find_python); then
  echo "test-abx-dl: skipped: no Python >= 3.12 found (abx-dl $ABX_DL_VERSION needs one; set ABX_PYTHON)"
  exit 0
fi
if ! unshare --net --pid --fork --mount-proc sh -c 'ip link set lo up' 2>/dev/null; then
  echo "test-abx-dl: skipped: cannot make a private PID and network namespace here (unshare --net --pid, ip link)"
  exit 0
fi
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
