#!/usr/bin/env bash
# What root does with files in a tree that a user (uid 65534) shares: locks the user cannot hold,
# names that cannot drive root's terminal, an index written whole on a full disk, one record per
# hook however many cleanups run, and no trust in a hard link. Run as root by
# scripts/test-cli.sh inside a private PID and mount namespace; every process started here is
# ended by pid, every file made under $T.
set -u
PG=${PIDGUARD:?set PIDGUARD to the pidguard binary}
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null || ! command -v python3 >/dev/null; then
  echo "skip - the shared-tree tests need root, setpriv and python3"
  echo "cli shared tree: 0 passed, 0 failed"
  exit 0
fi
T=$(mktemp -d /tmp/pidguard-cli-shared-XXXXXX)
chmod 755 "$T"
pass=0; fail=0; started=()
trap 'for p in "${started[@]}"; do kill -KILL "$p" 2>/dev/null; done; rm -rf "$T"' EXIT
ok()  { pass=$((pass+1)); echo "ok   - $1"; }
bad() { fail=$((fail+1)); echo "FAIL - $1"; }
alive() { [ -e "/proc/$1" ] && ! grep -q '^[0-9]* (.*) Z' "/proc/$1/stat" 2>/dev/null; }
as_user() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
dead_pid() { python3 -c 'import os
m = int(open("/proc/sys/kernel/pid_max").read())
print(next(p for p in range(m, 1, -1) if not os.path.exists(f"/proc/{p}")))'; }
stale() { printf '%s' "$(dead_pid)" > "$1"; touch -d @1000000000 "$1"; } # FILE: a token-less record of no process
# A record of root's live process $2 in $1: the pid, its token xattr and the mtime of its start.
root_pidfile() {
  python3 - "$1" "$2" "$("$PG" token "$2")" <<'PY'
import os, sys
path, pid, token = sys.argv[1:4]
ticks = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[19])
btime = next(int(l.split()[1]) for l in open("/proc/stat") if l.startswith("btime"))
ct = btime + ticks / os.sysconf("SC_CLK_TCK")
open(path, "w").write(pid)
os.setxattr(path, "user.pidguard.token", token.encode())
os.utime(path, (ct, ct))
PY
}
# Each line of the index is one whole JSON record; prints how many ArchiveResult lines each hook has.
index_counts() {
  python3 - "$1" <<'PY'
import json, sys, collections
data = open(sys.argv[1], "rb").read()
if data and not data.endswith(b"\n"):
    print("PARTIAL"); sys.exit(0)
c = collections.Counter()
for line in data.splitlines():
    r = json.loads(line)
    if r["type"] == "ArchiveResult":
        c[r["hook_name"]] += 1
print(" ".join(f"{k}={v}" for k, v in sorted(c.items())) or "EMPTY")
PY
}

# 1. A lock the user can take does not block root's guard records: the user holds flock on the
#    directory of root's stale record (it cannot open the record itself, mode 0600); root's stop
#    removes the record at once (it used to wait 10 s for the directory lock and leave it).
G=$T/guards; mkdir -m 755 "$G"
setsid sleep infinity </dev/null >/dev/null 2>&1 & p=$!
tok=$("$PG" token "$p"); kill -KILL "$p"; wait "$p" 2>/dev/null
( umask 077; printf '{"pid":%s,"start_token":"%s"}\n' "$p" "$tok" > "$G/daemon.json" )
as_user flock -x "$G" sleep infinity </dev/null >/dev/null 2>&1 & l=$!; started+=("$l")
for _ in $(seq 200); do flock -n "$G" true 2>/dev/null || break; sleep 0.05; done
if flock -n "$G" true 2>/dev/null; then bad "lock: the user's flock on the directory never showed"; else
  as_user flock -n "$G/daemon.json" true 2>/dev/null && bad "lock: the user could open root's record" || ok "lock: the user cannot open root's 0600 record to lock it"
  t0=$(date +%s%N); "$PG" stop "$G/daemon.json" > "$T/l1.txt" 2>&1; st=$?; ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  [ ! -e "$G/daemon.json" ] && [ "$ms" -lt 5000 ] && ok "lock: root's stop of its stale guard record is not blocked (exit $st, $ms ms)" \
    || bad "lock: exit $st after $ms ms, record $( [ -e "$G/daemon.json" ] && echo kept || echo removed): $(cat "$T/l1.txt")"
fi
kill -KILL "$l" 2>/dev/null; wait "$l" 2>/dev/null

# 2. Hook names are printed escaped: an escape sequence in a name does not reach root's terminal,
#    and a newline in a name does not forge a report line.
E=$T/esc; mkdir -p "$E/snap/plug"
n1=$'on_S__1\e]0;owned\a\e[2J.bg'
n2=$'on_S__2\n  pid 4242: exited after TERM (signals sent: TERM).bg'
stale "$E/snap/plug/$n1.pid"; stale "$E/snap/plug/$n2.pid"
chown -R 65534:65534 "$E/snap"
"$PG" cleanup "$E/snap" > "$T/e.txt" 2>&1; st=$?
! grep -q $'\e\|\a' "$T/e.txt" && ok "names: no escape sequence reaches the terminal (exit $st)" || bad "names: raw control bytes in: $(cat -v "$T/e.txt")"
! grep -q '^  pid 4242' "$T/e.txt" && grep -qF 'on_S__2\n  pid 4242' "$T/e.txt" \
  && ok "names: a newline in a name is shown as \\n, no forged line" || bad "names: $(cat -v "$T/e.txt")"
grep -qF 'on_S__1\x1b]0;owned\x07\x1b[2J.bg' "$T/e.txt" && ok "names: ESC and BEL shown as \\x1b, \\x07" || bad "names: $(cat -v "$T/e.txt")"

# 3. --json and the index keep names that are not UTF-8 apart (both used to read U+FFFD).
J=$T/bytes; mkdir -p "$J/snap/plug"
stale "$J/snap/plug/$(printf 'on_a\xff.bg.pid')"; stale "$J/snap/plug/$(printf 'on_a\xfe.bg.pid')"
"$PG" cleanup "$J/snap" --index "$J/index.jsonl" --json > "$T/j.json" 2>&1; st=$?
grep -qF '"name":"on_a\\xff.bg"' "$T/j.json" && grep -qF '"name":"on_a\\xfe.bg"' "$T/j.json" \
  && ok "bytes: --json names on_a\\xff.bg and on_a\\xfe.bg apart (exit $st)" || bad "bytes: $(cat "$T/j.json")"
[ "$(index_counts "$J/index.jsonl")" = 'on_a\xfe.bg=1 on_a\xff.bg=1' ] && ok "bytes: the index names them apart" || bad "bytes: index $(index_counts "$J/index.jsonl")"

# 4. A full disk: the index is written whole or not at all, and the hook's pidfile and logs stay
#    for the next cleanup (the index used to end in half a record, and the pidfile was gone).
#    On a tmpfs of 1 MiB in a private mount namespace.
N=$T/nospc; mkdir -p "$N"
unshare --mount --propagation private bash -s "$N" "$PG" > "$T/n.txt" 2>&1 <<'SH'
N=$1; PG=$2
mount -t tmpfs -o size=1m tmpfs "$N" || { echo "SKIP no tmpfs mount"; exit 0; }
mkdir -p "$N/snap/plug"; cd "$N/snap/plug"
printf 999999999 > on_S__1.bg.pid; touch -d @1000000000 on_S__1.bg.pid
head -c 300000 /dev/zero | tr '\0' 'o' > on_S__1.bg.stdout.log
head -c 300000 /dev/zero | tr '\0' 'e' > on_S__1.bg.stderr.log
"$PG" cleanup "$N/snap" --index "$N/index.jsonl" --json > /dev/null 2> "$N/../n-err1.txt"; echo "STATUS1 $?"
data=$(wc -c < "$N/index.jsonl"); echo "SIZE1 $data"
[ "$data" = 0 ] || tail -c1 "$N/index.jsonl" | od -An -c | grep -q '\\n' && echo "WHOLE1" || echo "PARTIAL1"
[ -f on_S__1.bg.pid ] && echo "PIDFILE1 kept" || echo "PIDFILE1 gone"
[ -f on_S__1.bg.stdout.log ] && [ -f on_S__1.bg.stderr.log ] && echo "LOGS1 kept" || echo "LOGS1 gone"
mount -o remount,size=8m tmpfs "$N"
"$PG" cleanup "$N/snap" --index "$N/index.jsonl" --json > /dev/null 2>&1; echo "STATUS2 $?"
python3 -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; print("RECORDS2", len(r), len(r[0]["stdout"]) if r else 0)' "$N/index.jsonl"
[ -f on_S__1.bg.pid ] && echo "PIDFILE2 kept" || echo "PIDFILE2 gone"
SH
if grep -q SKIP "$T/n.txt"; then echo "skip - ENOSPC: $(cat "$T/n.txt")"; else
  grep -q WHOLE1 "$T/n.txt" && grep -q 'PIDFILE1 kept' "$T/n.txt" && grep -q 'LOGS1 kept' "$T/n.txt" \
    && ok "ENOSPC: no partial record, pidfile and logs kept ($(grep -E 'STATUS1|SIZE1' "$T/n.txt" | tr '\n' ' '))" || bad "ENOSPC: $(cat "$T/n.txt")"
  grep -q 'RECORDS2 2 300000' "$T/n.txt" && grep -q 'PIDFILE2 gone' "$T/n.txt" \
    && ok "ENOSPC: the next cleanup, with room, finalizes the hook once, logs whole" || bad "ENOSPC retry: $(cat "$T/n.txt")"
fi

# 4b. The same with three hooks whose records are appended together (one write for the hooks a
#     cleanup finishes during its walk): each hook is either indexed once with its pidfile and
#     logs gone, or not indexed with its pidfile and logs kept; never half a record. With logs of
#     160 kB no record fits; with logs of 100 kB the three records do not fit at once, but one
#     by one they do (each hook's logs are deleted once its records are in): every hook is
#     indexed, as it was when hooks were appended one at a time. The next cleanup, with room,
#     indexes every hook left, once.
for size in 160000 100000; do
M=$T/nospc3-$size; mkdir -p "$M"
unshare --mount --propagation private bash -s "$M" "$PG" "$size" > "$T/m.txt" 2>&1 <<'SH'
N=$1; PG=$2; SIZE=$3
mount -t tmpfs -o size=1m tmpfs "$N" || { echo "SKIP no tmpfs mount"; exit 0; }
for i in 1 2 3; do
  mkdir -p "$N/snap/p$i"; cd "$N/snap/p$i"
  printf 99999999$i > on_S__$i.bg.pid; touch -d @1000000000 on_S__$i.bg.pid
  head -c "$SIZE" /dev/zero | tr '\0' 'o' > on_S__$i.bg.stdout.log
  head -c "$SIZE" /dev/zero | tr '\0' 'e' > on_S__$i.bg.stderr.log
done
check() { # each hook: indexed once with its files gone, or not indexed with its files kept
  python3 - "$N" "$1" <<'PY'
import json, os, sys
n, tag = sys.argv[1], sys.argv[2]
data = open(f"{n}/index.jsonl", "rb").read()
print(f"WHOLE{tag}" if not data or data.endswith(b"\n") else f"PARTIAL{tag}")
recs = [json.loads(l) for l in data.decode().splitlines()]
names = [r["hook_name"] for r in recs if r["type"] == "ArchiveResult"]
ok = True
for i in (1, 2, 3):
    d, h = f"{n}/snap/p{i}", f"on_S__{i}.bg"
    kept = [os.path.exists(f"{d}/{h}{x}") for x in (".pid", ".stdout.log", ".stderr.log")]
    ok &= (names.count(h) == 1 and not any(kept)) or (names.count(h) == 0 and all(kept))
print(f"CONSISTENT{tag}" if ok else f"INCONSISTENT{tag} {names}")
print(f"INDEXED{tag} {len(names)}")
PY
}
"$PG" cleanup "$N/snap" --index "$N/index.jsonl" --json > /dev/null 2>&1; echo "STATUS1 $?"
check 1
mount -o remount,size=8m tmpfs "$N"
"$PG" cleanup "$N/snap" --index "$N/index.jsonl" --json > /dev/null 2>&1; echo "STATUS2 $?"
check 2
SH
want=$([ "$size" = 160000 ] && echo 0 || echo 3)
if grep -q SKIP "$T/m.txt"; then echo "skip - ENOSPC, three hooks: $(cat "$T/m.txt")"; else
  grep -q WHOLE1 "$T/m.txt" && grep -q CONSISTENT1 "$T/m.txt" && grep -q "INDEXED1 $want" "$T/m.txt" \
    && ok "ENOSPC, three hooks, logs of $size bytes: no partial record, $want of 3 indexed, the others kept whole ($(grep -E 'STATUS1' "$T/m.txt"))" || bad "ENOSPC, three hooks, logs of $size bytes: $(cat "$T/m.txt")"
  grep -q WHOLE2 "$T/m.txt" && grep -q CONSISTENT2 "$T/m.txt" && grep -q 'INDEXED2 3' "$T/m.txt" \
    && ok "ENOSPC, three hooks, logs of $size bytes: the next cleanup, with room, indexes each hook once" || bad "ENOSPC, three hooks, logs of $size bytes, retry: $(cat "$T/m.txt")"
fi
done

# 5. Four cleanups of one tree at once index each hook once (each wrote every hook up to 4 times).
#    Up to three rounds: a round in which one cleanup finished before the next started proves
#    nothing, but any round with a duplicate fails.
C=$T/conc; dup=""; overlapped=0
for round in 1 2 3; do
  rm -rf "$C"; mkdir -p "$C/snap"
  for i in $(seq 1 300); do
    mkdir -p "$C/snap/p$i"; stale "$C/snap/p$i/on_S__$i.bg.pid"; echo "OUT-$i" > "$C/snap/p$i/on_S__$i.bg.stdout.log"
  done
  pids=()
  for k in 1 2 3 4; do "$PG" cleanup "$C/snap" --index "$C/index.jsonl" --json > "$C/c$k.json" 2>&1 & pids+=($!); done
  for q in "${pids[@]}"; do wait "$q"; done
  counts=$(index_counts "$C/index.jsonl")
  echo "$counts" | tr ' ' '\n' | grep -qv '=1$' && { dup="round $round: $(echo "$counts" | tr ' ' '\n' | grep -v '=1$' | head -3 | tr '\n' ' ')"; break; }
  [ "$(echo "$counts" | wc -w)" = 300 ] || { dup="round $round: $(echo "$counts" | wc -w) hooks indexed, not 300"; break; }
  grep -q 'not retired by this cleanup' "$C"/c*.json && overlapped=$((overlapped+1))
done
[ -z "$dup" ] && ok "concurrent: four cleanups indexed each of 300 hooks once ($overlapped of 3 rounds overlapped)" || bad "concurrent: $dup"

# 6. Hard links (made by root, as a user can where fs.protected_hardlinks=0) are refused: root's
#    pidfile linked into the user's tree aims at nothing, a root-only file linked as a log or as
#    the index is neither copied nor appended to.
H=$T/links; mkdir -p "$H/root" "$H/snap/plug"; chmod 700 "$H/root"
setsid sleep infinity </dev/null >/dev/null 2>&1 & v=$!; started+=("$v")
for _ in $(seq 100); do [ -e "/proc/$v/stat" ] && break; sleep 0.02; done
root_pidfile "$H/root/daemon.pid" "$v"
ln "$H/root/daemon.pid" "$H/snap/plug/on_S__1.bg.pid"
printf 'ROOT-ONLY-SECRET' > "$H/root/secret"; chmod 600 "$H/root/secret"
stale "$H/snap/plug/on_S__2.bg.pid"; ln "$H/root/secret" "$H/snap/plug/on_S__2.bg.stdout.log"
printf 'ROOT-ONLY-COMMAND --secret\n' > "$H/root/cmd.sh"; chmod 600 "$H/root/cmd.sh"
stale "$H/snap/plug/on_S__4.bg.pid"; ln "$H/root/cmd.sh" "$H/snap/plug/on_S__4.bg.sh"
chown 65534:65534 "$H/snap" "$H/snap/plug"
"$PG" cleanup "$H/snap" --index "$H/index.jsonl" --json > "$T/h.json" 2>&1; st=$?
alive "$v" && ok "links: root's process named by a linked root pidfile lives (exit $st)" || bad "links: root's process was killed: $(cat "$T/h.json")"
grep -q 'untrusted-pidfile' "$T/h.json" && grep -q 'links' "$T/h.json" && ok "links: refused (untrusted-pidfile), the report says why" || bad "links: $(cat "$T/h.json")"
! grep -q 'ROOT-ONLY-SECRET' "$H/index.jsonl" "$T/h.json" 2>/dev/null && ok "links: a linked root-only log is not copied into the index" || bad "links: the secret reached the index"
! grep -q 'ROOT-ONLY-COMMAND' "$H/index.jsonl" "$T/h.json" 2>/dev/null && ok "links: a linked root-only .sh is not copied into the index" || bad "links: the .sh reached the index"
"$PG" stop "$H/snap/plug/on_S__1.bg.pid" > "$T/h2.txt" 2>&1; st=$?
alive "$v" && [ "$st" = 3 ] && ok "links: stop refuses a linked pidfile too (exit 3)" || bad "links stop: exit $st $(cat "$T/h2.txt")"
: > "$H/root/index.jsonl"; ln "$H/root/index.jsonl" "$H/snap/index.jsonl"; stale "$H/snap/plug/on_S__3.bg.pid"
"$PG" cleanup "$H/snap" --index "$H/snap/index.jsonl" > "$T/h3.txt" 2>&1; st=$?
[ ! -s "$H/root/index.jsonl" ] && [ "$st" != 0 ] && grep -q 'links' "$T/h3.txt" && ok "links: a linked index is refused (exit $st)" || bad "links index: exit $st $(cat "$T/h3.txt"), root's file: $(wc -c < "$H/root/index.jsonl")"
kill -KILL "$v" 2>/dev/null

echo "cli shared tree: $pass passed, $fail failed"
[ "$fail" = 0 ]
