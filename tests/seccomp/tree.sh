#!/bin/sh
# The tree of tests/seccomp/stop_tests.sh: `tree.sh DIR` is the recorded process (it becomes
# `sleep`), with a plain child, a setsid grandchild and a double-forked setsid daemon; each
# writes its pid into DIR (child, grandchild, daemon) once it is in place.
case "$1" in
  grandchild) echo $$ > "$2/grandchild.tmp" && mv "$2/grandchild.tmp" "$2/grandchild"; exec sleep 4301 ;;
  daemon1) setsid "$0" daemon2 "$2" </dev/null >/dev/null 2>&1 & exit 0 ;;
  daemon2) echo $$ > "$2/daemon.tmp" && mv "$2/daemon.tmp" "$2/daemon"; exec sleep 4302 ;;
esac
d=$1
sleep 4300 &
echo $! > "$d/child.tmp" && mv "$d/child.tmp" "$d/child"
setsid "$0" grandchild "$d" &
"$0" daemon1 "$d"
exec sleep 4303
