#!/usr/bin/env bash
# Build and install the Python binding (`pip install ./py`, a debug build through maturin), then
# run its pytest suite (tests/python), which also runs mypy.stubtest on the stubs and the README
# example. Exits non-zero on any failure, including pytest's "no tests collected" (exit 5).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
bash scripts/setup-python.sh
echo "== pip install ./py (maturin, debug profile) =="
PIP_ROOT_USER_ACTION=ignore MATURIN_PEP517_ARGS="--profile dev" \
  "$PY" -m pip install --quiet --disable-pip-version-check --no-build-isolation --no-deps --force-reinstall ./py
echo "== pytest tests/python =="
# Run from tests/python so that `import pidguard` is the installed package, not ./py/python.
cd tests/python
set +e
"$PY" -m pytest -q -p no:cacheprovider "$@" .
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "test-python: pytest collected no tests" >&2
fi
exit "$rc"
