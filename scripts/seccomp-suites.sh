#!/usr/bin/env bash
# The suites under every seccomp filter of issue 47, with a table (the `--full` part of
# scripts/test-seccomp.sh). A filter answers EPERM or ENOSYS for one of pidfd_open,
# pidfd_send_signal, clone3, openat2, pidfd_getfd, close_range, or all six
# (tests/seccomp/seccomp_exec.c); "none" is the control (a filter that answers nothing).
#
# Suites (one column each; a cell is "passed/failed", "n/a" with a footnote, or "-" not run):
#   core     core's identity, signalling, scope, guard and cleanup test binaries (built with
#            `cargo test --no-run`), run with --test-threads=1 under the filter
#   c        the C ABI's test binaries (tests/c programs, header, reports), likewise
#   cli      every tests/cli/*_tests.sh, as pid 1 of a private PID namespace, under the filter
#   stops    tests/seccomp/stop_tests.sh for this filter (run + stop/cleanup of a tree)
#   torture  scripts/reuse-torture.sh's program, $TORTURE_ROUNDS rounds (default 50): the cell
#            is "wrong kills/rounds" — it must be 0 under every filter
# Environment: SUITES (default "core c cli stops torture"), FILTERS (default: none, then each
# errno with each call alone and all), TORTURE_ROUNDS. Prints the table and its time; exits
# non-zero when a cell failed (n/a cells do not fail). Needs root, x86_64, cc, unshare.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SUITES=${SUITES:-"core c cli stops torture"}
CALLS="pidfd_open pidfd_send_signal clone3 openat2 pidfd_getfd close_range all"
if [ -z "${FILTERS:-}" ]; then
  FILTERS="none:none"
  for e in ENOSYS EPERM; do for c in $CALLS; do FILTERS="$FILTERS $e:$c"; done; done
fi
ROUNDS=${TORTURE_ROUNDS:-50}
t0=$(date +%s)
mkdir -p target/seccomp
cc -O2 -Wall -Wextra -Werror -o target/seccomp/seccomp_exec tests/seccomp/seccomp_exec.c || exit 1
SX=$ROOT/target/seccomp/seccomp_exec
cargo build -q -p pidguard-cli -p pidguard-core --example reuse_torture || exit 1
export PIDGUARD=$ROOT/target/debug/pidguard SECCOMP_EXEC=$SX
# Test binaries by target name, from cargo's own report of what it built.
CORE_TESTS="identity_never_guesses signalling scopes scope_edges a_pinned_record_reaches_its_whole_scope guard guard_without_proc hooks cleanup_attacks"
C_TESTS="c_programs header reports"
bins() {
  cargo test --no-run --message-format=json -p "$1" 2>/dev/null | python3 -c '
import json, sys
want = set(sys.argv[1].split())
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] in want and m["profile"]["test"]:
        print(m["executable"])' "$2"
}
case " $SUITES " in *" core "*) CORE_BINS=$(bins pidguard-core "$CORE_TESTS") ;; esac
case " $SUITES " in *" c "*) C_BINS=$(bins pidguard-ffi-c "$C_TESTS") ;; esac
LOG=$ROOT/target/seccomp/logs; rm -rf "$LOG"; mkdir -p "$LOG"
failed=0; notes=""

# libtest makes a thread per test and runs it inline only on EAGAIN: under EPERM for clone3 no
# in-process Rust test can run (pidguard itself does: see the stops and cli columns).
no_threads() { [ "$1" = EPERM ] && { [ "$2" = clone3 ] || [ "$2" = all ]; }; }

run_libtest() { # $1 errno $2 calls $3 log, rest: binaries
  local e=$1 c=$2 log=$3 b p=0 f=0 out; shift 3
  if no_threads "$e" "$c"; then echo "n/a¹"; return; fi
  for b in "$@"; do
    out=$(cd "$ROOT/core" && "$SX" "$e" "$c" -- "$b" --test-threads=1 2>&1); echo "$out" >> "$log"
    local r; r=$(echo "$out" | sed -n 's/^test result: .*\. \([0-9]*\) passed; \([0-9]*\) failed.*/\1 \2/p' | tail -1)
    if [ -z "$r" ]; then f=$((f+1)); else p=$((p+${r% *})); f=$((f+${r#* })); fi
  done
  echo "$p/$f"
}
run_cli() {
  local e=$1 c=$2 log=$3 t p=0 f=0 r
  for t in tests/cli/*_tests.sh; do
    r=$( (cd "$ROOT" && timeout 900 "$SX" "$e" "$c" -- unshare --pid --fork --mount-proc bash "$t") 2>&1 | tee -a "$log" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed.*/\1 \2/p' | tail -1)
    if [ -z "$r" ]; then f=$((f+1)); echo "($t gave no summary line)" >> "$log"; else p=$((p+${r% *})); f=$((f+${r#* })); fi
  done
  echo "$p/$f"
}
run_stops() {
  local e=$1 c=$2 log=$3 r
  [ "$e" = none ] && e=EPERM
  r=$(SECCOMP_CASES="$e:$c" unshare --pid --fork --mount-proc bash tests/seccomp/stop_tests.sh 2>&1 | tee -a "$log" | sed -n 's/^seccomp stops: \([0-9]*\) passed, \([0-9]*\) failed/\1 \2/p')
  [ -z "$r" ] && { echo "0/1"; return; }
  echo "${r% *}/${r#* }"
}
run_torture() {
  local e=$1 c=$2 log=$3 line
  line=$("$SX" "$e" "$c" -- unshare --pid --fork --mount-proc "$ROOT/target/debug/examples/reuse_torture" "$ROUNDS" 2>&1 | tee -a "$log" | grep '^reuse-torture: rounds=' | tail -1)
  [ -z "$line" ] && { echo "FAIL"; return; }
  # Every failure of a round counts (a wrong kill is one; the program says which in the log).
  echo "$(echo "$line" | sed -n 's/.*failures=\([0-9]*\).*/\1/p')/$ROUNDS pidfs=$(echo "$line" | sed -n 's/.*pidfs_decided=\([0-9]*\).*/\1/p')"
}

printf '%-26s' filter; for s in $SUITES; do printf '%-18s' "$s"; done; echo
for fl in $FILTERS; do
  e=${fl%%:*}; c=${fl#*:}
  [ "$e" = none ] && { e=EPERM; c=none; label="none (control)"; } || label="$e $c"
  printf '%-26s' "$label"
  for s in $SUITES; do
    log="$LOG/${e}-${c}-$s.log"
    case $s in
      core) cell=$(run_libtest "$e" "$c" "$log" $CORE_BINS) ;;
      c) cell=$(run_libtest "$e" "$c" "$log" $C_BINS) ;;
      cli) cell=$(run_cli "$e" "$c" "$log") ;;
      stops) if [ "$c" = none ]; then cell="-"; else cell=$(run_stops "$e" "$c" "$log"); fi ;;
      torture) cell=$(run_torture "$e" "$c" "$log") ;;
    esac
    case $cell in
      */0|*/0\ *|n/a*|-) ;;
      0/$ROUNDS*) ;;
      *) failed=1 ;;
    esac
    printf '%-18s' "$cell"
  done
  echo
done
echo "¹ libtest needs a thread per test (it runs one inline only on EAGAIN): no in-process Rust test runs without clone3"
echo "torture: failures/rounds and the rounds the pidfs inode decided; logs in $LOG"
echo "time: $(( $(date +%s) - t0 )) s"
exit $failed
