#!/usr/bin/env bash
# What the Node addon's build, tests and package need: Node >= 18 with npm (from the system:
# scripts/install-system-deps.sh installs them), and the devDependencies of node/package.json —
# typescript and @types/node (tests/node/types.test.js) — installed
# into the project's own node/node_modules from node/package-lock.json. Nothing global.
# Idempotent and quiet when everything is there.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "setup-node: node and npm are needed (bash scripts/install-system-deps.sh installs them)" >&2
  exit 1
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 18 ]; then
  echo "setup-node: Node $(node --version) is too old: node --test and the addon need Node >= 18" >&2
  exit 1
fi
# Install again only when the lock file changed since the last install.
stamp=node/node_modules/.pidguard-lock
if [ ! -x node/node_modules/.bin/tsc ] || ! cmp -s node/package-lock.json "$stamp"; then
  echo "setup-node: npm ci in node/ (typescript, @types/node into node/node_modules)"
  (cd node && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  cp node/package-lock.json "$stamp"
fi
