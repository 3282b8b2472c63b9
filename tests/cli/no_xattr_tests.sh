#!/usr/bin/env bash
# shared/BUGS.md L6 (issue 47): a pidfile on a file system without user xattrs (ramfs; also
# NFSv3 and some FUSE mounts), and a daemon that renames itself (its process title). A record
# pidguard writes must always be provable: `run` of an abx-dl record there refuses — nothing
# left running, no pidfile, no `.sh`, the refusal naming `--guard` — while `run --guard` writes
# a guard record (the token is in the file): after the rename `status` says valid, a second
# `run` refuses (no duplicate), `stop` stops it. Seen failing before the fix: `run` exited 0
# with a token-less record, `status` said not valid once the daemon renamed itself.
#
# Run by scripts/test-cli.sh as root inside `unshare --pid --fork --mount-proc` (a private
# mount namespace: the ramfs mount is seen by nobody else and ends with the namespace).
set -u
PG=${PIDGUARD:?set PIDGUARD to the pidguard binary}
pass=0; fail=0
ok()  { pass=$((pass+1)); echo "ok   - $1"; }
bad() { fail=$((fail+1)); echo "FAIL - $1"; }
T=$(mktemp -d /tmp/pidguard-noxattr-XXXXXX)
if [ "$(id -u)" != 0 ] || [ "$$" != 1 ] || ! mount -t ramfs pidguard-l6 "$T"; then
  echo "skip - needs root, a PID and mount namespace of its own and ramfs (scripts/test-cli.sh)"
  rmdir "$T" 2>/dev/null; echo "cli no-xattrs: 0 passed, 0 failed"; exit 0
fi
finish() {
  local p
  for p in $(ls /proc | grep -E '^[0-9]+$'); do [ "$p" != 1 ] && kill -KILL "$p" 2>/dev/null; done
  umount "$T"; rmdir "$T"
}
trap finish EXIT
# Live processes whose command line starts with $1 (zombies not counted).
count() {
  local d n=0 st args
  for d in /proc/[0-9]*; do
    read -r st 2>/dev/null < "$d/stat" || continue
    st=${st##*) }; case "${st:0:1}" in Z|X|'') continue ;; esac
    mapfile -d '' -t args 2>/dev/null < "$d/cmdline" || continue
    case "${args[*]}" in "$1"*) n=$((n+1)) ;; esac
  done
  echo $n
}
wait_count() { local i; for i in $(seq 300); do [ "$(count "$1")" = "$2" ] && return 0; sleep 0.05; done; return 1; }

# The file system really keeps no user xattrs (else this test proves nothing).
touch "$T/probe"
if python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.probe", b"1")' "$T/probe" 2>/dev/null; then
  bad "ramfs kept a user xattr: the test cannot stand for a file system without them"
fi
rm -f "$T/probe"

# 1. An abx-dl record: refused, nothing left.
mkdir -p "$T/plug"
DAEMON='sleep 0.3; exec -a l6-renamed-daemon sleep 4600'
"$PG" run "$T/plug/on_X__10_d.bg.pid" -- bash -c "$DAEMON" > "$T/run1.out" 2> "$T/run1.err"; rc=$?
if [ $rc != 0 ] && grep -q -- '--guard' "$T/run1.err" && grep -q 'no user xattrs' "$T/run1.err"; then
  ok "abx-dl run refused (exit $rc), naming --guard"
else
  bad "abx-dl run on ramfs: exit $rc, stderr: $(cat "$T/run1.err")"
fi
[ ! -e "$T/plug/on_X__10_d.bg.pid" ] && [ ! -e "$T/plug/on_X__10_d.bg.sh" ] && ok "no pidfile, no .sh left" || bad "left behind: $(ls "$T/plug")"
sleep 0.5
[ "$(count "bash -c $DAEMON")$(count l6-renamed-daemon)" = 00 ] && ok "nothing left running" || bad "the refused command runs on"
"$PG" cleanup "$T" > "$T/cleanup.out" 2>&1; rc=$?
{ [ $rc = 0 ] || { [ $rc = 1 ] && grep -q 'no pidfiles found' "$T/cleanup.out"; }; } && ok "cleanup of the refused hook's directory: nothing to do (exit $rc)" || bad "cleanup: exit $rc: $(cat "$T/cleanup.out")"

# 2. A guard record on the same file system: provable across the rename.
G=$T/plug/daemon.pid
"$PG" run --guard "$G" -- bash -c "$DAEMON" > "$T/run2.out" 2> "$T/run2.err"; rc=$?
[ $rc = 0 ] && ok "run --guard on ramfs" || bad "run --guard: exit $rc: $(cat "$T/run2.err")"
wait_count l6-renamed-daemon 1 && ok "the daemon renamed itself" || bad "the daemon did not rename itself"
"$PG" status "$G" > "$T/status.out" 2>&1; rc=$?
[ $rc = 0 ] && grep -q valid "$T/status.out" && ok "status after the rename: valid" || bad "status after the rename: exit $rc: $(cat "$T/status.out")"
"$PG" run --guard "$G" -- bash -c "$DAEMON" > "$T/run3.out" 2>&1; rc=$?
sleep 0.6
[ $rc = 3 ] && [ "$(count l6-renamed-daemon)" = 1 ] && ok "a second run refuses (exit 3), no duplicate" || bad "second run: exit $rc, $(count l6-renamed-daemon) daemons: $(cat "$T/run3.out")"
"$PG" stop "$G" > "$T/stop.out" 2>&1; rc=$?
[ $rc = 0 ] && wait_count l6-renamed-daemon 0 && ok "stop stops it" || bad "stop: exit $rc: $(cat "$T/stop.out")"
[ ! -e "$G" ] && ok "its record removed" || bad "the guard record stays after the stop"

echo "cli no-xattrs: $pass passed, $fail failed"
[ $fail = 0 ]
