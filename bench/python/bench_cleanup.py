"""Cleanup of N stale hook records: pidguard's cleanup_background_hooks against abx-dl's own
cleanup loop (process_utils) written out in plain Python, and against the light loop a user
writes by hand (issue 28), alternating, each side in a fresh child process.

    python3 bench_cleanup.py <n> <reps> <scenarios-binary> <base-dir> [per_dir ...]

Run it inside a private PID namespace (scripts/bench.sh does: `unshare --pid --fork
--mount-proc`), so the "dead" pids the records name stay dead. For each layout (`per_dir` hooks
to a plugin directory, default 1 and 100) and each rep, both sides clean the same kind of
freshly written records (`scenarios make-stale`: a token-less `.pid` naming a pid that does not
exist, mtime a minute ago, `.sh`, two empty logs); the order of the sides alternates by rep.
Prints one JSON line per layout: the wall time of the call alone (measured in the child, import
excluded) and the child's peak RSS (`ru_maxrss` from `wait4`, the interpreter included).
"""
import json
import os
import subprocess
import sys
import time

# abx-dl's own cleanup loop, as abx-dl runs it: glob, validate_pid_file with psutil, unlink,
# finalize: read both logs, the argv from the .sh, the directory's other files, one Process
# and one ArchiveResult JSON line appended to the index, delete the logs.
SEED_LOOP = r'''
import json, os, shlex, time
from datetime import datetime, timezone
from pathlib import Path
import psutil

def validate_pid_file(pid_file, cmd_file=None, tolerance=5.0):
    if not pid_file.exists():
        return False
    try:
        pid = int(pid_file.read_text().strip())
        proc = psutil.Process(pid)
        if abs(pid_file.stat().st_mtime - proc.create_time()) > tolerance:
            return False
        return True
    except (ValueError, OSError, psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False

def new_id():
    return f"{int(time.time() * 1000) & 0xffffffffffff:012x}-{os.urandom(10).hex()}"

def iso(t):
    return datetime.fromtimestamp(t, timezone.utc).isoformat()

def finalize(hook_dir, name, index_path, is_tty, success, pid, started):
    out_f = hook_dir / f"{name}.stdout.log"
    err_f = hook_dir / f"{name}.stderr.log"
    stdout = out_f.read_text(errors="replace") if out_f.exists() else ""
    stderr = err_f.read_text(errors="replace") if err_f.exists() else ""
    status, output_str = ("succeeded" if success else "failed"), None
    for line in stdout.splitlines():
        try:
            v = json.loads(line)
        except ValueError:
            continue
        if isinstance(v, dict) and v.get("type") == "ArchiveResult":
            status = v.get("status", status)
            output_str = v.get("output_str", output_str)
    cmd = []
    sh = hook_dir / f"{name}.sh"
    if sh.exists():
        lines = [l for l in sh.read_text().splitlines() if l.strip()]
        cmd = shlex.split(lines[-1]) if lines else []
    own = {f"{name}.stdout.log", f"{name}.stderr.log", f"{name}.pid", f"{name}.sh"}
    with os.scandir(hook_dir) as it:
        output_files = sorted(e.name for e in it if e.is_file() and e.name not in own)
    ended = time.time()
    pid_id, res_id = new_id(), new_id()
    p = {"type": "Process", "id": pid_id, "cmd": cmd, "pwd": str(hook_dir), "pid": pid,
         "exit_code": 0 if success else -1, "stdout": stdout, "stderr": stderr,
         "started_at": iso(started), "ended_at": iso(ended)}
    a = {"type": "ArchiveResult", "id": res_id, "plugin": hook_dir.name, "hook_name": name,
         "status": status, "process_id": pid_id, "output_files": output_files,
         "start_ts": iso(started), "end_ts": iso(ended)}
    if output_str is not None:
        a["output_str"] = output_str
    lines = json.dumps(p) + "\n" + json.dumps(a) + "\n"
    if index_path:
        with open(index_path, "a") as f:
            f.write(lines)
        if not is_tty:
            print(lines, end="")
    if success:
        out_f.unlink(missing_ok=True)
        err_f.unlink(missing_ok=True)

def cleanup_background_hooks(output_dir, index_path=None, is_tty=False):
    for pid_file in list(output_dir.glob("**/on_*.pid")):
        name = pid_file.stem
        cmd_file = pid_file.parent / f"{name}.sh"
        if not validate_pid_file(pid_file, cmd_file):
            try:
                pid, started = int(pid_file.read_text().strip()), pid_file.stat().st_mtime
            except (ValueError, OSError):
                pid, started = None, time.time()
            pid_file.unlink(missing_ok=True)
            finalize(pid_file.parent, name, index_path, is_tty, True, pid, started)
            continue
        raise SystemExit("a live hook in a stale benchmark")
'''

# The light loop (issue 28): what a user who writes the seed's rules by hand gets, with nothing
# more: glob, read the pid, `psutil.Process` (does it exist?), unlink, two index lines (one
# buffered file for the whole run), two log unlinks. No `.sh`, no log contents, no listing, no
# create-time comparison, no re-check: cheaper and less safe than the seed's loop.
LIGHT_LOOP = r'''
import json, time
import psutil

def light_cleanup(output_dir, index_path):
    with open(index_path, "a") as index:
        for pid_file in output_dir.glob("**/on_*.pid"):
            try:
                pid = int(pid_file.read_text().strip())
            except (ValueError, OSError):
                pid = None
            if pid is not None:
                try:
                    psutil.Process(pid)
                    raise SystemExit("a live hook in a stale benchmark")
                except psutil.NoSuchProcess:
                    pass
            pid_file.unlink(missing_ok=True)
            name, d = pid_file.stem, pid_file.parent
            now = time.time()
            index.write(json.dumps({"type": "Process", "pid": pid, "pwd": str(d), "exit_code": 0, "ended_at": now}) + "\n")
            index.write(json.dumps({"type": "ArchiveResult", "plugin": d.name, "hook_name": name, "status": "succeeded", "end_ts": now}) + "\n")
            (d / f"{name}.stdout.log").unlink(missing_ok=True)
            (d / f"{name}.stderr.log").unlink(missing_ok=True)
'''

WORKER = r'''
import json, resource, sys, time
from pathlib import Path
side, d, index = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
if side == "seed":
    exec(compile(SEED_LOOP, "seed_loop", "exec"))
    run = lambda: cleanup_background_hooks(d, index, True)
elif side == "light":
    exec(compile(LIGHT_LOOP, "light_loop", "exec"))
    run = lambda: light_cleanup(d, index)
else:
    import pidguard
    run = lambda: pidguard.cleanup_background_hooks(str(d), index, True)
t = time.perf_counter()
run()
wall = time.perf_counter() - t
print(json.dumps({"wall_s": wall}))
'''


def one(side, scenarios, base, n, per_dir):
    d = os.path.join(base, f"pidguard-bench-cleanup-{os.getpid()}")
    subprocess.run(["rm", "-rf", d], check=True)
    os.makedirs(d)
    subprocess.run([scenarios, "make-stale", os.path.join(d, "out"), str(n), str(per_dir)], check=True)
    index = os.path.join(d, "index.jsonl")
    open(index, "w").close()
    code = f"SEED_LOOP = {SEED_LOOP!r}\nLIGHT_LOOP = {LIGHT_LOOP!r}\n" + WORKER
    proc = subprocess.Popen([sys.executable, "-c", code, side, os.path.join(d, "out"), index], stdout=subprocess.PIPE)
    out = proc.stdout.read()
    _, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{side} failed with {proc.returncode}")
    wall = json.loads(out.decode().strip().splitlines()[-1])["wall_s"]
    with open(index) as f:
        lines = sum(1 for _ in f)
    left = sum(1 for _, _, fs in os.walk(os.path.join(d, "out")) for x in fs if x.endswith(".pid"))
    subprocess.run(["rm", "-rf", d], check=True)
    if lines != 2 * n or left != 0:
        raise SystemExit(f"{side}: {lines} index lines (want {2 * n}), {left} pidfiles left")
    return wall, ru.ru_maxrss


def main():
    n, reps, scenarios, base = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    layouts = [int(x) for x in sys.argv[5:]] or [1, 100]
    sides = ["seed", "light", "pidguard"]
    for per_dir in layouts:
        res = {s: ([], []) for s in sides}
        for rep in range(reps):
            order = sides if rep % 2 == 0 else sides[::-1]
            for side in order:
                wall, rss = one(side, scenarios, base, n, per_dir)
                res[side][0].append(wall)
                res[side][1].append(rss)
                print(f"  {side} per_dir={per_dir} rep={rep}: {wall:.3f} s, {rss / 1024:.1f} MiB", file=sys.stderr)
        print(json.dumps({"bench": "cleanup_stale", "n": n, "per_dir": per_dir, "fs": base,
                          **{f"{s}_wall_s": res[s][0] for s in sides}, **{f"{s}_rss_kib": res[s][1] for s in sides},
                          "load": open("/proc/loadavg").read().split()[:3]}))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
