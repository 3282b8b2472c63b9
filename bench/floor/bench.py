"""pidguard's cleanup against the floor of its rules, interleaved on fresh trees.

The floor is bench/floor/floor_cleanup.c: a single-threaded C program that makes only the system
calls BENCHMARKS.md lists for a stale record. Each round makes, for every contender in turn (the
order rotates each round), a fresh tree of N stale records (`scenarios make-stale`) and cleans it:

- ``floor``  the C program (CPU of the whole process from wait4, as for the two below; its wall as
  it measures it around its cleanup)
- ``rust``   `scenarios clean` (the Rust library; CPU of the whole process from wait4)
- ``cli``    `pidguard cleanup DIR --index INDEX --json` (CPU of the whole process from wait4)
- ``python`` `pidguard.cleanup_background_hooks(dir, index)` in a fresh interpreter (CPU of the
  call: `time.process_time` around it, the import excluded)

and prints per contender the median CPU and wall per record, and the ratios to the floor of the
same round (medians of the per-round ratios), with the load average. Run it inside a private PID
namespace (bench/floor/run.sh does) so the records' pids stay dead. Every contender must remove
every record: a round where one did not is an error, not a figure.

    python3 bench/floor/bench.py --floor BIN --scenarios BIN --cli BIN --python PY --pypath DIR
        [--n 10000] [--per-dir 1,100] [--rounds 5] [--base /dev/shm]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

PY_CLEAN = r"""
import json, sys, time
import pidguard
t0, w0 = time.process_time(), time.monotonic()
reports = pidguard.cleanup_background_hooks(sys.argv[1], sys.argv[2], True)
cpu, wall = time.process_time() - t0, time.monotonic() - w0
removed = sum(1 for r in reports if r.outcome == "stale" and r.pid_file_removed)
print(json.dumps({"removed": removed, "cpu_s": cpu, "wall_s": wall}))
"""


def run_child(argv, env=None):
    """Run argv to its end; return (stdout, CPU seconds of the whole child, wall seconds).

    The CPU is the child's own rusage from wait4 (user + system, microseconds), not os.times()
    (clock ticks: 10 ms steps)."""
    w0 = time.monotonic()
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, env=env)
        out = p.stdout.read()
        p.stdout.close()
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - w0
        if p.returncode != 0:
            err.seek(0)
            raise SystemExit(f"{argv[0]} failed ({p.returncode}): {err.read().decode(errors='replace')[-2000:]}")
    return out.decode(), ru.ru_utime + ru.ru_stime, wall


def count_files(root):
    return sum(1 for _, _, files in os.walk(root) for f in files if f.endswith(".pid"))


def one(name, args, tree, index, n):
    """Clean `tree` with contender `name`; returns (cpu_s, wall_s)."""
    if name == "floor":
        # Whole-process CPU, like `rust` and `cli`: the floor's exec and exit count as theirs do.
        out, cpu, _ = run_child([args.floor, tree, index])
        r = json.loads(out.strip().splitlines()[-1])
        wall, removed = r["wall_s"], r["removed"]
    elif name == "rust":
        out, cpu, wall = run_child([args.scenarios, "clean", tree, index])
        r = json.loads(out.strip().splitlines()[-1])
        removed, wall = r["stale_removed"], r["wall_s"]
    elif name == "cli":
        out, cpu, wall = run_child([args.cli, "cleanup", tree, "--index", index, "--json"])
        removed = n - count_files(tree)
    elif name == "python":
        env = dict(os.environ, PYTHONPATH=args.pypath)
        out, _, _ = run_child([args.python, "-c", PY_CLEAN, tree, index], env=env)
        r = json.loads(out.strip().splitlines()[-1])
        cpu, wall, removed = r["cpu_s"], r["wall_s"], r["removed"]
    else:
        raise ValueError(name)
    left = count_files(tree)
    if removed != n or left:
        raise SystemExit(f"{name}: removed {removed} of {n} records, {left} pidfiles left in {tree}")
    return cpu, wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--floor", required=True)
    ap.add_argument("--scenarios", required=True)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--pypath", required=True, help="directory holding the release `pidguard` package")
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--per-dir", default="1,100")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--base", default="/dev/shm")
    ap.add_argument("--only", default="floor,rust,cli,python")
    args = ap.parse_args()
    names = args.only.split(",")
    assert names[0] == "floor", "the floor is measured in every round"
    work = os.path.join(args.base, f"pidguard-floor-{os.getpid()}")
    os.makedirs(work)
    results = {}
    try:
        for per in [int(x) for x in args.per_dir.split(",")]:
            rows = {n: [] for n in names}
            loads = []
            for rnd in range(args.rounds):
                order = names[rnd % len(names):] + names[:rnd % len(names)]
                loads.append(os.getloadavg()[0])
                for name in order:
                    tree = os.path.join(work, f"{name}-{rnd}")
                    index = os.path.join(work, f"{name}-{rnd}.jsonl")
                    subprocess.run([args.scenarios, "make-stale", tree, str(args.n), str(per)], check=True, stdout=subprocess.DEVNULL)
                    rows[name].append(one(name, args, tree, index, args.n))
                    shutil.rmtree(tree)
                    os.unlink(index)
            res = {"per_dir": per, "n": args.n, "rounds": args.rounds, "load_1min": [round(x, 2) for x in loads]}
            for name in names:
                cpu = [c for c, _ in rows[name]]
                wall = [w for _, w in rows[name]]
                res[name] = {
                    "cpu_us_per_record": round(statistics.median(cpu) / args.n * 1e6, 2),
                    "wall_us_per_record": round(statistics.median(wall) / args.n * 1e6, 2),
                }
                if name != "floor":
                    res[name]["cpu_ratio"] = round(statistics.median(c / f[0] for c, f in zip(cpu, rows["floor"])), 3)
                    res[name]["wall_ratio"] = round(statistics.median(w / f[1] for w, f in zip(wall, rows["floor"])), 3)
            print(json.dumps(res), flush=True)
            results[per] = res
    finally:
        shutil.rmtree(work, ignore_errors=True)
    # A table for BENCHMARKS.md.
    print()
    print("| per directory | contender | CPU µs/record | × floor | wall µs/record | × floor |")
    print("|---|---|---|---|---|---|")
    for per, res in results.items():
        for name in names:
            r = res[name]
            print(f"| {per} | {name} | {r['cpu_us_per_record']} | {r.get('cpu_ratio', 1.0)} | {r['wall_us_per_record']} | {r.get('wall_ratio', 1.0)} |")
        print(f"| {per} | load (1 min) | {', '.join(map(str, res['load_1min']))} | | | |")


if __name__ == "__main__":
    sys.exit(main())
