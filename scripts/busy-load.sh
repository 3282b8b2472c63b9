#!/usr/bin/env bash
# A CPU load for the load tests and measurements (issue 45): N busy loops (`while :; do :; done`)
# in a cgroup v1 `pids` directory of their own (pids.max = N + 4, so nothing can fork beyond
# them), found in /proc/self/mountinfo. Ended by pid, never by name.
#
#   bash scripts/busy-load.sh start N STATE_DIR   start N loops; their pids go to STATE_DIR/pids
#   bash scripts/busy-load.sh stop STATE_DIR      end exactly those pids, remove the cgroup
set -euo pipefail
cmd=${1:?start N DIR | stop DIR}
case "$cmd" in
  start)
    n=${2:?N}; st=${3:?DIR}; mkdir -p "$st"
    V1=$(awk '{ for (i = 1; i <= NF; i++) if ($i == "-") { if ($(i+1) == "cgroup" && $(i+3) ~ /(^|,)pids(,|$)/) { print $5; exit } } }' /proc/self/mountinfo)
    CG2=$(awk '{ for (i = 1; i <= NF; i++) if ($i == "-") { if ($(i+1) == "cgroup2" && $4 == "/") { print $5; exit } } }' /proc/self/mountinfo)
    if [ -n "$V1" ]; then CG=$V1/pidguard-load-$$
    elif [ -n "$CG2" ] && grep -qw pids "$CG2/cgroup.subtree_control" 2>/dev/null; then CG=$CG2/pidguard-load-$$
    else echo "busy-load: no pids controller: refusing to start loops without a limit" >&2; exit 77; fi
    mkdir "$CG"; echo "$CG" > "$st/cgroup"; echo $((n + 4)) > "$CG/pids.max"
    : > "$st/pids"
    for _ in $(seq "$n"); do
      setsid sh -c 'echo $$ > "$1/cgroup.procs" && exec sh -c "while :; do :; done"' sh "$CG" </dev/null >/dev/null 2>&1 &
      echo $! >> "$st/pids"
    done
    ;;
  stop)
    st=${2:?DIR}
    for p in $(cat "$st/pids" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
    CG=$(cat "$st/cgroup" 2>/dev/null || true)
    if [ -n "$CG" ]; then
      for _ in $(seq 100); do [ -z "$(cat "$CG/cgroup.procs" 2>/dev/null)" ] && break; sleep 0.05; done
      rmdir "$CG" 2>/dev/null || echo "busy-load: could not remove $CG" >&2
    fi
    rm -rf "$st"
    ;;
esac
