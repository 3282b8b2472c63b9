# shellcheck shell=bash
# A step runner that tells the truth: sourced by scripts/test.sh (and by tests/cli/steps_tests.sh,
# which tests it). Each step is one command; it ends as one row of the final table:
#
#   passed                 it exited 0
#   skipped (REASON)       it exited 77 and wrote REASON (one line) into the file named by
#                          $PIDGUARD_SKIP_FILE, which the runner gives each step
#   FAILED (exit N)        any other exit; exit 77 without a reason is a failure too
#   FAILED (could not start: exit N)   126 or 127: the command was not found or not executable
#   FAILED (timed out after N s)       it ran past its limit; its process group was ended
#
# The protocol for a step script (scripts/test-*.sh): when it cannot run here for a reason that
# is not a fault (a tool that is not installed, no namespaces), it writes the reason to
# $PIDGUARD_SKIP_FILE and exits 77 — `skip_step` in scripts/lib/skip.sh. A tool that is installed but could
# not be run (fork failed, no memory, a crash) is a failure, never a skip.
#
#   step NAME CMD...          run CMD as the step NAME (a name runs once: a second `step` with a
#                             name already run is ignored)
#   STEP_TIMEOUT=S step ...   this step's limit in seconds (default $PIDGUARD_STEP_TIMEOUT, 1800)
#   skipped_step NAME REASON  a row for a step not run at all (the runner's own decision)
#   steps_table               print the table, then the command that reruns each failed step;
#                             returns 1 when a step failed
#
# While a step runs, a heartbeat line is printed every $PIDGUARD_HEARTBEAT seconds (60), so a
# long step is never silent. The limit is enforced with timeout(1): TERM to the step's process
# group, KILL 30 s later if it is still there.

PIDGUARD_STEP_TIMEOUT=${PIDGUARD_STEP_TIMEOUT:-1800}
PIDGUARD_HEARTBEAT=${PIDGUARD_HEARTBEAT:-60}
_steps_rows=()
_steps_rerun=()
_steps_failed=0
_steps_t0=$SECONDS
declare -A _steps_ran=()

# Whether a step named NAME has already run (or been recorded as skipped).
step_ran() { [ -n "${_steps_ran[$1]:-}" ]; }

step() { # NAME CMD...
  local name=$1 limit=${STEP_TIMEOUT:-$PIDGUARD_STEP_TIMEOUT} s=$SECONDS rc=0 hb reason skipfile
  shift
  step_ran "$name" && return 0
  _steps_ran[$name]=1
  skipfile=$(mktemp "${TMPDIR:-/tmp}/pidguard-skip.XXXXXX") || {
    _steps_row "$name" "$(printf '%5d s  FAILED (could not make a temporary file)' 0)" "$@"
    return 0
  }
  echo "== step $name: $* (limit ${limit} s) =="
  # The heartbeat's own sleep is ended with it: an orphaned sleep would hold our stdout open
  # (and stall whoever reads it to the end, as $(...) does) for up to a heartbeat.
  (
    trap 'kill "$sp" 2>/dev/null; exit 0' TERM
    while :; do
      sleep "$PIDGUARD_HEARTBEAT" &
      sp=$!
      wait "$sp"
      echo "   ... step $name still running ($((SECONDS - s)) s of at most ${limit} s)"
    done
  ) &
  hb=$!
  # In the background so that an interrupt (Ctrl-C, or CI's TERM) reaches the runner at once;
  # SIGINT restored for the step (a background job would otherwise start with it ignored).
  (
    trap - INT QUIT
    PIDGUARD_SKIP_FILE=$skipfile exec timeout --kill-after=30 "$limit" "$@" </dev/null
  ) &
  _steps_cur=$! _steps_cur_name=$name _steps_cur_s=$s _steps_hb=$hb _steps_cur_cmd=("$@")
  wait "$_steps_cur" || rc=$?
  _steps_cur=
  kill "$hb" 2>/dev/null
  wait "$hb" 2>/dev/null
  local took=$((SECONDS - s))
  reason=$(head -n 1 "$skipfile" 2>/dev/null)
  rm -f "$skipfile"
  case $rc in
    0) _steps_row "$name" "$(printf '%5d s  passed' $took)" ;;
    77)
      if [ -n "$reason" ]; then
        _steps_row "$name" "$(printf '%5d s  skipped (%s)' $took "$reason")"
      else
        _steps_fail "$name" "$(printf '%5d s  FAILED (exit 77 without a reason in $PIDGUARD_SKIP_FILE)' $took)" "$@"
      fi
      ;;
    124 | 137) _steps_fail "$name" "$(printf '%5d s  FAILED (timed out after %d s)' $took "$limit")" "$@" ;;
    125) _steps_fail "$name" "$(printf '%5d s  FAILED (could not start: timeout(1) failed, exit 125)' $took)" "$@" ;;
    126 | 127) _steps_fail "$name" "$(printf '%5d s  FAILED (could not start: exit %d)' $took $rc)" "$@" ;;
    *) _steps_fail "$name" "$(printf '%5d s  FAILED (exit %d)' $took $rc)" "$@" ;;
  esac
  return 0
}

# Interrupted (INT or TERM): end the running step (timeout(1) passes TERM on to its process
# group), count it as failed, print the table and exit 130.
_steps_interrupted() {
  trap - INT TERM
  if [ -n "${_steps_cur:-}" ]; then
    kill -TERM "$_steps_cur" 2>/dev/null
    wait "$_steps_cur" 2>/dev/null
    kill "$_steps_hb" 2>/dev/null
    _steps_fail "$_steps_cur_name" "$(printf '%5d s  FAILED (interrupted)' $((SECONDS - _steps_cur_s)))" "${_steps_cur_cmd[@]}"
  fi
  steps_table
  exit 130
}
trap _steps_interrupted INT TERM

skipped_step() { # NAME REASON
  step_ran "$1" && return 0
  _steps_ran[$1]=1
  _steps_row "$1" "$(printf '%5s    skipped (%s)' - "$2")"
}

_steps_row() { _steps_rows+=("$(printf '%-22s %s' "$1" "$2")"); }
_steps_fail() { # NAME TEXT CMD...
  _steps_row "$1" "$2"
  _steps_failed=$((_steps_failed + 1))
  local q
  q=$(printf '%q ' "${@:3}")
  _steps_rerun+=("$(printf '%-22s %s' "$1" "${q% }")")
}

steps_table() {
  echo "== steps =="
  printf '  %s\n' "${_steps_rows[@]}"
  printf '  %-22s %5d s\n' total $((SECONDS - _steps_t0))
  if [ $_steps_failed = 0 ]; then
    return 0
  fi
  echo "== $_steps_failed step(s) FAILED; rerun one from the repository root with =="
  printf '  %s\n' "${_steps_rerun[@]}"
  return 1
}
