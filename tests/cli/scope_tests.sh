#!/usr/bin/env bash
# Scopes through the command line (issue 25, SPEC §4.3): `pidguard run` + `stop` / `cleanup`
# reach a hook's whole tree — a double-forked setsid daemon, a detached Chromium launched the
# way abx-plugins' Chrome launcher does it — in a cgroup v2 leaf and under a supervisor (also
# with cgroup v2 hidden), and never touch what is not in it.
#
# Run as root by scripts/test-cli.sh inside a private PID namespace: every process in /proc is
# this script's own (counted by state: a killed orphan may linger as a zombie), and all of them
# end with the namespace. The script moves itself into a cgroup of its own
# (<cgroup2 mount>/pidguard-clitest-<random>), so the leaves `pidguard run` makes
# (<own cgroup>/pidguard/run-…) are this script's alone; it then runs every section with
# cgroup v2 visible, and again (`--hidden`) in a private mount namespace with a tmpfs over the
# cgroup2 mount point (found in /proc/self/mountinfo), where `--scope auto` falls back to the
# supervisor. Every process started here is ended by pid; every file made is under $T.
set -u
PG=${PIDGUARD:?set PIDGUARD to the pidguard binary}
HIDDEN=0; [ "${1:-}" = --hidden ] && HIDDEN=1
HERE=$(cd "$(dirname "$0")" && pwd)
MP=$(awk '{ for (i = 1; i <= NF; i++) if ($i == "-") { if ($(i+1) == "cgroup2" && $4 == "/") { print $5; exit } } }' /proc/self/mountinfo)
need_ns=0; [ $HIDDEN = 0 ] && [ "$$" != 1 ] && need_ns=1
if [ "$(id -u)" != 0 ] || [ -z "$MP" ] || ! command -v unshare >/dev/null || ! command -v python3 >/dev/null || [ $need_ns = 1 ]; then
  echo "skip - the scope tests need root, a cgroup2 mount, unshare, python3 and a PID namespace of their own (scripts/test-cli.sh)"
  echo "cli scopes: 0 passed, 0 failed"
  exit 0
fi
pass=0; fail=0
ok()  { pass=$((pass+1)); echo "ok   - $1"; }
bad() { fail=$((fail+1)); echo "FAIL - $1"; }
tag() { [ $HIDDEN = 1 ] && echo "hidden: $1" || echo "$1"; }

# ---- processes ------------------------------------------------------------------------------
# Live processes (state not Z/X) whose whole command line (arguments joined by spaces) matches
# the glob $1, this shell and its subshells excepted, one pid per line. Builtins only: it is
# called in polling loops on a busy machine.
live() {
  local d pid st args
  for d in /proc/[0-9]*; do
    pid=${d#/proc/}
    [ "$pid" = 1 ] || [ "$pid" = "$$" ] || [ "$pid" = "$BASHPID" ] && continue
    read -r st 2>/dev/null < "$d/stat" || continue
    st=${st##*) }; case "${st:0:1}" in Z|X|'') continue ;; esac
    mapfile -d '' -t args 2>/dev/null < "$d/cmdline" || continue
    case "${args[*]}" in $1) echo "$pid" ;; esac
  done
}
count() { live "$1" | grep -c . ; }
# Wait (polling, deadline $2 s, default 20) until `count $1` is $3 (default 0).
wait_count() {
  local i
  for i in $(seq $(( ${2:-20} * 20 ))); do [ "$(count "$1")" = "${3:-0}" ] && return 0; sleep 0.05; done
  [ "$(count "$1")" = "${3:-0}" ]
}
alive() { [ -e "/proc/$1" ] && ! grep -q '^[0-9]* (.*) [ZX]' "/proc/$1/stat" 2>/dev/null; }
# Alive and never signalled: a bystander blocks every signal, so one sent stays pending.
untouched() {
  alive "$1" && awk '/^(SigPnd|ShdPnd):/ { if ($2 != "0000000000000000") bad = 1 } END { exit bad }' "/proc/$1/status"
}
# A bystander: every signal blocked (inherited across exec), a session of its own.
BYSTANDER=(python3 -c 'import os, signal, sys, time
signal.pthread_sigmask(signal.SIG_BLOCK, set(signal.Signals) - {signal.SIGKILL, signal.SIGSTOP})
if sys.argv[1] == "child" and os.fork() == 0: time.sleep(1e6)
time.sleep(1e6)')
# Wait (deadline) until the bystander $1 has blocked its signals (SIGTERM's bit in SigBlk):
# before that, a check that it was never signalled would prove nothing.
ready() {
  local i v
  for i in $(seq 400); do
    v=$(awk '/^SigBlk:/ {print $2}' "/proc/$1/status" 2>/dev/null)
    [ -n "$v" ] && [ $(( 16#$v & 0x4000 )) != 0 ] && return 0
    sleep 0.025
  done
  return 1
}
# Start the bystander (its argv tagged $2, and with a child when $3 is "child") at pid $1,
# forced with ns_last_pid; prints its pid. Fails when the pid could not be had.
bystander_at() {
  local want=$1 i p
  for i in $(seq 20); do
    echo $((want - 1)) > /proc/sys/kernel/ns_last_pid
    setsid "${BYSTANDER[@]}" ${3:+$3} "$2" </dev/null >/dev/null 2>&1 &
    p=$!; disown "$p"
    [ "$p" = "$want" ] && ready "$p" && { echo "$p"; return 0; }
    kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null
  done
  return 1
}
end_matching() { local p; for p in $(live "$1"); do kill -KILL "$p" 2>/dev/null; done; wait_count "$1" 5; }
json() { python3 -c 'import json, sys; v = json.load(open(sys.argv[1])); print("" if v.get(sys.argv[2]) is None else v[sys.argv[2]])' "$1" "$2"; }
# The leaf directory of a `run --json` output, if its scope is a cgroup.
leaf_of() {
  local rec; rec=$(json "$1" scope_record)
  case "$rec" in cgroup:*) echo "$MP/${rec#cgroup:*:*:/}" ;; esac
}
own_leaves() { ls -d "$MP$(sed -n 's/^0:://p' /proc/self/cgroup)"/pidguard/run-* 2>/dev/null; }

# ---- the test's own cgroup, and the hidden run ----------------------------------------------
T=$(mktemp -d /tmp/pidguard-cli-scope-XXXXXX)
if [ $HIDDEN = 0 ]; then
  ORIG=$(sed -n 's/^0:://p' /proc/self/cgroup)
  CG="$MP/pidguard-clitest-$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
  mkdir "$CG" && echo 0 > "$CG/cgroup.procs" || { echo "FAIL - cannot make the test's cgroup $CG"; exit 1; }
  finish() {
    local p d
    for p in $(ls /proc | grep -E '^[0-9]+$'); do [ "$p" != 1 ] && [ "$p" != "$$" ] && kill -KILL "$p" 2>/dev/null; done
    sleep 0.2
    echo 0 > "$MP$ORIG/cgroup.procs"
    for d in "$CG"/pidguard/run-* "$CG"/pidguard/* "$CG/pidguard" "$CG"; do
      [ -d "$d" ] || continue
      echo 1 > "$d/cgroup.kill" 2>/dev/null
      for _ in $(seq 100); do grep -q 'populated 0' "$d/cgroup.events" 2>/dev/null && break; sleep 0.05; done
      rmdir "$d" 2>/dev/null
    done
    rm -rf "$T"
  }
  trap finish EXIT
else
  mount -t tmpfs pidguard-hidden "$MP" || { echo "FAIL - cannot hide $MP"; exit 1; }
  trap 'rm -rf "$T"' EXIT
fi
if [ $HIDDEN = 1 ]; then MODES="hidden"; else MODES="cgroup supervisor"; fi
scope_opt() { case "$1" in cgroup|hidden) echo auto ;; *) echo "$1" ;; esac; }
kind_of() { case "$1" in cgroup) echo cgroup ;; supervisor|hidden) echo supervisor ;; group) echo group ;; esac; }

# Checks every scope spawn must pass ($1 the run --json output, $2 the mode): the kind, a record,
# in hidden mode the note that says why there is no leaf.
check_run() {
  local k note; k=$(json "$1" scope); note=$(json "$1" note)
  [ "$k" = "$(kind_of "$2")" ] || { bad "$(tag "$2"): run says scope $k: $(cat "$1")"; return 1; }
  if [ "$2" != group ] && [ -z "$(json "$1" scope_record)" ]; then bad "$(tag "$2"): no scope recorded: $(cat "$1")"; return 1; fi
  if [ "$2" = hidden ]; then
    case "$note" in *"no cgroup leaf could be made"*cgroup2*supervisor*) ;; *) bad "hidden: the note does not say why: $note"; return 1 ;; esac
  fi
  return 0
}

# ---- 1. the double-forked setsid daemon -----------------------------------------------------
DAEMON="( setsid sh -c 'sleep 4811 & exec sleep 4812' </dev/null >/dev/null 2>&1 & ); exit 0"
for mode in $MODES group; do
  for op in stop cleanup; do
    D=$T/daemon-$mode-$op; mkdir -p "$D/plug"; pf=$D/plug/on_Snapshot__10_daemon.bg.pid
    "$PG" run --json "$pf" --scope "$(scope_opt $mode)" -- sh -c "$DAEMON" > "$D/run.json" 2> "$D/run.err"; st=$?
    [ $st = 0 ] && check_run "$D/run.json" $mode || { bad "$(tag $mode) daemon $op: run exit $st $(cat "$D/run.err")"; end_matching 'sleep 481?'; continue; }
    leaf=$(leaf_of "$D/run.json")
    wait_count 'sleep 481?' 20 2 || { bad "$(tag $mode) daemon $op: the daemon did not come up"; end_matching 'sleep 481?'; continue; }
    if [ $op = stop ]; then "$PG" stop "$pf" > "$D/op.txt" 2>&1; else "$PG" cleanup "$D" > "$D/op.txt" 2>&1; fi; st=$?
    if [ $mode = group ]; then
      # The documented limitation (and the proof that this test can fail): a group stop does not
      # reach a process that left the group.
      [ "$(count 'sleep 481?')" = 2 ] && ok "group daemon $op: the setsid escapee survives a group stop (exit $st)" || bad "group daemon $op: $(count 'sleep 481?') survivors"
      end_matching 'sleep 481?'
      continue
    fi
    if wait_count 'sleep 481?' 5 && [ $st = 0 ] && grep -q "scope: $(kind_of $mode)" "$D/op.txt" && [ ! -e "$pf" ]; then
      ok "$(tag $mode) daemon $op: zero survivors, exit 0, the report names the scope"
    else
      bad "$(tag $mode) daemon $op: exit $st, $(count 'sleep 481?') survivors: $(cat "$D/op.txt")"; end_matching 'sleep 481?'
    fi
    if [ -n "$leaf" ]; then [ ! -e "$leaf" ] && ok "cgroup daemon $op: the leaf is removed" || bad "cgroup daemon $op: leaf $leaf left"; fi
  done
done

# ---- 2. a real browser, as abx-plugins' Chrome launcher starts it ---------------------------
CHROMIUM=$(command -v chromium || true)
if [ -z "$CHROMIUM" ] && [ $HIDDEN = 0 ]; then
  bash "$HERE/../../scripts/install-chromium.sh" >/dev/null 2>"$T/chromium.err" || true
  CHROMIUM=$(command -v chromium || true)
fi
# The browser's processes: by executable (chromium, chrome_crashpad_handler), all of them this
# script's own (its PID namespace).
browser() {
  local d; for d in /proc/[0-9]*; do
    case "$(readlink "$d/exe" 2>/dev/null)" in */chrom*) grep -q '^[0-9]* (.*) [ZX]' "$d/stat" 2>/dev/null || echo "${d#/proc/}" ;; esac
  done
}
if [ -z "$CHROMIUM" ] || ! command -v node >/dev/null; then
  echo "skip - chromium tests: no chromium (scripts/install-chromium.sh: $(cat "$T/chromium.err" 2>/dev/null)) or no node"
else
  for mode in $MODES group; do
    for op in stop cleanup; do
      [ $mode = group ] && [ $op = cleanup ] && continue
      [ $mode = supervisor ] && [ $op = cleanup ] && continue
      D=$T/chrome-$mode-$op; mkdir -p "$D/chrome"; pf=$D/chrome/on_Snapshot__20_chrome_launch.bg.pid
      port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
      HOME=$D XDG_CONFIG_HOME=$D/config "$PG" run --json "$pf" --scope "$(scope_opt $mode)" -- node "$HERE/chrome_hook.js" "$CHROMIUM" "$D/user-data" "$port" > "$D/run.json" 2> "$D/run.err"; st=$?
      [ $st = 0 ] && check_run "$D/run.json" $mode || { bad "$(tag $mode) chromium $op: run exit $st $(cat "$D/run.err")"; continue; }
      leaf=$(leaf_of "$D/run.json"); hook=$(json "$D/run.json" pid)
      up=0
      for _ in $(seq 900); do
        n=$(browser | grep -c .)
        handlers=$(for p in $(browser); do grep -l chrome_crashpad "/proc/$p/cmdline" 2>/dev/null; done | grep -c .)
        if [ "$n" -ge 5 ] && [ "$handlers" -ge 1 ] && [ "$(count "*--user-data-dir=$D/user-data*")" -ge 1 ] \
           && python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$port" 2>/dev/null; then up=1; break; fi
        sleep 0.1
      done
      if [ $up = 0 ]; then bad "$(tag $mode) chromium $op: the browser did not come up ($(browser | grep -c .) processes): $(tail -3 "$D/chrome/"*.stderr.log)"; end_matching '*chrom*'; continue; fi
      n=$(browser | grep -c .)
      # Its crash handlers double-fork and setsid: out of the hook's session, orphaned (to pid 1)
      # unless a supervisor holds them.
      sup=$(json "$D/run.json" supervisor_pid); parents=""
      for p in $(browser); do grep -q chrome_crashpad "/proc/$p/cmdline" && parents="$parents $(awk '{print $4}' "/proc/$p/stat")"; done
      want=${sup:-1}; [ -z "$(echo $parents | tr ' ' '\n' | grep -vx "$want")" ] || bad "$(tag $mode) chromium: crashpad handlers' parents:$parents (expected $want)"
      if [ $op = stop ]; then "$PG" stop "$pf" > "$D/op.txt" 2>&1; else "$PG" cleanup "$D" > "$D/op.txt" 2>&1; fi; st=$?
      if [ $mode = group ]; then
        [ "$(browser | grep -c .)" -ge 5 ] && ok "group chromium: a group stop leaves the detached browser running ($(browser | grep -c .) processes, parents of its crash handlers:$parents)" || bad "group chromium: the browser died"
        end_matching '*chrom*'; end_matching 'node *chrome_hook.js*'
        continue
      fi
      for _ in $(seq 200); do [ -z "$(browser)" ] && [ "$(count 'node *chrome_hook.js*')" = 0 ] && break; sleep 0.05; done
      if [ -z "$(browser)" ] && [ "$(count 'node *chrome_hook.js*')" = 0 ] && [ $st = 0 ] && grep -q "scope: $(kind_of $mode)" "$D/op.txt"; then
        ok "$(tag $mode) chromium $op: $n browser processes and the hook, zero left (exit 0)"
      else
        bad "$(tag $mode) chromium $op: exit $st, left: $(browser | tr '\n' ' ') $(cat "$D/op.txt")"; end_matching '*chrom*'; end_matching 'node *chrome_hook.js*'
      fi
      if [ -n "$leaf" ]; then [ ! -e "$leaf" ] && ok "cgroup chromium $op: the leaf is removed" || bad "cgroup chromium $op: leaf $leaf left"; fi
    done
  done
fi

# ---- 3. reuse safety ------------------------------------------------------------------------
for mode in $MODES; do
  # A scope whose processes are all gone: stale, removed, nothing signalled.
  D=$T/stale-$mode; mkdir -p "$D"; pf=$D/a.pid
  "$PG" run --json "$pf" --scope "$(scope_opt $mode)" -- sleep 4821 > "$D/run.json" 2>/dev/null && check_run "$D/run.json" $mode
  leaf=$(leaf_of "$D/run.json")
  kill -KILL "$(json "$D/run.json" pid)"; wait_count 'sleep 4821' 10
  "$PG" stop "$pf" --json > "$D/stop.json" 2>&1; st=$?
  if [ $st = 1 ] && [ "$(json "$D/stop.json" signals)" = "[]" ] && [ ! -e "$pf" ] && { [ -z "$leaf" ] || [ ! -e "$leaf" ]; }; then
    ok "$(tag $mode) stale scope: nothing signalled, record removed$([ -n "$leaf" ] && echo ', empty leaf removed') (exit 1, $(json "$D/stop.json" outcome))"
  else bad "$(tag $mode) stale scope: exit $st $(cat "$D/stop.json")"; fi

  # The scope gone and a bystander at the recorded pid: untouched, the record stale.
  D=$T/bystander-$mode; mkdir -p "$D/hooks"; pf=$D/hooks/on_X.bg.pid
  "$PG" run --json "$pf" --scope "$(scope_opt $mode)" -- sleep 4822 > "$D/run.json" 2>/dev/null && check_run "$D/run.json" $mode
  p=$(json "$D/run.json" pid); leaf=$(leaf_of "$D/run.json")
  kill -KILL "$p"; wait_count 'sleep 4822' 10
  [ -n "$leaf" ] && rmdir "$leaf"
  if [ $mode != cgroup ]; then sup=$(json "$D/run.json" supervisor_pid); for _ in $(seq 200); do alive "$sup" || break; sleep 0.05; done; fi
  cp -a "$pf" "$D/kept.pid"
  if b=$(bystander_at "$p" by-4823); then
    "$PG" stop "$pf" > "$D/stop.txt" 2>&1; st=$?
    untouched "$b" && [ $st = 1 ] && [ ! -e "$pf" ] && ok "$(tag $mode) bystander at the recorded pid $p, scope gone: untouched by stop (exit 1)" \
      || bad "$(tag $mode) bystander stop: exit $st $(cat "$D/stop.txt"); bystander $b: $(grep -E 'State|SigPnd|ShdPnd|SigBlk' "/proc/$b/status" 2>&1 | tr '\n' ' ')"
    cp -a "$D/kept.pid" "$pf"
    "$PG" cleanup "$D/hooks" > "$D/cleanup.txt" 2>&1; st=$?
    untouched "$b" && [ $st = 0 ] && [ ! -e "$pf" ] && ok "$(tag $mode) bystander at the recorded pid, scope gone: untouched by cleanup (exit 0)" \
      || bad "$(tag $mode) bystander cleanup: exit $st $(cat "$D/cleanup.txt")"
    kill -KILL "$b"
  else bad "$(tag $mode): could not force a bystander at pid $p"; fi
done

if [ $HIDDEN = 0 ]; then
  # The leaf's path re-created by someone else, a bystander in it: a mismatch, untouched.
  D=$T/recreated; mkdir -p "$D"; pf=$D/a.pid
  "$PG" run --json "$pf" -- sh -c 'sleep 4824 & exec sleep 4825' > "$D/run.json" 2>/dev/null && check_run "$D/run.json" cgroup
  leaf=$(leaf_of "$D/run.json"); wait_count 'sleep 482?' 10 2
  echo 1 > "$leaf/cgroup.kill"; wait_count 'sleep 482?' 10; rmdir "$leaf"; mkdir "$leaf"
  setsid "${BYSTANDER[@]}" by-4826 </dev/null >/dev/null 2>&1 & b=$!; disown "$b"; ready "$b"
  echo "$b" > "$leaf/cgroup.procs"
  "$PG" stop "$pf" > "$D/stop.txt" 2>&1; st=$?
  if untouched "$b" && [ -d "$leaf" ] && grep -qx "$b" "$leaf/cgroup.procs" && grep -q 'another cgroup' "$D/stop.txt" && grep -q 'not touched' "$D/stop.txt"; then
    ok "re-created leaf: a mismatch, the bystander in it untouched, the new cgroup kept (exit $st)"
  else bad "re-created leaf: exit $st $(cat "$D/stop.txt")"; fi
  kill -KILL "$b"; for _ in $(seq 100); do rmdir "$leaf" 2>/dev/null && break; sleep 0.05; done
fi

for mode in $MODES; do
  [ $mode = cgroup ] && continue
  # The supervisor killed by a stray SIGKILL and its pid reused by a bystander with a child:
  # the scope is a mismatch; the bystander and its child are untouched; the recorded command is
  # still stopped, with its group.
  D=$T/supreuse-$mode; mkdir -p "$D"; pf=$D/a.pid
  "$PG" run --json "$pf" --scope "$(scope_opt $mode)" -- sleep 4827 > "$D/run.json" 2>/dev/null && check_run "$D/run.json" $mode
  sup=$(json "$D/run.json" supervisor_pid); p=$(json "$D/run.json" pid)
  wait_count 'sleep 4827' 10 1; kill -KILL "$sup"
  for _ in $(seq 200); do [ -e "/proc/$sup" ] || break; sleep 0.05; done
  if b=$(bystander_at "$sup" by-4828 child); then
    wait_count '*by-4828' 10 2; bc=$(live '*by-4828' | grep -vx "$b"); ready "$bc"
    "$PG" stop "$pf" > "$D/stop.txt" 2>&1; st=$?
    if untouched "$b" && untouched "$bc" && ! alive "$p" && [ $st = 0 ] && grep -q 'no longer its supervisor' "$D/stop.txt"; then
      ok "$(tag $mode) supervisor pid reused: the bystander and its child untouched, the command stopped (exit 0)"
    else bad "$(tag $mode) supervisor pid reused: exit $st $(cat "$D/stop.txt")"; fi
    kill -KILL "$b" "$bc"
  else bad "$(tag $mode): could not force a bystander at pid $sup"; fi
  end_matching 'sleep 4827'
done

# ---- 4. a hook that moves itself out of its leaf (root can) --------------------------------
if [ $HIDDEN = 0 ]; then
  for op in stop cleanup; do
    for child in 'sleep 4831 & ' ''; do
      D=$T/escape-$op-${#child}; mkdir -p "$D/plug"; pf=$D/plug/on_Snapshot__30_escape.bg.pid
      "$PG" run --json "$pf" -- sh -c "${child}cg=\$(sed -n 's/^0:://p' /proc/self/cgroup); echo 0 > '$MP'\"\${cg%/*}/cgroup.procs\" && exec sleep 4832" > "$D/run.json" 2>/dev/null
      p=$(json "$D/run.json" pid); leaf=$(leaf_of "$D/run.json")
      for _ in $(seq 200); do grep -q 'sleep' "/proc/$p/comm" 2>/dev/null && ! grep -q '/run-' "/proc/$p/cgroup" && break; sleep 0.05; done
      if [ $op = stop ]; then "$PG" stop "$pf" > "$D/op.txt" 2>&1; else "$PG" cleanup "$D" > "$D/op.txt" 2>&1; fi; st=$?
      if wait_count 'sleep 483?' 5 && [ $st = 0 ] && grep -q 'left its scope' "$D/op.txt" && grep -q 'TERM' "$D/op.txt" && [ ! -e "$leaf" ]; then
        ok "escape $op$([ -n "$child" ] && echo ' (a child left in the leaf)'): reported, stopped through its group, zero left (exit 0)"
      else bad "escape $op ${child:+with child}: exit $st, $(count 'sleep 483?') left: $(cat "$D/op.txt")"; end_matching 'sleep 483?'; fi
    done
  done
fi

# ---- 5. failures leave nothing behind -------------------------------------------------------
if [ $HIDDEN = 1 ]; then
  D=$T/nocg; mkdir -p "$D"
  "$PG" run "$D/a.pid" --scope cgroup -- sh -c "touch $D/ran; sleep 4841" > "$D/out.txt" 2>&1; st=$?
  made=$(ls -A "$MP"); files=$(ls -A "$D" | grep -v out.txt)
  if [ $st = 4 ] && [ "$(count 'sleep 4841')" = 0 ] && [ -z "$files" ] && [ -z "$made" ] && grep -q 'no cgroup leaf could be made' "$D/out.txt"; then
    ok "hidden: an explicit --scope cgroup fails cleanly (exit 4): no process, no file, no leaf"
  else bad "hidden: --scope cgroup: exit $st, files: $files, made on the cover: $made: $(cat "$D/out.txt")"; fi
fi
printf '#!/nonexistent/interpreter\n' > "$T/bad-interpreter"; chmod 755 "$T/bad-interpreter"
for mode in $MODES; do
  for prog in /nonexistent "$T/bad-interpreter"; do
    D=$T/execfail-$mode-${#prog}; mkdir -p "$D"
    "$PG" run "$D/x.pid" --scope "$(scope_opt $mode)" -- "$prog" > "$D/out.txt" 2>&1; st=$?
    left=$(live "*$D/*" | grep -c .)
    if [ $st = 4 ] && [ ! -e "$D/x.pid" ] && [ -z "$(own_leaves)" ] && [ "$left" = 0 ] && grep -q 'cannot start' "$D/out.txt"; then
      ok "$(tag $mode) exec failure of $(basename "$prog"): exit 4, no process, no leaf, no pidfile"
    else bad "$(tag $mode) exec failure of $prog: exit $st, leaves $(own_leaves), $left left: $(cat "$D/out.txt")"; fi
  done
done

# ---- 6. privilege is never lent -------------------------------------------------------------
for mode in $MODES; do
  D=$T/owner-$mode; mkdir -p "$D/plug"; pf=$D/plug/on_Snapshot__40_root.bg.pid
  "$PG" run --json "$pf" --scope "$(scope_opt $mode)" -- sh -c 'sleep 4851 & exec sleep 4852' > "$D/run.json" 2>/dev/null && check_run "$D/run.json" $mode
  wait_count 'sleep 485?' 10 2; before=$(live 'sleep 485?' | tr '\n' ' ')
  chown 65534:65534 "$pf"
  "$PG" stop "$pf" > "$D/stop.txt" 2>&1; st1=$?
  "$PG" cleanup "$D" > "$D/cleanup.txt" 2>&1; st2=$?
  all=1; for p in $before; do untouched "$p" || all=0; done
  if [ $all = 1 ] && [ $st1 = 3 ] && [ $st2 = 3 ] && [ -e "$pf" ] && grep -q 'untrusted-pidfile' "$D/cleanup.txt"; then
    ok "$(tag $mode) a record owned by uid 65534 naming root's $(kind_of $mode): refused by stop and cleanup (exit 3), nothing signalled"
  else bad "$(tag $mode) owner: stop exit $st1, cleanup exit $st2, alive: $all: $(cat "$D/stop.txt" "$D/cleanup.txt")"; fi
  chown 0:0 "$pf"; "$PG" stop "$pf" > /dev/null 2>&1; st=$?
  wait_count 'sleep 485?' 5 && [ $st = 0 ] && ok "$(tag $mode) the same record owned by root stops (exit 0)" || { bad "$(tag $mode) owner control: exit $st"; end_matching 'sleep 485?'; }
done

# ---- 7. a cgroup record judged where cgroup v2 is hidden ------------------------------------
if [ $HIDDEN = 0 ]; then
  D=$T/judged; mkdir -p "$D"; pf=$D/a.pid
  "$PG" run --json "$pf" -- sh -c "$DAEMON" > "$D/run.json" 2>/dev/null && check_run "$D/run.json" cgroup
  wait_count 'sleep 481?' 20 2
  unshare --mount --propagation private sh -c 'mount -t tmpfs pidguard-hidden "$1" && exec "$2" stop "$3"' sh "$MP" "$PG" "$pf" > "$D/stop.txt" 2>&1; st=$?
  if [ $st = 5 ] && [ -e "$pf" ] && [ "$(count 'sleep 481?')" = 2 ] && grep -q 'not the cgroup2 file system' "$D/stop.txt"; then
    ok "a cgroup record judged where cgroup v2 is hidden: undecided (exit 5), kept, nothing signalled"
  else bad "judged hidden: exit $st, $(count 'sleep 481?') alive: $(cat "$D/stop.txt")"; fi
  "$PG" stop "$pf" > /dev/null 2>&1; st=$?
  wait_count 'sleep 481?' 5 && [ $st = 0 ] && ok "the same record judged with cgroup v2 visible: stopped whole (exit 0)" || { bad "judged visible: exit $st"; end_matching 'sleep 481?'; }
fi

# ---- 8. status of a record whose first process exited while its scope runs -------------------
# `status` says running, with the member count, and exits 0 — as `run` on the same pidfile
# refuses (exit 3) — and signals nothing (it was `not valid — pid N, gone`, exit 1).
for mode in $MODES; do
  D=$T/status-$mode; mkdir -p "$D"; pf=$D/s.pid
  "$PG" run --json "$pf" --scope "$(scope_opt $mode)" -- sh -c 'sleep 4871 & exit 0' > "$D/run.json" 2>/dev/null && check_run "$D/run.json" $mode
  wait_count 'sleep 4871' 10 1; kept=$(live 'sleep 4871')
  first=$(json "$D/run.json" pid)
  for i in $(seq 400); do alive "$first" || break; sleep 0.05; done
  "$PG" status "$pf" > "$D/status.txt" 2>&1; st=$?
  # `list` says what `status` says (it called the record stale); `status --json` exits as status.
  "$PG" list "$D" > "$D/list.txt" 2>&1
  "$PG" status --json "$pf" > "$D/status.json" 2>&1; stj=$?
  jp=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); p=d["probe"]; print(d["valid"], p["answer"], p["running"], p["scope_members"])' "$D/status.json" 2>&1)
  if grep -q '^running .*running — .*still holds 1 process$' "$D/list.txt" && grep -q '1 running, 0 stale' "$D/list.txt" && [ $stj = 0 ] && [ "$jp" = "False running True 1" ]; then
    ok "$(tag $mode) list of that record: running, 1 process; status --json exits 0 with probe: running, 1 member"
  else bad "$(tag $mode) list / status --json of a running scope (json exit $stj, valid/answer/running/members: $jp): $(cat "$D/list.txt" "$D/status.json")"; fi
  "$PG" run "$pf" -- sleep 4872 > "$D/run2.txt" 2>&1; st2=$?
  if [ $st = 0 ] && grep -q 'running — .*still holds 1 process$' "$D/status.txt" && [ -n "$kept" ] && untouched "$kept" && [ $st2 = 3 ] && [ "$(count 'sleep 4872')" = 0 ]; then
    ok "$(tag $mode) status of a record whose first process exited while its scope runs: running, 1 process (exit 0); run refuses (exit 3)"
  else bad "$(tag $mode) status of a running scope: exit $st, run exit $st2, first $first alive: $(alive "$first" && echo yes || echo no): $(cat "$D/status.txt" "$D/run2.txt")"; end_matching 'sleep 4872'; fi
  # The same record owned by uid 65534: root's scope is not that user's to claim. status does
  # not count it (the record's own answer: gone, exit 1), as stop refuses it (exit 3); nothing
  # is signalled either way.
  chown 65534:65534 "$pf"
  "$PG" status "$pf" > "$D/status-u.txt" 2>&1; stu=$?
  "$PG" stop "$pf" > "$D/stop-u.txt" 2>&1; sst=$?
  if [ $stu = 1 ] && ! grep -q 'still holds' "$D/status-u.txt" && [ $sst = 3 ] && [ -e "$pf" ] && untouched "$kept"; then
    ok "$(tag $mode) status of a uid-65534 record naming root's $(kind_of $mode): not counted (exit 1), as stop refuses it (exit 3)"
  else bad "$(tag $mode) status of a record naming another user's scope: status exit $stu, stop exit $sst: $(cat "$D/status-u.txt" "$D/stop-u.txt")"; fi
  chown 0:0 "$pf"
  "$PG" stop "$pf" > /dev/null 2>&1; wait_count 'sleep 4871' 5 || end_matching 'sleep 4871'
done

# ---- 9. empty leaves do not pile up (issue 34) ----------------------------------------------
if [ $HIDDEN = 0 ]; then
  D=$T/pile; mkdir -p "$D"
  n0=$(own_leaves | grep -c .)
  for i in $(seq 20); do "$PG" run "$D/t$i.pid" --scope cgroup -- true > /dev/null 2>&1 || bad "pile: run $i failed"; done
  n=$(own_leaves | grep -c .)
  if [ "$n" -le $((n0 + 1)) ]; then ok "20 runs of a command that exits by itself leave at most one leaf ($n, $n0 before)"
  else bad "pile: $n leaves after 20 runs ($n0 before): $(own_leaves | tr '\n' ' ')"; fi
  for i in $(seq 20); do "$PG" stop "$D/t$i.pid" > /dev/null 2>&1; done
fi

# ---- the hidden run -------------------------------------------------------------------------
if [ $HIDDEN = 0 ]; then
  unshare --mount --propagation private bash "$0" --hidden > "$T/hidden.txt" 2>&1
  cat "$T/hidden.txt" | grep -v '^cli scopes'
  h=$(grep '^cli scopes' "$T/hidden.txt")
  hp=$(echo "$h" | sed -n 's/.*: \([0-9]*\) passed.*/\1/p'); hf=$(echo "$h" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
  [ -n "$hp" ] || { hf=1; echo "FAIL - the hidden run did not finish: $(tail -3 "$T/hidden.txt")"; hp=0; }
  pass=$((pass + hp)); fail=$((fail + ${hf:-1}))
  left=$(own_leaves); [ -z "$left" ] && ok "no leaf left behind" || bad "leaves left: $left"
fi
echo "cli scopes: $pass passed, $fail failed"
[ "$fail" = 0 ]
