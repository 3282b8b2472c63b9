#!/usr/bin/env bash
# Install what the Python binding's build and tests need: maturin (the build backend, used
# without build isolation), pytest, mypy (for stubtest) and psutil (a test dependency only: the
# tests compare pidguard's create times with psutil's). No virtualenv: per TOOLCHAIN.md,
# `pip install ./py` works into the interpreter's own site-packages. Idempotent and quiet.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
command -v "$PY" >/dev/null || { echo "setup-python: $PY not found (CPython >= 3.9 with pip is needed)" >&2; exit 1; }
"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 9))' || { echo "setup-python: CPython >= 3.9 needed" >&2; exit 1; }
need=()
"$PY" -c 'import maturin' 2>/dev/null || need+=("maturin>=1.9,<2")
"$PY" -c 'import pytest' 2>/dev/null || need+=("pytest>=7")
"$PY" -c 'import mypy' 2>/dev/null || need+=("mypy>=1.8")
"$PY" -c 'import psutil' 2>/dev/null || need+=("psutil>=5.9")
if [ ${#need[@]} -gt 0 ]; then
  echo "setup-python: installing ${need[*]}"
  PIP_ROOT_USER_ACTION=ignore "$PY" -m pip install --quiet --disable-pip-version-check "${need[@]}"
fi
