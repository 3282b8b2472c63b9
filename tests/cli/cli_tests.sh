#!/usr/bin/env bash
# Tests of the `pidguard` command on real processes. Run by scripts/test-cli.sh, inside a
# private PID namespace where the machine allows it, so a wrong signal could only reach the
# test's own processes. Every process started here is ended by pid or through pidguard.
set -u
PG=${PIDGUARD:?set PIDGUARD to the pidguard binary}
T=$(mktemp -d /tmp/pidguard-cli-XXXXXX)
pass=0; fail=0; started=()
# Reaped after the kill, so that bash does not report each one as "Killed" (noise, not failure).
trap 'for p in "${started[@]}"; do kill -KILL "$p" 2>/dev/null; done; if [ ${#started[@]} -gt 0 ]; then wait "${started[@]}" 2>/dev/null; fi; rm -rf "$T"' EXIT

ok()   { pass=$((pass+1)); echo "ok   - $1"; }
bad()  { fail=$((fail+1)); echo "FAIL - $1"; }
expect_status() { # name expected actual
  if [ "$2" = "$3" ]; then ok "$1 (exit $3)"; else bad "$1: expected exit $2, got $3"; fi
}
members() { # live members of process group $1
  for s in /proc/[0-9]*/stat; do
    read -r line < "$s" 2>/dev/null || continue
    rest=${line##*) }; set -- $rest
    [ "$1" != Z ] && [ "$3" = "$PGID" ] && echo "${s//[^0-9]/}"
  done 2>/dev/null
}
count_members() { PGID=$1; members | wc -l; }
alive() { [ -e "/proc/$1" ] && ! grep "^[0-9]* (.*) Z" "/proc/$1/stat" >/dev/null 2>&1; }
# spawn_group CMD...: run in a new session (own process group), print its pid
spawn_group() { setsid "$@" </dev/null >/dev/null 2>&1 & local p=$!; started+=("$p"); echo "$p"; }
# True once pid $1 ignores or catches SIGTERM (SigIgn/SigCgt in /proc/PID/status): its trap is set.
handles_term() { local v; for v in $(awk '/^Sig(Ign|Cgt):/ {print $2}' "/proc/$1/status" 2>/dev/null); do (( 0x$v & 0x4000 )) && return 0; done; return 1; }
wait_term_handled() { for _ in $(seq 1000); do handles_term "$1" && return 0; sleep 0.02; done; return 1; }
wait_members() { for _ in $(seq 200); do [ "$(count_members "$1")" -ge "$2" ] && return 0; sleep 0.02; done; return 1; }
write_pidfile() { # path pid: abx-dl pidfile with token, via the Python-free way: pidguard has no writer command,
  # so the content is written here and the mtime set to the process's create time read back by `status --json`.
  printf '%s' "$2" > "$1"
  local ct; ct=$("$PG" status "$1" --json | sed -n 's/.*"create_time":\([0-9.]*\).*/\1/p')
  touch -d "@$ct" "$1"
}

# --- token ---
p=$(spawn_group sleep infinity)
out=$("$PG" token "$p"); st=$?
expect_status "token of a live process" 0 $st
case "$out" in linux1:*) ok "token has the linux1 prefix";; *) bad "token output: $out";; esac
"$PG" token 0 >/dev/null 2>&1; expect_status "token of pid 0 is bad input" 4 $?
"$PG" token "12; rm -rf /" >/dev/null 2>&1; expect_status "token of a non-number is bad input" 4 $?
"$PG" token 4000000 >/dev/null 2>&1; st=$?
[ $st = 1 ] || [ $st = 4 ] && ok "token of a free pid: nothing to do or bad input ($st)" || bad "token of a free pid: $st"

# --- status ---
write_pidfile "$T/a.pid" "$p"
"$PG" status "$T/a.pid" >/dev/null; expect_status "status of a live, matching pidfile" 0 $?
touch -d "@$(( $(date +%s) - 3600 ))" "$T/a.pid"
"$PG" status "$T/a.pid" >/dev/null; expect_status "status with an mtime 1 h off (no token)" 1 $?
printf '503\n7\n' > "$T/two.pid"
"$PG" status "$T/two.pid" --json | grep '"reason":"malformed"' >/dev/null && ok "two numbers are malformed" || bad "two numbers not malformed"
"$PG" status "$T/missing.pid" >/dev/null; expect_status "status of a missing pidfile" 1 $?

# --- stop: a group leader whose child ignores SIGTERM ---
g=$(spawn_group bash -c "trap '' TERM; sleep infinity & sleep infinity & wait")
wait_members "$g" 3 || bad "group $g did not fill"
write_pidfile "$T/g.pid" "$g"
"$PG" stop "$T/g.pid" --retry TERM/0.5/KILL/2 --json > "$T/out.json"; st=$?
expect_status "stop a TERM-ignoring group" 0 $st
[ "$(count_members "$g")" = 0 ] && ok "zero survivors in the group" || bad "survivors in group $g"
grep -q '"signals":\["TERM","CONT","KILL"\]' "$T/out.json" && ok "signals TERM, CONT, KILL reported" || bad "signals: $(cat "$T/out.json")"

# --- stop: a stale pidfile naming a live bystander group ---
b=$(spawn_group bash -c "sleep infinity & sleep infinity & wait")
wait_members "$b" 3 || bad "bystander did not fill"
printf '%s' "$b" > "$T/stale.pid"; touch -d "@$(( $(date +%s) - 7200 ))" "$T/stale.pid"
"$PG" stop "$T/stale.pid" >/dev/null; expect_status "stop refuses a token-less record whose mtime is off (could not be verified)" 5 $?
[ "$(count_members "$b")" = 3 ] && ok "bystander group intact" || bad "bystander group damaged"
# A record with a token that differs: proven stale, removed, nothing sent.
printf '%s' "$b" > "$T/stale2.pid"; touch -d "@$(( $(date +%s) - 7200 ))" "$T/stale2.pid"
if command -v setfattr >/dev/null; then
  setfattr -n user.pidguard.token -v "$(echo "$("$PG" token "$b")" | awk -F: 'BEGIN{OFS=":"}{$5=$5+1; $6="-"; print}')" "$T/stale2.pid"
  "$PG" stop "$T/stale2.pid" >/dev/null; expect_status "stop on a record whose token differs" 1 $?
  [ ! -e "$T/stale2.pid" ] && ok "the stale record was removed" || bad "stale record kept"
  [ "$(count_members "$b")" = 3 ] && ok "bystander intact after a token mismatch" || bad "bystander damaged"
fi
# --lenient acts on a token-less record with a skewed mtime (a record from before tokens, named by the user).
l=$(spawn_group sleep infinity)
printf '%s' "$l" > "$T/l.pid"; touch -d "@$(( $(date +%s) - 7200 ))" "$T/l.pid"
"$PG" stop "$T/l.pid" --lenient 2> "$T/lerr" >/dev/null; expect_status "lenient stops a token-less record with a skewed mtime" 0 $?
grep -q warning "$T/lerr" && ok "lenient prints a warning" || bad "no warning under --lenient"

# --- stop: bad schedule is bad input, nothing sent ---
write_pidfile "$T/b.pid" "$b"
"$PG" stop "$T/b.pid" --retry "TERM/x" >/dev/null 2>&1; expect_status "malformed schedule" 4 $?
[ "$(count_members "$b")" = 3 ] && ok "nothing sent on a malformed schedule" || bad "signal sent despite bad schedule"

# --- stop: world-writable pidfile is refused even when it matches ---
chmod 0666 "$T/b.pid"
"$PG" stop "$T/b.pid" >/dev/null; expect_status "world-writable pidfile refused" 3 $?
[ "$(count_members "$b")" = 3 ] && ok "nothing sent on a world-writable pidfile" || bad "signal sent on world-writable pidfile"
chmod 0644 "$T/b.pid"
"$PG" stop "$T/b.pid" >/dev/null; expect_status "stop the bystander we started, through pidguard" 0 $?
[ ! -e "$T/b.pid" ] && ok "the stopped record's pidfile was removed" || bad "pidfile left"

# --- stop: a pidfile naming pid 1 that matches it is refused (init) ---
write_pidfile "$T/one.pid" 1
"$PG" status "$T/one.pid" >/dev/null && {
  "$PG" stop "$T/one.pid" >/dev/null; expect_status "pid 1 is never signalled" 3 $?
} || ok "pid 1 record not valid here: nothing to refuse"


# --- guard pidfiles (JSON records) ---
gp=$(spawn_group bash -c "sleep infinity & wait")
wait_members "$gp" 2 || bad "guard group did not fill"
tok=$("$PG" token "$gp")
mkdir -p "$T/run"; chmod 700 "$T/run"
printf '{"pid":%s,"start_token":"%s","session":"s1"}\n' "$gp" "$tok" > "$T/run/g.json"; chmod 600 "$T/run/g.json"
"$PG" status "$T/run/g.json" >/dev/null; expect_status "guard status of a live holder" 0 $?
# Other start ticks, recorded without a pidfs inode ("-"): with inodes on both sides the inode
# decides alone.
stale_tok=$(echo "$tok" | awk -F: 'BEGIN{OFS=":"}{$5=$5+1; $6="-"; print}')
printf '{"pid":%s,"start_token":"%s"}\n' "$gp" "$stale_tok" > "$T/run/s.json"; chmod 600 "$T/run/s.json"
"$PG" stop "$T/run/s.json" >/dev/null; expect_status "guard stop of a record whose start ticks differ" 1 $?
[ ! -e "$T/run/s.json" ] && ok "stale guard record removed by content" || bad "stale guard record kept"
[ "$(count_members "$gp")" = 2 ] && ok "holder untouched by a mismatched guard record" || bad "holder damaged"
chmod 644 "$T/run/g.json"
"$PG" stop "$T/run/g.json" >/dev/null 2>&1; expect_status "guard record readable by others is refused" 3 $?
chmod 600 "$T/run/g.json"
"$PG" stop "$T/run/g.json" --json > "$T/gout.json"; expect_status "guard stop of the live holder" 0 $?
[ "$(count_members "$gp")" = 0 ] && ok "guard holder's group stopped" || bad "guard holder survived"
[ ! -e "$T/run/g.json" ] && ok "guard record removed by content" || bad "guard record left"

# --- --json is core's report, field for field (tests/operations/reports.json) ---
reports_json="$(dirname "$0")/../operations/reports.json"
# same_fields FILE REPORT [exit]: FILE holds one JSON object (or an array of them) with exactly
# the fields of REPORT, nested reports too; with an exit status, its "status" field says the same.
same_fields() {
  python3 - "$reports_json" "$@" <<'PY'
import json, sys
table = json.load(open(sys.argv[1]))["reports"]
doc = json.load(open(sys.argv[2]))
name, status = sys.argv[3], (sys.argv[4] if len(sys.argv) > 4 else None)
nested = {"check": "PidFileCheck", "terminate": "TerminateReport", "probe": "Probe"}
# `status --json` is a PidFileCheck plus `probe`: core's ProbeView (Python's pidguard.Probe,
# Node's Probe), which reports.json does not list (its C form nests the check).
table["Probe"] = ["format", "reason", "pid", "scope", "scope_members", "answer", "in_use", "running"]
if name == "Status":
    table["Status"], name = table["PidFileCheck"] + ["probe"], "Status"
def check(obj, name, where):
    if list(obj) != table[name]:
        sys.exit(f"{where}: {list(obj)} is not {name} {table[name]}")
    for k, sub in nested.items():
        if k in obj and obj[k] is not None:
            check(obj[k], sub, f"{where}.{k}")
for i, obj in enumerate(doc if isinstance(doc, list) else [doc]):
    check(obj, name, f"[{i}]")
    if status is not None and str(obj["status"]) != status:
        sys.exit(f"status {obj['status']} is not the exit status {status}")
PY
}
if command -v python3 >/dev/null; then
  same_fields "$T/out.json" StopReport 0 && ok "stop --json is a StopReport (with its check and terminate report), status = exit" || bad "stop --json: $(cat "$T/out.json")"
  same_fields "$T/gout.json" StopReport 0 && ok "stop --json of a guard record is a StopReport" || bad "guard stop --json: $(cat "$T/gout.json")"
  "$PG" status "$T/a.pid" --json > "$T/st.json"
  same_fields "$T/st.json" Status && ok "status --json is a PidFileCheck plus its probe (a Probe)" || bad "status --json: $(cat "$T/st.json")"
  "$PG" stop "$T/missing.pid" --json > "$T/miss.json"; st=$?
  same_fields "$T/miss.json" StopReport $st && ok "stop --json of a missing file: a StopReport, status = exit ($st)" || bad "stop missing --json: $(cat "$T/miss.json")"
  mkdir -p "$T/cl1"; printf 3999998 > "$T/cl1/on_x.bg.pid"
  "$PG" cleanup "$T/cl1" --json > "$T/cl1.json"
  same_fields "$T/cl1.json" HookReport && ok "cleanup --json is a list of HookReports" || bad "cleanup --json: $(cat "$T/cl1.json")"
else
  echo "skip - --json field checks (python3 is needed to read reports.json)"
fi
# A guard record whose start ticks differ from the live process's ($p is still running).
p_stale=$("$PG" token "$p" | awk -F: 'BEGIN{OFS=":"}{$5=$5+1; $6="-"; print}')
printf '{"pid":%s,"start_token":"%s"}\n' "$p" "$p_stale" > "$T/run/s2.json"; chmod 600 "$T/run/s2.json"
"$PG" status "$T/run/s2.json" --json > "$T/s2.json"; st=$?
grep -q '"reason":"mismatch"' "$T/s2.json" && grep -q '"verdict":"mismatch"' "$T/s2.json" && [ $st = 1 ] \
  && ok "guard status --json: the check core gives (mismatch, exit 1)" || bad "guard status --json: $st $(cat "$T/s2.json")"

# --- cleanup ---
mkdir -p "$T/empty"
"$PG" cleanup "$T/empty" >/dev/null; expect_status "cleanup of a directory without hooks" 1 $?
"$PG" cleanup "$T/nope" >/dev/null 2>&1; expect_status "cleanup of a missing directory" 4 $?

# --- exit codes (decided in core) ---
"$PG" status >/dev/null 2>&1; expect_status "a missing argument is a usage error (EX_USAGE)" 64 $?
"$PG" frobnicate >/dev/null 2>&1; expect_status "an unknown subcommand is a usage error" 64 $?
"$PG" stop --no-such-option x >/dev/null 2>&1; expect_status "an unknown option is a usage error" 64 $?
"$PG" --help > "$T/help.txt"; expect_status "--help" 0 $?
for c in 0 1 2 3 4 5 64 77; do
  grep -qE "^ +$c  " "$T/help.txt" || bad "--help does not list exit code $c"
done
grep -q "^Exit codes:" "$T/help.txt" && ok "--help lists the exit codes" || bad "--help has no exit-code table"
"$PG" --version >/dev/null; expect_status "--version" 0 $?
# Permission denied is not malformed input: its own code and the system's text.
if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ]; then
  mkdir -p "$T/perm"; printf '%s' "$p" > "$T/perm/a.pid"; chmod 600 "$T/perm/a.pid"; chmod 755 "$T/perm"
  setpriv --reuid=65534 --regid=65534 --clear-groups "$PG" status "$T/perm/a.pid" > "$T/perm.out" 2>&1; st=$?
  expect_status "status of a pidfile the caller may not read (EX_NOPERM)" 77 $st
  grep -q "Permission denied" "$T/perm.out" && ok "the system's reason is shown: $(cat "$T/perm.out")" || bad "no OS reason: $(cat "$T/perm.out")"
  setpriv --reuid=65534 --regid=65534 --clear-groups "$PG" stop "$T/perm/a.pid" > "$T/perm.out" 2>&1; st=$?
  expect_status "stop of a pidfile the caller may not read (EX_NOPERM)" 77 $st
  grep -q "Permission denied" "$T/perm.out" && ok "stop shows the system's reason" || bad "stop: no OS reason: $(cat "$T/perm.out")"
  printf 'abc' > "$T/perm/bad.pid"
  "$PG" stop "$T/perm/bad.pid" >/dev/null 2>&1; expect_status "malformed content stays bad input" 4 $?
else
  echo "skip - permission tests need root and setpriv"
fi

# --- run and write (start-stop-daemon's --start --background --make-pidfile) ---
mkdir -p "$T/run1"
rp=$("$PG" run "$T/run1/on_x.bg.pid" -- bash -c 'echo out; echo err >&2; sleep infinity & wait'); st=$?
started+=("$rp")
expect_status "run starts a command" 0 $st
case "$rp" in ''|*[!0-9]*) bad "run prints the pid, got: $rp";; *) ok "run prints the pid ($rp)";; esac
# The command has written both lines once its logs hold them (polled, with a deadline).
for _ in $(seq 1000); do grep -q out "$T/run1/on_x.bg.stdout.log" && grep -q err "$T/run1/on_x.bg.stderr.log" && break; sleep 0.01; done
out=$("$PG" status "$T/run1/on_x.bg.pid"); expect_status "status of what run recorded" 0 $?
case "$out" in *": valid — pid $rp, match") ok "status says simply valid, match: $out";; *) bad "status after run: $out";; esac
[ "$(cat "$T/run1/on_x.bg.sh")" = "$(printf '#!/bin/bash\nbash -c %s' "'echo out; echo err >&2; sleep infinity & wait'")" ] && ok "run writes the .sh beside the pidfile" || bad ".sh: $(cat "$T/run1/on_x.bg.sh")"
grep -q out "$T/run1/on_x.bg.stdout.log" && grep -q err "$T/run1/on_x.bg.stderr.log" && ok "run sends stdout and stderr to the hook's logs" || bad "logs: $(ls "$T/run1")"
sid=$(awk '{sub(/.*\) /, ""); print $4}' "/proc/$rp/stat")
[ "$sid" = "$rp" ] && ok "run starts the command in a new session" || bad "session of $rp is $sid"
"$PG" run "$T/run1/on_x.bg.pid" -- sleep 1 >/dev/null 2>"$T/held.err"; expect_status "run refuses while a live Match holds the pidfile" 3 $?
grep -q "held by pid $rp" "$T/held.err" && ok "the refusal names the holder" || bad "refusal: $(cat "$T/held.err")"
[ "$("$PG" status "$T/run1/on_x.bg.pid" --json | sed -n 's/.*"pid":\([0-9]*\).*/\1/p')" = "$rp" ] && ok "the holder's pidfile is untouched" || bad "pidfile overwritten"
"$PG" cleanup "$T/run1" > "$T/cl.txt"; expect_status "cleanup stops what run started" 0 $?
[ "$(count_members "$rp")" = 0 ] && ok "run's process group is gone after cleanup" || bad "survivors of $rp"
"$PG" run "$T/run1/on_x.bg.pid" -- /no/such/program >/dev/null 2>"$T/nx.err"; st=$?
[ $st = 4 ] && grep -q "No such file" "$T/nx.err" && ok "run of a missing program: bad input with the OS text" || bad "missing program: $st $(cat "$T/nx.err")"
[ ! -e "$T/run1/on_x.bg.pid" ] && ok "nothing recorded for a command that did not start" || bad "pidfile written for a failed start"
# Arguments are checked before anything is created: a command that cannot start leaves nothing.
mkdir -p "$T/run0"
run_leaves_nothing() { # NAME EXPECTED-EXIT EXPECTED-TEXT ARGS...
  local name=$1 want=$2 text=$3 st; shift 3
  (cd "$T/run0" && "$PG" run "$@" >/dev/null 2>"$T/r0.err"); st=$?
  [ $st = "$want" ] && grep -F -- "$text" "$T/r0.err" >/dev/null && ok "$name (exit $st: $(head -1 "$T/r0.err"))" || bad "$name: exit $st: $(cat "$T/r0.err")"
  [ -z "$(ls -A "$T/run0")" ] && ok "$name: nothing left behind" || bad "$name left: $(ls -A "$T/run0")"
}
run_leaves_nothing "run of a missing program" 4 "No such file" app.pid -- /no/such/program
run_leaves_nothing "run of a program not on \$PATH" 4 "not found in \$PATH" app.pid -- no-such-program-pidguard
run_leaves_nothing "run with a missing --cwd" 4 "--cwd" app.pid --cwd "$T/nowhere" -- sleep 1
run_leaves_nothing "run whose pidfile's directory is missing names the directory" 4 "$T/run0/missing: directory does not exist" "$T/run0/missing/web.pid" -- sleep 1
run_leaves_nothing "run -- CMD ... app.pid: the pidfile put last is a usage error" 64 '"app.pid" looks like one' -- sleep 100 app.pid
run_leaves_nothing "run CMD ARGS (no pidfile): a program taken as the pidfile is a usage error" 64 "is a program on \$PATH" sleep 100
# A stale record (its process gone) does not block a new start.
printf '%s' 3999999 > "$T/run1/stale.pid"
rp2=$("$PG" run "$T/run1/stale.pid" -- sleep infinity); expect_status "run replaces a stale record" 0 $?
started+=("$rp2")
"$PG" stop "$T/run1/stale.pid" >/dev/null; expect_status "stop what run started" 0 $?
# --guard: a JSON guard record.
gp2=$("$PG" run --guard "$T/run/svc.json" --json -- sleep infinity); expect_status "run --guard" 0 $?
case "$gp2" in *'"format":"guard"'*'"pid_file":'*) ok "run --json names the pid_file and the format";; *) bad "run --json: $gp2";; esac
gp2=$(echo "$gp2" | sed -n 's/.*"pid":\([0-9]*\).*/\1/p')
started+=("$gp2")
out=$("$PG" status "$T/run/svc.json"); case "$out" in *"valid — guard record of pid $gp2, match") ok "guard status after run: $out";; *) bad "guard status: $out";; esac
"$PG" run --guard "$T/run/svc.json" -- sleep infinity >/dev/null 2>&1; expect_status "run --guard refuses a live holder" 3 $?
"$PG" stop "$T/run/svc.json" >/dev/null; expect_status "stop the guard record run wrote" 0 $?
# write: record a process that is already running.
wp=$(spawn_group sleep infinity)
# Record it once setsid has exec'd sleep: the .sh then holds the argv it keeps.
for _ in $(seq 200); do tr '\0' ' ' < "/proc/$wp/cmdline" 2>/dev/null | grep '^sleep infinity' >/dev/null && break; sleep 0.01; done
"$PG" write "$T/w.pid" "$wp" >/dev/null; expect_status "write records a running process" 0 $?
out=$("$PG" status "$T/w.pid"); case "$out" in *"valid — pid $wp, match") ok "status after write: $out";; *) bad "status after write: $out";; esac
"$PG" write "$T/w.pid" "$wp" >/dev/null; expect_status "write again of the same process" 0 $?
"$PG" write "$T/w.pid" "$$" >/dev/null 2>&1; expect_status "write refuses a pidfile held by another live process" 3 $?
"$PG" write "$T/w2.pid" 3999999 >/dev/null 2>&1; expect_status "write of a pid that does not exist" 1 $?
"$PG" stop "$T/w.pid" >/dev/null; expect_status "stop what write recorded" 0 $?

# --- human output: no placeholders ---
out=$("$PG" stop "$T/missing.pid"); st=$?
expect_status "stop of a missing pidfile" 1 $st
case "$out" in *" - "*|*"[]"*) bad "placeholder in: $out";; *"no pidfile"*) ok "stop of a missing file says so: $out";; *) bad "stop missing: $out";; esac
out=$("$PG" status "$T/missing.pid"); case "$out" in *" - "*|*"[]"*|*" -,"*) bad "placeholder in: $out";; *) ok "status of a missing file: $out";; esac
out=$("$PG" cleanup "$T/empty"); case "$out" in "no pidfiles found under $T/empty"*) ok "empty cleanup says: $out";; *) bad "empty cleanup printed: $out";; esac
write_pidfile "$T/one2.pid" 1
"$PG" stop "$T/one2.pid" --lenient 2>"$T/one2.err" >/dev/null; st=$?
[ $st = 3 ] && ! grep -q warning "$T/one2.err" && ok "no lenient warning when the policy changed nothing (pid 1 refused)" || bad "pid 1 --lenient: $st $(cat "$T/one2.err")"

# --- progress line: on a terminal only, after a second ---
if command -v script >/dev/null; then
  mkdir -p "$T/slow"
  sp=$("$PG" run "$T/slow/on_slow.bg.pid" -- bash -c "trap '' TERM; sleep infinity & wait"); started+=("$sp")
  wait_term_handled "$sp" || bad "the slow hook never set its TERM trap"
  PGBIN="$PG" SLOWDIR="$T/slow" script -qec '"$PGBIN" cleanup "$SLOWDIR" --retry TERM/1.6/KILL/2 >/dev/null' /dev/null > "$T/tty.txt" 2>&1
  grep -q "cleanup: " "$T/tty.txt" && ok "a cleanup longer than 1 s shows a progress line on a terminal" || bad "no progress line: $(tr -d '\r' < "$T/tty.txt" | head -c 300)"
  sp=$("$PG" run "$T/slow/on_slow.bg.pid" -- bash -c "trap '' TERM; sleep infinity & wait"); started+=("$sp")
  wait_term_handled "$sp" || bad "the slow hook never set its TERM trap"
  "$PG" cleanup "$T/slow" --retry TERM/1.6/KILL/2 >/dev/null 2>"$T/pipe.err"
  [ ! -s "$T/pipe.err" ] && ok "no progress line when stderr is not a terminal" || bad "progress on a pipe: $(head -c 200 "$T/pipe.err")"
else
  echo "skip - progress line (no script(1) for a terminal)"
fi

# --- man page and completions, generated from the clap definition ---
man_src="$(dirname "$0")/../../cli/pidguard.1"
if [ -f "$man_src" ]; then
  "$PG" man | diff -q - "$man_src" >/dev/null && ok "cli/pidguard.1 is what 'pidguard man' generates" || bad "cli/pidguard.1 is stale: regenerate with 'target/debug/pidguard man > cli/pidguard.1'"
fi
"$PG" man | grep '^.SH "EXIT STATUS"' >/dev/null && ok "the man page has an EXIT STATUS section" || bad "man page without exit statuses"
for sh in bash zsh fish; do
  "$PG" completions $sh | grep "cleanup" >/dev/null && ok "completions for $sh" || bad "completions for $sh"
done

# --- demo ---
"$PG" demo > "$T/demo.txt" 2>&1; st=$?
expect_status "demo" 0 $st
grep -q "demo passed" "$T/demo.txt" && ok "demo says it passed" || { bad "demo output"; cat "$T/demo.txt"; }
# Not root: the demo uses an unprivileged user namespace (unshare -r) for a real reuse when the
# machine allows one.
if command -v setpriv >/dev/null && setpriv --reuid=65534 --regid=65534 --clear-groups unshare -r --pid --fork --mount-proc true 2>/dev/null; then
  U=$(mktemp -d /tmp/pidguard-demo-user-XXXXXX); cp "$PG" "$U/pidguard"; chmod 755 "$U" "$U/pidguard"; chown 65534:65534 "$U"
  (cd "$U" && setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$U" TMPDIR="$U" ./pidguard demo) > "$T/demo-user.txt" 2>&1; st=$?
  [ $st = 0 ] && grep "inside a private PID namespace" "$T/demo-user.txt" >/dev/null && grep "real reuse" "$T/demo-user.txt" >/dev/null \
    && ok "demo as a non-root user: a real reuse inside an unprivileged user namespace" || { bad "demo as non-root: exit $st"; cat "$T/demo-user.txt"; }
  rm -rf "$U"
else
  echo "skip - demo as non-root (no setpriv, or unprivileged user namespaces are not allowed here)"
fi

# --- the console examples of README.md and docs/cli.md, run as written ---
repo="$(cd "$(dirname "$0")/../.." && pwd)"
while IFS= read -r line; do
  case "$line" in "ok   - "*) ok "${line#ok   - }";; "FAIL - "*) bad "${line#FAIL - }";; *) echo "     $line";; esac
done < <(python3 "$repo/tests/cli/console_examples.py" "$PG" "$repo/README.md" "$repo/docs/cli.md" 2>&1)

# --- messages a newcomer meets ---
mkdir -p "$T/msg/dir.pid"
"$PG" stop "$T/msg/dir.pid" >/dev/null 2>"$T/msg.err"; st=$?
[ $st = 4 ] && grep "is a directory" "$T/msg.err" >/dev/null && ok "stop of a directory given as the pidfile: bad input (exit 4)" || bad "stop of a directory: $st $(cat "$T/msg.err")"
"$PG" status "$T/msg/dir.pid" >/dev/null 2>&1; expect_status "status of a directory given as the pidfile: bad input" 4 $?
for d in . .. / ./; do
  (cd "$T/msg" && "$PG" stop "$d" >/dev/null 2>&1); expect_status "stop '$d' (a directory with no file name): bad input" 4 $?
done
ln -s "$T/msg/dir.pid" "$T/msg/link.pid"
"$PG" stop "$T/msg/link.pid" >/dev/null 2>&1; expect_status "a symlink at the pidfile stays a refusal" 3 $?
"$PG" status "$T/msg/x.pid" --tolerance -3 >/dev/null 2>"$T/msg.err"; st=$?
# A negative tolerance admits no skew (core's check rule, the same in every surface): the
# missing file is answered (exit 1), and clap does not take -3 for a flag ('-- -3' tip).
[ $st = 1 ] && ! grep "tip:" "$T/msg.err" >/dev/null && ok "--tolerance -3: a number, answered by the check" || bad "--tolerance -3: $st $(cat "$T/msg.err")"
"$PG" stop "$T/msg/x.pid" --tolerance -3 >/dev/null 2>"$T/msg.err"; st=$?
[ $st = 4 ] && grep "tolerance must be finite seconds >= 0" "$T/msg.err" >/dev/null && ok "stop --tolerance -3: bad input (stop acts on the answer)" || bad "stop --tolerance -3: $st $(cat "$T/msg.err")"
# The option parity table (tests/operations/options.json), the same one every surface runs.
if python3 "$(dirname "$0")/options_parity.py" "$PG" > "$T/options.out"; then ok "$(tail -1 "$T/options.out")"; else bad "option parity: $(cat "$T/options.out")"; fi
"$PG" stop "$T/msg/none.pid" >/dev/null; expect_status "stop of a missing pidfile: nothing to do" 1 $?
"$PG" stop "$T/msg/none.pid" --oknodo >/dev/null; expect_status "stop --oknodo of a missing pidfile (a repeated stop) succeeds" 0 $?
printf '%s' 3999999 > "$T/msg/stale.pid"
"$PG" stop "$T/msg/stale.pid" --oknodo >/dev/null 2>&1; expect_status "stop --oknodo of a stale record succeeds" 0 $?
# A hand-written token-less pidfile whose mtime says nothing: could not be verified, not "not the process".
hp=$(spawn_group sleep infinity)
printf '%s\n' "$hp" > "$T/msg/hand.pid"; touch -d '-1 hour' "$T/msg/hand.pid"
out=$("$PG" stop "$T/msg/hand.pid"); st=$?
[ $st = 5 ] && case "$out" in *"could not be verified"*) true;; *) false;; esac && alive "$hp" \
  && ok "a token-less pidfile with an old mtime: could not be verified, nothing sent (exit 5)" || bad "hand-written pidfile: $st $out"
"$PG" stop "$T/msg/hand.pid" --lenient >/dev/null 2>&1; expect_status "--lenient stops it" 0 $?

# The CLI column of the operations table (tests/operations/operations.json): each named
# subcommand exists; an operation without one says why.
ops_table="$(dirname "$0")/../operations/operations.json"
if command -v node >/dev/null; then
  while IFS= read -r sub; do
    "$PG" "$sub" --help >/dev/null 2>&1 && ok "operations table: pidguard $sub exists" || bad "operations table: no subcommand $sub"
  done < <(node -e 'for (const o of JSON.parse(require("fs").readFileSync(process.argv[1])).operations) { if (o.cli) console.log(o.cli); else if (!o.cli_why) console.log("MISSING-" + o.op.replace(/ /g, "_")) }' "$ops_table" | sort -u)
else
  echo "skip - operations table (node is needed to read it)"
fi

echo "cli: $pass passed, $fail failed"
[ "$fail" = 0 ]
