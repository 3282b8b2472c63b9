#!/usr/bin/env bash
# `pidguard run --user USER[:GROUP] [--extra-groups G,...]` (issue 44): the command's tree runs
# as exactly that identity (the Uid, Gid and Groups lines of /proc/<pid>/status), in a scope it
# cannot leave or widen (it cannot write its leaf's files or move itself out), the record says who
# it runs as, and a stop by the caller leaves 0 survivors (a plain child, a setsid grandchild, a
# double-forked setsid daemon) in both scope modes. A caller that may not take the identity exits
# 77 with nothing made.
#
# Run as root by scripts/test-cli.sh inside a private PID namespace: every process in /proc is
# this script's own. Every process started here is ended through pidguard; every file made is
# under $T (mode 0777, so that nobody can write there).
set -u
PG=${PIDGUARD:?set PIDGUARD to the pidguard binary}
MP=$(awk '{ for (i = 1; i <= NF; i++) if ($i == "-") { if ($(i+1) == "cgroup2" && $4 == "/") { print $5; exit } } }' /proc/self/mountinfo)
if [ "$(id -u)" != 0 ] || [ "$$" != 1 ] || ! command -v setpriv >/dev/null || ! id nobody >/dev/null 2>&1; then
  echo "skip - the user tests need root, setpriv, a user nobody and a PID namespace of their own (scripts/test-cli.sh)"
  echo "cli user: 0 passed, 0 failed"
  exit 0
fi
pass=0; fail=0
ok()  { pass=$((pass+1)); echo "ok   - $1"; }
bad() { fail=$((fail+1)); echo "FAIL - $1"; }
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }

T=$(mktemp -d /tmp/pidguard-cli-user-XXXXXX)
chmod 0777 "$T"
trap 'rm -rf "$T"' EXIT
NB=$(id -u nobody); NG=$(id -g nobody)

# Live (not zombie) processes of this namespace whose command line is `sleep 3600`.
sleepers() {
  local d st
  for d in /proc/[0-9]*; do
    read -r st 2>/dev/null < "$d/stat" || continue
    st=${st##*) }; case "${st:0:1}" in Z|X|'') continue ;; esac
    [ "$(tr '\0' ' ' < "$d/cmdline" 2>/dev/null)" = "sleep 3600 " ] && echo "${d#/proc/}"
  done
}
# The file exists before `echo` has written its line: wait for the whole line.
wait_file() { local i; for i in $(seq 400); do [ -s "$1" ] && [ "$(tail -c1 "$1" | od -An -c | tr -d ' ')" = '\n' ] && return 0; sleep 0.05; done; return 1; }
wait_none() { local i; for i in $(seq 400); do [ -z "$(sleepers)" ] && return 0; sleep 0.05; done; return 1; }
# "Uid Gid Groups" of a pid: the four uids, the four gids, the groups sorted.
ids() {
  awk '/^Uid:/ { u = $2" "$3" "$4" "$5 } /^Gid:/ { g = $2" "$3" "$4" "$5 } /^Groups:/ { $1 = ""; s = $0 } END { print u "|" g "|" s }' "/proc/$1/status" \
    | { IFS='|' read -r u g s; echo "$u|$g|$(echo $s | tr ' ' '\n' | sort -n | tr '\n' ' ' | sed 's/ $//')"; }
}
reap_all() { while wait -n 2>/dev/null; do :; done; }

TREE="sleep 3600 & echo \$! > child.pid; setsid sh -c 'echo \$\$ > grand.pid; exec sleep 3600' & (setsid sh -c \"echo \\\$\\\$ > daemon.pid.tmp && mv daemon.pid.tmp daemon.pid; exec sleep 3600\" &); exec sleep 3600"

leaf_ok=0
if [ -n "$MP" ] && "$PG" run --scope cgroup "$T/probe.pid" -- true >/dev/null 2>&1; then
  leaf_ok=1; "$PG" stop "$T/probe.pid" >/dev/null 2>&1; rm -f "$T"/probe.*
fi

for scope in supervisor cgroup; do
  if [ $scope = cgroup ] && [ $leaf_ok = 0 ]; then echo "skip - $scope: no cgroup v2 leaf can be made here"; continue; fi
  d="$T/$scope"; mkdir -m 0777 "$d"
  out=$(cd "$d" && "$PG" run --json --scope $scope --user nobody:$NG --extra-groups "$NG,100" "$d/tree.pid" -- sh -c "$TREE")
  check "$scope: run --user prints run_as" '[ "$(echo "$out" | python3 -c "import json,sys; print(json.load(sys.stdin)[\"run_as\"])")" = "uid=$NB gid=$NG groups=100,$NG" ]'
  pid=$(echo "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
  wait_file "$d/child.pid" && wait_file "$d/grand.pid" && wait_file "$d/daemon.pid"
  want="$NB $NB $NB $NB|$NG $NG $NG $NG|100 $NG"
  all=1
  for p in "$pid" "$(cat "$d/child.pid")" "$(cat "$d/grand.pid")" "$(cat "$d/daemon.pid")"; do
    [ "$(ids "$p")" = "$want" ] || { all=0; echo "  pid $p: $(ids "$p"), want $want"; }
  done
  check "$scope: command, child, setsid grandchild and daemon run as exactly uid/gid/groups asked for" '[ $all = 1 ]'
  check "$scope: the pidfile is root's and records run_as" '[ "$(stat -c %u "$d/tree.pid")" = 0 ] && python3 -c "import os,sys; sys.exit(os.getxattr(sys.argv[1], \"user.pidguard.run_as\") != b\"uid=$NB gid=$NG groups=100,$NG\")" "$d/tree.pid"'
  "$PG" stop --schedule TERM/5/KILL/5 "$d/tree.pid" >/dev/null; rc=$?
  check "$scope: stop by the caller exits 0" '[ $rc = 0 ]'
  check "$scope: 0 survivors of the tree" 'wait_none'
  reap_all
done

# The command cannot leave or widen its leaf (cgroup mode).
if [ $leaf_ok = 1 ]; then
  d="$T/leaf"; mkdir -m 0777 "$d"
  cat > "$d/try.sh" <<EOF
c=$MP\$(sed -n 's/^0:://p' /proc/self/cgroup)
(echo \$\$ > \$c/cgroup.procs) 2>/dev/null && echo wrote-procs
(echo 0 > \$c/cgroup.freeze) 2>/dev/null && echo wrote-freeze
(echo \$\$ > \$(dirname \$c)/cgroup.procs) 2>/dev/null && echo moved-to-parent
(echo \$\$ > $MP/cgroup.procs) 2>/dev/null && echo moved-to-root
mkdir \$c/escape 2>/dev/null && echo made-child
echo done
EOF
  "$PG" run --scope cgroup --user nobody "$d/leaf.pid" -- sh "$d/try.sh" >/dev/null
  wait_file "$d/leaf.stdout.log"
  for i in $(seq 400); do grep -q done "$d/leaf.stdout.log" && break; sleep 0.05; done
  check "cgroup: as nobody, the command cannot write its leaf's files, move out or make a child cgroup" '[ "$(cat "$d/leaf.stdout.log")" = done ]'
  "$PG" stop "$d/leaf.pid" >/dev/null 2>&1
  reap_all
fi

# --extra-groups '' is none; a bad name is bad input (4) with nothing made.
d="$T/none"; mkdir -m 0777 "$d"
pid=$("$PG" run --scope group --user "$NB" --extra-groups '' "$d/n.pid" -- sleep 3600)
check "--extra-groups '': no supplementary group" '[ "$(ids "$pid")" = "$NB $NB $NB $NB|$NG $NG $NG $NG|" ]'
"$PG" stop "$d/n.pid" >/dev/null; reap_all
"$PG" run --user no-such-user-pidguard "$d/x.pid" -- sleep 3600 >/dev/null 2>&1; rc=$?
check "an unknown user: exit 4, nothing made" '[ $rc = 4 ] && [ ! -e "$d/x.pid" ] && [ -z "$(sleepers)" ]'

# An unprivileged caller asking for another user: 77 (permission denied), nothing made.
d="$T/deny"; mkdir -m 0777 "$d"
for ask in root "nobody:root" "daemon"; do
  err=$(setpriv --reuid "$NB" --regid "$NG" --clear-groups "$PG" run --user "$ask" "$d/x.pid" -- sleep 3600 2>&1 >/dev/null); rc=$?
  check "unprivileged, --user $ask: exit 77 with the reason, no file, no process" '[ $rc = 77 ] && [[ "$err" == *"nothing was started"* ]] && [ -z "$(ls -A "$d")" ] && [ -z "$(sleepers)" ]'
done
# ... and as itself it may.
pid=$(setpriv --reuid "$NB" --regid "$NG" --clear-groups "$PG" run --scope supervisor --user nobody "$d/self.pid" -- sleep 3600)
check "unprivileged, --user itself: started, as itself" '[ "$(ids "$pid")" = "$NB $NB $NB $NB|$NG $NG $NG $NG|" ]'
setpriv --reuid "$NB" --regid "$NG" --clear-groups "$PG" stop "$d/self.pid" >/dev/null
check "unprivileged: its own stop leaves nothing" 'wait_none'
reap_all

# The ArchiveBox shape: real uid 0, effective uid nobody (setpriv --euid, which also sets the
# saved uid: (0, U, U); the Python and core tests make (0, U, 0) exactly), starting the hook as
# nobody: the tree runs as (nobody x3) with nobody's groups (none of root's), the record is
# nobody's, and the same caller's stop leaves 0 survivors.
d="$T/archivebox"; mkdir -m 0777 "$d"
AB=(setpriv --euid "$NB")
check "ArchiveBox shape: the caller's uids are 0 $NB $NB" '[ "$("${AB[@]}" awk "/^Uid:/ { print \$2, \$3, \$4 }" /proc/self/status)" = "0 $NB $NB" ]'
pid=$(cd "$d" && "${AB[@]}" "$PG" run --user "$NB" "$d/tree.pid" -- sh -c "$TREE" 2>/dev/null)
wait_file "$d/child.pid" && wait_file "$d/grand.pid" && wait_file "$d/daemon.pid"
want="$NB $NB $NB $NB|$NG $NG $NG $NG|$NG"
all=1
for p in "$pid" "$(cat "$d/child.pid")" "$(cat "$d/grand.pid")" "$(cat "$d/daemon.pid")"; do
  [ "$(ids "$p")" = "$want" ] || { all=0; echo "  pid $p: $(ids "$p"), want $want"; }
done
check "ArchiveBox shape: the whole tree runs as nobody, with nobody's groups only" '[ $all = 1 ]'
check "ArchiveBox shape: the record is nobody's" '[ "$(stat -c %u "$d/tree.pid")" = "$NB" ]'
sup=$(awk '/^PPid:/ { print $2 }' "/proc/$pid/status")
check "ArchiveBox shape: its supervisor's real and saved uids are 0 (out of the command's reach)" '[ "$(awk "/^Uid:/ { print \$2, \$4 }" /proc/$sup/status)" = "0 0" ]'
"${AB[@]}" "$PG" stop --schedule TERM/5/KILL/5 "$d/tree.pid" >/dev/null; rc=$?
check "ArchiveBox shape: the same caller's stop exits 0" '[ $rc = 0 ]'
check "ArchiveBox shape: 0 survivors" 'wait_none'
reap_all

echo "cli user: $pass passed, $fail failed"
[ $fail = 0 ]
