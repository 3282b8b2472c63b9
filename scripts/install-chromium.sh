#!/usr/bin/env bash
# The real browser the scope tests stop (issue 25): Debian's `chromium`, launched the way
# abx-plugins' Chrome launcher does it (tests/cli/chrome_hook.js). Checks, and installs with
# apt-get when missing, as scripts/install-system-deps.sh does for the other system tools.
#
#   bash scripts/install-chromium.sh           install chromium when missing (root, or sudo)
#   bash scripts/install-chromium.sh --check   only say whether it is there; exit 1 if not
#
# Exit 0 when `chromium` is on PATH afterwards; 1 (with the reason on stderr) when it is not and
# cannot be installed here (no apt-get, no root, no package): the tests then skip and say so.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  echo "install-chromium: $(command -v chromium) is there"
  exit 0
fi
if [ "${1:-}" = --check ]; then
  echo "install-chromium: chromium is missing (run: bash scripts/install-chromium.sh)" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-chromium: no chromium, and no apt-get here: install it with your package manager" >&2
  exit 1
fi
if [ "$(id -u)" = 0 ]; then sudo=(); elif command -v sudo >/dev/null 2>&1; then sudo=(sudo -n); else
  echo "install-chromium: no chromium, and neither root nor sudo to install it" >&2
  exit 1
fi
echo "install-chromium: installing chromium with apt-get"
if ! "${sudo[@]}" apt-get update -qq || ! DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq chromium >/dev/null; then
  echo "install-chromium: apt-get could not install chromium" >&2
  exit 1
fi
command -v chromium >/dev/null 2>&1 || { echo "install-chromium: installed, but no chromium on PATH" >&2; exit 1; }
echo "install-chromium: done ($(command -v chromium))"
