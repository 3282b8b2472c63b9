#!/usr/bin/env bash
# Race 64 processes on one guard pidfile for 10,000 rounds: exactly one creator must
# win each round, every other racer must get AlreadyExists. Exits 1 on any violation.
#   scripts/guard-race.sh [--rounds N] [--racers M] [--dir DIR] [--mode create|acquire]
# Defaults: --rounds 10000 --racers 64 --mode create, in /dev/shm when it exists.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q -p pidguard-core --example guard_race
exec target/debug/examples/guard_race --rounds 10000 --racers 64 "$@"
