#!/usr/bin/env bash
# System calls per stale record of `cleanup_background_hooks`: `scenarios make-stale` then
# `strace -f -c scenarios clean`, of N1 and of N2 records, both inside one private PID namespace
# (the records' pids stay dead), on /dev/shm; prints (count at N2 - count at N1) / (N2 - N1) by
# system call. Thread synchronisation of the pool (futex, sched_yield, mprotect) is listed too.
#
#   bench/syscalls/stale.sh <scenarios-binary> <per_dir> [N1 N2]     (defaults 1000 2000)
set -euo pipefail
bin=$(realpath "$1"); per=$2; n1=${3:-1000}; n2=${4:-2000}
D=$(mktemp -d /dev/shm/pidguard-strace-stale.XXXXXX)
trap 'rm -rf "$D"' EXIT
unshare --pid --fork --mount-proc bash -s "$bin" "$per" "$n1" "$n2" "$D" <<'SH'
bin=$1; per=$2; D=$5
for n in "$3" "$4"; do
  rm -rf "$D/out"; "$bin" make-stale "$D/out" "$n" "$per" >/dev/null; : > "$D/index.jsonl"
  strace -f -c -o "$D/s.$n" "$bin" clean "$D/out" "$D/index.jsonl" >/dev/null 2>&1
  awk 'NR>2 && $1 !~ /^-/ && $NF != "total" { print $NF, $4 }' "$D/s.$n" | sort > "$D/c.$n"
done
SH
join -a1 -a2 -e0 -o 0,1.2,2.2 "$D/c.$n1" "$D/c.$n2" \
  | awk -v n=$((n2 - n1)) '{d=($3-$2)/n; if (d>0.005 || d<-0.005) {printf "%-16s %7.2f\n",$1,d; t+=d}} END {printf "%-16s %7.2f\n","TOTAL",t}' | sort -k2 -nr
