#!/bin/busybox sh
# /init of scripts/kernel-6.1.sh's initramfs: Debian 12's kernel (6.1) under qemu. Mounts the
# cgroup layout named on the kernel command line (pglayout=v2: cgroup2 only; pglayout=hybrid: a
# v1 pids hierarchy beside cgroup2 at /sys/fs/cgroup/unified, as on systemd's hybrid hosts),
# puts /tmp on ext4 (6.1's tmpfs has no user xattrs), runs the suites listed in /suites.txt
# and prints one "RESULT|suite|passed|failed|note" line each, then powers off.
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin:/usr/sbin HOME=/root
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /tmp /root
layout=$(sed -n 's/.*pglayout=\([a-z0-9]*\).*/\1/p' /proc/cmdline)
case $layout in
  hybrid)
    mount -t tmpfs cgroup /sys/fs/cgroup
    mkdir -p /sys/fs/cgroup/pids /sys/fs/cgroup/unified
    mount -t cgroup -o pids pids /sys/fs/cgroup/pids
    mount -t cgroup2 cgroup2 /sys/fs/cgroup/unified ;;
  *) mount -t cgroup2 cgroup2 /sys/fs/cgroup ;;
esac
insmod /modules/loop.ko 2>/dev/null
mount -o loop -t ext4 /ext4.img /tmp || echo "RESULT|setup|0|1|no ext4 /tmp: pidfiles there carry no token"
chmod 1777 /tmp
echo "KERNEL $(uname -r) layout=$layout cgroup2-controllers: $(cat /sys/fs/cgroup/cgroup.controllers /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null)"

# Which paths this kernel takes, as pidguard reports them.
P=$(cat /pidguard-path)
$P run --scope group --json /tmp/path.pid -- sleep 100 > /tmp/path.run 2>&1
sleep 0.3
tok=$($P status --json /tmp/path.pid | sed -n 's/.*"token":"\([^"]*\)".*/\1/p')
mode=$($P stop --json /tmp/path.pid | sed -n 's/.*"group_mode":"\{0,1\}\([a-z_-]*\).*/\1/p')
case "$tok" in *:-) ino="no pidfs inode: start ticks decide" ;; "") ino="no token read" ;; *) ino="pidfs inode in the token" ;; esac
echo "RESULT|paths|-|-|identity: $ino; group signal: ${mode:-?}; scope of run: $(sed -n 's/.*"scope":"\([a-z]*\)".*/\1/p' /tmp/path.run)"
rm -f /tmp/path.*

while IFS='|' read -r name cmd; do
  [ -z "$name" ] && continue
  t0=$(date +%s)
  sh -c "$cmd" > /tmp/suite.log 2>&1
  rc=$?
  t=$(( $(date +%s) - t0 ))
  case $name in
    core:*|c:*)
      p=$(sed -n 's/^test result: .*\. \([0-9]*\) passed; \([0-9]*\) failed.*/\1/p' /tmp/suite.log | tail -1)
      f=$(sed -n 's/^test result: .*\. \([0-9]*\) passed; \([0-9]*\) failed.*/\2/p' /tmp/suite.log | tail -1) ;;
    torture)
      p=$(sed -n 's/.*rounds=\([0-9]*\).*/\1/p' /tmp/suite.log | tail -1)
      f=$(sed -n 's/.*failures=\([0-9]*\).*/\1/p' /tmp/suite.log | tail -1) ;;
    *)
      p=$(sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed.*/\1/p' /tmp/suite.log | tail -1)
      f=$(sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed.*/\2/p' /tmp/suite.log | tail -1) ;;
  esac
  note="${t}s, exit $rc"
  [ "$name" = torture ] && note="$note; $(grep -o 'same_tick=[0-9]* pidfs_decided=[0-9]*' /tmp/suite.log | tail -1)"
  [ -z "$p" ] && { p=0; f=1; note="$note, no summary line"; }
  echo "RESULT|$name|$p|$f|$note"
  if [ "$f" != 0 ] || [ "$rc" != 0 ]; then
    grep -E '^(FAIL|test .* FAILED|---- |thread .* panicked|reuse-torture: FAIL)' /tmp/suite.log | head -20 | sed 's/^/  | /'
  fi
done < /suites.txt
echo "ALL-DONE"
poweroff -f
