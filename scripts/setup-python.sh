#!/usr/bin/env bash
# The project's Python environment: .venv/ at the repository root (git-ignored), made from
# python3 (or, when that cannot make one, from a pyenv CPython >= 3.9), with the tools of
# py/requirements-dev.txt: maturin (the build backend), pytest, mypy (stubtest) and psutil (a test
# dependency: the tests compare pidguard's create times with psutil's). Nothing is installed into
# the system interpreter. Idempotent and quiet when everything is there.
#
# Other scripts then use .venv/bin/python (scripts/test.sh puts .venv/bin first on PATH).
# PYTHON=/path/to/python3.X chooses the interpreter the venv is made from.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="$PWD/.venv"
REQ=py/requirements-dev.txt

usable() { # can this interpreter make a venv with pip? (CPython >= 3.9)
  "$1" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 9))' >/dev/null 2>&1
}

if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import sys' >/dev/null 2>&1; then
  base=""
  for cand in "${PYTHON:-}" python3 $(ls -d /root/.pyenv/versions/3.1[0-9]*/bin/python3 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.*/bin/python3 2>/dev/null | sort -rV); do
    [ -n "$cand" ] || continue
    if usable "$cand"; then base="$cand"; break; fi
  done
  if [ -z "$base" ]; then
    echo "setup-python: no CPython >= 3.9 that can make a virtual environment (on Debian: bash scripts/install-system-deps.sh)" >&2
    exit 1
  fi
  echo "setup-python: making .venv from $("$base" -c 'import sys; print(sys.executable, sys.version.split()[0])')"
  rm -rf "$VENV"
  "$base" -m venv "$VENV"
fi

# Install (again) only when the requirements changed since the last install.
stamp="$VENV/.pidguard-requirements"
if ! cmp -s "$REQ" "$stamp"; then
  echo "setup-python: installing $(grep -v '^#' "$REQ" | tr '\n' ' ')into .venv"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$REQ"
  cp "$REQ" "$stamp"
fi
