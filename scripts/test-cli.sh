#!/usr/bin/env bash
# The `pidguard` command's tests, inside a private PID namespace where allowed.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q -p pidguard-cli
export PIDGUARD="$PWD/target/debug/pidguard"
if unshare --pid --fork --mount-proc true 2>/dev/null; then
  exec unshare --pid --fork --mount-proc bash tests/cli/cli_tests.sh
else
  echo "(no private PID namespace here: running the CLI tests in the current one)"
  exec bash tests/cli/cli_tests.sh
fi
