#!/usr/bin/env bash
# `pidguard run`, then `stop` or `cleanup`, under seccomp filters shaped like older container
# profiles (issue 47): the filter answers EPERM or ENOSYS for clone3 (no thread can be made:
# glibc falls back to clone only on ENOSYS), pidfd_open, pidfd_send_signal, or all six of
# pidguard's newer system calls (tests/seccomp/seccomp_exec.c). Every stop must end the whole
# tree — the recorded process, a plain child, a setsid grandchild, a double-forked setsid
# daemon — and touch no bystander, with no panic (a stop once panicked, exit 101, when no thread
# could be made). Where nothing can be proven (a supervisor that cannot be pinned without a
# pidfd), the stop refuses (exit 5) and signals nothing: checked too.
#
# Run by scripts/test-seccomp.sh as pid 1 of a private PID namespace, as root; the script moves
# itself into a cgroup of its own (<cgroup2 mount>/pidguard-seccomp-<random>) so the leaves
# `run` makes are its own. Every process started here is ended by pid; files under $T.
#   PIDGUARD  the pidguard binary      SECCOMP_EXEC  the built seccomp_exec
#   SECCOMP_CASES  "ERRNO:CALLS ..." (default: each errno with clone3, pidfd_open,
#                  pidfd_send_signal and all)
set -u
PG=${PIDGUARD:?set PIDGUARD}; SX=${SECCOMP_EXEC:?set SECCOMP_EXEC}
HERE=$(cd "$(dirname "$0")" && pwd)
MP=$(awk '{ for (i = 1; i <= NF; i++) if ($i == "-") { if ($(i+1) == "cgroup2" && $4 == "/") { print $5; exit } } }' /proc/self/mountinfo)
if [ "$(id -u)" != 0 ] || [ -z "$MP" ] || [ "$$" != 1 ]; then
  echo "skip - needs root, a cgroup2 mount and a PID namespace of its own (scripts/test-seccomp.sh)"
  echo "seccomp stops: 0 passed, 0 failed"; exit 0
fi
CASES=${SECCOMP_CASES:-"EPERM:clone3 EPERM:pidfd_open EPERM:pidfd_send_signal EPERM:all ENOSYS:clone3 ENOSYS:pidfd_open ENOSYS:pidfd_send_signal ENOSYS:all"}
pass=0; fail=0
ok()  { pass=$((pass+1)); echo "ok   - $1"; }
bad() { fail=$((fail+1)); echo "FAIL - $1"; }
alive() { [ -e "/proc/$1" ] && ! grep -q '^[0-9]* (.*) [ZX]' "/proc/$1/stat" 2>/dev/null; }
# Poll (deadline $2 s) until the file $1 exists.
wait_file() { local i; for i in $(seq $(( $2 * 20 ))); do [ -s "$1" ] && return 0; sleep 0.05; done; return 1; }
# Poll (deadline 15 s) until none of the pids $@ is alive.
wait_dead() { local i p a; for i in $(seq 300); do a=0; for p in "$@"; do alive "$p" && a=1; done; [ $a = 0 ] && return 0; sleep 0.05; done; return 1; }

T=$(mktemp -d /tmp/pidguard-seccomp-XXXXXX)
ORIG=$(sed -n 's/^0:://p' /proc/self/cgroup)
CG="$MP/pidguard-seccomp-$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
mkdir "$CG" && echo 0 > "$CG/cgroup.procs" || { echo "FAIL - cannot make the test's cgroup $CG"; exit 1; }
finish() {
  local p d
  for p in $(ls /proc | grep -E '^[0-9]+$'); do [ "$p" != 1 ] && kill -KILL "$p" 2>/dev/null; done
  sleep 0.2
  echo 0 > "$MP$ORIG/cgroup.procs"
  for d in "$CG"/pidguard/* "$CG/pidguard" "$CG"; do
    [ -d "$d" ] || continue
    echo 1 > "$d/cgroup.kill" 2>/dev/null
    for _ in $(seq 100); do grep -q 'populated 0' "$d/cgroup.events" 2>/dev/null && break; sleep 0.05; done
    rmdir "$d" 2>/dev/null
  done
  rm -rf "$T"
}
trap finish EXIT

setsid sleep 4399 </dev/null >/dev/null 2>&1 &
BYSTANDER=$!; disown "$BYSTANDER"

n=0
for c in $CASES; do
  errno=${c%%:*}; calls=${c#*:}
  modes="auto supervisor"
  for mode in $modes; do
    for op in stop cleanup; do
      n=$((n+1)); name="$errno $calls --scope $mode, $op"
      D=$T/$n; mkdir -p "$D/plug"; pf=$D/plug/on_X__10_tree.bg.pid
      if ! "$SX" "$errno" "$calls" -- "$PG" run --scope "$mode" --json "$pf" -- "$HERE/tree.sh" "$D" > "$D/run.json" 2> "$D/run.err"; then
        bad "$name: run failed: $(cat "$D/run.err")"; continue
      fi
      # Plain numbers in the one-line JSON (no python3 needed: scripts/kernel-6.1.sh runs this
      # in a busybox initramfs).
      main=$(sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "$D/run.json")
      sup=$(sed -n 's/.*"supervisor_pid":\([0-9]*\).*/\1/p' "$D/run.json")
      if ! { wait_file "$D/child" 10 && wait_file "$D/grandchild" 10 && wait_file "$D/daemon" 10; }; then
        bad "$name: the tree did not start"; continue
      fi
      tree="$main $(cat "$D/child" "$D/grandchild" "$D/daemon" | tr '\n' ' ')"
      if [ "$op" = stop ]; then
        "$SX" "$errno" "$calls" -- "$PG" stop "$pf" > "$D/op.out" 2>&1; rc=$?
      else
        "$SX" "$errno" "$calls" -- "$PG" cleanup "$D" > "$D/op.out" 2>&1; rc=$?
      fi
      if grep -q panicked "$D/op.out"; then bad "$name: panicked (exit $rc): $(head -3 "$D/op.out")"; continue; fi
      # A supervisor is pinned by a pidfd only: without pidfd_open its stop cannot be proven,
      # and is refused with nothing signalled.
      if [ "$mode" = supervisor ] && { [ "$calls" = all ] || [ "$calls" = pidfd_open ]; }; then
        still=1; for p in $tree $sup; do alive "$p" || still=0; done
        if [ "$rc" = 5 ] && [ $still = 1 ] && grep -q "unverif" "$D/op.out"; then
          ok "$name: refused (unverifiable), nothing signalled"
        else
          bad "$name: expected a refusal with the tree untouched, got exit $rc: $(cat "$D/op.out")"
        fi
        "$PG" stop "$pf" >/dev/null 2>&1
        wait_dead $tree $sup || bad "$name: the tree could not be stopped without the filter either"
        continue
      fi
      if [ "$rc" != 0 ]; then bad "$name: exit $rc: $(cat "$D/op.out")"; "$PG" stop "$pf" >/dev/null 2>&1; continue; fi
      if wait_dead $tree $sup; then
        ok "$name: the whole tree stopped ($(grep -o 'exited after [A-Z]*\|stopped after [A-Z]*\|after SIG[A-Z]*' "$D/op.out" | head -1))"
      else
        left=""; for p in $tree $sup; do alive "$p" && left="$left $p"; done
        bad "$name: still running:$left — $(cat "$D/op.out")"
        for p in $left; do kill -KILL "$p" 2>/dev/null; done
      fi
    done
  done
done
alive "$BYSTANDER" && ok "the bystander was never touched" || bad "the bystander was killed"
kill -KILL "$BYSTANDER" 2>/dev/null
echo "seccomp stops: $pass passed, $fail failed"
[ $fail = 0 ]
