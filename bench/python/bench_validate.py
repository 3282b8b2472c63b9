"""validate_pid_file from Python: pidguard versus the psutil way, alternating in one run.

Both sides judge the same two pidfiles naming the same live child: one written by pidguard
(with the ``user.pidguard.token`` xattr) and one with only the pid and the mtime, as the Python
original writes it. Each round times ``BATCH`` calls of one side, then ``BATCH`` of the other
(timeit, garbage collector off); the figures are per call. Prints one JSON object per case.

Usage: python3 bench_validate.py [rounds] [batch] [dir]   (dir must support user xattrs)
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import timeit

import psutil

import pidguard


def psutil_validate(pid_file, tolerance=5.0):
    """The psutil way, written as a competent user would: read and parse the pidfile, compare
    the process's create time with the file's mtime, and refuse a zombie (it has exited)."""
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


def summary(per_call_us):
    q = statistics.quantiles(per_call_us, n=4)
    return {
        "median_us": statistics.median(per_call_us),
        "q1_us": q[0],
        "q3_us": q[2],
        "min_us": min(per_call_us),
        "max_us": max(per_call_us),
    }


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    batch = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    base = sys.argv[3] if len(sys.argv) > 3 else None
    child = subprocess.Popen(["sleep", "100000"], start_new_session=True, stdin=subprocess.DEVNULL)
    try:
        with tempfile.TemporaryDirectory(dir=base) as d:
            ct = psutil.Process(child.pid).create_time()
            with_token = os.path.join(d, "tok.pid")
            pidguard.write_pid_file_with_mtime(with_token, child.pid, ct)
            if "user.pidguard.token" not in os.listxattr(with_token):
                sys.exit(f"bench_validate: no user xattrs under {d}")
            without_token = os.path.join(d, "notok.pid")
            with open(without_token, "w") as f:
                f.write(str(child.pid))
            os.utime(without_token, (ct, ct))
            for case, path in (("with_token", with_token), ("without_token", without_token)):
                assert pidguard.validate_pid_file(path) is True
                assert psutil_validate(path) is True
                pg = lambda: pidguard.validate_pid_file(path)  # noqa: E731
                ps = lambda: psutil_validate(path)  # noqa: E731
                a, b = [], []
                for _ in range(rounds):
                    a.append(timeit.timeit(pg, number=batch) / batch * 1e6)
                    b.append(timeit.timeit(ps, number=batch) / batch * 1e6)
                ratios = [y / x for x, y in zip(a, b)]
                print(json.dumps({
                    "bench": "python_validate",
                    "case": case,
                    "rounds": rounds,
                    "batch": batch,
                    "python": sys.version.split()[0],
                    "psutil_version": psutil.__version__,
                    "pidguard": summary(a),
                    "psutil": summary(b),
                    "ratio_of_medians": statistics.median(b) / statistics.median(a),
                    "ratio_median_per_round": statistics.median(ratios),
                }))
    finally:
        child.kill()
        child.wait()


if __name__ == "__main__":
    main()
