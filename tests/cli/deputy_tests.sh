#!/usr/bin/env bash
# Root is never a confused deputy: files an unprivileged user planted in a tree root cleans
# neither aim signals at root's processes nor steer root's reads and writes. Run as root by
# scripts/test-cli.sh inside a private PID namespace; the user is uid 65534 (setpriv). Every
# process started here is ended by pid.
set -u
PG=${PIDGUARD:?set PIDGUARD to the pidguard binary}
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
  echo "skip - the confused-deputy tests need root and setpriv"
  echo "cli deputy: 0 passed, 0 failed"
  exit 0
fi
T=$(mktemp -d /tmp/pidguard-cli-deputy-XXXXXX)
chmod 755 "$T"
pass=0; fail=0; started=()
# Reaped after the kill, so that bash does not report each one as "Killed" (noise, not failure).
trap 'for p in "${started[@]}"; do kill -KILL "$p" 2>/dev/null; done; if [ ${#started[@]} -gt 0 ]; then wait "${started[@]}" 2>/dev/null; fi; rm -rf "$T"' EXIT
ok()  { pass=$((pass+1)); echo "ok   - $1"; }
bad() { fail=$((fail+1)); echo "FAIL - $1"; }
alive() { [ -e "/proc/$1" ] && ! grep -q '^[0-9]* (.*) Z' "/proc/$1/stat" 2>/dev/null; }
# wait_exec PID COMM: poll (with a deadline) until PID runs COMM — it has exec'd past setsid and
# setpriv, so its uids and its program are final — instead of sleeping for it.
wait_exec() { for _ in $(seq 1000); do [ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$2" ] && return 0; sleep 0.01; done; bad "pid $1 never ran $2"; return 1; }
# wait_term_handled PID: poll until PID catches or ignores SIGTERM (SigCgt/SigIgn): its trap is set.
wait_term_handled() { local v; for _ in $(seq 1000); do for v in $(awk '/^Sig(Ign|Cgt):/ {print $2}' "/proc/$1/status" 2>/dev/null); do (( 0x$v & 0x4000 )) && return 0; done; sleep 0.01; done; bad "pid $1 never set its TERM trap"; return 1; }
as_user() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
# psutil's create time of pid $1: btime + start ticks / CLK_TCK.
create_time() {
  local rest ticks btime
  rest=$(sed 's/.*) //' "/proc/$1/stat"); ticks=$(echo "$rest" | awk '{print $20}')
  btime=$(awk '/^btime/ {print $2}' /proc/stat)
  python3 -c "print($btime + $ticks / $(getconf CLK_TCK))"
}
# A pidfile written by the user: the pid, the mtime of its create time and the token the user
# computed with `pidguard token` (every part of it is readable without privilege).
user_pidfile() { # FILE PID
  as_user "$PG" token "$2" > "$T/tok" || { bad "the user could not compute the token of $2"; return 1; }
  as_user /usr/bin/python3 - "$1" "$2" "$(cat "$T/tok")" "$(create_time "$2")" <<'EOF'
import os, sys
path, pid, token, ct = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
with open(path, "w") as f:
    f.write(pid)
os.setxattr(path, "user.pidguard.token", token.encode())
os.utime(path, (ct, ct))
EOF
}

user_dir=$T/snap; mkdir -p "$user_dir/plug"; chown -R 65534:65534 "$user_dir"

# Case 1: a forged token makes root kill root's process — must not.
setsid sleep infinity </dev/null >/dev/null 2>&1 & v=$!; started+=("$v")
wait_exec "$v" sleep
user_pidfile "$user_dir/plug/on_Snapshot__10_x.bg.pid" "$v"
"$PG" cleanup "$user_dir" --json > "$T/c1.json" 2>&1; st=$?
alive "$v" && ok "case 1: root's process lives" || bad "case 1: root's process was killed"
[ -f "$user_dir/plug/on_Snapshot__10_x.bg.pid" ] && ok "case 1: the user's record stays" || bad "case 1: record removed"
grep -q '"outcome":"refused"' "$T/c1.json" && grep -q 'untrusted-pidfile' "$T/c1.json" \
  && ok "case 1: refused (untrusted-pidfile), exit $st" || bad "case 1: $(cat "$T/c1.json")"
grep -q 'owned by uid 65534, target uid 0' "$T/c1.json" && ok "case 1: the JSON says both uids" || bad "case 1: no uids in $(cat "$T/c1.json")"
"$PG" stop "$user_dir/plug/on_Snapshot__10_x.bg.pid" > "$T/s1.txt" 2>&1; st=$?
alive "$v" && [ "$st" = 3 ] && grep -q 'owned by uid 65534, target uid 0' "$T/s1.txt" \
  && ok "case 1: stop refuses too (exit 3) and says why" || bad "case 1 stop: exit $st $(cat "$T/s1.txt")"
# The same through a guard record the user wrote (JSON format, mode 0600, owned by the user).
tok=$(as_user "$PG" token "$v")
as_user sh -c "umask 077; printf '{\"pid\":%s,\"start_token\":\"%s\"}\n' $v '$tok' > '$user_dir/plug/guard.json'"
"$PG" stop "$user_dir/plug/guard.json" > "$T/g1.txt" 2>&1; st=$?
alive "$v" && [ "$st" = 3 ] && grep -q "owned by uid 65534, target uid 0" "$T/g1.txt" && ok "case 1: a forged guard record is refused (exit 3) and says why" || bad "case 1 guard: exit $st $(cat "$T/g1.txt")"
kill -KILL "$v" 2>/dev/null; wait "$v" 2>/dev/null

# The user's own process, named by the user's own pidfile, is still stopped by root's cleanup.
setpriv --reuid=65534 --regid=65534 --clear-groups setsid sleep infinity </dev/null >/dev/null 2>&1 & u=$!; started+=("$u")
wait_exec "$u" sleep
rm -f "$user_dir/plug"/*
user_pidfile "$user_dir/plug/on_Snapshot__11_own.bg.pid" "$u"
"$PG" cleanup "$user_dir" --json > "$T/own.json" 2>&1; st=$?
! alive "$u" && grep -q '"outcome":"exited"' "$T/own.json" \
  && ok "the user's own process is stopped by root's cleanup (exit $st)" || bad "own process: $(cat "$T/own.json")"

# Case 2: the logs of a stale record are symlinks to a root-only file: not copied into the index.
rm -rf "$user_dir/plug"; mkdir "$user_dir/plug"
printf 'ROOT-ONLY-SECRET' > "$T/root-secret"; chmod 600 "$T/root-secret"
printf 3000001 > "$user_dir/plug/on_Snapshot__12_s.bg.pid"
ln -s "$T/root-secret" "$user_dir/plug/on_Snapshot__12_s.bg.stdout.log"
ln -s "$T/root-secret" "$user_dir/plug/on_Snapshot__12_s.bg.stderr.log"
chown -hR 65534:65534 "$user_dir/plug"
"$PG" cleanup "$user_dir" --index "$user_dir/index.jsonl" --json > "$T/c2.json" 2>&1; st=$?
[ -f "$user_dir/index.jsonl" ] && ! grep -q 'ROOT-ONLY-SECRET' "$user_dir/index.jsonl" \
  && ok "case 2: the index holds no byte of the root file" || bad "case 2: $(cat "$user_dir/index.jsonl" 2>&1)"
grep -q 'symbolic link' "$T/c2.json" && ok "case 2: the report says the logs were not read" || bad "case 2 report: $(cat "$T/c2.json")"
[ "$(cat "$T/root-secret")" = ROOT-ONLY-SECRET ] && ok "case 2: the root file is unchanged" || bad "case 2: root file changed"

# Case 3: the index is a symlink to a root-only file: an error before any hook is touched.
rm -rf "$user_dir/plug" "$user_dir/index.jsonl"; mkdir "$user_dir/plug"
printf 3000002 > "$user_dir/plug/on_Snapshot__13_s.bg.pid"
ln -s "$T/root-secret" "$user_dir/index.jsonl"
"$PG" cleanup "$user_dir" --index "$user_dir/index.jsonl" > "$T/c3.txt" 2>&1; st=$?
[ "$st" != 0 ] && [ "$(cat "$T/root-secret")" = ROOT-ONLY-SECRET ] \
  && ok "case 3: refused (exit $st), the root file is unchanged" || bad "case 3: exit $st, root file: $(cat "$T/root-secret")"
[ -f "$user_dir/plug/on_Snapshot__13_s.bg.pid" ] && ok "case 3: no hook was touched" || bad "case 3: the stale record was removed"

# Case 4: FIFOs planted as a stale hook's log and .sh: the cleanup ends promptly and reports them.
rm -rf "$user_dir/plug" "$user_dir/index.jsonl"; mkdir "$user_dir/plug"
printf 3000003 > "$user_dir/plug/on_Snapshot__14_s.bg.pid"
mkfifo "$user_dir/plug/on_Snapshot__14_s.bg.stdout.log" "$user_dir/plug/on_Snapshot__14_s.bg.sh"
timeout 20 "$PG" cleanup "$user_dir" --index "$T/index4.jsonl" --json > "$T/c4.json" 2>&1; st=$?
[ "$st" != 124 ] && ok "case 4: the cleanup ends (exit $st)" || bad "case 4: the cleanup hung"
grep -q 'not a regular file' "$T/c4.json" && ok "case 4: the planted FIFO is reported" || bad "case 4 report: $(cat "$T/c4.json")"

# `pidguard run` into a directory the user writes: a symlink or a FIFO planted at a log's name is
# neither followed (root's file untouched) nor waited on.
rm -rf "$user_dir/plug"; mkdir "$user_dir/plug"; chown 65534:65534 "$user_dir/plug"
printf 'ROOT-ONLY-SECRET' > "$T/root-secret"; chmod 600 "$T/root-secret"
as_user ln -s "$T/root-secret" "$user_dir/plug/on_a.stdout.log"
timeout 20 "$PG" run "$user_dir/plug/on_a.pid" -- echo hello > "$T/run1.txt" 2>&1; st=$?
[ "$st" != 0 ] && [ "$st" != 124 ] && [ "$(cat "$T/root-secret")" = ROOT-ONLY-SECRET ] && [ ! -e "$user_dir/plug/on_a.pid" ] \
  && ok "run: a symlink at the log path is refused (exit $st), the root file untouched" || bad "run symlink: exit $st, root file: $(cat "$T/root-secret")"
as_user mkfifo "$user_dir/plug/on_b.stderr.log"
timeout 20 "$PG" run "$user_dir/plug/on_b.pid" -- echo hello > "$T/run2.txt" 2>&1; st=$?
[ "$st" != 124 ] && [ "$st" != 0 ] && ok "run: a FIFO at the log path is refused at once (exit $st)" || bad "run FIFO: exit $st"

# A directory of the user's tree swapped for a symlink to root's private tree while root's
# cleanup runs (renameat2 RENAME_EXCHANGE in a loop, as the user): nothing beneath a symlink is
# ever opened, so root's own hook there is never judged, signalled or finalized.
if [ -x /usr/bin/python3 ]; then
  rm -rf "$T/swap"; mkdir -p "$T/swap/root/plug" "$T/swap/user"; chmod 700 "$T/swap/root"; chown 65534:65534 "$T/swap/user"
  "$PG" run "$T/swap/root/plug/on_victim.bg.pid" -- sleep infinity >/dev/null; victim=$(cat "$T/swap/root/plug/on_victim.bg.pid"); started+=("$victim")
  as_user bash -c "cd '$T/swap/user'; for i in \$(seq -w 1 40); do mkdir a\$i; echo 30000 > a\$i/on_s\$i.bg.pid; done; mkdir zz; ln -s '$T/swap/root/plug' zz_alt; touch zz/on_victim.bg.pid"
  cat > "$T/flip.py" <<'PYEOF'
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
a, b = (os.path.join(sys.argv[1], n).encode() for n in ("zz", "zz_alt"))
deadline = time.monotonic() + float(sys.argv[2])
while time.monotonic() < deadline:
    if libc.renameat2(-100, a, -100, b, 2) != 0:  # AT_FDCWD, RENAME_EXCHANGE
        break
PYEOF
  chmod 644 "$T/flip.py"
  for try in $(seq 1 15); do
    as_user /usr/bin/python3 "$T/flip.py" "$T/swap/user" 1 & fp=$!
    sleep 0.05; "$PG" cleanup "$T/swap/user" >/dev/null 2>&1; wait $fp
    as_user bash -c "cd '$T/swap/user'; for i in \$(seq -w 1 40); do echo 30000 > a\$i/on_s\$i.bg.pid; done; [ -L zz ] && mv -T zz zz_tmp && mv -T zz_alt zz && mv -T zz_tmp zz_alt; touch zz/on_victim.bg.pid" 2>/dev/null
    alive "$victim" || break
  done
  alive "$victim" && [ -e "$T/swap/root/plug/on_victim.bg.pid" ] && [ -e "$T/swap/root/plug/on_victim.bg.stdout.log" ] \
    && ok "a symlink swapped into the user's tree never steers root's cleanup into root's tree (15 races)" \
    || bad "root's hook was reached through a swapped symlink (try $try)"
  kill -KILL "$victim" 2>/dev/null; wait "$victim" 2>/dev/null
else
  echo "skip - the directory-swap race needs /usr/bin/python3"
fi

# A directory on the path that the user owns is a symlink to root's directory (the
# CVE-2018-16888 pattern): root's stop, run and write refuse the path (an unsafe transition:
# from a directory or link owned by uid 65534 to a directory owned by uid 0) instead of
# stopping root's daemon, truncating root's log or writing into root's private directory.
F=$T/f2; mkdir -p "$F/rootrun" "$F/home/run" "$F/rootdir" "$F/home/real"; chmod 700 "$F/rootrun" "$F/rootdir"; chown -R 65534:65534 "$F/home"
"$PG" run "$F/rootrun/app.pid" -- sleep infinity > "$T/f2run.txt" 2>&1; rootd=$(cat "$F/rootrun/app.pid" 2>/dev/null); started+=("$rootd")
as_user sh -c "mv '$F/home/run' '$F/home/run.real' && ln -s '$F/rootrun' '$F/home/run'"
"$PG" status "$F/home/run/app.pid" > "$T/f2status.txt" 2>&1; st=$?
[ "$st" != 0 ] && grep -q 'uid 65534' "$T/f2status.txt" && ok "linked path, status: the same path is refused (exit $st)" || bad "linked path, status: exit $st $(cat "$T/f2status.txt")"
"$PG" stop "$F/home/run/app.pid" --retry TERM/1 > "$T/f2stop.txt" 2>&1; st=$?
alive "$rootd" && [ -f "$F/rootrun/app.pid" ] && [ "$st" != 0 ] && grep -q 'owned by uid 65534 and leads to .*rootrun owned by uid 0' "$T/f2stop.txt" \
  && ok "linked path, stop: through a user's symlink to root's directory: refused (exit $st), root's daemon and pidfile intact" \
  || bad "linked path, stop: exit $st, alive $(alive "$rootd" && echo yes || echo no): $(cat "$T/f2stop.txt")"
as_user sh -c "ln -s ../rootrun '$F/home/relrun'"
"$PG" stop "$F/home/relrun/app.pid" --retry TERM/1 > "$T/f2stop2.txt" 2>&1; st=$?
alive "$rootd" && [ "$st" != 0 ] && ok "linked path, stop: a relative link (..) out of the user's directory: refused (exit $st)" || bad "linked path, stop relative: exit $st $(cat "$T/f2stop2.txt")"
printf 'IMPORTANT ROOT LOG\n' > "$F/rootdir/app.stdout.log"; chmod 600 "$F/rootdir/app.stdout.log"
as_user ln -s "$F/rootdir" "$F/home/run2"
timeout 20 "$PG" run "$F/home/run2/app.pid" -- true > "$T/f2run2.txt" 2>&1; st=$?
[ "$st" != 0 ] && [ "$st" != 124 ] && [ "$(cat "$F/rootdir/app.stdout.log")" = "IMPORTANT ROOT LOG" ] && [ ! -e "$F/rootdir/app.pid" ] && [ ! -e "$F/rootdir/app.sh" ] \
  && ok "linked path, run: through a user's symlink: refused (exit $st), root's 0600 log intact, nothing created in root's directory" \
  || bad "linked path, run: exit $st, log '$(cat "$F/rootdir/app.stdout.log")', dir: $(ls "$F/rootdir" | tr '\n' ' ') $(cat "$T/f2run2.txt")"
timeout 20 "$PG" run --guard "$F/home/run2/g.json" -- true > "$T/f2run3.txt" 2>&1; st=$?
[ "$st" != 0 ] && [ ! -e "$F/rootdir/g.json" ] && [ ! -e "$F/rootdir/g.stdout.log" ] && ok "linked path, run --guard: refused (exit $st), nothing created" || bad "linked path, run --guard: exit $st, dir: $(ls "$F/rootdir" | tr '\n' ' ')"
setsid sleep infinity </dev/null >/dev/null 2>&1 & w=$!; started+=("$w"); wait_exec "$w" sleep
"$PG" write "$F/home/run2/w.pid" "$w" > "$T/f2write.txt" 2>&1; st=$?
[ "$st" != 0 ] && [ ! -e "$F/rootdir/w.pid" ] && [ ! -e "$F/rootdir/w.sh" ] && ok "linked path, write: refused (exit $st), nothing created" || bad "linked path, write: exit $st, dir: $(ls "$F/rootdir" | tr '\n' ' ')"
# Safe layouts still work: root's own link (a /var/run -> /run layout) …
ln -s "$F/rootrun" "$F/varrun"
"$PG" run "$F/rootrun/app2.pid" -- sleep infinity > /dev/null 2>&1; rootd2=$(cat "$F/rootrun/app2.pid" 2>/dev/null); started+=("$rootd2")
"$PG" stop "$F/varrun/app2.pid" --retry TERM/5 > "$T/f2var.txt" 2>&1; st=$?
[ -n "$rootd2" ] && ! alive "$rootd2" && [ "$st" = 0 ] && ok "links: root's own symlink (/var/run-style) is followed: root's daemon stopped" || bad "linked path, root link: exit $st $(cat "$T/f2var.txt")"
# … and a user's link into the user's own tree.
setpriv --reuid=65534 --regid=65534 --clear-groups setsid sleep infinity </dev/null >/dev/null 2>&1 & u2=$!; started+=("$u2"); wait_exec "$u2" sleep
as_user ln -s "$F/home/real" "$F/home/mine"
user_pidfile "$F/home/real/u.pid" "$u2"
"$PG" stop "$F/home/mine/u.pid" --retry TERM/5 > "$T/f2mine.txt" 2>&1; st=$?
! alive "$u2" && [ "$st" = 0 ] && ok "links: a user's link into the user's own tree is followed: the user's process stopped" || bad "linked path, own link: exit $st $(cat "$T/f2mine.txt")"
kill -KILL "$rootd" "$rootd2" "$u2" "$w" 2>/dev/null; wait "$rootd" "$rootd2" "$u2" "$w" 2>/dev/null

# The index spelled differently from DIR (./snap vs snap/sub/i.jsonl, absolute DIR with a
# relative INDEX) still goes through the beneath-DIR protection; an index outside DIR behind a
# user's symlink is refused by the unsafe-transition rule.
G=$T/f3; mkdir -p "$G/snap/plug" "$G/rootdir" "$G/home"; chmod 700 "$G/rootdir"
printf 3000002 > "$G/snap/plug/on_S__1_x.bg.pid"; chown -R 65534:65534 "$G/snap" "$G/home"
as_user ln -s "$G/rootdir" "$G/snap/sub"; as_user ln -s "$G/rootdir" "$G/home/sub"
for spelled in "./snap snap/sub/i1.jsonl" "$G/snap snap/sub/i2.jsonl" "snap $G/snap/sub/i3.jsonl" "snap $G/home/sub/i4.jsonl"; do
  set -- $spelled
  as_user sh -c "printf 3000002 > '$G/snap/plug/on_S__1_x.bg.pid'"
  (cd "$G" && "$PG" cleanup "$1" --index "$2" > "$T/f3.txt" 2>&1); st=$?
  [ "$st" != 0 ] && [ -z "$(ls "$G/rootdir")" ] && [ -f "$G/snap/plug/on_S__1_x.bg.pid" ] \
    && ok "index outside DIR: cleanup $1 --index $2: refused (exit $st), nothing in root's directory" \
    || bad "index outside DIR: cleanup $1 --index $2: exit $st, root dir: $(ls "$G/rootdir" | tr '\n' ' ') $(cat "$T/f3.txt")"
done

# The user's own live hook, when root's cleanup sends it TERM,
# exchanges its directory with a private root directory beside it (RENAME_EXCHANGE needs write
# access to the parent only). The logs and the file list must come from the directory the
# pidfile was judged in: nothing of root's directory reaches the index; the hook is undecided.
if [ -x /usr/bin/python3 ]; then
  X=$T/xchg; rm -rf "$X"; mkdir -p "$X/snap/userplug" "$X/snap/rootplug"
  chown -R 65534:65534 "$X/snap"; chown root:root "$X/snap/rootplug"; chmod 700 "$X/snap/rootplug"
  printf 'ROOT-SECRET-OUT' > "$X/snap/rootplug/on_S__1.bg.stdout.log"
  printf 'ROOT-SECRET-ERR' > "$X/snap/rootplug/on_S__1.bg.stderr.log"
  touch "$X/snap/rootplug/root-private-name.txt"; chmod 600 "$X/snap/rootplug"/*
  cat > "$T/xchg.py" <<'PYEOF'
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
sys.exit(libc.renameat2(-100, sys.argv[1].encode(), -100, sys.argv[2].encode(), 2) != 0)  # RENAME_EXCHANGE
PYEOF
  chmod 644 "$T/xchg.py"
  cat > "$T/xhook.sh" <<'SHEOF'
# The user's hook: at TERM, exchange its directory ($1) with root's ($2), from a child in its
# own session that ignores TERM (so that no signal of the cleanup cuts the exchange short).
cd "$1" || exit 1
trap 'trap "" TERM; setsid /usr/bin/python3 "$3" "$1" "$2"; exit 0' TERM
echo user-out > on_S__1.bg.stdout.log
sleep infinity & wait
SHEOF
  chmod 644 "$T/xhook.sh"
  setpriv --reuid=65534 --regid=65534 --clear-groups setsid bash "$T/xhook.sh" "$X/snap/userplug" "$X/snap/rootplug" "$T/xchg.py" </dev/null >/dev/null 2>&1 & h=$!; started+=("$h")
  wait_exec "$h" bash && wait_term_handled "$h"
  user_pidfile "$X/snap/userplug/on_S__1.bg.pid" "$h"
  "$PG" cleanup "$X/snap" --index "$X/index.jsonl" --json > "$T/x1.json" 2>&1; st=$?
  ! grep -q 'ROOT-SECRET\|root-private-name' "$X/index.jsonl" "$T/x1.json" 2>/dev/null \
    && ok "exchanged hook directory: a hook directory exchanged at TERM: nothing of root's directory in the index or the report" \
    || bad "exchanged hook directory: root's files leaked: $(cat "$X/index.jsonl" 2>&1) $(cat "$T/x1.json")"
  [ "$st" = 5 ] && grep -q '"outcome":"unverified"' "$T/x1.json" && grep -q 'replaced' "$T/x1.json" \
    && ok "exchanged hook directory: the hook is undecided (exit 5) and the report says its directory was replaced" || bad "exchanged hook directory: exit $st $(cat "$T/x1.json")"
  [ -f "$X/snap/userplug/on_S__1.bg.stdout.log" ] && [ -f "$X/snap/rootplug/on_S__1.bg.pid" ] \
    && ok "exchanged hook directory: both directories keep their files" || bad "exchanged hook directory: files removed: $(ls -la "$X/snap"/*)"
  kill -KILL "$h" 2>/dev/null; wait "$h" 2>/dev/null
else
  echo "skip - the directory-exchange test needs /usr/bin/python3"
fi

# In a sticky 1777 directory, a .sh the user planted beside root's token-less record of a
# live root hook is no evidence against it: the record is not called stale (cmd-mismatch) and
# removed while its hook runs on; it is judged as without the file (and the hook stopped).
S=$T/sticky; rm -rf "$S"; mkdir -p "$S/snap/plug"; chmod 1777 "$S/snap/plug"
setsid sleep infinity </dev/null >/dev/null 2>&1 & rh=$!; started+=("$rh")
wait_exec "$rh" sleep
/usr/bin/python3 -c 'import os, sys; open(sys.argv[1], "w").write(sys.argv[2]); t = float(sys.argv[3]); os.utime(sys.argv[1], (t, t))' \
  "$S/snap/plug/on_S__root.bg.pid" "$rh" "$(create_time "$rh")"
as_user sh -c "printf 'python3 -c other\n' > '$S/snap/plug/on_S__root.bg.sh'"
"$PG" cleanup "$S/snap" --json > "$T/f8.json" 2>&1; st=$?
! grep -q 'cmd-mismatch' "$T/f8.json" && grep -q '"outcome":"exited"' "$T/f8.json" && ! alive "$rh" \
  && ok "planted .sh: a planted .sh does not make root's live record stale (exit $st)" || bad "planted .sh: exit $st, alive: $(alive "$rh" && echo yes), $(cat "$T/f8.json")"
grep -q 'owned by uid 65534' "$T/f8.json" && ok "planted .sh: the report says the planted .sh was ignored" || bad "planted .sh, report: $(cat "$T/f8.json")"
kill -KILL "$rh" 2>/dev/null; wait "$rh" 2>/dev/null

# A caller whose kill(2) reach is larger than the pidfile owner's applies the owner rule, whatever
# its effective uid: real uid 0 with effective uid 65534 (ArchiveBox started as root runs with
# (0, 999, 0)), or the user's uids with CAP_KILL. A pidfile the user wrote, naming root's process
# with that process's exact token, must not make either of them signal it; the user's own process
# named by the same kind of file is still stopped.
as_euid_user() { setpriv --euid=65534 "$@"; }
as_user_cap_kill() { setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=+kill --ambient-caps=+kill "$@"; }
R=$T/reach; rm -rf "$R"; mkdir -p "$R/snap/plug"; chown -R 65534:65534 "$R"
for who in euid cap; do
  setsid sleep infinity </dev/null >/dev/null 2>&1 & rv=$!; started+=("$rv")
  wait_exec "$rv" sleep
  case $who in euid) run_as=as_euid_user; what="real uid 0, effective uid 65534" ;; cap) run_as=as_user_cap_kill; what="uid 65534 with CAP_KILL" ;; esac
  pf=$R/snap/plug/on_Snapshot__20_$who.bg.pid
  user_pidfile "$pf" "$rv"
  $run_as "$PG" stop "$pf" > "$T/r-$who.txt" 2>&1; st=$?
  alive "$rv" && [ "$st" = 3 ] && grep -q 'owned by uid 65534, target uid 0' "$T/r-$who.txt" \
    && ok "reach ($what): stop of the user's record naming root's process refuses (exit 3)" || bad "reach ($what) stop: exit $st, alive: $(alive "$rv" && echo yes) $(cat "$T/r-$who.txt")"
  [ -f "$pf" ] && ok "reach ($what): the record stays" || bad "reach ($what): the record was removed"
  $run_as "$PG" cleanup "$R/snap" --json > "$T/rc-$who.json" 2>&1; st=$?
  alive "$rv" && grep -q 'untrusted-pidfile' "$T/rc-$who.json" \
    && ok "reach ($what): cleanup refuses too (exit $st)" || bad "reach ($what) cleanup: exit $st, alive: $(alive "$rv" && echo yes) $(cat "$T/rc-$who.json")"
  rm -f "$pf"
  tok=$(as_user "$PG" token "$rv")
  as_user sh -c "umask 077; printf '{\"pid\":%s,\"start_token\":\"%s\"}\n' $rv '$tok' > '$R/snap/guard-$who.json'"
  $run_as "$PG" stop "$R/snap/guard-$who.json" > "$T/rg-$who.txt" 2>&1; st=$?
  alive "$rv" && [ "$st" = 3 ] && ok "reach ($what): a user's guard record naming root's process is refused (exit 3)" || bad "reach ($what) guard: exit $st $(cat "$T/rg-$who.txt")"
  # The user's own process, named by the user's own file: still stopped.
  setpriv --reuid=65534 --regid=65534 --clear-groups setsid sleep infinity </dev/null >/dev/null 2>&1 & uv=$!; started+=("$uv")
  wait_exec "$uv" sleep
  user_pidfile "$R/snap/plug/on_Snapshot__21_$who.bg.pid" "$uv"
  $run_as "$PG" stop "$R/snap/plug/on_Snapshot__21_$who.bg.pid" > "$T/ro-$who.txt" 2>&1; st=$?
  ! alive "$uv" && [ "$st" = 0 ] && ok "reach ($what): the user's own process is stopped (exit 0)" || bad "reach ($what) own: exit $st $(cat "$T/ro-$who.txt")"
  kill -KILL "$uv" "$rv" 2>/dev/null; wait "$uv" "$rv" 2>/dev/null
done

echo "cli deputy: $pass passed, $fail failed"
[ "$fail" = 0 ]
