#!/usr/bin/env bash
# Build and install the Python binding into the project's .venv (`pip install ./py`, a debug
# build through maturin; never into the system interpreter), then
# run its pytest suite (tests/python), which also runs mypy.stubtest on the stubs and the README
# example, then the shared conformance vectors (tests/python/test_vectors.py) in a private PID
# namespace. Exits non-zero on any failure, including pytest's "no tests collected" (exit 5).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-python.sh
PY="$PWD/.venv/bin/python"
# maturin (the build backend, run by pip) and pytest are found in .venv/bin.
export PATH="$PWD/.venv/bin:$PATH"
echo "== pip install ./py into .venv (maturin, debug profile) =="
MATURIN_PEP517_ARGS="--profile dev" \
  "$PY" -m pip install --quiet --disable-pip-version-check --no-build-isolation --no-deps --force-reinstall ./py
echo "== pytest tests/python =="
# Run from tests/python so that `import pidguard` is the installed package, not ./py/python.
cargo build -q -p pidguard-core --example vector_fixture
cd tests/python
set +e
"$PY" -m pytest -q -p no:cacheprovider --ignore=test_vectors.py "$@" .
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "test-python: pytest collected no tests" >&2
fi
[ "$rc" -eq 0 ] || exit "$rc"
# The shared conformance vectors, inside a private PID namespace where one can be made (the
# pid-reuse cases need it); prints "vectors (python): N passed, N failed, N skipped".
echo "== pytest test_vectors.py (shared conformance vectors) =="
sh ../vectors/in-pidns.sh "$PY" -m pytest -q -p no:cacheprovider test_vectors.py
