#!/usr/bin/env bash
# What the Node addon's tests need: Node >= 18 with npm (the addon itself needs no npm package:
# index.js loads node/pidguard.node, built by cargo). On a machine without Node, install it from
# the distribution. Idempotent and quiet when everything is there.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "setup-node: installing nodejs and npm with apt-get"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 18 ]; then
  echo "setup-node: Node $(node --version) is too old: node --test and the addon need Node >= 18" >&2
  exit 1
fi

# The TypeScript compiler and Node's types, only for tests/node/types.test.js (which type-checks
# node/index.d.ts). Kept under target/ (ignored by git), installed once.
tools="${CARGO_TARGET_DIR:-target}/node-tools"
if [ ! -x "$tools/node_modules/.bin/tsc" ] || [ ! -d "$tools/node_modules/@types/node" ]; then
  echo "setup-node: installing typescript and @types/node into $tools"
  mkdir -p "$tools"
  npm install --prefix "$tools" --no-audit --no-fund --no-save --loglevel=error typescript@5 @types/node@20 >/dev/null
fi
