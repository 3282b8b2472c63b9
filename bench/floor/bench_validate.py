"""pidguard's validate_pid_file against the floor of its rules, interleaved, as root and as nobody.

The floor is bench/floor/floor_validate.c: a single-threaded C program that makes only the system
calls the rules need for a check of a token record (BENCHMARKS.md lists them) and makes the same
judgement. Each round runs, for each caller (root, then nobody through `setpriv`) and for every
contender in turn (the order rotates each round), one fresh process that checks the caller's
own record N times (after WARM untimed checks):

- ``floor``   the C program
- ``rust``    `validate_loop` (bench/src/bin/validate_loop.rs): `pidguard::validate_pid_file`
- ``python``  `pidguard.validate_pid_file(path)` in a loop, in /usr/bin/python3 (which nobody
  can run too), the release extension from --pypath

Each measures itself the same way, around its loop only: CPU from CLOCK_PROCESS_CPUTIME_ID
(Python: `time.process_time`), wall from CLOCK_MONOTONIC. Every check must answer valid: a round
where one did not is an error, not a figure. Prints per caller and contender the median CPU and
wall per check and the medians of each round's ratio to the floor of the same round and caller,
with the load average before and after; `--json FILE` keeps every round.

The records: a live `sleep infinity` of the caller, in its own session; its record written by
pidguard (`write_pid_file_with_mtime`, so with the start token) as the caller, at
BASE/pidguard-floor-v.<caller>/tmpXXXXXXXX/tok.pid (root's directories down to the last, which
is the caller's: the shape BENCHMARKS.md's calls are counted on).

    python3 bench/floor/bench_validate.py --floor BIN --rust BIN --pypath DIR
        [--n 20000] [--warm 200] [--rounds 7] [--base /tmp] [--users root,nobody] [--json FILE]
        [--strace]   (count each contender's system calls per check instead: strace -f -c)
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

NOBODY = 65534
SETPRIV = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--inh-caps=-all"]
PYTHON = "/usr/bin/python3"

PY_LOOP = r"""
import gc, json, sys, time
sys.path.insert(0, sys.argv[1])
import pidguard
path, n, warm = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
v = pidguard.validate_pid_file
for _ in range(warm):
    assert v(path) is True, path
gc.disable()
r = range(n)
valid = 0
w0, c0 = time.monotonic(), time.process_time()
for _ in r:
    valid += v(path)
c1, w1 = time.process_time(), time.monotonic()
k = 1e6 / n
print(json.dumps({"contender": "python", "n": n, "valid": valid, "cpu_us": (c1 - c0) * k, "wall_us": (w1 - w0) * k}))
"""

PY_WRITE = r"""
import sys
sys.path.insert(0, sys.argv[1])
import pidguard
pid = int(sys.argv[3])
pidguard.write_pid_file_with_mtime(sys.argv[2], pid, pidguard.lookup(pid).create_time)
assert pidguard.validate_pid_file(sys.argv[2])
"""


def as_user(user, argv):
    return argv if user == "root" else SETPRIV + argv


def run(argv):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{argv} failed ({p.returncode}): {p.stderr[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


class Record:
    """A live `sleep infinity` of `user` and its token record, written by pidguard as `user`."""

    def __init__(self, user, base, pypath):
        self.top = os.path.join(base, f"pidguard-floor-v.{user}")
        os.makedirs(self.top, exist_ok=True)
        os.chmod(self.top, 0o755)
        self.dir = tempfile.mkdtemp(dir=self.top)
        os.chmod(self.dir, 0o755)
        if user != "root":
            os.chown(self.dir, NOBODY, NOBODY)
        self.path = os.path.join(self.dir, "tok.pid")
        self.child = subprocess.Popen(as_user(user, ["setsid", "sleep", "infinity"]), stdin=subprocess.DEVNULL)
        pid = self.child.pid  # setsid execs in place: it is the sleep (we are not a group leader)
        subprocess.run(as_user(user, [PYTHON, "-c", PY_WRITE, pypath, self.path, str(pid)]), check=True)

    def close(self):
        self.child.kill()
        self.child.wait()
        shutil.rmtree(self.top, ignore_errors=True)


def count_calls(user, argv_of, rec, tmp):
    """System calls per check of one contender: `strace -f -c` of 3,000 and of 1,000 checks (no
    warm-up), the difference over 2,000. Returns ({call: per check}, total)."""
    counts = {}
    for n in (1000, 3000):
        out = os.path.join(tmp, f"strace.{n}")
        if os.path.exists(out):
            os.unlink(out)
        p = subprocess.run(as_user(user, ["strace", "-f", "-c", "-o", out] + argv_of(rec, n, 0)), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            raise SystemExit(f"strace of {argv_of(rec, n, 0)} as {user} failed ({p.returncode}): {p.stderr[-2000:]}")
        c = {}
        for line in open(out).read().splitlines()[2:]:
            f = line.split()
            if len(f) >= 5 and not f[0].startswith("-") and f[-1] != "total":
                c[f[-1]] = int(f[3])
        counts[n] = c
    per = {k: (counts[3000].get(k, 0) - counts[1000].get(k, 0)) / 2000 for k in set(counts[1000]) | set(counts[3000])}
    per = {k: v for k, v in per.items() if v > 0.005}
    return per, sum(per.values())


def loadavg():
    return os.getloadavg()[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--floor", required=True)
    ap.add_argument("--rust", required=True)
    ap.add_argument("--pypath", required=True)
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--warm", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--base", default="/tmp")
    ap.add_argument("--users", default="root,nobody")
    ap.add_argument("--contenders", default="floor,rust,python")
    ap.add_argument("--json")
    ap.add_argument("--strace", action="store_true", help="count each contender's system calls per check instead")
    args = ap.parse_args()
    users = args.users.split(",")
    names = args.contenders.split(",")
    assert names[0] == "floor", "the floor comes first in --contenders (the ratios' base)"
    records = {u: Record(u, args.base, args.pypath) for u in users}
    argv_of = {
        "floor": lambda rec, n, warm: [args.floor, rec.path, str(n), str(warm)],
        "rust": lambda rec, n, warm: [args.rust, rec.path, str(n), str(warm)],
        "python": lambda rec, n, warm: [PYTHON, "-c", PY_LOOP, args.pypath, rec.path, str(n), str(warm)],
    }
    argv = {k: (lambda f: lambda rec: f(rec, args.n, args.warm))(f) for k, f in argv_of.items()}
    if args.strace:
        try:
            print("System calls per check (strace -f -c, 3,000 minus 1,000 checks):")
            for user in users:
                for name in names:
                    per, total = count_calls(user, argv_of[name], records[user], records[user].dir)
                    calls = ", ".join(f"{k} {v:g}" for k, v in sorted(per.items(), key=lambda kv: (-kv[1], kv[0])))
                    print(f"  {user:6} {name:6} {total:5.2f}  ({calls})")
        finally:
            for rec in records.values():
                rec.close()
        return
    rows = []
    load0 = loadavg()
    try:
        for r in range(args.rounds):
            for user in users:
                order = names[r % len(names):] + names[: r % len(names)]
                got = {}
                for name in order:
                    res = run(as_user(user, argv[name](records[user])))
                    if res["valid"] != args.n:
                        raise SystemExit(f"{name} as {user}: {res['valid']} of {args.n} checks valid")
                    got[name] = res
                for name in names:
                    rows.append({"round": r, "user": user, "contender": name, "load": loadavg(), **got[name],
                                 "cpu_ratio": got[name]["cpu_us"] / got["floor"]["cpu_us"],
                                 "wall_ratio": got[name]["wall_us"] / got["floor"]["wall_us"]})
            print(f"round {r + 1}/{args.rounds} done, load {loadavg():.2f}", file=sys.stderr, flush=True)
    finally:
        for rec in records.values():
            rec.close()
    load1 = loadavg()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    med = statistics.median
    print(f"validate_pid_file of a token record: {args.rounds} rounds x {args.n} checks per contender; "
          f"load (1 min) {load0:.2f} -> {load1:.2f}")
    # Issue 36's goals: CPU <= 1.1x the floor from Rust, <= 1.15x from Python, as root and nobody.
    goal = {"rust": 1.10, "python": 1.15}
    print("| caller | contender | CPU µs/check | × floor (median of rounds; min–max) | wall µs/check | × floor | goal |")
    print("|---|---|---|---|---|---|---|")
    for user in users:
        for name in names:
            rs = [x for x in rows if x["user"] == user and x["contender"] == name]
            cr = [x["cpu_ratio"] for x in rs]
            print(f"| {user} | {name} | {med(x['cpu_us'] for x in rs):.2f} | {med(cr):.3f} ({min(cr):.3f}–{max(cr):.3f}) | "
                  f"{med(x['wall_us'] for x in rs):.2f} | {med(x['wall_ratio'] for x in rs):.3f} | "
                  + (f"≤ {goal[name]}: {'met' if med(cr) <= goal[name] else 'missed'} |" if name in goal else "— |"))


if __name__ == "__main__":
    main()
