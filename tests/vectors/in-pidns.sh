#!/bin/sh
# Run CMD [ARG...] inside a private PID namespace made for it (unshare --pid --fork --mount-proc):
#   pid 1  this script (a shell, reaps orphans)
#   pid 2  this script again, leader of a new session and process group (setsid)
#   pid 3  this script again: the caller's parent
#   pid 4  CMD, in the process group of pid 2
# so that the caller, its parent, its process group and PID 1 are four different processes, as
# the vector cases about them need. PIDGUARD_VECTORS_PIDNS tells the vector fixture the
# namespace's inode: only there does it force pids onto bystanders with ns_last_pid. Where no
# namespace can be made, CMD runs here and the pid-reuse cases are skipped.
case "$1" in
  --pid1) shift
    PIDGUARD_VECTORS_PIDNS=$(stat -L -c %i /proc/self/ns/pid)
    export PIDGUARD_VECTORS_PIDNS
    setsid sh "$0" --leader "$@"; exit $? ;;
  --leader) shift; sh "$0" --parent "$@"; exit $? ;;
  --parent) shift; "$@"; exit $? ;;
esac
if unshare --pid --fork --mount-proc true 2>/dev/null; then
  exec unshare --pid --fork --mount-proc sh "$0" --pid1 "$@"
fi
echo "(no private PID namespace here: the pid-reuse cases will be skipped)" >&2
exec "$@"
