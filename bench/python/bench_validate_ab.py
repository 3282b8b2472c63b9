"""Before/after in one run: validate_pid_file of a token record from Python, an older pidguard
against the newer one and the psutil way (bench_validate.py's), alternating rounds.

    python3 bench_validate_ab.py <rounds> <batch> <base-dir> <old-path> <new-path> [<deps-path>]

Each side is a persistent worker interpreter (the same executable as this script) with its own
PYTHONPATH: <old-path> or <new-path> (each holding a `pidguard` package, e.g. made with
`pip install --target`), then <deps-path> (psutil). All three judge the same token record (written
here with the newer build, into a fresh directory under <base-dir>, which must support user
xattrs) naming the same live child. Each round asks every worker for one batch of calls (garbage
collector off), timed by wall clock and by the worker thread's CPU time (`time.thread_time`: on a
busy machine it leaves out the time the worker waited for a core); the order of the sides reverses
every round. Run it as the user whose figures
you want (as root, the privileged path walk applies). Prints one JSON line: per-call medians and
quartiles per side (wall and CPU time), the ratios of the medians and the per-round ratios, the load average.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

WORKER = r'''
import gc, json, os, sys, time
path, side = sys.argv[1], sys.argv[2]
if side == "psutil":
    import psutil
    def psutil_validate(pid_file, tolerance=5.0):
        try:
            with open(pid_file, "rb") as f:
                pid = int(f.read().strip())
            mtime = os.stat(pid_file).st_mtime
            proc = psutil.Process(pid)
            with proc.oneshot():
                if proc.status() == psutil.STATUS_ZOMBIE:
                    return False
                return abs(proc.create_time() - mtime) <= tolerance
        except (OSError, ValueError, psutil.Error):
            return False
    f = lambda: psutil_validate(path)
    where = psutil.__file__
else:
    import pidguard
    f = lambda: pidguard.validate_pid_file(path)
    where = pidguard.__file__
assert f() is True, side
print(json.dumps({"side": side, "module": where}), flush=True)
gc.disable()
for line in sys.stdin:
    n = int(line)
    r = range(n)
    w, c = time.perf_counter(), time.thread_time()
    for _ in r:
        f()
    c, w = time.thread_time() - c, time.perf_counter() - w
    print(w / n * 1e6, c / n * 1e6, flush=True)
'''


def summary(xs):
    q = statistics.quantiles(xs, n=4)
    return {"median_us": statistics.median(xs), "q1_us": q[0], "q3_us": q[2], "min_us": min(xs), "max_us": max(xs)}


def main():
    rounds, batch, base, old_path, new_path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
    deps = sys.argv[6] if len(sys.argv) > 6 else ""
    sys.path[:0] = [new_path] + ([deps] if deps else [])
    import psutil
    import pidguard

    paths = {"old": old_path, "new": new_path, "psutil": new_path}
    load_start = open("/proc/loadavg").read().split()[:3]
    child = subprocess.Popen(["sleep", "100000"], start_new_session=True, stdin=subprocess.DEVNULL)
    workers = {}
    try:
        with tempfile.TemporaryDirectory(dir=base) as d:
            rec = os.path.join(d, "tok.pid")
            pidguard.write_pid_file_with_mtime(rec, child.pid, psutil.Process(child.pid).create_time())
            if "user.pidguard.token" not in os.listxattr(rec):
                sys.exit(f"bench_validate_ab: no user xattrs under {d}")
            modules = {}
            for side, p in paths.items():
                env = dict(os.environ, PYTHONPATH=":".join(x for x in (p, deps) if x))
                w = subprocess.Popen([sys.executable, "-c", WORKER, rec, side], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True)
                workers[side] = w
                modules[side] = json.loads(w.stdout.readline())["module"]
            times = {s: [] for s in paths}
            cpu = {s: [] for s in paths}
            order = list(paths)
            for r in range(rounds):
                for side in order if r % 2 == 0 else order[::-1]:
                    w = workers[side]
                    w.stdin.write(f"{batch}\n")
                    w.stdin.flush()
                    wall, c = map(float, w.stdout.readline().split())
                    times[side].append(wall)
                    cpu[side].append(c)
            med = {s: statistics.median(v) for s, v in times.items()}
            per_old_new = [a / b for a, b in zip(times["old"], times["new"])]
            per_ps_new = [a / b for a, b in zip(times["psutil"], times["new"])]
            per_ps_old = [a / b for a, b in zip(times["psutil"], times["old"])]
            print(json.dumps({
                "bench": "python_validate_ab", "case": "with_token", "euid": os.geteuid(), "rounds": rounds, "batch": batch,
                "python": sys.version.split()[0], "psutil_version": psutil.__version__, "record": rec, "modules": modules,
                **{s: summary(v) for s, v in times.items()},
                "new_over_old": med["new"] / med["old"], "psutil_over_new": med["psutil"] / med["new"], "psutil_over_old": med["psutil"] / med["old"],
                "per_round_new_over_old": statistics.median([1 / x for x in per_old_new]),
                "per_round_new_over_old_range": [min(1 / x for x in per_old_new), max(1 / x for x in per_old_new)],
                "per_round_psutil_over_new": statistics.median(per_ps_new),
                "per_round_psutil_over_old": statistics.median(per_ps_old),
                "cpu": {s: summary(v) for s, v in cpu.items()},
                "cpu_new_over_old": statistics.median(cpu["new"]) / statistics.median(cpu["old"]),
                "cpu_per_round_new_over_old": statistics.median([b / a for a, b in zip(cpu["old"], cpu["new"])]),
                "cpu_psutil_over_new": statistics.median(cpu["psutil"]) / statistics.median(cpu["new"]),
                "load_start": load_start, "load_end": open("/proc/loadavg").read().split()[:3],
            }))
    finally:
        for w in workers.values():
            w.stdin.close()
            w.wait()
        child.kill()
        child.wait()


if __name__ == "__main__":
    main()
