"""Turn the raw outputs of scripts/bench.sh into the Markdown results section of BENCHMARKS.md.

Usage: python3 bench/report.py OUT_DIR CRITERION_DIR > results.md
OUT_DIR holds scenarios-*.jsonl, python.jsonl, env.txt and commands.txt; CRITERION_DIR is
criterion's output directory (target/criterion).
"""

import json
import os
import statistics
import sys


def load_jsonl(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip().startswith("{")]


def crit(cdir, group, fn):
    """Per-iteration times (µs) of one criterion benchmark, from its raw samples."""
    p = os.path.join(cdir, group, fn, "new", "sample.json")
    if not os.path.exists(p):
        return None
    with open(p) as f:
        s = json.load(f)
    per = [t / i / 1000.0 for t, i in zip(s["times"], s["iters"])]
    q = statistics.quantiles(per, n=4)
    return {"median": statistics.median(per), "q1": q[0], "q3": q[2], "n": len(per)}


def fmt_us(x):
    return f"{x:.1f} µs" if x >= 10 else f"{x:.2f} µs"


def spread(d):
    return f"{fmt_us(d['median'])} (IQR {d['q1']:.1f}–{d['q3']:.1f})"


def verdict(ok):
    return "met" if ok else "**missed**"


def main():
    out, cdir = sys.argv[1], sys.argv[2]
    w = sys.stdout.write
    with open(os.path.join(out, "env.txt")) as f:
        env = f.read().strip()
    w("### Machine\n\n```\n" + env + "\n```\n\n")

    # --- validate_pid_file, Rust ---
    w("### validate_pid_file on a live process, from Rust (criterion)\n\n")
    w("Per call; median and interquartile range of criterion's samples. The floor is the same set of\n")
    w("system calls made with raw `libc` and no allocation (`bench/src/lib.rs`).\n\n")
    w("| pidfile | pidguard | syscall floor | pidguard / floor | target ≤ 1.5× | pidfd-only design |\n|---|---|---|---|---|---|\n")
    for case in ("with_token", "without_token"):
        g = f"validate_{case}"
        a, b = crit(cdir, g, "pidguard"), crit(cdir, g, "floor")
        c = crit(cdir, g, "floor_pidfd_only")
        if not a or not b:
            continue
        r = a["median"] / b["median"]
        w(f"| {case.replace('_', ' ')} | {spread(a)} | {spread(b)} | {r:.2f}× | {verdict(r <= 1.5)} | "
          f"{spread(c) if c else '—'} |\n")
    parts = [
        ("pidfile_open_fstat_read_fgetxattr_close", "pidfile: open, fstat, read, fgetxattr, close"),
        ("proc_pid_stat_open_read_close", "`/proc/<pid>/stat`: open, read, close"),
        ("pidfd_open_fstatfs_fstat_close", "pidfd_open, fstatfs, fstat, close"),
        ("proc_stat_btime_open_read_close", "`/proc/stat` (btime): open, read, close"),
    ]
    rows = [(label, crit(cdir, "floor_parts", fn)) for fn, label in parts]
    if any(d for _, d in rows):
        w("\nParts of the floor, alone:\n\n| system calls | per call |\n|---|---|\n")
        for label, d in rows:
            if d:
                w(f"| {label} | {spread(d)} |\n")
    inter = [r for r in load_jsonl(os.path.join(out, "scenarios-validate.jsonl")) if r["bench"] == "validate_interleaved"]
    if inter:
        w("\nCross-check, alternating batches in one process (`scenarios validate`):\n\n")
        w("| pidfile | pidguard median | floor median | ratio of medians | median of per-round ratios |\n|---|---|---|---|---|\n")
        for r in inter:
            a, b = statistics.median(r["pidguard"]), statistics.median(r["floor"])
            rr = statistics.median([x / y for x, y in zip(r["pidguard"], r["floor"])])
            w(f"| {r['case'].replace('_', ' ')} | {fmt_us(a)} | {fmt_us(b)} | {a / b:.2f}× | {rr:.2f}× |\n")

    # --- Python ---
    py = load_jsonl(os.path.join(out, "python.jsonl"))
    if py:
        w("\n### validate_pid_file on a live process, from Python (timeit, alternating rounds)\n\n")
        r0 = py[0]
        w(f"Python {r0['python']}, psutil {r0['psutil_version']}; {r0['rounds']} rounds of {r0['batch']} calls per side; per call.\n\n")
        w("| pidfile | pidguard | psutil way | psutil / pidguard | target ≥ 5× |\n|---|---|---|---|---|\n")
        for r in py:
            a, b = r["pidguard"], r["psutil"]
            ratio = r["ratio_of_medians"]
            w(f"| {r['case'].replace('_', ' ')} | {fmt_us(a['median_us'])} (IQR {a['q1_us']:.1f}–{a['q3_us']:.1f}) | "
              f"{fmt_us(b['median_us'])} (IQR {b['q1_us']:.1f}–{b['q3_us']:.1f}) | {ratio:.2f}× "
              f"(per round {r['ratio_median_per_round']:.2f}×) | {verdict(ratio >= 5)} |\n")

    nd = load_jsonl(os.path.join(out, "node.jsonl"))
    if nd:
        w("\n### validate_pid_file on a live process, from Node (hrtime batches, alternating rounds)\n\n")
        r0 = nd[0]
        w(f"Node {r0['node']}; {r0['rounds']} rounds of {r0['batch']} calls per side; per call. The plain-JS peer reads\n")
        w("`btime` once at load (a cheaper peer than psutil, which reads it on every call).\n\n")
        w("| pidfile | pidguard addon | plain JS | plain JS / pidguard |\n|---|---|---|---|\n")
        for r in nd:
            a, b = r["pidguard"], r["plain_js"]
            w(f"| {r['case'].replace('_', ' ')} | {fmt_us(a['median_us'])} (IQR {a['q1_us']:.1f}–{a['q3_us']:.1f}) | "
              f"{fmt_us(b['median_us'])} (IQR {b['q1_us']:.1f}–{b['q3_us']:.1f}) | {r['ratio_of_medians']:.2f}× "
              f"(per round {r['ratio_median_per_round']:.2f}×) |\n")

    # --- hooks ---
    for label, fname in (("disk (`target/`)", "scenarios-hooks-disk.jsonl"), ("tmpfs (`/dev/shm`)", "scenarios-hooks-tmpfs.jsonl")):
        rows = load_jsonl(os.path.join(out, fname))
        if not rows:
            continue
        w(f"\n### cleanup_background_hooks of N live hooks, `TERM/2/KILL/1` (bound 3 s), files on {label}\n\n")
        w("Inside a private PID namespace. *ignore*: hooks that ignore SIGTERM (stopped by SIGKILL after 2 s); "
          "*exit*: hooks that exit on SIGTERM.\n\n")
        w("| hooks | N | reps | wall, median (min–max) | slowest hook's own elapsed | peak RSS, median | wall / 3 s bound | serial loop (N × 3 s) | target ≤ 1.25 × 3 s at N = 200 ignoring |\n|---|---|---|---|---|---|---|---|---|\n")
        by = {}
        for r in rows:
            by.setdefault((r.get("mode", "ignore"), r["n"]), []).append(r)
        for (mode, n) in sorted(by, key=lambda k: (k[0] != "ignore", k[1])):
            rs = by[(mode, n)]
            walls = [r["wall_s"] for r in rs]
            med = statistics.median(walls)
            el = statistics.median([r["max_hook_elapsed_s"] for r in rs])
            rss = statistics.median([r["peak_rss_kib"] for r in rs]) / 1024
            serial = f"{n * 3.0:.0f} s" if mode == "ignore" else "—"
            tgt = verdict(med <= 3.75) if (n == 200 and mode == "ignore") else ""
            w(f"| {mode} | {n} | {len(rs)} | {med:.3f} s ({min(walls):.3f}–{max(walls):.3f}) | {el:.3f} s | {rss:.1f} MiB | {med / 3.0:.2f}× | {serial} | {tgt} |\n")

    # --- stale cleanup vs the seed's loop ---
    for label, fname in (("tmpfs (`/dev/shm`)", "cleanup-stale-tmpfs.jsonl"), ("disk (`target/`)", "cleanup-stale-disk.jsonl")):
        rows = load_jsonl(os.path.join(out, fname))
        if not rows:
            continue
        n = rows[0]["n"]
        w(f"\n### Cleanup of {n:,} stale records from Python: pidguard vs the seed's loop, files on {label}\n\n")
        w("Inside a private PID namespace; each side in a fresh child process, alternating; wall time of the call "
          "alone; peak RSS is the child's `ru_maxrss` (the Python interpreter included). "
          "`cleanup_background_hooks(dir, index, is_tty=True)` against the seed's loop written out in plain Python, "
          "and against the light loop of issue 28 (glob, read, `psutil.Process`, unlink, two index lines, two log "
          "unlinks) (`bench/python/bench_cleanup.py`).\n\n")
        w("| hooks per directory | reps | seed's loop, median | pidguard, median | seed / pidguard | per-rep ratios | peak RSS seed / pidguard (max) | target ≥ 5×, ≤ 64 MB | light loop, median | light / pidguard (per rep) | target ≥ 5× |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
        med_by = {}
        for r in rows:
            a, b = r["seed_wall_s"], r["pidguard_wall_s"]
            ma, mb = statistics.median(a), statistics.median(b)
            med_by[r["per_dir"]] = mb
            per = [x / y for x, y in zip(a, b)]
            rss_a, rss_b = max(r["seed_rss_kib"]) / 1024, max(r["pidguard_rss_kib"]) / 1024
            light = "| — | — | |"
            if "light_wall_s" in r:
                ml = statistics.median(r["light_wall_s"])
                pl = [x / y for x, y in zip(r["light_wall_s"], b)]
                light = f"| {ml:.3f} s | {ml / mb:.2f}× ({min(pl):.2f}–{max(pl):.2f}×) | {verdict(ml / mb >= 5)} |"
            w(f"| {r['per_dir']} | {len(a)} | {ma:.3f} s | {mb:.3f} s | {ma / mb:.2f}× | {min(per):.2f}–{max(per):.2f}× | "
              f"{rss_a:.1f} / {rss_b:.1f} MiB | time {verdict(ma / mb >= 5)}, RSS {verdict(rss_b <= 64)} {light}\n")
        if 1 in med_by and 100 in med_by:
            r = med_by[100] / med_by[1]
            w(f"\npidguard, 100 per directory / 1 per directory: {r:.2f}× (target ≤ 1.5×: {verdict(r <= 1.5)}).\n")

    # --- exit ---
    ex = load_jsonl(os.path.join(out, "scenarios-exit.jsonl"))
    if ex:
        e = ex[0]
        w(f"\n### Exit detection: SIGKILL → wait returns ({e['runs']} runs each, alternating)\n\n")
        w("| waiter | median | p99 | target median < 1 ms |\n|---|---|---|---|\n")
        w(f"| pidguard `ProcessRef::wait` (pidfd + poll) | {e['pidguard_median']:.3f} ms | {e['pidguard_p99']:.3f} ms | {verdict(e['pidguard_median'] < 1)} |\n")
        w(f"| poll loop, `kill(pid, 0)` + state every 10 ms | {e['poll10ms_median']:.3f} ms | {e['poll10ms_p99']:.3f} ms | |\n")

    # --- scan ---
    for label, fname in (("disk (`target/`)", "scenarios-scan-disk.jsonl"), ("tmpfs (`/dev/shm`)", "scenarios-scan-tmpfs.jsonl")):
        rows = load_jsonl(os.path.join(out, fname))
        if not rows:
            continue
        walls = [r["wall_s"] for r in rows]
        rss = [r["peak_rss_kib"] / 1024 for r in rows]
        med, mrss = statistics.median(walls), statistics.median(rss)
        tgt = f"time {verdict(med <= 0.150)}, RSS {verdict(max(rss) <= 20)}" if rows[0]["n"] == 10000 else "(targets are for N = 10,000)"
        w(f"\n### cleanup_background_hooks over {rows[0]['n']} stale pidfiles, files on {label}\n\n")
        w("| reps | wall, median (min–max) | per record | peak RSS, median (max) | processes on the machine | target ≤ 150 ms, ≤ 20 MB |\n|---|---|---|---|---|---|\n")
        w(f"| {len(rows)} | {med * 1000:.0f} ms ({min(walls) * 1000:.0f}–{max(walls) * 1000:.0f}) | {med / rows[0]['n'] * 1e6:.1f} µs | "
          f"{mrss:.1f} MiB ({max(rss):.1f}) | {rows[0]['procs']} | {tgt} |\n")

    with open(os.path.join(out, "commands.txt")) as f:
        w("\n### Commands\n\n```\n" + f.read().strip() + "\n```\n")


if __name__ == "__main__":
    main()
