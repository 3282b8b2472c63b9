"""Before/after in one run: the seed's loop (and/or the light loop), an older pidguard and the
installed pidguard clean N stale records, alternating, each in a fresh child process
(bench_cleanup.py's records, loops and worker).

    python3 bench_cleanup_ab.py <n> <reps> <scenarios-binary> <base-dir> <per_dir> <old-pidguard-dir> [<new-pidguard-dir>] [<sides>]

<old-pidguard-dir> holds an older build of the binding, e.g. made with
`git archive <commit> | tar -x -C /tmp/old && python -m pip install --target /tmp/old-py /tmp/old/py`;
its children run with PYTHONPATH=<old-pidguard-dir>, so that build is the one imported; likewise
<new-pidguard-dir> for the newer one (default, or `-`: the installed one). <sides> is a
comma-separated list of `seed`, `light`, `old`, `new` (default `seed,old,new`); the order
reverses every rep. Ratios (of the wall times of the call, and of the children's CPU times,
interpreter start included) are printed for every pair of a peer loop and a build. Run inside
a private PID namespace (`unshare --pid --fork --mount-proc`), as bench_cleanup.py. Prints each
rep on stderr and one JSON line: the walls per side, the ratios of the medians and per rep, the
load average at start and end.
"""
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_cleanup as bc  # noqa: E402


def one(side, scenarios, base, n, per_dir, old_path, new_path=None):
    d = os.path.join(base, f"pidguard-bench-cleanup-ab-{os.getpid()}")
    subprocess.run(["rm", "-rf", d], check=True)
    os.makedirs(d)
    subprocess.run([scenarios, "make-stale", os.path.join(d, "out"), str(n), str(per_dir)], check=True)
    index = os.path.join(d, "index.jsonl")
    open(index, "w").close()
    env = dict(os.environ)
    if side == "old":
        env["PYTHONPATH"] = old_path
    elif side == "new" and new_path:
        env["PYTHONPATH"] = new_path
    code = f"SEED_LOOP = {bc.SEED_LOOP!r}\nLIGHT_LOOP = {bc.LIGHT_LOOP!r}\n" + bc.WORKER
    worker_side = side if side in ("seed", "light") else "pidguard"
    proc = subprocess.Popen([sys.executable, "-c", code, worker_side, os.path.join(d, "out"), index], stdout=subprocess.PIPE, env=env)
    out = proc.stdout.read()
    _, status, ru = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{side} failed")
    with open(index) as f:
        lines = sum(1 for _ in f)
    subprocess.run(["rm", "-rf", d], check=True)
    if lines != 2 * n:
        raise SystemExit(f"{side}: {lines} index lines (want {2 * n})")
    return json.loads(out.decode().strip().splitlines()[-1])["wall_s"], ru.ru_maxrss, ru.ru_utime + ru.ru_stime


def main():
    n, reps, scenarios, base, per_dir, old_path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6]
    new_path = sys.argv[7] if len(sys.argv) > 7 and sys.argv[7] != "-" else None
    sides = sys.argv[8].split(",") if len(sys.argv) > 8 else ["seed", "old", "new"]
    walls = {s: [] for s in sides}
    rss_kib = {s: [] for s in sides}
    cpu = {s: [] for s in sides}
    load_start = open("/proc/loadavg").read().split()[:3]
    for rep in range(reps):
        for side in sides if rep % 2 == 0 else sides[::-1]:
            wall, rss, cpu_s = one(side, scenarios, base, n, per_dir, old_path, new_path)
            walls[side].append(wall)
            rss_kib[side].append(rss)
            cpu[side].append(cpu_s)
            print(f"  {side} per_dir={per_dir} rep={rep}: {wall:.3f} s, CPU {cpu_s:.3f} s, {rss / 1024:.1f} MiB", file=sys.stderr)
    med = {s: statistics.median(v) for s, v in walls.items()}
    ratios = {}
    for peer in [s for s in sides if s in ("seed", "light")]:
        for build in [s for s in sides if s in ("old", "new")]:
            ratios[f"{peer}_over_{build}"] = med[peer] / med[build]
            ratios[f"per_rep_{peer}_over_{build}"] = [a / b for a, b in zip(walls[peer], walls[build])]
    for peer in [s for s in sides if s in ("seed", "light")]:
        for build in [s for s in sides if s in ("old", "new")]:
            ratios[f"cpu_{peer}_over_{build}"] = statistics.median(cpu[peer]) / statistics.median(cpu[build])
    if "old" in sides and "new" in sides:
        ratios["old_over_new"] = med["old"] / med["new"]
        ratios["per_rep_old_over_new"] = [a / b for a, b in zip(walls["old"], walls["new"])]
    print(json.dumps({
        "bench": "cleanup_stale_ab", "n": n, "per_dir": per_dir, "fs": base,
        **{f"{s}_wall_s": v for s, v in walls.items()},
        **{f"{s}_median_s": v for s, v in med.items()},
        **{f"{s}_rss_kib": v for s, v in rss_kib.items()},
        # The child's CPU time (user + system, all threads; interpreter start and import included).
        **{f"{s}_cpu_s": v for s, v in cpu.items()},
        **ratios,
        "load_start": load_start, "load_end": open("/proc/loadavg").read().split()[:3],
    }))


if __name__ == "__main__":
    main()
