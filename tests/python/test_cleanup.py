"""cleanup_background_hooks on real background hooks spawned from Python the way abx-dl spawns
them (Popen(..., start_new_session=True), then write_pid_file_with_mtime), with abx-dl's two
JSONL lines per hook in index_path."""

import json
import os
import signal
import threading
import time

import pytest

import pidguard
from conftest import alive, group_members, handles_term, proc_state, wait_until

IGNORE_TERM = "trap '' TERM; while :; do sleep 0.2; done"
FAST = "TERM/0.5/KILL/5"


def start_hook(spawn, out_dir, plugin, name, argv):
    """abx-dl's run_hook for a background hook: .sh, two logs, Popen, pidfile."""
    d = out_dir / plugin
    d.mkdir(parents=True, exist_ok=True)
    base = d / name
    pidguard.write_cmd_file(f"{base}.sh", argv)
    with open(f"{base}.stdout.log", "w") as out, open(f"{base}.stderr.log", "w") as err:
        p = spawn.popen(argv, cwd=d, stdout=out, stderr=err, start_new_session=True)
    start = time.time()
    pidguard.write_pid_file_with_mtime(f"{base}.pid", p.pid, start)
    return p


def read_index(path):
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(lines) % 2 == 0
    pairs = {}
    for proc, result in zip(lines[::2], lines[1::2]):
        assert proc["type"] == "Process" and result["type"] == "ArchiveResult"
        assert result["process_id"] == proc["id"]
        pairs[result["hook_name"]] = (proc, result)
    return pairs


def test_cleanup_of_real_background_hooks(tmp_path, spawn, capfd):
    out = tmp_path / "snap"
    forker = start_hook(spawn, out, "chrome_tab", "on_Snapshot__20_tab.bg", ["sh", "-c", "sleep infinity & sleep infinity & wait"])
    stubborn = start_hook(
        spawn, out, "stubborn", "on_Snapshot__30_stubborn.bg", ["bash", "-c", f"({IGNORE_TERM}) & {IGNORE_TERM}"]
    )
    quick = start_hook(
        spawn,
        out,
        "quick",
        "on_Snapshot__40_quick.bg",
        [
            "sh",
            "-c",
            'echo \'{"type": "ArchiveResult", "status": "succeeded", "output_str": "done"}\'; '
            "echo x > result.txt; echo oops >&2; exit 3",
        ],
    )
    assert wait_until(lambda: len(group_members(forker.pid)) == 3 and len(group_members(stubborn.pid)) >= 2)
    assert wait_until(lambda: proc_state(quick.pid) == "Z"), "the quick hook exited by itself (unreaped)"
    members = {p.pid: group_members(p.pid) for p in (forker, stubborn)}

    index = tmp_path / "index.jsonl"
    reports = pidguard.cleanup_background_hooks(out, index, False, schedule=FAST)

    by_name = {r.name: r for r in reports}
    assert sorted(by_name) == ["on_Snapshot__20_tab.bg", "on_Snapshot__30_stubborn.bg", "on_Snapshot__40_quick.bg"]
    tab, stub, q = (by_name[n] for n in sorted(by_name))

    assert (tab.outcome, tab.after, tab.verdict, tab.reason) == ("exited", "TERM", "match", "valid")
    assert tab.exit_code == 128 + signal.SIGTERM and tab.succeeded and tab.pid == forker.pid
    assert (stub.outcome, stub.after) == ("exited", "KILL") and stub.signals == ["TERM", "CONT", "KILL"]
    assert (q.outcome, q.exit_code, q.reason) == ("already-gone", 3, "zombie"), "exit code reported as it was"
    assert q.output_files == ["result.txt"] and q.signals == []
    for r in reports:
        assert r.pid_file_removed and not r.pid_file.exists()
        assert r.dir == r.pid_file.parent and r.pid_file.name == r.name + ".pid"
        assert (r.dir / f"{r.name}.sh").exists(), ".sh is always kept"
        assert not (r.dir / f"{r.name}.stdout.log").exists(), "logs of succeeded hooks are deleted"
        assert r.finalize_exception is None and r.error is None
        assert r.started_at is not None and r.started_at <= r.ended_at
        d = r.to_dict()
        assert d["name"] == r.name and d["outcome"] == r.outcome and json.dumps(d)
    # Nobody is left in any hook's group.
    for pid, ms in members.items():
        assert group_members(pid) == [] and not any(alive(m) for m in ms)

    pairs = read_index(index)
    assert sorted(pairs) == sorted(by_name)
    for name, (proc, result) in pairs.items():
        r = by_name[name]
        assert proc["pid"] == r.pid and proc["cmd"] == r.cmd and proc["pwd"] == str(r.dir)
        assert result["plugin"] == r.dir.name and result["status"] == "succeeded"
        assert result["output_files"] == r.output_files
    assert pairs["on_Snapshot__40_quick.bg"][0]["exit_code"] == 3
    assert pairs["on_Snapshot__40_quick.bg"][0]["stderr"] == "oops\n"
    assert pairs["on_Snapshot__40_quick.bg"][1]["output_str"] == "done"
    assert pairs["on_Snapshot__20_tab.bg"][0]["exit_code"] == 143
    assert pairs["on_Snapshot__20_tab.bg"][0]["cmd"] == ["sh", "-c", "sleep infinity & sleep infinity & wait"]
    # is_tty=False: the same lines went to stdout too.
    printed = [line for line in capfd.readouterr().out.splitlines() if line.startswith("{")]
    assert printed == index.read_text().splitlines()
    # The exit statuses were left for Popen (read with WNOWAIT, not reaped).
    assert quick.wait() == 3
    assert forker.wait() == -signal.SIGTERM and stubborn.wait() == -signal.SIGKILL


def test_stale_record_naming_a_bystander_sends_nothing(tmp_path, spawn, capfd):
    out = tmp_path / "snap"
    (out / "p").mkdir(parents=True)
    bystander = spawn.popen(["sh", "-c", "sleep infinity & wait"], start_new_session=True)
    assert wait_until(lambda: len(group_members(bystander.pid)) == 2)
    pid_file = out / "p" / "on_Snapshot__50_old.bg.pid"
    # The original's format, written long before the bystander started: the pid was reused.
    pid_file.write_text(str(bystander.pid))
    os.utime(pid_file, (time.time() - 3600, time.time() - 3600))
    pidguard.write_cmd_file(out / "p" / "on_Snapshot__50_old.bg.sh", ["node", "/hooks/old.js"])
    (out / "other.pid").write_text(str(bystander.pid))  # does not match on_*.pid: left alone

    reports = pidguard.cleanup_background_hooks(str(out), os.fsencode(tmp_path / "index.jsonl"), True)
    assert len(reports) == 1
    r = reports[0]
    assert (r.outcome, r.reason, r.signals, r.exit_code) == ("stale", "mtime-skew", [], None)
    assert r.pid_file_removed and not pid_file.exists()
    assert sorted(r.unverified_leftovers) == sorted(group_members(bystander.pid))
    assert r.cmd == ["node", "/hooks/old.js"]
    assert (out / "other.pid").exists()
    time.sleep(0.2)
    assert bystander.poll() is None and len(group_members(bystander.pid)) == 2
    assert capfd.readouterr().out == "", "is_tty=True: nothing printed"
    pairs = read_index(tmp_path / "index.jsonl")
    # Its exit status is unknown (it ended while no pidguard process was its parent): never
    # written as a success (issue 45); abx-dl reads `exit_code: int | None`.
    assert pairs["on_Snapshot__50_old.bg"][1]["status"] == "unknown"
    assert pairs["on_Snapshot__50_old.bg"][0]["exit_code"] is None


def test_finalize_callback_runs_with_the_gil_and_its_exception_is_reported(tmp_path, spawn):
    out = tmp_path / "snap"
    a = start_hook(spawn, out, "a", "on_Snapshot__10_a.bg", ["sleep", "infinity"])
    b = start_hook(spawn, out, "b", "on_Snapshot__20_b.bg", ["sleep", "infinity"])
    seen = []
    boom = RuntimeError("finalize broke")

    def finalize(report):
        seen.append((report.name, report.outcome, threading.current_thread().name))
        if report.name.endswith("_b.bg"):
            raise boom
        return "ignored"

    index = tmp_path / "index.jsonl"
    reports = pidguard.cleanup_background_hooks(out, index, finalize=finalize, schedule=FAST)
    assert [s[:2] for s in seen] == [("on_Snapshot__10_a.bg", "exited"), ("on_Snapshot__20_b.bg", "exited")]
    ra, rb = reports
    assert ra.error is None and ra.finalize_exception is None and ra.succeeded
    assert rb.finalize_exception is boom
    assert "finalize failed" in rb.error and "finalize broke" in rb.error and not rb.succeeded
    assert rb.outcome == "exited", "the hook itself was still stopped"
    assert not index.exists(), "a finalize callback replaces the default finalize"
    assert (rb.dir / f"{rb.name}.stdout.log").exists()
    assert a.wait() == b.wait() == -signal.SIGTERM


def test_keyboard_interrupt_in_finalize_is_raised_after_cleanup(tmp_path, spawn):
    out = tmp_path / "snap"
    a = start_hook(spawn, out, "a", "on_Snapshot__10_a.bg", ["sleep", "infinity"])
    b = start_hook(spawn, out, "b", "on_Snapshot__20_b.bg", ["sleep", "infinity"])
    calls = []

    def finalize(report):
        calls.append(report.name)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        pidguard.cleanup_background_hooks(out, finalize=finalize, schedule=FAST)
    assert len(calls) == 2, "every hook was still dealt with"
    assert a.wait() == b.wait() == -signal.SIGTERM


def test_cleanup_releases_the_gil(tmp_path, spawn):
    out = tmp_path / "snap"
    p = start_hook(spawn, out, "s", "on_Snapshot__10_s.bg", ["bash", "-c", IGNORE_TERM])
    assert wait_until(lambda: handles_term(p.pid))  # the trap is set
    ticks, stop = [], threading.Event()

    def counter():
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.01)

    th = threading.Thread(target=counter)
    th.start()
    try:
        t0 = time.monotonic()
        (r,) = pidguard.cleanup_background_hooks(out, schedule="TERM/1/KILL/5", finalize=lambda r: None)
        t1 = time.monotonic()
    finally:
        stop.set()
        th.join()
    assert r.after == "KILL" and t1 - t0 >= 0.9
    assert len([t for t in ticks if t0 < t < t1]) >= 10


def test_many_hooks_are_stopped_in_parallel(tmp_path, spawn):
    out = tmp_path / "snap"
    procs = [start_hook(spawn, out, f"p{i}", f"on_Snapshot__{i:02d}_x.bg", ["bash", "-c", IGNORE_TERM]) for i in range(6)]
    assert wait_until(lambda: all(handles_term(p.pid) for p in procs))  # every trap is set
    t0 = time.monotonic()
    reports = pidguard.cleanup_background_hooks(out, schedule="TERM/1/KILL/5", finalize=lambda r: None)
    elapsed = time.monotonic() - t0
    assert [r.after for r in reports] == ["KILL"] * 6
    assert elapsed < 5.5, "bounded by the schedule, not by the number of hooks (6 x 1 s in series)"
    assert all(p.wait() == -signal.SIGKILL for p in procs)


CLEANUP_REUSE = r"""
import json, os, subprocess, sys, tempfile, time
from pathlib import Path
import pidguard
out = Path(tempfile.mkdtemp())
results = []
for trial in range(5):
    d = out / f"t{trial}"
    d.mkdir()
    name = "on_Snapshot__20_x.bg"
    argv = ["sleep", "infinity"]
    pidguard.write_cmd_file(d / f"{name}.sh", argv)
    hook = subprocess.Popen(argv, start_new_session=True)
    pidguard.write_pid_file_with_mtime(d / f"{name}.pid", hook.pid, time.time())
    pid = hook.pid
    hook.kill(); hook.wait()
    # The same pid, at once (often within the same 10 ms tick), for a bystander group leader
    # running the very same command.
    with open("/proc/sys/kernel/ns_last_pid", "w") as f:
        f.write(str(pid - 1))
    bystander = subprocess.Popen(["sh", "-c", "sleep infinity & exec sleep infinity"], start_new_session=True)
    time.sleep(0.1)
    (r,) = pidguard.cleanup_background_hooks(d, finalize=lambda r: None)
    time.sleep(0.1)
    results.append({
        "reused": bystander.pid == pid,
        "outcome": r.outcome, "reason": r.reason, "signals": r.signals,
        "alive": bystander.poll() is None,
        "group": sum(1 for p in os.listdir("/proc") if p.isdigit() and os.getpgid(int(p)) == pid),
    })
    bystander.kill(); bystander.wait()
print(json.dumps(results))
"""


def test_cleanup_after_real_pid_reuse_spares_the_bystander_group():
    from conftest import can_unshare, run_in_pid_namespace

    why = can_unshare()
    if why:
        pytest.skip(why)
    r = run_in_pid_namespace(CLEANUP_REUSE)
    assert r.returncode == 0, r.stderr
    results = json.loads(r.stdout.strip().splitlines()[-1])
    assert all(t["reused"] for t in results), results
    for t in results:
        assert (t["outcome"], t["signals"], t["alive"], t["group"]) == ("stale", [], True, 2), t
        assert t["reason"] == "mismatch", t


def test_non_utf8_hook_names_read_apart_in_reports(tmp_path):
    """Names that are not UTF-8 keep apart: `name` and `output_files` are in core's lossless
    form (a byte that is not UTF-8 is `\\xNN`, a backslash doubled), `pid_file` is a Path that
    `os.fsencode` turns back into the very bytes (both used to read U+FFFD)."""
    out = tmp_path / "snap"
    plug = os.fsencode(out / "p")
    os.makedirs(plug)
    for name in (b"on_a\xff.bg", b"on_a\xfe.bg", b"on_a\\xff.bg"):
        path = os.path.join(plug, name + b".pid")
        with open(path, "w") as f:
            f.write("4194303")
        os.utime(path, (1e9, 1e9))
    open(os.path.join(plug, b"out\xff.txt"), "w").close()
    reports = pidguard.cleanup_background_hooks(os.fsencode(out), os.fsencode(tmp_path / "index.jsonl"), True)
    assert sorted(r.name for r in reports) == ["on_a\\\\xff.bg", "on_a\\xfe.bg", "on_a\\xff.bg"]
    assert sorted(os.fsencode(r.pid_file) for r in reports) == sorted(
        os.path.join(plug, n) for n in (b"on_a\xff.bg.pid", b"on_a\xfe.bg.pid", b"on_a\\xff.bg.pid")
    )
    assert all(r.output_files == ["out\\xff.txt"] for r in reports)
    pairs = read_index(tmp_path / "index.jsonl")
    assert sorted(pairs) == ["on_a\\\\xff.bg", "on_a\\xfe.bg", "on_a\\xff.bg"]


def test_a_hook_report_reads_as_a_plain_value_object(tmp_path):
    """The reports are built lazily (core's report kept, spelled on the first read): what Python
    sees is still a value — every attribute read as `to_dict` spells it, equal reports compare
    equal, one record's report differs from another's, `repr` names four fields, not hashable,
    not picklable, and only `finalize_exception` (or a new name) can be set on it."""
    import copy
    import pickle

    out = tmp_path / "snap"
    for i in range(3):
        d = out / f"p{i}"
        d.mkdir(parents=True)
        pf = d / f"on_Snapshot__1{i}_x.bg.pid"
        pf.write_text("4194000")  # above any pid of this test's processes: a dead pid
        old = time.time() - 60
        os.utime(pf, (old, old))
        pidguard.write_cmd_file(d / f"on_Snapshot__1{i}_x.bg.sh", ["x", str(i)])
    seen = []
    reports = pidguard.cleanup_background_hooks(out, None, True, no_finalize=True, finalize=seen.append)
    assert [r.name for r in reports] == [f"on_Snapshot__1{i}_x.bg" for i in range(3)]
    fields = list(reports[0].to_dict())
    for r, s in zip(reports, seen):
        d = r.to_dict()
        for f in fields:
            v = getattr(r, f)
            assert (str(v) if f in ("dir", "pid_file") else v) == d[f], f
        assert r == s and not (r != s), "the callback's report equals the returned one"
        assert repr(r) == f"HookReport(name={r.name!r}, pid={r.pid!r}, outcome={r.outcome!r}, reason={r.reason!r})"
        assert r.cmd == ["x", r.name[14]] and r.outcome in ("stale", "unverified")
        with pytest.raises(TypeError):
            hash(r)
        with pytest.raises(TypeError):
            pickle.dumps(r)
        with pytest.raises(TypeError):
            copy.copy(r)
        with pytest.raises(AttributeError):
            r.outcome = "exited"
        r.finalize_exception = ValueError("x")
        assert isinstance(r.finalize_exception, ValueError) and r.outcome != "exited"
    assert reports[0] != reports[1] and not (reports[0] == reports[1])
    assert reports[0] != "HookReport" and type(reports[0]) is pidguard.HookReport
    # A report outlives the list it came with.
    last = reports[-1]
    del reports, seen
    assert last.name == "on_Snapshot__12_x.bg" and last.cmd == ["x", "2"]
