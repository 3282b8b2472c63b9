#!/usr/bin/env bash
# Install what the build and the tests need on a fresh machine of this kind (Debian, rustup,
# CPython 3.11 with pip, Node 20). Idempotent and quiet when everything is there.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo >/dev/null || { echo "setup: cargo not found (install Rust with rustup)" >&2; exit 1; }
# setfattr/getfattr: the CLI tests plant token xattrs.
command -v setfattr >/dev/null || { apt-get update -qq >/dev/null 2>&1; apt-get install -y -qq attr >/dev/null 2>&1; } || true
if [ -f scripts/setup-c.sh ]; then bash scripts/setup-c.sh; fi
if [ -f scripts/setup-python.sh ]; then bash scripts/setup-python.sh; fi
if [ -f scripts/setup-node.sh ]; then bash scripts/setup-node.sh; fi
