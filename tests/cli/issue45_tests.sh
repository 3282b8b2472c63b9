#!/usr/bin/env bash
# Descriptor starvation (issue 45 item 1): a failed read is never a fact about a process.
#
# - `status`, `list` of a record whose first process is gone while its scope (a cgroup leaf, a
#   supervisor's tree) still runs, under `prlimit --nofile=N` for every N from 4 to 16 (below 4 the binary cannot load): each
#   answer is "running" or "undecided" (exit 0 or 5), never "not running"/`stale` (exit 1).
# - `cleanup` of a supervisor-scoped hook whose tree is five levels deep, under N from 8 to 14:
#   whatever the outcome, a report that says "no signal sent" means no signal reached the tree
#   (no member is left stopped, state T, or dead), and no member is ever left stopped.
#
# Run as root by scripts/test-cli.sh inside a private PID namespace: every process here is this
# script's own and is ended by pid. The script moves itself into a cgroup of its own
# (<cgroup2 mount>/pidguard-starvetest-<random>), removed at the end.
set -u
PG=${PIDGUARD:?set PIDGUARD to the pidguard binary}
MP=$(awk '{ for (i = 1; i <= NF; i++) if ($i == "-") { if ($(i+1) == "cgroup2" && $4 == "/") { print $5; exit } } }' /proc/self/mountinfo)
if [ "$(id -u)" != 0 ] || [ -z "$MP" ] || ! command -v prlimit >/dev/null || [ "$$" != 1 ]; then
  echo "skip - the starvation tests need root, a cgroup2 mount, prlimit and a PID namespace of their own (scripts/test-cli.sh)"
  echo "cli issue 45: 0 passed, 0 failed"
  exit 0
fi
pass=0; fail=0
ok()  { pass=$((pass+1)); echo "ok   - $1"; }
bad() { fail=$((fail+1)); echo "FAIL - $1"; }

T=$(mktemp -d /tmp/pidguard-cli-starve-XXXXXX)
ORIG=$(sed -n 's/^0:://p' /proc/self/cgroup)
CG="$MP/pidguard-starvetest-$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
mkdir "$CG" && echo 0 > "$CG/cgroup.procs" || { echo "FAIL - cannot make the test's cgroup $CG"; exit 1; }
finish() {
  local p d
  for p in $(ls /proc | grep -E '^[0-9]+$'); do [ "$p" != 1 ] && [ "$p" != "$$" ] && kill -KILL "$p" 2>/dev/null; done
  sleep 0.2
  echo 0 > "$MP$ORIG/cgroup.procs"
  for d in "$CG"/pidguard/run-*/* "$CG"/pidguard/run-* "$CG/pidguard" "$CG"; do
    [ -d "$d" ] || continue
    echo 1 > "$d/cgroup.kill" 2>/dev/null
    for _ in $(seq 100); do grep -q 'populated 0' "$d/cgroup.events" 2>/dev/null && break; sleep 0.05; done
    rmdir "$d" 2>/dev/null
  done
  rm -rf "$T"
}
trap finish EXIT

# Pids of live processes whose command line contains $1 (this shell excepted).
live() {
  local d pid st args
  for d in /proc/[0-9]*; do
    pid=${d#/proc/}
    [ "$pid" = 1 ] || [ "$pid" = "$$" ] || [ "$pid" = "$BASHPID" ] && continue
    read -r st 2>/dev/null < "$d/stat" || continue
    st=${st##*) }; case "${st:0:1}" in Z|X|'') continue ;; esac
    mapfile -d '' -t args 2>/dev/null < "$d/cmdline" || continue
    case "${args[*]}" in *"$1"*) echo "$pid" ;; esac
  done
}
state() { local st; read -r st 2>/dev/null < "/proc/$1/stat" || return; st=${st##*) }; echo "${st:0:1}"; }
wait_gone() { local i; for i in $(seq 200); do [ -z "$(live "$1")" ] && return 0; sleep 0.05; done; return 1; }

# ---- status and list: a scope whose members could not be read is undecided -------------------
mkdir "$T/recs"
for mode in cgroup supervisor; do
  "$PG" run --scope "$mode" "$T/recs/$mode.pid" sh -c '(setsid sleep 1000301 &); exit 0' >/dev/null
done
for i in $(seq 200); do [ "$(live 'sleep 1000301' | grep -c .)" = 2 ] && break; sleep 0.05; done
# The first processes must be gone (reaped) before the check means anything.
sleep 0.3
for mode in cgroup supervisor; do
  wrong=""
  for n in $(seq 4 16); do
    out=$(prlimit --nofile=$n "$PG" status "$T/recs/$mode.pid" 2>&1); rc=$?
    case $rc in 0|5|4|77) ;; *) wrong="$wrong N=$n rc=$rc ($out);" ;; esac
    case "$out" in *"not valid"*) [ $rc = 1 ] && wrong="$wrong N=$n says not running;" ;; esac
  done
  [ -z "$wrong" ] && ok "$mode: status under every descriptor limit 4–16 says running or undecided, never not running" \
    || bad "$mode: status called a running scope not running:$wrong"
done
wrong=""
for n in $(seq 4 16); do
  out=$(prlimit --nofile=$n "$PG" list "$T/recs" 2>&1)
  case "$out" in *"stale "*|*" 1 stale"*|*" 2 stale"*) wrong="$wrong N=$n: $(echo "$out" | head -2 | tr '\n' ' ');" ;; esac
done
[ -z "$wrong" ] && ok "list under every descriptor limit 4–16 calls no running scope stale" || bad "list called a running scope stale:$wrong"
out=$(prlimit --nofile=6 "$PG" status "$T/recs/supervisor.pid" 2>&1); rc=$?
case "$rc:$out" in 5:*undecided*"could not be judged"*) ok "status at N=6 says why it is undecided (exit 5)" ;;
  0:*running*) ok "status at N=6 could count the scope (running)" ;;
  *) bad "status at N=6: rc=$rc $out" ;; esac
for mode in cgroup supervisor; do "$PG" stop --retry KILL/5 "$T/recs/$mode.pid" >/dev/null 2>&1; done
wait_gone 'sleep 1000301' && ok "the scopes were stopped afterwards" || bad "sleep 1000301 left: $(live 'sleep 1000301')"

# ---- cleanup: every signal sent is reported, nothing is left stopped ------------------------
DEEP='trap "" TERM; sh -c "trap \"\" TERM; sh -c \"trap \\\"\\\" TERM; sh -c \\\"trap \\\\\\\"\\\\\\\" TERM; sleep 1000302\\\"; :\"; :"; :'
mkdir -p "$T/cl/h"
for n in $(seq 8 14); do
  "$PG" run --scope supervisor "$T/cl/h/on_Test__10_x.bg.pid" sh -c "$DEEP" >/dev/null
  for i in $(seq 200); do [ -n "$(live 'sleep 1000302')" ] && break; sleep 0.05; done
  out=$(prlimit --nofile=$n "$PG" cleanup "$T/cl" 2>&1)
  stopped=""
  for p in $(live 'sleep 1000302') $(live 'trap "" TERM'); do [ "$(state "$p")" = T ] && stopped="$stopped $p"; done
  [ -z "$stopped" ] && ok "cleanup at N=$n left no member stopped" || bad "cleanup at N=$n left members stopped (state T):$stopped — $out"
  case "$out" in
    *"no signal sent"*)
      pend=""
      for p in $(live 'trap "" TERM'); do awk '/^SigPnd|^ShdPnd/ { if ($2 != "0000000000000000") b = 1 } END { exit !b }' "/proc/$p/status" && pend="$pend $p"; done
      [ -z "$pend" ] && ok "cleanup at N=$n: 'no signal sent' is true" || bad "cleanup at N=$n says no signal sent, yet signals are pending:$pend" ;;
    *) ok "cleanup at N=$n reports the signals it sent: $(echo "$out" | grep -o '(signals sent[^)]*)' | head -1)" ;;
  esac
  "$PG" stop --retry KILL/5 "$T/cl/h/on_Test__10_x.bg.pid" >/dev/null 2>&1
  for p in $(live 'sleep 1000302') $(live 'trap "" TERM'); do kill -KILL "$p" 2>/dev/null; done
  wait_gone 'sleep 1000302' || bad "sleep 1000302 left after N=$n"
  rm -f "$T/cl/h/"*
done

# ---- a hook's own child cgroup (item 3), nested scopes (item 8) --------------------------------
leaves_now() { find "$CG" -mindepth 1 -type d 2>/dev/null | grep -c . ; }
# A hook that makes a child cgroup of its leaf and moves itself there, then execs a sleep (the
# recorded process, token unchanged).
HOOK='cg=$(sed -n "s/^0:://p" /proc/self/cgroup); mkdir "$1$cg/inner" && echo $$ > "$1$cg/inner/cgroup.procs"; exec sleep 1000303'
"$PG" run --scope cgroup "$T/inner.pid" sh -c "$HOOK" sh "$MP" >/dev/null
for i in $(seq 200); do grep -q '/inner$' "/proc/$(cat "$T/inner.pid")/cgroup" 2>/dev/null && break; sleep 0.05; done
out=$("$PG" stop --retry TERM/5/KILL/5 "$T/inner.pid" 2>&1); rc=$?
case "$rc:$out" in 0:*"exited after SIGTERM"*) ok "a hook in its own child cgroup is stopped with SIGTERM" ;; *) bad "a hook in its own child cgroup: rc=$rc $out" ;; esac
case "$out" in *"child cgroups made inside it (inner)"*) ok "the stop says the leaf had a child cgroup" ;; *) bad "the stop does not report the child cgroup: $out" ;; esac
wait_gone 'sleep 1000303' && ok "the hook is gone" || bad "sleep 1000303 left: $(live 'sleep 1000303')"
[ "$(leaves_now)" = 1 ] && ok "its leaf and child cgroup are removed" || bad "cgroups left: $(find "$CG" -mindepth 1 -type d)"

# Nested scopes: a cgroup-scoped hook that starts another cgroup-scoped command (its leaf below
# the hook's leaf). Root stops the outer record first (graceful: SIGTERM reaches both), then in
# the other order (inner first); no empty leaf stays either way.
for order in outer-first inner-first; do
  rm -f "$T"/nest-*
  NEST="\"$PG\" run --scope cgroup \"$T/nest-inner.pid\" sleep 1000304 >/dev/null; exec sleep 1000305"
  "$PG" run --scope cgroup "$T/nest-outer.pid" sh -c "$NEST" >/dev/null
  for i in $(seq 200); do [ -n "$(live 'sleep 1000305')" ] && [ -n "$(live 'sleep 1000304')" ] && break; sleep 0.05; done
  if [ $order = inner-first ]; then
    "$PG" stop --retry TERM/5/KILL/5 "$T/nest-inner.pid" >/dev/null 2>&1
    wait_gone 'sleep 1000304' || bad "$order: the inner command survived its own stop"
  fi
  out=$("$PG" stop --retry TERM/5/KILL/5 "$T/nest-outer.pid" 2>&1); rc=$?
  case "$rc:$out" in 0:*"exited after SIGTERM"*) ok "$order: root's stop of the outer record is graceful (SIGTERM)" ;; *) bad "$order: the outer record's stop: rc=$rc $out" ;; esac
  wait_gone 'sleep 1000305' && wait_gone 'sleep 1000304' && ok "$order: both commands are gone" || bad "$order: left: $(live 'sleep 100030')"
  "$PG" stop "$T/nest-inner.pid" >/dev/null 2>&1
  [ "$(leaves_now)" = 1 ] && ok "$order: no empty leaf stays" || bad "$order: cgroups left: $(find "$CG" -mindepth 1 -type d | tr '\n' ' ')"
done

# ---- bug log 5 (item 9) -------------------------------------------------------------------
# A read-only pidfile directory: the stop says why the pidfile stays; so does cleanup.
mkdir -p "$T/ro/h"
"$PG" run "$T/ro/x.pid" sleep 1000309 >/dev/null
"$PG" run "$T/ro/h/on_T__1_x.bg.pid" sleep 1000310 >/dev/null
mount --bind "$T/ro" "$T/ro" && mount -o remount,bind,ro "$T/ro"
out=$("$PG" stop --retry TERM/5/KILL/5 "$T/ro/x.pid" 2>&1); rc=$?
case "$rc:$out" in 0:*"not removed"*"Read-only file system"*) ok "stop in a read-only directory says why the pidfile stays" ;; *) bad "stop in a read-only directory: rc=$rc $out" ;; esac
out=$("$PG" cleanup "$T/ro" 2>&1); rc=$?
case "$out" in *"not retired: rename aside failed: Read-only file system"*) ok "cleanup in a read-only directory says the removal's own error" ;; *) bad "cleanup in a read-only directory: rc=$rc $out" ;; esac
umount "$T/ro"
wait_gone 'sleep 100031' || bad "read-only: sleeps left: $(live 'sleep 100031')"
# A record whose leader was reaped while its group runs on: the stop names the members and the
# command that would stop them, and signals nothing.
"$PG" run --scope group "$T/lead.pid" sh -c 'sleep 1000311 & exit 0' >/dev/null
lp=$(cat "$T/lead.pid"); for i in $(seq 200); do [ -e "/proc/$lp" ] || break; sleep 0.05; done
m=$(live 'sleep 1000311')
out=$("$PG" stop "$T/lead.pid" 2>&1); rc=$?
case "$out" in *"live processes $m still carry process group $lp"*"kill -TERM -- -$lp"*) ok "stop of a reaped leader names its group's live members and the command" ;; *) bad "stop of a reaped leader: rc=$rc $out" ;; esac
[ -n "$(live 'sleep 1000311')" ] && ok "the group's members were not signalled" || bad "the unverified members were signalled"
for p in $(live 'sleep 1000311'); do kill -KILL "$p"; done
# A hook that exited by itself with status 3, cleaned up by the CLI (not its parent): its
# index records say the status is unknown, never a success with exit code 0.
mkdir -p "$T/x3/h"
"$PG" run "$T/x3/h/on_T__1_x.bg.pid" sh -c 'exit 3' >/dev/null
for i in $(seq 200); do [ -e "/proc/$(cat "$T/x3/h/on_T__1_x.bg.pid")" ] || break; sleep 0.05; done
"$PG" cleanup "$T/x3" --index-path "$T/x3/index.jsonl" >/dev/null 2>&1
idx=$(cat "$T/x3/index.jsonl" 2>/dev/null)
case "$idx" in *'"exit_code":null'*'"status":"unknown"'*) ok "an unknown exit status is written as exit_code null, status unknown" ;; *) bad "index of a hook that exited by itself: $idx" ;; esac

echo "cli issue 45: $pass passed, $fail failed"
[ $fail = 0 ]
