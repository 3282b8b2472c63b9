#!/usr/bin/env bash
# The `pidguard` command's tests, inside a private PID namespace where allowed.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q -p pidguard-cli
export PIDGUARD="$PWD/target/debug/pidguard"
run() {
  if unshare --pid --fork --mount-proc true 2>/dev/null; then
    unshare --pid --fork --mount-proc bash "$1"
  else
    echo "(no private PID namespace here: running $1 in the current one)"
    bash "$1"
  fi
}
rc=0
run tests/cli/cli_tests.sh || rc=1
run tests/cli/attack_tests.sh || rc=1
run tests/cli/deputy_tests.sh || rc=1
run tests/cli/identity_tests.sh || rc=1
run tests/cli/shared_tree_tests.sh || rc=1
run tests/cli/edges_tests.sh || rc=1
run tests/cli/scope_tests.sh || rc=1
run tests/cli/list_stop_tests.sh || rc=1
run tests/cli/steps_tests.sh || rc=1
run tests/cli/user_tests.sh || rc=1
exit $rc
