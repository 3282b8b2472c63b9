#!/usr/bin/env bash
# System calls per `pidguard.validate_pid_file` of a token record from Python: the difference of
# 3,000 and 1,000 calls under `strace -f -c`, the record in a fresh directory under <base-dir>
# (three directories deep for /tmp/x). <pidguard-dir> holds a `pidguard` package (e.g. from `pip
# install --target`), <deps-dir> psutil; the interpreter is /usr/bin/python3, which nobody can
# run too. As root, or as nobody (`nobody`: <base-dir> must be nobody's).
#
#   bench/syscalls/validate.sh <pidguard-dir> <deps-dir> <base-dir> [nobody]
set -euo pipefail
py=$1; deps=$2; base=$3; user=${4:-root}
D=$(mktemp -d "$base/sv.XXXXXX"); chmod 755 "$D"
[ "$user" = nobody ] && chown 65534:65534 "$D"
run() { if [ "$user" = nobody ]; then setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "$@"; else "$@"; fi; }
setsid sleep 1000 < /dev/null > /dev/null 2>&1 & child=$!
trap 'kill $child; rm -rf "$D"' EXIT
run /usr/bin/python3 -c "
import sys; sys.path[:0] = sys.argv[1:3]
import pidguard, psutil
pidguard.write_pid_file_with_mtime(sys.argv[3], int(sys.argv[4]), psutil.Process(int(sys.argv[4])).create_time())
assert pidguard.validate_pid_file(sys.argv[3])" "$py" "$deps" "$D/tok.pid" "$child"
for n in 1000 3000; do
  run strace -f -c -o "$D/s.$n" /usr/bin/python3 -c "
import sys; sys.path[:0] = sys.argv[1:3]
import pidguard
for _ in range(int(sys.argv[4])):
    pidguard.validate_pid_file(sys.argv[3])" "$py" "$deps" "$D/tok.pid" "$n"
  awk 'NR>2 && $1 !~ /^-/ && $NF != "total" { print $NF, $4 }' "$D/s.$n" | sort > "$D/c.$n"
done
join -a1 -a2 -e0 -o 0,1.2,2.2 "$D/c.1000" "$D/c.3000" \
  | awk '{d=($3-$2)/2000; if (d>0.005) {printf "%-16s %6.2f\n",$1,d; t+=d}} END {printf "%-16s %6.2f\n","TOTAL",t}' | sort -k2 -nr
