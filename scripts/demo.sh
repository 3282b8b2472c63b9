#!/usr/bin/env bash
# The main job on real processes: background hooks started the way a spawner starts them,
# a stale pidfile whose pid now belongs to an unrelated bystander, and one cleanup.
# Needs only cargo: nothing is installed, on the machine or in the project.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo >/dev/null || { echo "demo: cargo not found (install Rust with rustup: https://rustup.rs)" >&2; exit 1; }
echo "== cargo build --locked -p pidguard-cli (the first build fetches and compiles the dependencies: about a minute) =="
cargo build --locked -p pidguard-cli
exec target/debug/pidguard demo "$@"
