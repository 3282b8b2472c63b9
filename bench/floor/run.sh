#!/usr/bin/env bash
# pidguard's cleanup against the floor of its rules (bench/floor/floor_cleanup.c): builds the
# floor (cc -O2), the `scenarios` bench binary, the CLI and the Python extension (release), checks
# the floor's system calls per stale record with `strace -f -c` (difference of N2 and N1 records
# over N2 - N1, as bench/syscalls/stale.sh does for pidguard), then runs bench/floor/bench.py
# inside a private PID namespace (the records' pids stay dead). Release builds go to
# target/bench; nothing is installed.
#
#   bash bench/floor/run.sh [bench.py options: --n 10000 --per-dir 1,100 --rounds 5 --base /dev/shm]
set -euo pipefail
cd "$(dirname "$0")/../.."
T=$PWD/target/bench
mkdir -p "$T/floor"
cc -O2 -Wall -Wextra -Werror -o "$T/floor/floor_cleanup" bench/floor/floor_cleanup.c
(cd bench && cargo build -q --release --locked --bin scenarios --target-dir "$T")
cargo build -q --release --locked -p pidguard-cli -p pidguard-py --target-dir "$T"
# The Python package with the release extension, in a directory of its own.
PYDIR=$T/floor/py
rm -rf "$PYDIR"; mkdir -p "$PYDIR"
cp -r py/python/pidguard "$PYDIR/pidguard"
cp "$T/release/libpidguard_py.so" "$PYDIR/pidguard/_pidguard.abi3.so"
bash scripts/setup-python.sh >/dev/null
PY=$PWD/.venv/bin/python

echo "== system calls per stale record (strace -f -c, 2000 minus 1000 records) =="
D=$(mktemp -d /dev/shm/pidguard-floor-strace.XXXXXX)
trap 'rm -rf "$D"' EXIT
for per in 1 100; do
  unshare --pid --fork --mount-proc bash -s "$T" "$per" "$D" <<'SH'
T=$1; per=$2; D=$3
for n in 1000 2000; do
  rm -rf "$D/out"; "$T/release/scenarios" make-stale "$D/out" "$n" "$per" >/dev/null; : > "$D/index.jsonl"
  strace -f -c -o "$D/s.$n" "$T/floor/floor_cleanup" "$D/out" "$D/index.jsonl" >/dev/null
  awk 'NR>2 && $1 !~ /^-/ && $NF != "total" { print $NF, $4 }' "$D/s.$n" | sort > "$D/c.$n"
done
join -a1 -a2 -e0 -o 0,1.2,2.2 "$D/c.1000" "$D/c.2000" \
  | awk -v per="$per" '{d=($3-$2)/1000; if (d>0.005) {printf "  %-14s %6.2f\n",$1,d; t+=d}} END {printf "floor, %d per directory: %.2f calls per record (BENCHMARKS.md lists 24 at 1, 20.04 at 100)\n",per,t}'
SH
done

echo "== CPU and wall per record against the floor (interleaved, fresh trees) =="
unshare --pid --fork --mount-proc "$PY" bench/floor/bench.py --floor "$T/floor/floor_cleanup" \
  --scenarios "$T/release/scenarios" --cli "$T/release/pidguard" --python "$PY" --pypath "$PYDIR" "$@"
