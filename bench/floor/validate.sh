#!/usr/bin/env bash
# pidguard's validate_pid_file against the floor of its rules (bench/floor/floor_validate.c), as
# root and as nobody: builds the floor (cc -O2), `validate_loop` (bench/, release) and the Python
# extension (release) into target/bench, puts the extension in a package directory of its own
# (target/bench/floor/pyv, readable by nobody), counts every contender's system calls per check
# with `strace -f -c` (3,000 minus 1,000 checks: the floor must make what BENCHMARKS.md lists, 17
# as root and 11 as nobody), then runs bench/floor/bench_validate.py: interleaved rounds, CPU and
# wall per check and their ratios to the floor, with the load. Run it as root; nothing is
# installed. Python is /usr/bin/python3 (nobody cannot run the pyenv interpreter under /root).
#
#   bash bench/floor/validate.sh [bench_validate.py options: --n 20000 --rounds 7 --base /tmp --users root,nobody]
set -euo pipefail
cd "$(dirname "$0")/../.."
T=$PWD/target/bench
mkdir -p "$T/floor"
cc -O2 -Wall -Wextra -Werror -o "$T/floor/floor_validate" bench/floor/floor_validate.c
(cd bench && cargo build -q --release --locked --bin validate_loop --target-dir "$T")
cargo build -q --release --locked -p pidguard-py --target-dir "$T"
PYDIR=$T/floor/pyv
rm -rf "$PYDIR"; mkdir -p "$PYDIR"
cp -r py/python/pidguard "$PYDIR/pidguard"
cp "$T/release/libpidguard_py.so" "$PYDIR/pidguard/_pidguard.abi3.so"
chmod -R a+rX "$PYDIR"
B=(python3 bench/floor/bench_validate.py --floor "$T/floor/floor_validate" --rust "$T/release/validate_loop" --pypath "$PYDIR")
echo "== system calls per check =="
"${B[@]}" --strace "$@"
echo "== CPU and wall per check against the floor (interleaved) =="
"${B[@]}" "$@"
