#!/usr/bin/env bash
# Run every pidguard benchmark (issues 9 and 16) and write BENCHMARKS.md-ready results to
# target/bench/results.md. With --write, also replace the results section of BENCHMARKS.md
# (between the `results:begin`/`results:end` markers). Not part of scripts/test.sh.
#
# Environment: BENCH_QUICK=1 for a short smoke run (fewer rounds and reps, N=1,000 stale files);
# BENCH_SKIP_PY_INSTALL=1 to use the binding already installed in .venv instead of `pip install ./py`.
# Release builds; the bench crate is its own workspace (bench/), built into target/. Python runs
# from the repository's own .venv (made when missing; never the system interpreter). The
# cleanup scenarios run inside a private PID namespace (`unshare --pid --fork --mount-proc`:
# root or user namespaces needed), so the pids that stale records name stay unused and no
# process outside is ever in the way.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=target/bench
WRITE=0
[ "${1:-}" = "--write" ] && WRITE=1
mkdir -p "$OUT"
rm -f "$OUT"/*.jsonl "$OUT"/commands.txt

if [ "${BENCH_QUICK:-0}" = 1 ]; then
  VAL="10 500"; REPS=1; EXIT_RUNS=1000; SCAN_N=1000; SCAN_REPS=2; PY="8 200"; CRIT="--warm-up-time 0.3 --measurement-time 1"
  CLEAN_N=1000; CLEAN_REPS=2; LIVE_N=200
else
  VAL="30 2000"; REPS=3; EXIT_RUNS=1000; SCAN_N=10000; SCAN_REPS=5; PY="30 500"; CRIT=""
  CLEAN_N=10000; CLEAN_REPS=4; LIVE_N=1000
fi

log() { echo "== $* ==" >&2; }
run() { # run and record a command line (relative to the repository root)
  echo "${PIDGUARD_BENCH_DIR:+PIDGUARD_BENCH_DIR=$PIDGUARD_BENCH_DIR }$*" >> "$OUT/commands.txt"
  "$@"
}

{
  echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit:  $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- core || echo ' (core modified)')"
  echo "cpu:     $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//') × $(nproc) online"
  echo "memory:  $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
  echo "kernel:  $(uname -sr) ($(uname -m))"
  echo "fs:      $(df -T target | awk 'NR==2 {print $2}') for target/ ($(awk '$2=="/" {print $4}' /proc/mounts)); tmpfs for /dev/shm"
  echo "rustc:   $(rustc -V)"
  echo "python:  $(python3 -V 2>&1)"
  echo "nofile:  soft $(ulimit -Sn), hard $(ulimit -Hn) (the library works within the soft limit)"
  echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min, at start)"
} > "$OUT/env.txt"

log "build (release)"
(cd bench && CARGO_TARGET_DIR="$ROOT/target" cargo build --release --bin scenarios --benches)
S=target/release/scenarios

PYV=.venv/bin/python
if [ "${BENCH_SKIP_PY_INSTALL:-0}" != 1 ]; then
  log "python binding (pip install ./py into .venv, release)"
  bash scripts/setup-python.sh
  .venv/bin/python -m pip install --quiet --disable-pip-version-check ./py
fi
# The benchmarks' Python is the project's .venv (psutil and the binding live there).
bash scripts/setup-python.sh
export PATH="$ROOT/.venv/bin:$PATH"
NS=(unshare --pid --fork --mount-proc)

log "criterion: validate_pid_file vs the syscall floor"
rm -rf target/criterion/validate_with_token target/criterion/validate_without_token target/criterion/floor_parts
# shellcheck disable=SC2086
run sh -c "cd bench && CARGO_TARGET_DIR=../target cargo bench --bench validate -- --noplot $CRIT" | tee "$OUT/criterion.txt" >&2

log "validate, alternating batches"
# shellcheck disable=SC2086
run $S validate $VAL | tee "$OUT/scenarios-validate.jsonl" >&2

log "python: pidguard vs the psutil way"
# shellcheck disable=SC2086
run $PYV bench/python/bench_validate.py $PY target | tee "$OUT/python.jsonl" >&2

if [ -f node/Cargo.toml ] && command -v node >/dev/null; then
  log "node: pidguard addon vs plain JS"
  cargo build --release -p pidguard-node
  cp target/release/libpidguard_node.so "$OUT/pidguard.node"
  # shellcheck disable=SC2086
  run node bench/node/bench_validate.js "$OUT/pidguard.node" $PY target | tee "$OUT/node.jsonl" >&2
fi

log "exit detection"
run $S exit $EXIT_RUNS | tee "$OUT/scenarios-exit.jsonl" >&2

tmpfs_ok=0
python3 -c 'import os,sys; p="/dev/shm/.pidguard-xattr-probe"; open(p,"w").close(); os.setxattr(p,"user.t",b"1"); os.unlink(p)' 2>/dev/null && tmpfs_ok=1

log "hooks that ignore SIGTERM, and $LIVE_N that exit on it (private PID namespace)"
for spec in "10 ignore" "50 ignore" "200 ignore" "$LIVE_N exit"; do
  set -- $spec
  run "${NS[@]}" $S hooks $1 $REPS $2 | tee -a "$OUT/scenarios-hooks-disk.jsonl" >&2
  if [ $tmpfs_ok = 1 ]; then
    PIDGUARD_BENCH_DIR=/dev/shm run "${NS[@]}" $S hooks $1 $REPS $2 | tee -a "$OUT/scenarios-hooks-tmpfs.jsonl" >&2
  fi
done

log "cleanup of $CLEAN_N stale records vs the seed's loop in Python, 1 and 100 per directory (private PID namespace)"
if [ $tmpfs_ok = 1 ]; then
  run "${NS[@]}" $PYV bench/python/bench_cleanup.py $CLEAN_N $CLEAN_REPS $S /dev/shm 1 100 | tee "$OUT/cleanup-stale-tmpfs.jsonl" >&2
fi
run "${NS[@]}" $PYV bench/python/bench_cleanup.py $CLEAN_N $CLEAN_REPS $S target 1 100 | tee "$OUT/cleanup-stale-disk.jsonl" >&2

log "scan of $SCAN_N stale pidfiles"
run "${NS[@]}" $S scan $SCAN_N $SCAN_REPS | tee "$OUT/scenarios-scan-disk.jsonl" >&2
if [ $tmpfs_ok = 1 ]; then
  PIDGUARD_BENCH_DIR=/dev/shm run "${NS[@]}" $S scan $SCAN_N $SCAN_REPS | tee "$OUT/scenarios-scan-tmpfs.jsonl" >&2
fi

python3 bench/report.py "$OUT" target/criterion > "$OUT/results.md"
log "results: $OUT/results.md"
cat "$OUT/results.md"

if [ $WRITE = 1 ]; then
  python3 - "$OUT/results.md" <<'EOF'
import sys, re
res = open(sys.argv[1]).read()
doc = open("BENCHMARKS.md").read()
b, e = "<!-- results:begin -->", "<!-- results:end -->"
if b not in doc or e not in doc:
    sys.exit("BENCHMARKS.md has no results markers")
head, rest = doc.split(b, 1)
_, tail = rest.split(e, 1)
open("BENCHMARKS.md", "w").write(head + b + "\n" + res + e + tail)
print("BENCHMARKS.md updated", file=sys.stderr)
EOF
fi
