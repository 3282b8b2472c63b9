#!/usr/bin/env bash
# One measurement series of issue 28's ratios, old build against new, in one run (BENCHMARKS.md,
# "Issue 28, second round"): validate_pid_file of a token record from Python as root and as
# nobody (bench_validate_ab.py, 40 rounds of 1,000 calls), then the cleanup of 10,000 stale
# records at 1 and at 100 per directory against the light and the seed loop
# (bench_cleanup_ab.py, 4 reps, inside a private PID namespace, on /dev/shm).
#
#   bench/python/series.sh <old-pidguard-dir> <new-pidguard-dir> <psutil-dir> <scenarios-binary> <out-dir> [series]
#
# Each <…-pidguard-dir> holds a `pidguard` package (see bench_cleanup_ab.py); <psutil-dir> holds
# psutil (`pip install --target`). Writes val-root-N.json, val-nobody-N.json, clean-1-N.json and
# clean-100-N.json into <out-dir> for N = 1..series (default 3); run as root (nobody's side uses
# setpriv and a directory under <out-dir> owned by nobody).
set -euo pipefail
old=$(realpath "$1"); new=$(realpath "$2"); deps=$(realpath "$3"); scen=$(realpath "$4"); out=$5; n=${6:-3}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
py="$root/.venv/bin/python"
mkdir -p "$out/vb" "$out/vbn"
out=$(realpath "$out")
chown nobody "$out/vbn"
chmod 755 "$out"
for s in $(seq "$n"); do
  echo "== series $s $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  "$py" "$here/bench_validate_ab.py" 40 1000 "$out/vb" "$old" "$new" "$deps" 2>/dev/null | tail -1 > "$out/val-root-$s.json"
  (cd /tmp && setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 "$here/bench_validate_ab.py" 40 1000 "$out/vbn" "$old" "$new" "$deps" 2>/dev/null | tail -1 > "$out/val-nobody-$s.json")
  for pd in 1 100; do
    unshare --pid --fork --mount-proc "$py" "$here/bench_cleanup_ab.py" 10000 4 "$scen" /dev/shm "$pd" "$old" "$new" light,seed,old,new 2>/dev/null | tail -1 > "$out/clean-$pd-$s.json"
  done
done
echo "== done $(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
