#!/usr/bin/env bash
# A failed read is never a fact about a process, through the `pidguard` command: /proc mounted
# hidepid=2, out of descriptors, a time namespace, a kernel EPERM under the owner rule. Run as root by
# scripts/test-cli.sh inside a private PID namespace. Every process started here is ended by pid.
set -u
PG=${PIDGUARD:?set PIDGUARD to the pidguard binary}
T=$(mktemp -d /tmp/pidguard-cli-identity-XXXXXX)
chmod 755 "$T"
pass=0; fail=0; started=()
# Reaped after the kill, so that bash does not report each one as "Killed" (noise, not failure).
trap 'for p in "${started[@]}"; do kill -KILL "$p" 2>/dev/null; done; if [ ${#started[@]} -gt 0 ]; then wait "${started[@]}" 2>/dev/null; fi; rm -rf "$T"' EXIT
ok()  { pass=$((pass+1)); echo "ok   - $1"; }
bad() { fail=$((fail+1)); echo "FAIL - $1"; }
skip() { echo "skip - $1"; }
alive() { [ -e "/proc/$1" ] && ! grep -q '^[0-9]* (.*) Z' "/proc/$1/stat" 2>/dev/null; }
# An abx-dl pidfile with the start token the writer reads for the pid (pidguard token).
# wait_exec PID COMM: poll (with a deadline) until PID runs COMM — it has exec'd past setsid and
# setpriv, so its uids and its program are final — instead of sleeping for it.
wait_exec() { for _ in $(seq 1000); do [ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$2" ] && return 0; sleep 0.01; done; bad "pid $1 never ran $2"; return 1; }
record() { # FILE PID [TOKEN]
  local tok=${3:-$("$PG" token "$2")}
  printf '%s' "$2" > "$1"
  setfattr -n user.pidguard.token -v "$tok" "$1"
}
command -v setfattr >/dev/null || { echo "skip - setfattr (attr) is not installed"; echo "cli identity: 0 passed, 0 failed"; exit 0; }

# 30 live hooks, then `ulimit -n 10; pidguard cleanup`: every hook stopped or reported
# unverified, and no live hook without its pidfile.
mkdir "$T/emfile"
pids=()
for i in $(seq 30); do
  setsid sleep infinity </dev/null >/dev/null 2>&1 & p=$!; started+=("$p"); pids+=("$p")
done
for p in "${pids[@]}"; do wait_exec "$p" sleep; done
for i in $(seq 30); do record "$T/emfile/on_Snapshot__${i}_h.bg.pid" "${pids[$((i-1))]}"; done
(ulimit -n 10; "$PG" cleanup "$T/emfile" --json > "$T/emfile.json" 2>"$T/emfile.err"); st=$?
lost=0; running=0
for i in $(seq 30); do
  p=${pids[$((i-1))]}
  if alive "$p"; then running=$((running+1)); [ -e "$T/emfile/on_Snapshot__${i}_h.bg.pid" ] || lost=$((lost+1)); fi
done
[ "$lost" = 0 ] && ok "out of descriptors: no live hook lost its pidfile under ulimit -n 10 ($running still running, exit $st)" || bad "out of descriptors: $lost live hooks lost their pidfiles (exit $st): $(head -c 300 "$T/emfile.err")"
if [ "$running" = 0 ]; then
  [ "$st" = 0 ] && ok "out of descriptors: all 30 hooks stopped, exit 0" || bad "out of descriptors: all stopped but exit $st"
else
  [ "$st" = 5 ] && ok "out of descriptors: unverified hooks make the exit status 5" || bad "out of descriptors: $running left running, exit $st"
fi

# /proc mounted hidepid=2; a live process of uid 1000 with a matching record; the checker is
# uid 65534. Never "gone", nothing removed, nothing signalled.
if command -v setpriv >/dev/null && unshare --mount --propagation private true 2>/dev/null; then
  setpriv --reuid=1000 --regid=1000 --clear-groups setsid sleep infinity </dev/null >/dev/null 2>&1 & h=$!; started+=("$h")
  wait_exec "$h" sleep
  mkdir "$T/hidden"; record "$T/hidden/h.pid" "$h"; chown -R 65534:65534 "$T/hidden"
  unshare --mount --propagation private sh -c "
    mount -t proc -o hidepid=2 proc /proc || exit 99
    setpriv --reuid=65534 --regid=65534 --clear-groups test -e /proc/$h && exit 98
    setpriv --reuid=65534 --regid=65534 --clear-groups '$PG' status '$T/hidden/h.pid' --json > '$T/hidden/status.json'
    setpriv --reuid=65534 --regid=65534 --clear-groups '$PG' stop '$T/hidden/h.pid' --json > '$T/hidden/stop.json'
    echo \$? > '$T/hidden/stop.rc'
  "; st=$?
  if [ "$st" = 99 ] || [ "$st" = 98 ]; then
    skip "hidepid: cannot mount /proc with hidepid=2 here"
  else
    grep -q '"verdict":"gone"\|"reason":"gone"' "$T/hidden/status.json" && bad "hidepid: status says gone: $(cat "$T/hidden/status.json")" || ok "hidepid: status under hidepid is not gone ($(grep -o '"verdict":"[a-z]*"' "$T/hidden/status.json"))"
    [ "$(cat "$T/hidden/stop.rc")" != 1 ] && [ -e "$T/hidden/h.pid" ] && alive "$h" \
      && grep -q "\"status\":$(cat "$T/hidden/stop.rc")," "$T/hidden/stop.json" \
      && ok "hidepid: stop keeps the record and signals nothing (exit $(cat "$T/hidden/stop.rc"))" || bad "hidepid: stop: $(cat "$T/hidden/stop.json") rc $(cat "$T/hidden/stop.rc")"
  fi
else
  skip "hidepid: needs setpriv and a private mount namespace"
fi

# A process recorded inside `unshare --time --boottime 86400`, judged from the host: the same
# pidfs inode, other start ticks — the same process.
if unshare --time --boottime 86400 --fork true 2>/dev/null && command -v nsenter >/dev/null; then
  unshare --time --boottime 86400 --fork sh -c 'echo $$ > '"$T"'/timens.pid; exec sleep infinity' </dev/null >/dev/null 2>&1 & l=$!; started+=("$l")
  for _ in $(seq 50); do [ -s "$T/timens.pid" ] && break; sleep 0.1; done
  tp=$(cat "$T/timens.pid"); started+=("$tp")
  wait_exec "$tp" sleep
  inside=$(nsenter --time -t "$tp" "$PG" token "$tp")
  host=$("$PG" token "$tp")
  if [ "$(echo "$inside" | cut -d: -f6)" = - ]; then
    skip "time namespace: no pidfs inode on this kernel"
  elif [ "$(echo "$inside" | cut -d: -f5)" = "$(echo "$host" | cut -d: -f5)" ]; then
    bad "time namespace: the time namespace did not shift the start ticks ($inside / $host)"
  else
    mkdir -m 700 "$T/timens"
    printf '{"pid":%s,"start_token":"%s"}\n' "$tp" "$inside" > "$T/timens/g.json"; chmod 600 "$T/timens/g.json"
    "$PG" status "$T/timens/g.json" --json > "$T/timens/status.json"; st=$?
    grep -q '"verdict":"match"' "$T/timens/status.json" && [ "$st" = 0 ] \
      && ok "time namespace: recorded inside a time namespace, match from the host" || bad "time namespace: $(cat "$T/timens/status.json") exit $st"
    record "$T/timens/on_x.bg.pid" "$tp" "$inside"
    "$PG" status "$T/timens/on_x.bg.pid" --json | grep '"valid":true' >/dev/null && ok "time namespace: the abx-dl record is valid from the host" || bad "time namespace: abx-dl record not valid"
  fi
  kill -KILL "$tp" 2>/dev/null; wait "$tp" 2>/dev/null
else
  skip "time namespace: time namespaces (unshare --time) or nsenter are not available"
fi

# The kernel refuses the signal (EPERM) on a process another user's pidfile names: an error
# (exit 77), never "unkillable" after the whole schedule. Caller uid 65534; pidfile and process
# of uid 1000 (the owner rule restricts signals to uid 1000's processes, member by member).
if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
  mkdir -m 755 "$T/eperm"; chown 1000:1000 "$T/eperm"
  setpriv --reuid=1000 --regid=1000 --clear-groups setsid sleep infinity </dev/null >/dev/null 2>&1 & ep=$!; started+=("$ep")
  wait_exec "$ep" sleep
  setpriv --reuid=1000 --regid=1000 --clear-groups "$PG" write "$T/eperm/on_x.bg.pid" "$ep" >/dev/null 2>&1 \
    || record "$T/eperm/on_x.bg.pid" "$ep"
  chown 1000:1000 "$T/eperm/on_x.bg.pid" 2>/dev/null
  setpriv --reuid=65534 --regid=65534 --clear-groups "$PG" stop "$T/eperm/on_x.bg.pid" --retry TERM/1 --json > "$T/eperm/stop.json" 2>"$T/eperm/stop.err"; st=$?
  alive "$ep" && [ "$st" = 77 ] && grep -q '"outcome":"error"' "$T/eperm/stop.json" && [ -f "$T/eperm/on_x.bg.pid" ] \
    && ok "kernel EPERM: EPERM through the owner rule is an error (exit 77), the record kept" \
    || bad "kernel EPERM: exit $st $(cat "$T/eperm/stop.json" "$T/eperm/stop.err")"
  kill -KILL "$ep" 2>/dev/null; wait "$ep" 2>/dev/null
else
  skip "kernel EPERM: needs root and setpriv"
fi

echo "cli identity: $pass passed, $fail failed"
[ "$fail" = 0 ]
