#!/usr/bin/env bash
# The one step that touches the machine: checks, and installs with apt-get when missing, the
# system tools that scripts/test.sh needs beyond Rust. Everything else the scripts need goes
# into the project: Python tools into .venv/ (scripts/setup-python.sh), Node tools into
# node/node_modules (scripts/setup-node.sh). scripts/demo.sh needs none of this (only cargo).
#
#   bash scripts/install-system-deps.sh           install what is missing (root, or sudo)
#   bash scripts/install-system-deps.sh --check   only say what is missing; exit 1 if anything is
#
# What and why:
#   gcc, g++, pkg-config, binutils (readelf)  the C library's tests compile against it;
#                                             objdump checks pidguard-scope's glibc floor
#   valgrind                                  the C tests run under it
#   attr (setfattr, getfattr)                 tests plant and read the token xattr
#   strace                                    tests that count system calls
#   util-linux (unshare, setpriv), bsdutils (script), iproute2 (ip)
#                                             private PID and network namespaces; running as
#                                             another user; a terminal for the progress-line test
#   nodejs, npm (Node >= 18)                  the Node addon's tests and its package
#   python3 with venv and pip (CPython >= 3.9) the Python binding (in .venv/, never system-wide)
set -euo pipefail
check_only=0
[ "${1:-}" = --check ] && check_only=1

missing=()
need() { # command apt-package
  command -v "$1" >/dev/null 2>&1 || missing+=("$2")
}
need cc gcc
need g++ g++
need pkg-config pkg-config
need readelf binutils
need valgrind valgrind
need setfattr attr
need strace strace
need unshare util-linux
need setpriv util-linux
need script bsdutils
need ip iproute2
need node nodejs
need npm npm
need python3 python3

# A python3 that can make a virtual environment (Debian splits venv/ensurepip into python3-venv).
if command -v python3 >/dev/null 2>&1 && ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
  missing+=(python3-venv)
fi

# De-duplicate.
if [ ${#missing[@]} -gt 0 ]; then
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-system-deps: everything is there"
  exit 0
fi
if [ $check_only = 1 ]; then
  echo "install-system-deps: missing: ${missing[*]} (run: bash scripts/install-system-deps.sh)" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-system-deps: missing ${missing[*]}, and no apt-get here: install them with your package manager" >&2
  exit 1
fi
if [ "$(id -u)" = 0 ]; then sudo=(); else sudo=(sudo); fi
echo "install-system-deps: installing ${missing[*]} with apt-get"
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
echo "install-system-deps: done"
