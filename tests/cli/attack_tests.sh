#!/usr/bin/env bash
# Adversarial tests of the `pidguard` command (the attack pass): planted files at the pidfile
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

# F2: a FIFO, a symlink, a directory, a hard link at the pidfile path. No reader blocks (a FIFO
# without a writer blocks a plain open), nothing is followed, the link target is untouched.
mkdir "$T/f2"; cd "$T/f2" || exit 1
printf secret > victim
mkfifo on_fifo.bg.pid; ln -s victim on_sym.bg.pid; mkdir on_dir.bg.pid; ln victim on_hard.bg.pid
for f in on_fifo.bg.pid on_sym.bg.pid on_dir.bg.pid on_hard.bg.pid; do
  for c in status stop; do
    timeout 20 "$PG" $c "$f" >/dev/null 2>&1; st=$?
    [ $st != 124 ] && ok "F2: $c $f returns (exit $st)" || bad "F2: $c $f hung"
    [ $st = 0 ] && bad "F2: $c $f claims success"
  done
done
timeout 20 "$PG" cleanup . >/dev/null 2>&1; [ $? != 124 ] && ok "F2: cleanup of planted files returns" || bad "F2: cleanup hung"
[ "$(cat victim)" = secret ] && ok "F2: the link target is untouched" || bad "F2: victim changed: $(cat victim)"
[ -p on_fifo.bg.pid ] && [ -L on_sym.bg.pid ] && [ -d on_dir.bg.pid ] && ok "F2: planted FIFO, symlink and directory left alone" || bad "F2: a planted file was removed"
cd "$T" || exit 1

# A5 / H2: a token-less record naming the caller itself or its parent, with a fresh mtime, as
# the only evidence: refused, nothing signalled. The pids are forced with ns_last_pid (only in
# a private PID namespace, where pidguard runs as a child of this shell).
if [ "$$" = 1 ] && [ -w /proc/sys/kernel/ns_last_pid ]; then
  printf 900 > "$T/own.pid"
  echo 899 > /proc/sys/kernel/ns_last_pid
  "$PG" stop "$T/own.pid" --json > "$T/own.json" 2>&1; st=$?
  grep -q '"outcome":"refused"' "$T/own.json" && [ $st = 3 ] && ok "A5: a record naming the caller itself is refused" || bad "A5: own pid: $st $(cat "$T/own.json")"
  printf 950 > "$T/parent.pid"
  echo 949 > /proc/sys/kernel/ns_last_pid
  out=$(bash -c "\"$PG\" stop \"$T/parent.pid\" --json; echo survived=\$?")
  case "$out" in *'"refusal":"parent"'*'"status":3'*survived=3*) ok "H2: a token-less record naming the caller's parent is refused";; *) bad "H2: $out";; esac
else
  echo "skip - A5/H2 forced pids (no private PID namespace)"
fi

# A1 at scale: 1,000 stale token-less records (mtime in 2001), one naming a live bystander
# group leader. Fast, no signal, the bystander survives and is listed as an unverified leftover.
b=$(spawn_group sleep 300)
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
alive "$b" && ok "A1: the bystander at a stale pid survived" || bad "A1: the bystander was killed"
grep -q "\"unverified_leftovers\":\[$b\]" "$T/stale.json" && ok "the bystander is listed as an unverified leftover" || bad "leftover not listed"

# F6 (attack pass 2026-11-30): out of descriptors (hard and soft RLIMIT_NOFILE 6), a log that
# could not be opened is not an empty log: no index records, records and logs kept, exit 5;
# the next cleanup with descriptors finalizes each hook once, with its logs.
F6=$T/f6
for i in 1 2 3 4 5; do d=$F6/snap/p$i; mkdir -p "$d"; printf 3000%03d "$i" > "$d/on_S__$i.bg.pid"; echo "OUT-$i" > "$d/on_S__$i.bg.stdout.log"; echo "ERR-$i" > "$d/on_S__$i.bg.stderr.log"; done
(ulimit -n 6; "$PG" cleanup "$F6/snap" --index "$F6/index.jsonl" --json > "$F6/o.json" 2>&1); st=$?
[ "$st" = 5 ] && [ ! -s "$F6/index.jsonl" ] && [ "$(ls "$F6"/snap/*/*.pid "$F6"/snap/*/*.log | wc -l)" = 15 ] \
  && ok "F6: out of descriptors: exit 5, no index records, records and logs kept" \
  || bad "F6: exit $st, index: $(cat "$F6/index.jsonl" 2>&1 | head -c 300), left: $(ls "$F6"/snap/*/ | tr '\n' ' ')"
"$PG" cleanup "$F6/snap" --index "$F6/index.jsonl" > /dev/null 2>&1; st=$?
[ "$st" = 0 ] && [ "$(wc -l < "$F6/index.jsonl")" = 10 ] && [ "$(grep -c '"stdout":"OUT-' "$F6/index.jsonl")" = 5 ] \
  && ok "F6: the next cleanup finalizes each hook once, with its logs" || bad "F6 second run: exit $st, $(head -c 400 "$F6/index.jsonl")"

echo "cli attack: $pass passed, $fail failed"
[ "$fail" = 0 ]
