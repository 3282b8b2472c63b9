#!/usr/bin/env bash
# Adversarial tests of the `pidguard` command: planted files at the pidfile
# path, protected targets, and a directory of 1,000 stale records. Run by scripts/test-cli.sh
# inside a private PID namespace where allowed. Every process started here is ended by pid.
set -u
PG=${PIDGUARD:?set PIDGUARD to the pidguard binary}
T=$(mktemp -d /tmp/pidguard-cli-attack-XXXXXX)
pass=0; fail=0; started=()
# Reaped after the kill, so that bash does not report each one as "Killed" (noise, not failure).
trap 'for p in "${started[@]}"; do kill -KILL "$p" 2>/dev/null; done; if [ ${#started[@]} -gt 0 ]; then wait "${started[@]}" 2>/dev/null; fi; rm -rf "$T"' EXIT
ok()  { pass=$((pass+1)); echo "ok   - $1"; }
bad() { fail=$((fail+1)); echo "FAIL - $1"; }
spawn_group() { setsid "$@" </dev/null >/dev/null 2>&1 & local p=$!; started+=("$p"); echo "$p"; }
alive() { [ -e "/proc/$1" ] && ! grep -q '^[0-9]* (.*) Z' "/proc/$1/stat" 2>/dev/null; }

# A FIFO, a symlink, a directory, a hard link at the pidfile path. No reader blocks (a FIFO
# without a writer blocks a plain open), nothing is followed, the link target is untouched.
mkdir "$T/f2"; cd "$T/f2" || exit 1
printf secret > victim
mkfifo on_fifo.bg.pid; ln -s victim on_sym.bg.pid; mkdir on_dir.bg.pid; ln victim on_hard.bg.pid
for f in on_fifo.bg.pid on_sym.bg.pid on_dir.bg.pid on_hard.bg.pid; do
  for c in status stop; do
    timeout 20 "$PG" $c "$f" >/dev/null 2>&1; st=$?
    [ $st != 124 ] && ok "planted file: $c $f returns (exit $st)" || bad "planted file: $c $f hung"
    [ $st = 0 ] && bad "planted file: $c $f claims success"
  done
done
timeout 20 "$PG" cleanup . >/dev/null 2>&1; [ $? != 124 ] && ok "planted file: cleanup of planted files returns" || bad "planted file: cleanup hung"
[ "$(cat victim)" = secret ] && ok "planted file: the link target is untouched" || bad "planted file: victim changed: $(cat victim)"
[ -p on_fifo.bg.pid ] && [ -L on_sym.bg.pid ] && [ -d on_dir.bg.pid ] && ok "planted file: planted FIFO, symlink and directory left alone" || bad "planted file: a planted file was removed"
cd "$T" || exit 1

# A token-less record naming the caller itself or its parent, with a fresh mtime, as
# the only evidence: refused, nothing signalled. The pids are forced with ns_last_pid (only in
# a private PID namespace, where pidguard runs as a child of this shell).
if [ "$$" = 1 ] && [ -w /proc/sys/kernel/ns_last_pid ]; then
  printf 900 > "$T/own.pid"
  echo 899 > /proc/sys/kernel/ns_last_pid
  "$PG" stop "$T/own.pid" --json > "$T/own.json" 2>&1; st=$?
  grep -q '"outcome":"refused"' "$T/own.json" && [ $st = 3 ] && ok "own pid: a record naming the caller itself is refused" || bad "own pid: $st $(cat "$T/own.json")"
  printf 950 > "$T/parent.pid"
  echo 949 > /proc/sys/kernel/ns_last_pid
  out=$(bash -c "\"$PG\" stop \"$T/parent.pid\" --json; echo survived=\$?")
  case "$out" in *'"refusal":"parent"'*'"status":3'*survived=3*) ok "parent: a token-less record naming the caller's parent is refused";; *) bad "parent: $out";; esac
else
  echo "skip - records naming the caller and its parent (no private PID namespace)"
fi

# At scale: 1,000 stale token-less records (mtime in 2001), one naming a live bystander
# group leader. Fast, no signal, the bystander survives and is listed as an unverified leftover.
b=$(spawn_group sleep infinity)
mkdir "$T/stale"
for i in $(seq 1000); do
  if [ "$i" = 500 ]; then pid=$b; else pid=$(( 3000000 + i )); fi
  printf '%s' "$pid" > "$T/stale/on_S__$i.bg.pid"
done
touch -d @1000000000 "$T"/stale/*.pid
t0=$(date +%s)
"$PG" cleanup "$T/stale" --json > "$T/stale.json"; st=$?
dt=$(( $(date +%s) - t0 ))
[ $st = 0 ] && ok "cleanup of 1,000 stale records (exit 0, ${dt}s)" || bad "cleanup of 1,000 stale records: exit $st"
[ "$dt" -lt 60 ] && ok "1,000 stale records took under 60 s" || bad "1,000 stale records took ${dt}s"
grep -q '"signals":\["' "$T/stale.json" && bad "a stale record was signalled" || ok "no signal for any stale record"
[ -z "$(ls "$T/stale"/*.pid 2>/dev/null)" ] && ok "every stale record removed" || bad "stale records left: $(ls "$T/stale" | head -3)"
alive "$b" && ok "stale records: the bystander at a stale pid survived" || bad "stale records: the bystander was killed"
grep -q "\"unverified_leftovers\":\[$b\]" "$T/stale.json" && ok "the bystander is listed as an unverified leftover" || bad "leftover not listed"

# Out of descriptors (hard and soft RLIMIT_NOFILE 6), a log that
# could not be opened is not an empty log: no index records, records and logs kept, exit 5;
# the next cleanup with descriptors finalizes each hook once, with its logs.
NOFD=$T/nofd
for i in 1 2 3 4 5; do d=$NOFD/snap/p$i; mkdir -p "$d"; printf 3000%03d "$i" > "$d/on_S__$i.bg.pid"; echo "OUT-$i" > "$d/on_S__$i.bg.stdout.log"; echo "ERR-$i" > "$d/on_S__$i.bg.stderr.log"; done
(ulimit -n 6; "$PG" cleanup "$NOFD/snap" --index "$NOFD/index.jsonl" --json > "$NOFD/o.json" 2>&1); st=$?
[ "$st" = 5 ] && [ ! -s "$NOFD/index.jsonl" ] && [ "$(ls "$NOFD"/snap/*/*.pid "$NOFD"/snap/*/*.log | wc -l)" = 15 ] \
  && ok "no descriptors: out of descriptors: exit 5, no index records, records and logs kept" \
  || bad "no descriptors: exit $st, index: $(cat "$NOFD/index.jsonl" 2>&1 | head -c 300), left: $(ls "$NOFD"/snap/*/ | tr '\n' ' ')"
"$PG" cleanup "$NOFD/snap" --index "$NOFD/index.jsonl" > /dev/null 2>&1; st=$?
[ "$st" = 0 ] && [ "$(wc -l < "$NOFD/index.jsonl")" = 10 ] && [ "$(grep -c '"stdout":"OUT-' "$NOFD/index.jsonl")" = 5 ] \
  && ok "no descriptors: the next cleanup finalizes each hook once, with its logs" || bad "no descriptors, second run: exit $st, $(head -c 400 "$NOFD/index.jsonl")"

# A log a user planted (mode 0666, uid 65534) in a sticky world-writable directory: root's
# `run` replaces it with a log of its own and the user's file gets none of the output.
if [ "$(id -u)" = 0 ]; then
  PL=$T/planted; mkdir -p "$PL/shared" "$PL/rec"; chmod 1777 "$PL/shared"
  : > "$PL/shared/job.stdout.log"; chmod 666 "$PL/shared/job.stdout.log"; chown 65534:65534 "$PL/shared/job.stdout.log"
  exec 7<"$PL/shared/job.stdout.log"   # the user's own descriptor on the file they planted
  "$PG" run --scope group --stdout "$PL/shared/job.stdout.log" --stderr "$PL/shared/job.stderr.log" "$PL/rec/job.pid" -- sh -c 'echo root-secret' >/dev/null 2>&1; st=$?
  for i in $(seq 200); do [ "$(cat "$PL/shared/job.stdout.log" 2>/dev/null)" = root-secret ] && break; sleep 0.05; done
  seen=$(cat <&7); exec 7<&-
  [ "$st" = 0 ] && [ -z "$seen" ] && [ "$(stat -c %u "$PL/shared/job.stdout.log")" = 0 ] && [ "$(cat "$PL/shared/job.stdout.log")" = root-secret ] \
    && ok "planted log: root's run replaces a user's log; the user's file gets none of the output" \
    || bad "planted log: exit $st, the user's file read '$seen', the log is uid $(stat -c %u "$PL/shared/job.stdout.log")"
else
  echo "skip - planted log (needs root)"
fi

echo "cli attack: $pass passed, $fail failed"
[ "$fail" = 0 ]
