#!/usr/bin/env bash
# `pidguard list DIR` (each pidfile's pid, verdict and running/stale/undecided, from core's
# dir_status) and `pidguard stop`'s progress line (a spinner on a terminal only, while it waits
# out a long schedule). Run by scripts/test-cli.sh inside a private PID namespace where allowed.
# Every process started here is ended by pid or through pidguard.
set -u
PG=${PIDGUARD:?set PIDGUARD to the pidguard binary}
T=$(mktemp -d /tmp/pidguard-cli-XXXXXX)
chmod 755 "$T"
pass=0; fail=0; started=()
trap 'for p in "${started[@]}"; do kill -KILL "$p" 2>/dev/null; done; if [ ${#started[@]} -gt 0 ]; then wait "${started[@]}" 2>/dev/null; fi; rm -rf "$T"' EXIT
ok()  { pass=$((pass+1)); echo "ok   - $1"; }
bad() { fail=$((fail+1)); echo "FAIL - $1"; }
has() { grep -qE -- "$2" <<<"$1" && ok "$3" || { bad "$3"; printf '%s\n' "$1" | sed 's/^/    | /'; }; }
hasnt() { grep -qE -- "$2" <<<"$1" && { bad "$3"; printf '%s\n' "$1" | sed 's/^/    | /'; } || ok "$3"; }
alive() { [ -e "/proc/$1" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }
spawn_group() { setsid "$@" </dev/null >/dev/null 2>&1 & local p=$!; started+=("$p"); echo "$p"; }
wait_exec() { for _ in $(seq 500); do [ "$(cat /proc/$1/comm 2>/dev/null)" = "$2" ] && return 0; sleep 0.02; done; return 1; }

# --- list ---
D=$T/list; mkdir "$D"
out=$("$PG" list "$D"); rc=$?
[ $rc = 0 ] && ok "list of an empty directory exits 0" || bad "list of an empty directory exited $rc"
has "$out" 'no pidfiles$' "an empty directory: no pidfiles"
live=$(spawn_group sleep infinity); wait_exec "$live" sleep
"$PG" write "$D/live.pid" "$live" >/dev/null || bad "write live.pid"
dead=$(spawn_group sleep infinity); wait_exec "$dead" sleep
"$PG" write "$D/dead.pid" "$dead" >/dev/null || bad "write dead.pid"
kill -KILL "$dead"; wait "$dead" 2>/dev/null
echo junk > "$D/junk.pid"
ln -s live.pid "$D/link.pid"
echo "not a pidfile" > "$D/notes.txt"
out=$("$PG" list "$D"); rc=$?
[ $rc = 0 ] && ok "list exits 0" || bad "list exited $rc"
has "$out" "^running +$D/live.pid: valid — pid $live, match$" "a live recorded process: running, its pid and verdict"
has "$out" "^stale +$D/dead.pid: not valid — pid $dead, gone" "an exited one: stale, gone"
has "$out" "^stale +$D/junk.pid: not valid — the content is not one pid$" "a malformed pidfile: stale"
has "$out" "^stale +$D/link.pid: not valid — not a regular file" "a symlink: not followed"
hasnt "$out" 'notes.txt' "a file that does not match the pattern is not listed"
has "$out" "^$D: 4 pidfile\(s\): 1 running, 3 stale, 0 undecided$" "the count"
alive "$live" && ok "list signals nothing (the live process lives)" || bad "list ended the live process"
[ -e "$D/dead.pid" ] && ok "list removes nothing" || bad "list removed a stale pidfile"
out=$("$PG" list "$D" --pattern 'l*.pid')
has "$out" "^$D: 2 pidfile\(s\)" "--pattern chooses the files"
out=$("$PG" list "$T/nonexistent" 2>&1); rc=$?
[ $rc != 0 ] && ok "a missing directory is an error (exit $rc)" || bad "a missing directory exited 0"
has "$out" 'No such file or directory' "and says why"
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  # A pidfile the caller cannot read: undecided, never stale.
  chmod 600 "$D/live.pid"
  out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$PG" list "$D" --pattern 'live.pid')
  has "$out" "^undecided +$D/live.pid: cannot be read" "an unreadable pidfile: undecided"
  chmod 644 "$D/live.pid"
fi

# --- stop: a spinner while it waits, on a terminal only ---
if command -v script >/dev/null; then
  for where in tty pipe; do
    p=$(spawn_group bash -c "trap '' TERM; exec sleep infinity"); wait_exec "$p" sleep
    "$PG" write "$T/$where.pid" "$p" >/dev/null
    if [ $where = tty ]; then
      out=$(script -qec "$PG stop $T/$where.pid --retry TERM/3/KILL/2" /dev/null 2>&1)
      has "$out" 'stop: stopping .*tty.pid \(schedule TERM/3/KILL/2\), [0-9]+s elapsed' "stop on a terminal shows a spinner while it waits"
    else
      out=$("$PG" stop "$T/$where.pid" --retry TERM/3/KILL/2 2>&1 | cat)
      hasnt "$out" 'stop: stopping' "stop on a pipe shows no spinner"
    fi
    has "$out" "exited after SIGKILL" "stop ($where) reports the process ended by its schedule"
    for _ in $(seq 250); do alive "$p" || break; sleep 0.02; done
    alive "$p" && bad "the TERM-ignoring process ($where) is alive" || ok "the TERM-ignoring process ($where) was ended"
  done
  p=$(spawn_group bash -c "trap '' TERM; exec sleep infinity"); wait_exec "$p" sleep
  "$PG" write "$T/json.pid" "$p" >/dev/null
  out=$(script -qec "$PG stop $T/json.pid --json --retry TERM/3/KILL/2" /dev/null 2>&1)
  hasnt "$out" 'stop: stopping' "stop --json on a terminal shows no spinner"
else
  echo "skip - script(1) not installed: the terminal cases of stop's spinner"
fi

# --- an unprivileged run --scope cgroup says whose cgroup and what permission ---
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && grep -q ' - cgroup2 ' /proc/self/mountinfo; then
  mkdir -m 777 "$T/cg"
  out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$PG" run "$T/cg/x.pid" --scope cgroup -- sleep infinity 2>&1); rc=$?
  [ $rc != 0 ] && ok "run --scope cgroup as uid 65534 without a delegated cgroup fails (exit $rc)" || bad "run --scope cgroup as uid 65534 exited 0"
  has "$out" 'EACCES — /[^ ]+ belongs to uid [0-9]+ \(mode [0-7]+\), and this process runs as uid 65534 \(effective 65534\): creating a cgroup needs write permission' "it says whose cgroup directory and what permission"
  hasnt "$out" 'Cgroup \{|boot_id|ScopeRecord' "no internal record in the message"
  [ ! -e "$T/cg/x.pid" ] && ok "no pidfile left" || bad "a pidfile was left"
else
  echo "skip - not root, no setpriv or no cgroup2 mount: the unprivileged --scope cgroup message"
fi

echo "list_stop_tests: $pass passed, $fail failed"
[ $fail = 0 ]
