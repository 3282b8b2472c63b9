"""`pidguard cleanup DIR --index FILE` of 10,000 stale records by two or more builds of the
command, alternating, each rep on fresh records (`scenarios make-stale`) on /dev/shm; prints the
median wall and CPU time (the child's rusage) and the peak RSS per build, and the ratios to the
first build. Run inside a private PID namespace (the records' pids stay dead):

    unshare --pid --fork --mount-proc python3 bench/python/cli_cleanup_ab.py <per_dir> <reps> <scenarios> <pidguard>...
"""
import os, sys, subprocess, statistics, shutil, time
per, reps, scen, bins = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4:]
res = {b: ([], [], []) for b in bins}
for r in range(reps):
    for b in (bins if r % 2 == 0 else bins[::-1]):
        shutil.rmtree("/dev/shm/pcli", ignore_errors=True); os.makedirs("/dev/shm/pcli")
        subprocess.run([scen, "make-stale", "/dev/shm/pcli/out", "10000", str(per)], check=True, stdout=subprocess.DEVNULL)
        t = time.perf_counter()
        p = subprocess.Popen([b, "cleanup", "/dev/shm/pcli/out", "--index", "/dev/shm/pcli/index.jsonl"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, st, ru = os.wait4(p.pid, 0); w = time.perf_counter() - t
        assert os.waitstatus_to_exitcode(st) in (0, 1), st
        n = sum(1 for _ in open("/dev/shm/pcli/index.jsonl"))
        assert n == 20000, n
        res[b][0].append(w); res[b][1].append(ru.ru_utime + ru.ru_stime); res[b][2].append(ru.ru_maxrss)
base = bins[0]
for b in bins:
    w, c, m = res[b]
    print(f"{os.path.basename(b):10} per_dir {per}: wall {1000*statistics.median(w):6.1f} ms cpu {1000*statistics.median(c):6.1f} ms maxrss {max(m)/1024:.0f} MiB | {os.path.basename(base)}/this wall {statistics.median(res[base][0])/statistics.median(w):.3f} cpu {statistics.median(res[base][1])/statistics.median(c):.3f}")
print("load", open("/proc/loadavg").read().split()[:3])
