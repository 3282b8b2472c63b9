"""Shared helpers of the Python binding's tests.

Processes started here are ended here, by pid through the Popen objects (or through pidguard);
nothing is ever killed by name. Bystanders get their own session (`start_new_session=True`), so
a group signal that reached the wrong group would show.
"""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import pidguard

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


def pytest_report_header(config):
    return f"pidguard {pidguard.__version__} from {Path(pidguard.__file__).parent}"


def proc_state(pid):
    """The state letter of /proc/<pid>/stat, or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return data[data.rindex(b")") + 2 : data.rindex(b")") + 3].decode()


def alive(pid):
    """Alive and not a zombie."""
    return proc_state(pid) not in (None, "Z", "X")


def group_members(pgid):
    """Live (non-zombie) pids whose process group is pgid."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                data = f.read()
        except OSError:
            continue
        fields = data[data.rindex(b")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            out.append(int(name))
    return out


def handles_term(pid):
    """True once pid ignores or catches SIGTERM (its SigIgn/SigCgt masks in /proc/PID/status):
    a shell's `trap` is set, which no fixed sleep can promise on a busy machine."""
    try:
        with open(f"/proc/{pid}/status") as f:
            masks = dict(line.split(":\t", 1) for line in f if line.startswith(("SigIgn", "SigCgt")))
    except OSError:
        return False
    bit = 1 << (signal.SIGTERM - 1)
    return any(int(v, 16) & bit for v in masks.values())


def wait_until(pred, timeout=20.0, step=0.02):
    """Poll pred until true or a generous timeout; returns its last value."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() > deadline:
            return v
        time.sleep(step)


class Spawner:
    """Starts processes for one test and ends every one of them afterwards, by pid."""

    def __init__(self):
        self.procs = []

    def popen(self, argv, **kw):
        kw.setdefault("start_new_session", True)
        kw.setdefault("stdin", subprocess.DEVNULL)
        # Never pytest's own output: a process that outlived a crashed run must not hold the
        # harness's pipe open (a test that reads the output passes stdout=PIPE).
        kw.setdefault("stdout", subprocess.DEVNULL)
        kw.setdefault("stderr", subprocess.DEVNULL)
        p = subprocess.Popen(argv, **kw)
        self.procs.append(p)
        return p

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                # Our own child, still unreaped: its pid cannot have been reused. End its group
                # if it leads one (it was started in its own session), else just it.
                try:
                    if os.getpgid(p.pid) == p.pid:
                        os.killpg(p.pid, signal.SIGKILL)
                    else:
                        p.kill()
                except ProcessLookupError:
                    pass
                p.wait()


@pytest.fixture
def spawn():
    s = Spawner()
    yield s
    s.close()


def can_unshare():
    if shutil.which("unshare") is None:
        return "unshare(1) not found"
    r = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "true"], capture_output=True)
    if r.returncode != 0:
        return "cannot make a PID namespace here: " + r.stderr.decode(errors="replace").strip()
    return None


def run_in_pid_namespace(code, timeout=120):
    """Run Python `code` as pid 1 of a private PID namespace (with its own /proc); returns the
    CompletedProcess. Everything it starts dies with the namespace."""
    return subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=str(HERE),
    )
