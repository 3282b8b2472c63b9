#!/usr/bin/env bash
# The newest release of each of pidguard's users, against its integration: asks PyPI (pip) for
# the newest abx-dl, abx-plugins and ArchiveBox (stable; PRE=1: pre-releases too), installs them,
# applies or loads the integration, runs the scenarios of scripts/test-integrations.sh (released
# and integrated, each in a private PID namespace) and prints
# `package | pinned | newest | applies | each scenario`. Not part of the test command (it needs the
# network and tells news, not a regression): it exits 0 whatever the table says, unless it could
# not run. Paste its table, with its date, into integrations/README.md. Same needs as
# scripts/test-integrations.sh (root, unshare, node, pyenv's Python 3.13).
set -euo pipefail
cd "$(dirname "$0")/.."
PINNED="abx-dl=1.13.423 abx-plugins=1.13.943 archivebox=0.9.73"
PYENV_ROOT=$(pyenv root 2>/dev/null || echo "${PYENV_ROOT:-/root/.pyenv}")
PY3=$(ls -d "$PYENV_ROOT"/versions/3.13*/bin/python3 2>/dev/null | sort -V | tail -1)
newest() { # DIST: the newest version on PyPI, as pip sees it
  "$PY3" -m pip index versions ${PRE:+--pre} --disable-pip-version-check "$1" 2>/dev/null | sed -n 's/^[^ ]* (\(.*\))$/\1/p' | head -1
}
ABX_DL_VERSIONS=$(newest abx-dl)
PLUGINS_VERSIONS=$(newest abx-plugins)
ARCHIVEBOX_VERSIONS=$(newest archivebox)
[ -n "$ABX_DL_VERSIONS" ] && [ -n "$PLUGINS_VERSIONS" ] && [ -n "$ARCHIVEBOX_VERSIONS" ] ||
  { echo "check-upstream: could not ask PyPI for the newest releases (pip index versions)" >&2; exit 1; }
echo "== newest on PyPI: abx-dl $ABX_DL_VERSIONS, abx-plugins $PLUGINS_VERSIONS, archivebox $ARCHIVEBOX_VERSIONS =="
UPSTREAM=1
. scripts/lib/integrations.sh
integrations_main "pidguard integrations against the newest releases on PyPI"
