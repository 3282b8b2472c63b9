"""A failed read is never a fact about a process, through the Python binding: out of
descriptors with an index, a daemon that re-executes itself, and EPERM from the kernel.
Each test that changes process-wide state (rlimits, uid, the executable image) does it in a
subprocess; processes it starts are ended by pid."""

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

import pidguard
from conftest import alive

ROOT = os.geteuid() == 0


def run_python(code, *, env=None, prefix=(), timeout=120):
    return subprocess.run(
        [*prefix, sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def test_cleanup_with_an_index_under_ulimit_10_keeps_or_stops_every_live_hook(tmp_path, spawn):
    hooks = []
    for i in range(40):
        d = tmp_path / f"plugin{i % 4}"
        d.mkdir(exist_ok=True)
        p = spawn.popen(["sleep", "infinity"])
        name = f"on_Snapshot__{i:02d}_h.bg"
        pidguard.write_pid_file_with_mtime(d / f"{name}.pid", p.pid, time.time())
        (d / f"{name}.stdout.log").write_text("out\n")
        (d / f"{name}.stderr.log").write_text("")
        hooks.append((p, d, name))
    index = tmp_path / "index.jsonl"
    r = run_python(
        f"""
        import json, resource, pidguard
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (10, hard))
        reports = pidguard.cleanup_background_hooks({str(tmp_path)!r}, {str(index)!r}, is_tty=True)
        print(json.dumps([r.outcome for r in reports]))
        """
    )
    assert r.returncode == 0, r.stderr
    outcomes = json.loads(r.stdout.strip().splitlines()[-1])
    assert len(outcomes) == 40 and set(outcomes) <= {"exited", "unverified"}, outcomes
    lines = index.read_text().splitlines() if index.exists() else []
    results = [json.loads(l) for l in lines if json.loads(l)["type"] == "ArchiveResult"]
    for p, d, name in hooks:
        if alive(p.pid):
            # Kept whole: pidfile, logs, and no record claiming it succeeded.
            assert (d / f"{name}.pid").exists() and (d / f"{name}.stdout.log").exists(), name
            assert all(x["hook_name"] != name for x in results), name
        else:
            assert not (d / f"{name}.pid").exists(), name
    assert sum(x["status"] == "succeeded" for x in results) == outcomes.count("exited")


def test_a_daemon_that_reexecutes_itself_gets_its_own_guard_back(tmp_path):
    path = tmp_path / "daemon.json"
    code = f"""
        import os, sys, pidguard
        path = {str(path)!r}
        if os.environ.get("STAGE") != "2":
            g = pidguard.guard.acquire(path, image="first")
            g.keep()
            os.environ["STAGE"] = "2"
            os.execv(sys.executable, [sys.executable, "-c", sys.argv[-1], sys.argv[-1]])
        with pidguard.guard.acquire(path, image="second") as entry:
            print("own guard", entry.pid == os.getpid(), dict(entry.fields)["image"])
        print("released", not os.path.exists(path))
        """
    code = textwrap.dedent(code)
    r = subprocess.run([sys.executable, "-c", code, code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "own guard True first" in r.stdout, r.stdout
    assert "released True" in r.stdout, r.stdout


@pytest.mark.skipif(not ROOT, reason="needs root (to become another user in a child)")
def test_terminate_refused_by_the_kernel_raises_permission_error(spawn):
    p = spawn.popen(["sleep", "infinity"])
    token = pidguard.start_token(p.pid)
    # The child imports pidguard as root (the interpreter may live where uid 65534 cannot
    # read), then becomes uid 65534 and asks to stop root's process.
    r = run_python(
        f"""
        import os, pidguard
        os.setgroups([]); os.setgid(65534); os.setuid(65534)
        try:
            pidguard.terminate({p.pid}, {token!r})
        except PermissionError as e:
            print("PermissionError", type(e).__name__, e.errno)
        ref = pidguard.ProcessRef({p.pid}, {token!r})
        try:
            ref.terminate()
        except PermissionError as e:
            print("handle PermissionError", type(e).__name__, e.errno)
        """,
    )
    assert r.returncode == 0, r.stderr
    assert "PermissionError PermissionDeniedError 1" in r.stdout, (r.stdout, r.stderr)
    assert "handle PermissionError PermissionDeniedError 1" in r.stdout, (r.stdout, r.stderr)
    assert alive(p.pid)
