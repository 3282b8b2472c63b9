#!/usr/bin/env bash
# Fork storms stopped through scopes (issue 34): a job that starts ≥ 200 new processes a second,
# each ignoring SIGTERM and escaping into a session of its own (`setsid` in a subshell that
# exits: an orphan), is started with `pidguard run --scope cgroup|supervisor` and stopped with
# `pidguard stop --retry TERM/1/KILL/1` (a 2 s schedule). Per round: the storm's rate (new
# processes a second, from ns_last_pid over 250 ms, measured until it is ≥ 200), the stop's wall time against the schedule's
# 2 s, the outcome, and the survivors (live processes of the namespace after the stop returned).
# Target: every stop ≤ schedule + 0.5 s, 0 survivors, no "unkillable".
#
# The storm runs only inside a cgroup with a pids limit (STORM_PIDS_MAX, default 600: the storm and this script): the
# cgroup2 test directory's `pids.max` where the pids controller is enabled there, else a cgroup
# v1 `pids` hierarchy (both found in /proc/self/mountinfo); without either the script refuses.
# Needs root and `unshare --pid --fork --mount-proc`; not part of scripts/test.sh.
#
#   bash scripts/storm.sh [ROUNDS]          (default 20 per mode)
#   PIDGUARD=target/debug/pidguard bash scripts/storm.sh 3
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-20}
PIDS_MAX=${STORM_PIDS_MAX:-600}
if [ -z "${PIDGUARD:-}" ]; then
  cargo build -q --release -p pidguard-cli
  PIDGUARD=$(pwd)/target/release/pidguard
fi
PIDGUARD=$(cd "$(dirname "$PIDGUARD")" && pwd)/$(basename "$PIDGUARD")
[ "$(id -u)" = 0 ] || { echo "storm.sh: needs root (a cgroup for the pids limit)"; exit 77; }

if [ "${STORM_INNER:-0}" != 1 ]; then
  MP=$(awk '{ for (i = 1; i <= NF; i++) if ($i == "-") { if ($(i+1) == "cgroup2" && $4 == "/") { print $5; exit } } }' /proc/self/mountinfo)
  [ -n "$MP" ] || { echo "storm.sh: no cgroup2 mount"; exit 77; }
  CG=$MP/pidguard-storm-$$
  mkdir "$CG"
  PCG=
  if grep -qw pids "$CG/cgroup.controllers" 2>/dev/null && [ -e "$CG/pids.max" ]; then
    echo "$PIDS_MAX" > "$CG/pids.max"
  else
    V1=$(awk '{ for (i = 1; i <= NF; i++) if ($i == "-") { if ($(i+1) == "cgroup" && $(i+3) ~ /(^|,)pids(,|$)/) { print $5; exit } } }' /proc/self/mountinfo)
    [ -n "$V1" ] || { rmdir "$CG"; echo "storm.sh: no pids controller (cgroup2 or v1): refusing to fork a storm without a limit"; exit 77; }
    PCG=$V1/pidguard-storm-$$
    mkdir "$PCG"
    echo "$PIDS_MAX" > "$PCG/pids.max"
  fi
  cleanup() {
    for d in "$CG" ${PCG:+"$PCG"}; do
      for _ in $(seq 100); do
        [ -z "$(cat "$d/cgroup.procs" 2>/dev/null)" ] && break
        [ -e "$d/cgroup.kill" ] && echo 1 > "$d/cgroup.kill" 2>/dev/null
        sleep 0.05
      done
      find "$d" -mindepth 1 -depth -type d -exec rmdir {} \; 2>/dev/null || true
      rmdir "$d" 2>/dev/null || echo "storm.sh: could not remove $d"
    done
  }
  trap cleanup EXIT
  # The inner run: in both cgroups, then in a PID namespace of its own.
  rc=0
  # With a v1 pids directory only `pidguard run` joins it (the storm inherits it), so that this
  # script's own forks (the timed `pidguard stop`) never wait for the storm's pids.
  STORM_INNER=1 STORM_PCG=$PCG PIDGUARD=$PIDGUARD sh -c 'echo 0 > "$1/cgroup.procs" && exec unshare --pid --fork --mount-proc bash "$2" "$3"' sh "$CG" "$0" "$ROUNDS" || rc=$?
  exit $rc
fi

T=$(mktemp -d /tmp/pidguard-storm.XXXXXX)
# Three loops, each starting an escaping orphan that ignores SIGTERM (inherited SIG_IGN) and lives
# 1 s; a failed fork (the pids limit) is retried after 10 ms (as in core/tests/scopes.rs).
STORM='trap "" TERM; storm() { while :; do (setsid sleep 1 & ) 2>/dev/null || sleep 0.01; done; }; storm & storm & storm & wait'
live() { # live processes of the namespace but pid 1 and this script's own $$ chain
  local n=0 s
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    [ "$p" = 1 ] || [ "$p" = $$ ] || [ "$p" = "$BASHPID" ] && continue
    s=$(cut -d' ' -f3 "$d/stat" 2>/dev/null) || continue
    [ "$s" = Z ] || [ -z "$s" ] || n=$((n + 1))
  done
  echo $n
}
printf '%-10s %5s %8s %8s %-28s %9s\n' mode round rate/s stop_s outcome survivors
worst=0; bad=0
for mode in cgroup supervisor; do
  for r in $(seq "$ROUNDS"); do
    pf=$T/$mode-$r.pid
    if [ -n "${STORM_PCG:-}" ]; then
      sh -c 'echo 0 > "$1/cgroup.procs" && shift && exec "$@"' sh "$STORM_PCG" "$PIDGUARD" run --scope "$mode" "$pf" sh -c "$STORM" >/dev/null
    else
      "$PIDGUARD" run --scope "$mode" "$pf" sh -c "$STORM" >/dev/null
    fi
    sleep 0.5
    # The rate over 250 ms windows, measured again (up to 20 times) until it is a storm's.
    for _ in $(seq 20); do
      a=$(cat /proc/sys/kernel/ns_last_pid); t0=$(date +%s%N)
      sleep 0.25
      b=$(cat /proc/sys/kernel/ns_last_pid); t1=$(date +%s%N)
      rate=$(( (b - a) * 1000000000 / (t1 - t0) ))
      [ "$rate" -ge 200 ] && break
    done
    s0=$(date +%s%N)
    out=$("$PIDGUARD" stop --retry TERM/1/KILL/1 "$pf" 2>&1) && rc=0 || rc=$?
    s1=$(date +%s%N)
    left=$(live)
    ms=$(( (s1 - s0) / 1000000 ))
    outcome=$(echo "$out" | head -1 | sed 's/.* — //; s/ (signals sent.*//; s/,.*//' | cut -c1-22)
    printf '%-10s %5s %8s %8s %-28s %9s\n' "$mode" "$r" "$rate" "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))" "rc=$rc $outcome" "$left"
    [ $ms -gt $worst ] && worst=$ms
    if [ $rc != 0 ] || [ "$left" != 0 ] || [ $ms -gt 2500 ] || [ "$rate" -lt 200 ]; then bad=$((bad + 1)); fi
    # Whatever a failed round left: ended by pid (every process here is this script's own).
    for d in /proc/[0-9]*; do p=${d#/proc/}; [ "$p" = 1 ] || [ "$p" = $$ ] || kill -9 "$p" 2>/dev/null || true; done
    sleep 0.1
  done
done
rm -rf "$T"
echo "storm: worst stop $(printf '%d.%03d' $((worst / 1000)) $((worst % 1000))) s (schedule 2 s, bound 2.5 s); rounds failing (rc, survivors, > 2.5 s, or a storm < 200/s): $bad"
[ $bad = 0 ]
