#!/usr/bin/env bash
# The step runner of scripts/test.sh (scripts/lib/steps.sh) and the skip helpers of the step
# scripts (scripts/lib/skip.sh, scripts/lib/find-python.sh) tell the truth: a step that passes,
# fails, skips with its reason, exits 77 without one, cannot start, or hangs past its limit is
# shown as such, with a heartbeat while it runs and the command that reruns each failure; a
# Python that is installed but cannot be run is a failure, not "none found".
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   - $1"; }
bad() { fail=$((fail + 1)); echo "FAIL - $1"; }
has() { grep -qE -- "$2" <<<"$1" && ok "$3" || { bad "$3"; printf '%s\n' "$1" | sed 's/^/    | /'; }; }
hasnt() { grep -qE -- "$2" <<<"$1" && { bad "$3"; printf '%s\n' "$1" | sed 's/^/    | /'; } || ok "$3"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A run of six steps, each a small bash script; the hung one writes its pid so that we can see
# it was ended.
cat >"$tmp/run.sh" <<RUN
set -uo pipefail
PIDGUARD_HEARTBEAT=1
. "$ROOT/scripts/lib/steps.sh"
step good bash -c 'echo hello'
step broken bash -c 'exit 3'
step skips bash -c '. "$ROOT/scripts/lib/skip.sh"; skip_step "no frobnicator installed"'
step mute bash -c 'exit 77'
step nostart /nonexistent/tool --flag
STEP_TIMEOUT=3 step hangs bash -c 'echo \$\$ > "$tmp/hung.pid"; sleep infinity & echo \$! > "$tmp/hung-child.pid"; wait'
step good bash -c 'echo ran twice'
steps_table
RUN
s=$SECONDS
out=$(timeout 120 bash "$tmp/run.sh" 2>&1)
rc=$?
echo "(the six steps took $((SECONDS - s)) s)"
[ $rc = 1 ] && ok "the run returns 1 when a step failed" || bad "the run returned $rc"
has "$out" '^  good +[0-9]+ s  passed$' "a step that exits 0 is passed"
has "$out" '^  broken +[0-9]+ s  FAILED \(exit 3\)$' "a step that exits 3 is FAILED (exit 3)"
has "$out" '^  skips +[0-9]+ s  skipped \(no frobnicator installed\)$' "a skip shows the reason the step wrote"
has "$out" '^  mute +[0-9]+ s  FAILED \(exit 77 without a reason' "exit 77 without a reason is a failure"
has "$out" '^  nostart +[0-9]+ s  FAILED \(could not start: exit 127\)$' "a command that cannot start is a failure"
has "$out" '^  hangs +[0-9]+ s  FAILED \(timed out after 3 s\)$' "a step past its limit is FAILED (timed out)"
has "$out" 'step hangs still running' "a heartbeat line while a step runs"
hasnt "$out" 'ran twice' "a name runs once"
has "$out" '^== 4 step\(s\) FAILED; rerun one from the repository root with ==$' "the failures are counted"
has "$out" '^  broken +bash -c exit\\ 3$' "the rerun command of a failed step"
has "$out" '^  nostart +/nonexistent/tool --flag$' "the rerun command of a step that could not start"
has "$out" '^  hangs +bash -c ' "the rerun command of the step that timed out"
hasnt "$out" '^  (good|skips) +(bash|/)' "no rerun command for a step that passed or skipped"
for f in hung hung-child; do
  p=$(cat "$tmp/$f.pid" 2>/dev/null)
  # Ended: gone, or a zombie not yet reaped by whoever adopted it.
  if [ -n "$p" ] && ! grep -qE '^State:\s+[^Z]' "/proc/$p/status" 2>/dev/null; then ok "the timed-out step's $f process was ended"; else bad "the timed-out step's $f process ($p) is alive"; kill -KILL "$p" 2>/dev/null; fi
done

# All passed: 0, no rerun section.
# A heartbeat far off: its sleep must not outlive the step and hold our $(...) open (it did).
out=$(PIDGUARD_HEARTBEAT=100000 timeout 60 bash -c ". '$ROOT/scripts/lib/steps.sh'; step a true; skipped_step b 'PIDGUARD_SKIP_X=1'; steps_table" 2>&1)
rc=$?
[ $rc = 0 ] && ok "the run returns 0 when nothing failed" || bad "the run returned $rc"
has "$out" '^  b +- +skipped \(PIDGUARD_SKIP_X=1\)$' "a step the runner skips shows its reason"
hasnt "$out" 'rerun' "no rerun section when nothing failed"

# TERM to the runner (CI cancelling, or Ctrl-C's INT at a terminal) ends the running step, counts
# it as failed and still prints the table.
cat >"$tmp/int.sh" <<RUN
. "$ROOT/scripts/lib/steps.sh"
step first true
step long bash -c 'sleep infinity & echo \$! > "$tmp/long.pid"; wait'
step never true
steps_table
RUN
bash "$tmp/int.sh" >"$tmp/int.out" 2>&1 &
runner=$!
for _ in $(seq 500); do [ -s "$tmp/long.pid" ] && break; sleep 0.02; done
kill -TERM "$runner"
wait "$runner"
rc=$?
out=$(cat "$tmp/int.out")
[ $rc = 130 ] && ok "an interrupted run exits 130" || bad "an interrupted run exited $rc"
has "$out" '^  long +[0-9]+ s  FAILED \(interrupted\)$' "the running step is FAILED (interrupted)"
has "$out" '^  first +[0-9]+ s  passed$' "the steps before it are in the table"
hasnt "$out" '^  never ' "no step starts after the interrupt"
p=$(cat "$tmp/long.pid" 2>/dev/null)
for _ in $(seq 250); do grep -qE '^State:\s+[^Z]' "/proc/$p/status" 2>/dev/null || break; sleep 0.02; done
if [ -n "$p" ] && ! grep -qE '^State:\s+[^Z]' "/proc/$p/status" 2>/dev/null; then ok "the interrupted step's process was ended"; else bad "the interrupted step's process ($p) is alive"; kill -KILL "$p" 2>/dev/null; fi

# find_python: not installed (a skip) versus installed but not runnable (a failure).
mkdir -p "$tmp/bin" "$tmp/pyenv"
fake() { printf '#!/bin/sh\n%s\n' "$2" >"$tmp/bin/$1"; chmod +x "$tmp/bin/$1"; }
# Only the fakes and the system's directories (not pyenv's shims) on PATH.
fp() { PATH="$tmp/bin:/usr/bin:/bin" PYENV_ROOT="$tmp/pyenv" bash -c '. scripts/lib/find-python.sh; rc=0; find_python 12 || rc=$?; echo "rc=$rc py=$FOUND_PYTHON why=$FIND_PYTHON_WHY"'; }
fake python3 'echo 3.11'; fake python3.12 'echo "bash: fork: retry: Resource temporarily unavailable" >&2; exit 254'; fake python3.13 'exit 126'
has "$(fp)" '^rc=2 py= why=installed but could not be run: .*python3.12 \(exit 254: bash: fork' "a Python that cannot be run is a failure (rc 2), with what it said"
rm "$tmp/bin/python3.12" "$tmp/bin/python3.13"
for v in 3.12 3.13; do
  if [ -x /usr/bin/python$v ] || [ -x /bin/python$v ]; then fake python$v 'echo 3.11'; fi
done
has "$(fp)" '^rc=1 py= why=no Python >= 3.12 installed \(.*python3 is 3.11' "only an older Python: a skip (rc 1) that says which"
fake python3.12 'echo 3.12'
has "$(fp)" "^rc=0 py=$tmp/bin/python3.12 " "a runnable Python 3.12 is found"

echo "steps_tests: $pass passed, $fail failed"
[ $fail = 0 ]
