#!/usr/bin/env bash
# pidguard under seccomp filters shaped like older container profiles (issue 47): each of
# pidfd_open, pidfd_send_signal, clone3, openat2, pidfd_getfd, close_range answered with EPERM
# (Docker before 20.10 answered EPERM for clone3: no thread can be made) or ENOSYS (a kernel
# without them), alone and all together. tests/seccomp/seccomp_exec.c installs the filter.
#
#   bash scripts/test-seccomp.sh          the stops (tests/seccomp/stop_tests.sh: run + stop /
#                                         cleanup of a tree with a setsid grandchild and a
#                                         double-forked daemon, under clone3, pidfd_open,
#                                         pidfd_send_signal and all, each errno), and 20
#                                         rounds of the reuse torture under EPERM and ENOSYS
#                                         for all six (~3 min)
#   bash scripts/test-seccomp.sh --full   and the suites under every filter, with a table
#                                         (scripts/seccomp-suites.sh; see its header)
# Skips (exit 0, with the reason) without root, a C compiler, unshare or x86_64.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ "$(uname -m)" != x86_64 ] || ! command -v cc >/dev/null || [ "$(id -u)" != 0 ] || ! unshare --pid --fork --mount-proc true 2>/dev/null; then
  echo "skip - the seccomp tests need x86_64, root, a C compiler and PID namespaces"
  exit 0
fi
cargo build -q -p pidguard-cli || exit 1
mkdir -p target/seccomp
cc -O2 -Wall -Wextra -Werror -o target/seccomp/seccomp_exec tests/seccomp/seccomp_exec.c || exit 1
export PIDGUARD="$PWD/target/debug/pidguard" SECCOMP_EXEC="$PWD/target/seccomp/seccomp_exec"
# The filter works: a thread cannot be made under EPERM for clone3, can under ENOSYS.
if "$SECCOMP_EXEC" EPERM clone3 -- python3 -c 'import threading; threading.Thread(target=print).start()' 2>/dev/null; then
  echo "FAIL - seccomp_exec EPERM clone3 did not stop a thread from being made"; exit 1
fi
rc=0
unshare --pid --fork --mount-proc bash tests/seccomp/stop_tests.sh || rc=1
# The reuse torture under the two filters that refuse everything (no pidfd, no thread): a few
# rounds here, every filter with --full. Same-tick reuse must never fool a ticks-only token.
SUITES=torture FILTERS="EPERM:all ENOSYS:all" TORTURE_ROUNDS=${TORTURE_ROUNDS:-20} bash scripts/seccomp-suites.sh || rc=1
if [ "${1:-}" = --full ]; then
  bash scripts/seccomp-suites.sh || rc=1
fi
[ $rc = 0 ] && echo "seccomp: all passed" || echo "seccomp: FAILED (logs in target/seccomp/logs)"

exit $rc
