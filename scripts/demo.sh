#!/usr/bin/env bash
# The main job on real processes: background hooks started the way a spawner starts them,
# a stale pidfile whose pid now belongs to an unrelated bystander, and one cleanup.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build -q -p pidguard-cli
exec target/debug/pidguard demo "$@"
