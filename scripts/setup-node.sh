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
