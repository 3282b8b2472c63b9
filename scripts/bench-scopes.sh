#!/usr/bin/env bash
# What a scope costs (issue 25), each figure against a peer measured in the same run (see
# BENCHMARKS.md, "Scopes"): the cost a scope adds to a spawn, stopping a 200-process tree against
# the schedule's bound and against today's process-group stop, and the supervisor's memory.
# Writes target/bench/scopes.md (tables) and target/bench/scopes.jsonl (one object per
# measurement). Release builds. Needs root (a cgroup v2 leaf) and a private PID namespace
# (`unshare --pid --fork --mount-proc`); not part of scripts/test.sh.
#
#   bash scripts/bench-scopes.sh            ~3 min
#   BENCH_QUICK=1 bash scripts/bench-scopes.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=target/bench
mkdir -p "$OUT"
rm -f "$OUT/scopes.jsonl"
if [ "${BENCH_QUICK:-0}" = 1 ]; then ROUNDS=3; PER=10; REPS=1; else ROUNDS=10; PER=20; REPS=3; fi
(cd bench && CARGO_TARGET_DIR="$ROOT/target" cargo build -q --release --bin scopes)
cargo build -q --release -p pidguard-cli
# The supervisor program (core/src/bin/pidguard-scope.rs), found beside the spawning executable.
cargo build -q --release -p pidguard-core --bin pidguard-scope
S=$ROOT/target/release/scopes
CLI=$ROOT/target/release/pidguard
NS=(unshare --pid --fork --mount-proc)
{
  echo "date $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- core || echo ' (core modified)'), $(nproc) CPUs, kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg) at start"
  echo
  echo "#### spawn: $ROUNDS alternating rounds, $((PER / 4)) spawns of each kind per round 100 ms apart (as hooks are), then $PER in a burst"
  echo
  "${NS[@]}" "$S" spawn "$ROUNDS" "$((PER / 4))" 100 "$CLI" 2>>"$OUT/scopes.jsonl"
  echo
  "${NS[@]}" "$S" spawn "$ROUNDS" "$PER" 0 "$CLI" 2>>"$OUT/scopes.jsonl"
  echo
  echo "#### spawn as another user (issue 44): as nobody against as the caller, $ROUNDS alternating rounds of $((PER / 4)), 100 ms apart"
  echo
  "${NS[@]}" "$S" user "$ROUNDS" "$((PER / 4))" 100 2>>"$OUT/scopes.jsonl"
  echo
  echo "#### what a leaf's spawn cost is made of (a child that only exits)"
  echo
  "${NS[@]}" "$S" mechanism 30 100 2>>"$OUT/scopes.jsonl"
  echo
  "${NS[@]}" "$S" mechanism 200 0 2>>"$OUT/scopes.jsonl"
  echo
  echo "#### stopping a 200-process tree, TERM/2/KILL/1 (bound 3 s), $REPS alternating reps"
  echo
  "${NS[@]}" "$S" stop 200 "$REPS" 2>>"$OUT/scopes.jsonl"
  echo
  echo "#### the supervisor's memory"
  echo
  "${NS[@]}" "$S" memory "$CLI" 64 2>>"$OUT/scopes.jsonl"
} | tee "$OUT/scopes.md"
