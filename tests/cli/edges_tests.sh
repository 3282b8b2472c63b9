#!/usr/bin/env bash
# The `pidguard` command at the edges: a leader whose main thread exited while a worker runs,
# no /proc, a live pid above kernel.pid_max, a machine id written after the records, a failed
# thread spawn under a pids limit, and the exit statuses that say what was left running. Run by
# scripts/test-cli.sh inside a private PID namespace (the pid_max case needs it: pid_max is per
# namespace since Linux 6.14). Every process started here is ended by pid or through pidguard.
set -u
PG=${PIDGUARD:?set PIDGUARD to the pidguard binary}
T=$(mktemp -d /tmp/pidguard-cli-edges-XXXXXX)
chmod 755 "$T"
pass=0; fail=0; started=()
cleanup_all() {
  for p in "${started[@]}"; do kill -KILL "$p" 2>/dev/null; done
  [ -n "${CG:-}" ] && rmdir "$CG" 2>/dev/null
  rm -rf "$T"
}
trap cleanup_all EXIT
ok()  { pass=$((pass+1)); echo "ok   - $1"; }
bad() { fail=$((fail+1)); echo "FAIL - $1"; }
expect_status() { if [ "$2" = "$3" ]; then ok "$1 (exit $3)"; else bad "$1: expected exit $2, got $3"; fi; }
alive() { kill -0 "$1" 2>/dev/null; }
spawn_group() { setsid "$@" </dev/null >/dev/null 2>&1 & local p=$!; started+=("$p"); echo "$p"; }
wait_until() { for _ in $(seq 500); do eval "$1" && return 0; sleep 0.02; done; return 1; }
is_root() { [ "$(id -u)" = 0 ]; }
setxattr() { python3 -c 'import os,sys; os.setxattr(sys.argv[1], "user.pidguard.token", sys.argv[2].encode())' "$1" "$2"; }
getxattr() { python3 -c 'import os,sys; print(os.getxattr(sys.argv[1], "user.pidguard.token").decode())' "$1"; }
rmxattr()  { python3 -c 'import os,sys; os.removexattr(sys.argv[1], "user.pidguard.token")' "$1"; }

# --- a leader whose main thread exited (pthread_exit) while a worker thread runs ---
if command -v cc >/dev/null; then
  cat > "$T/lz.c" <<'EOF'
#include <pthread.h>
#include <unistd.h>
static void *w(void *a) { (void)a; for (;;) pause(); return 0; }
int main(void) { pthread_t t; pthread_create(&t, 0, w, 0); pthread_exit(0); }
EOF
  cc -O2 -pthread -o "$T/lzbin" "$T/lz.c"
  mkdir -p "$T/lz/out"
  p=$(spawn_group "$T/lzbin")
  wait_until "grep -q '^$p (lzbin) Z' /proc/$p/stat && grep -q '^Threads:.2' /proc/$p/status" || bad "the leader never showed Z with a live thread"
  "$PG" write "$T/lz/out/on_S__1_lz.bg.pid" "$p" >/dev/null 2>&1; expect_status "write records a leader in Z whose thread runs" 0 $?
  "$PG" status "$T/lz/out/on_S__1_lz.bg.pid" >/dev/null; expect_status "status: valid" 0 $?
  "$PG" stop "$T/lz/out/on_S__1_lz.bg.pid" --retry TERM/5/KILL/5 >/dev/null; expect_status "stop stops it" 0 $?
  wait_until "! alive $p" && ok "the process is gone after stop" || bad "pid $p still alive after stop"
  # cleanup, token-less (the cmd rule reads the argv from a live thread)
  p=$(spawn_group "$T/lzbin")
  wait_until "grep -q '^$p (lzbin) Z' /proc/$p/stat"
  "$PG" write "$T/lz/out/on_S__2_lz.bg.pid" "$p" >/dev/null 2>&1
  rmxattr "$T/lz/out/on_S__2_lz.bg.pid"
  "$PG" cleanup "$T/lz/out" >/dev/null; expect_status "cleanup stops a token-less leader in Z" 0 $?
  wait_until "! alive $p" && ok "cleanup: the process is gone" || bad "cleanup left pid $p running"
else
  echo "skip - no C compiler for the leader-thread-exited cases"
fi

# --- no /proc: every record is kept, every command says undecided (5) ---
if is_root && unshare --mount --propagation private true 2>/dev/null; then
  mkdir -p "$T/np/out"
  p=$(spawn_group sleep infinity)
  "$PG" write "$T/np/out/on_S__1_h.bg.pid" "$p" >/dev/null
  # shellcheck disable=SC2016
  unshare --mount --propagation private bash -c '
    # --mount-proc stacked a /proc over the host'"'"'s: unmount every one.
    while mountpoint -q /proc; do umount -l /proc || exit 99; done
    "$1" status "$2/out/on_S__1_h.bg.pid" > "$2/status.txt" 2>&1; echo $? > "$2/status.rc"
    "$1" stop "$2/out/on_S__1_h.bg.pid" > "$2/stop.txt" 2>&1; echo $? > "$2/stop.rc"
    "$1" cleanup "$2/out" > "$2/cleanup.txt" 2>&1; echo $? > "$2/cleanup.rc"
  ' _ "$PG" "$T/np"
  expect_status "no /proc: status is undecided" 5 "$(cat "$T/np/status.rc")"
  grep -q 'machine-identity-unreadable: ENOENT' "$T/np/status.txt" && ok "no /proc: the cause is named" || bad "status said: $(cat "$T/np/status.txt")"
  expect_status "no /proc: stop is undecided" 5 "$(cat "$T/np/stop.rc")"
  expect_status "no /proc: cleanup is undecided" 5 "$(cat "$T/np/cleanup.rc")"
  [ -f "$T/np/out/on_S__1_h.bg.pid" ] && alive "$p" && ok "no /proc: the hook runs and keeps its pidfile" || bad "no /proc: pidfile removed or hook stopped"
  kill "$p"
else
  echo "skip - the no-/proc case needs root and a mount namespace"
fi

# --- a live pid above kernel.pid_max (we are pid 1 of a private PID namespace) ---
# Only as pid 1 of our own namespace on Linux >= 6.14, where pid_max is the namespace's (on
# older kernels it is the machine's, and is left alone).
kver=$(uname -r | awk -F. '{print $1 * 1000 + $2}')
if is_root && [ $$ = 1 ] && [ "$kver" -ge 6014 ] && old=$(cat /proc/sys/kernel/pid_max) \
   && echo 100000 > /proc/sys/kernel/pid_max 2>/dev/null; then
  echo 50000 > /proc/sys/kernel/ns_last_pid
  mkdir -p "$T/pm/out"
  p=$(spawn_group sleep infinity)
  "$PG" write "$T/pm/out/on_S__1_h.bg.pid" "$p" >/dev/null
  echo 32768 > /proc/sys/kernel/pid_max
  if [ "$p" -gt "$(cat /proc/sys/kernel/pid_max)" ]; then
    out=$("$PG" status "$T/pm/out/on_S__1_h.bg.pid" 2>&1); expect_status "status of a live pid $p above pid_max $old" 0 $?
    "$PG" token "$p" >/dev/null; expect_status "token of a pid above pid_max" 0 $?
    "$PG" cleanup "$T/pm/out" --json > "$T/pm/c.json"; expect_status "cleanup stops it" 0 $?
    grep -q '"malformed"' "$T/pm/c.json" && bad "cleanup called a live pid malformed" || ok "not malformed"
    wait_until "! alive $p" && ok "the hook above pid_max is stopped" || bad "pid $p still alive"
    printf '4194305' > "$T/pm/big.pid"
    out=$("$PG" status "$T/pm/big.pid" 2>&1)
    case "$out" in *'1..='*) bad "a message in Rust range syntax: $out";; *) ok "no Rust range syntax in: $out";; esac
  else
    echo "skip - could not place a pid above pid_max"
  fi
  echo "$old" > /proc/sys/kernel/pid_max
else
  echo "skip - pid_max is not this namespace's to set"
fi

# --- a machine id written after the record: the same boot id proves the same kernel ---
mkdir -p "$T/mi/out"
p=$(spawn_group sleep infinity)
"$PG" write "$T/mi/out/on_S__1_h.bg.pid" "$p" >/dev/null
tok=$(getxattr "$T/mi/out/on_S__1_h.bg.pid")
setxattr "$T/mi/out/on_S__1_h.bg.pid" "$(echo "$tok" | awk -F: 'BEGIN{OFS=":"} {$2="writtenbeforemachineid"; print}')"
"$PG" status "$T/mi/out/on_S__1_h.bg.pid" >/dev/null; expect_status "machine id changed, same boot: valid" 0 $?
"$PG" cleanup "$T/mi/out" >/dev/null; expect_status "machine id changed: cleanup stops the hook" 0 $?
wait_until "! alive $p" && ok "machine id changed: stopped" || bad "pid $p still alive"

# --- another machine's record: cleanup keeps it and says so (5) ---
mkdir -p "$T/fm/out"
p=$(spawn_group sleep infinity)
"$PG" write "$T/fm/out/on_S__1_h.bg.pid" "$p" >/dev/null
tok=$(getxattr "$T/fm/out/on_S__1_h.bg.pid")
setxattr "$T/fm/out/on_S__1_h.bg.pid" "$(echo "$tok" | awk -F: 'BEGIN{OFS=":"} {$2="anotherhost"; $3="00000000-0000-4000-8000-000000000000"; print}')"
"$PG" cleanup "$T/fm/out" >/dev/null; expect_status "cleanup keeping a foreign record is undecided" 5 $?
alive "$p" && [ -f "$T/fm/out/on_S__1_h.bg.pid" ] && ok "the foreign record and its process are left alone" || bad "foreign record touched"
kill "$p"

# --- pid 1 is refused at once by write ---
"$PG" write "$T/one.pid" 1 >/dev/null 2>&1; expect_status "write PIDFILE 1 is refused" 3 $?
[ -e "$T/one.pid" ] && bad "a record of pid 1 was written" || ok "no record of pid 1"

# --- a schedule without a last wait: the target may act before it is called unkillable ---
for sched in 0 TERM/-1; do
  p=$(spawn_group sleep infinity)
  "$PG" write "$T/nw.pid" "$p" >/dev/null
  "$PG" stop "$T/nw.pid" --retry "$sched" >/dev/null; expect_status "stop --retry $sched" 0 $?
done

# --- a procfs file as --cmd-file is read (size 0 is not "empty") ---
p=$(spawn_group sleep infinity)
"$PG" write "$T/pc.pid" "$p" >/dev/null
rmxattr "$T/pc.pid"
"$PG" status "$T/pc.pid" --cmd-file /proc/sys/kernel/hostname >/dev/null; expect_status "a procfs --cmd-file naming another command is read: cmd-mismatch" 1 $?
kill "$p"

# --- root stops a group whose only survivor is another uid's: refused, named, no KILL ---
if is_root && command -v setpriv >/dev/null; then
  g=$(spawn_group bash -c 'sleep infinity & exec setpriv --reuid=65534 --regid=65534 --clear-groups sleep infinity')
  wait_until "[ \$(pgrep -g $g | wc -l) -ge 2 ] && grep -q '^Uid:.65534' /proc/$g/status"
  member=$(pgrep -g "$g" | grep -v "^$g\$" | head -1); started+=("$member")
  "$PG" write "$T/dep.pid" "$g" >/dev/null
  chown 65534 "$T/dep.pid"
  out=$("$PG" stop "$T/dep.pid" --retry TERM/1/KILL/1 2>&1); st=$?
  expect_status "root's stop of a group whose only survivor is skipped for its uid is refused" 3 $st
  case "$out" in *"pid $member"*) ok "the survivor $member is named";; *) bad "survivor not named: $out";; esac
  case "$out" in *unkillable*) bad "called unkillable: $out";; *) ok "not called unkillable";; esac
  alive "$member" && ok "the other uid's process was not signalled" || bad "member $member was signalled"
  kill -KILL "$member"
fi

# --- a /proc of another PID namespace (unshare --pid without --mount-proc): undecided (5) ---
# /proc/<n> there shows whichever process has number n in the parent namespace. A decoy at pid
# N here and the hook at pid N in the child namespace (both forced with ns_last_pid): a token-less record of the hook,
# its mtime off, judged by the decoy's facts read as "stale" and lost its record while the hook
# ran on. Now every machine fact is unknown there: nothing judged, kept, exit 5.
if is_root && [ -w /proc/sys/kernel/ns_last_pid ] && unshare --pid --fork true 2>/dev/null; then
  mkdir -p "$T/fp/out"
  echo 4999 > /proc/sys/kernel/ns_last_pid
  decoy=$(spawn_group sleep infinity)
  if [ "$decoy" -gt 1000 ]; then
    res=$(unshare --pid --fork bash -c '
      PG=$1; D=$2
      echo $(( $3 - 1 )) > /proc/sys/kernel/ns_last_pid
      setsid sleep infinity </dev/null >/dev/null 2>&1 & R=$!
      printf %s "$R" > "$D/on_F__1_h.bg.pid"; touch -d @$(( $(date +%s) - 3600 )) "$D/on_F__1_h.bg.pid"
      "$PG" status "$D/on_F__1_h.bg.pid" > "$D/../status.txt" 2>&1; s1=$?
      "$PG" cleanup "$D" > "$D/../cleanup.txt" 2>&1; s2=$?
      kill -0 "$R" 2>/dev/null && a=alive || a=gone
      [ -f "$D/on_F__1_h.bg.pid" ] && k=kept || k=lost
      kill -KILL "$R" 2>/dev/null; wait
      echo "$R $s1 $s2 $a $k"' _ "$PG" "$T/fp/out" "$decoy")
    set -- $res
    if [ "${1:-}" = "$decoy" ]; then
      [ "$2 $3 $4 $5" = "5 5 alive kept" ] && ok "another namespace's /proc: status and cleanup undecided, hook alive, record kept" \
        || bad "another namespace's /proc: expected '5 5 alive kept', got '$2 $3 $4 $5': $(cat "$T/fp/status.txt" "$T/fp/cleanup.txt")"
      grep -q 'machine-identity-unreadable' "$T/fp/status.txt" && ok "another namespace's /proc is named as unknown machine facts" \
        || bad "status does not say machine-identity-unreadable: $(cat "$T/fp/status.txt")"
    else
      bad "the child namespace's hook did not get the decoy's number $decoy (got ${1:-none})"
    fi
  else
    bad "the decoy did not get a pid above 1000 (got $decoy)"
  fi
  kill -KILL "$decoy" 2>/dev/null
else
  echo "skip - the foreign-/proc case needs root, ns_last_pid and unshare --pid"
fi

# --- a planted pidfile whose mtime no calendar writes (year 14645; 2^63 - 1 s): no panic ---
# Whoever writes a pidfile sets its mtime; tmpfs keeps any 64-bit time. The cleanup still
# reports every hook and stops the live one.
if is_root && mkdir -p "$T/mt" && mount -t tmpfs tmpfs "$T/mt" 2>/dev/null; then
  for secs in 400000000000 9223372036854775807; do
    rm -rf "$T/mt/out" "$T/mt/index.jsonl"; mkdir -p "$T/mt/out"
    p=$(spawn_group sleep infinity)
    "$PG" write "$T/mt/out/on_M__1_h.bg.pid" "$p" >/dev/null
    printf 4000000 > "$T/mt/out/on_Z__1_h.bg.pid"; touch -d "@$secs" "$T/mt/out/on_Z__1_h.bg.pid"
    "$PG" cleanup --index "$T/mt/index.jsonl" "$T/mt/out" > "$T/mt/out.txt" 2>&1; st=$?
    if grep -q panicked "$T/mt/out.txt" || [ "$st" = 101 ]; then bad "mtime @$secs: cleanup panicked: $(cat "$T/mt/out.txt")"
    else ok "mtime @$secs: no panic (exit $st)"; fi
    wait_until "! alive $p" && ok "mtime @$secs: the live hook beside it was stopped" || bad "mtime @$secs: the live hook runs on"
  done
  umount "$T/mt"
else
  echo "skip - the planted-mtime case needs root and a tmpfs mount"
fi

# --- the progress spinner under a pids limit (no thread can be started): no panic ---
if is_root && [ -d /sys/fs/cgroup/pids ] && command -v script >/dev/null; then
  # Named after the test directory (mktemp-unique): $$ is 1 in every private PID namespace,
  # so two runs at once would share a cgroup named by it.
  CG=/sys/fs/cgroup/pids/${T##*/}
  mkdir "$CG"
  mkdir -p "$T/sp/out"
  for i in 1 2 3; do
    p=$(spawn_group sleep infinity)
    "$PG" write "$T/sp/out/on_S__${i}_h.bg.pid" "$p" >/dev/null
  done
  # script gives pidguard a terminal; the cgroup allows one task: pidguard, no thread more.
  script -qec "bash -c 'echo \$\$ > $CG/cgroup.procs; echo 1 > $CG/pids.max; exec $PG cleanup $T/sp/out'" /dev/null > "$T/sp/out.txt" 2>&1
  st=$(grep -c 'panicked' "$T/sp/out.txt")
  [ "$st" = 0 ] && ok "no panic without threads" || bad "panicked: $(cat "$T/sp/out.txt")"
  ls "$T/sp/out"/*.pid >/dev/null 2>&1 && bad "pidfiles left: $(cat "$T/sp/out.txt")" || ok "every hook stopped without threads"
else
  echo "skip - the pids-limit case needs root, cgroup v1 pids and script(1)"
fi

echo "cli edges: $pass passed, $fail failed"
[ "$fail" = 0 ]
