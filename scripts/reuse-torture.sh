#!/usr/bin/env bash
# Real PID-reuse torture: N rounds (default 10000) inside a private PID
# namespace. Each round records a group leader, kills and reaps it, forces its pid onto a
# bystander group leader with two children (ns_last_pid), and runs judge/open/check/stop/
# cleanup/terminate against the old record; the bystander group must survive every time.
# Needs root (or the capabilities for `unshare --pid`). Prints the summary line with the number of
# same-tick rounds; exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-10000}"
cargo build -q -p pidguard-core --example reuse_torture
exec unshare --pid --fork --mount-proc target/debug/examples/reuse_torture "$rounds"
