"""The abx-dl shapes never raise for a record's state: a user's record whose process group also
holds root's process (root's process is not the user's to signal: privilege is never lent) makes
``graceful_kill_by_pid_file`` return False, say why in the ``pidguard.abx_dl`` log and leave
root's process alive — abx-dl's kill handler has no ``try``, so a raise there left the next hook
running. Seen failing before: ``RefusedError`` from ``ref.terminate`` in ``_stop``.
"""

import asyncio
import logging
import os
import subprocess
import sys
import time

import pytest

import pidguard
from pidguard import abx_dl

U = 4242

# The group's leader: starts root's child in its own group, says its pid, then becomes uid U.
LEADER = r"""
import os, subprocess, sys
c = subprocess.Popen(["sleep", "600"])
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(c.pid))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
os.setgid(int(sys.argv[2]))
os.setresuid(int(sys.argv[2]), int(sys.argv[2]), int(sys.argv[2]))
os.execvp("sleep", ["sleep", "600"])
"""


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _uid(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(next(line for line in f if line.startswith("Uid:")).split()[1])


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: the group holds processes of two uids")
def test_a_users_record_whose_group_holds_roots_process_returns_false(tmp_path, caplog):
    os.chmod(tmp_path, 0o755)
    said = str(tmp_path / "child.pid")
    leader = subprocess.Popen([sys.executable, "-c", LEADER, said, str(U)], start_new_session=True)
    root_child = None
    try:
        deadline = time.monotonic() + 30
        while not (os.path.exists(said) and _uid(leader.pid) == U and open(f"/proc/{leader.pid}/comm").read().strip() == "sleep"):
            assert time.monotonic() < deadline, "the leader never became the user's sleep"
            time.sleep(0.01)
        root_child = int(open(said).read())
        assert _uid(root_child) == 0 and os.getpgid(root_child) == leader.pid
        record = str(tmp_path / "on_Snapshot__10_hook.bg.pid")
        pidguard.write_pid_file_with_mtime(record, leader.pid, pidguard.lookup(leader.pid).create_time)
        os.chown(record, U, U)

        with caplog.at_level(logging.WARNING, logger="pidguard.abx_dl"):
            got = asyncio.run(abx_dl.graceful_kill_by_pid_file(record, ["sleep", "600"], grace_period=1.0))
        assert got is False
        assert _alive(root_child), "root's process in the user's group was signalled"
        assert any("not stopped" in r.getMessage() for r in caplog.records), caplog.text
    finally:
        for pid in (leader.pid, root_child):
            if pid is not None:
                try:
                    os.kill(pid, 9)
                except ProcessLookupError:
                    pass
        leader.wait()
        if root_child is not None:
            # Orphaned to init (or a subreaper) once the leader exec'd and died: wait until gone.
            deadline = time.monotonic() + 10
            while _alive(root_child) and time.monotonic() < deadline:
                time.sleep(0.01)


def test_probe_pid_file_answers_and_never_acts(tmp_path):
    """``probe_pid_file`` says whether a record is in use, and removes or signals nothing: a
    live record runs; once its process is gone it is not in use, and the record is still there."""
    record = str(tmp_path / "hook.pid")
    p = subprocess.Popen(["sleep", "600"], start_new_session=True)
    try:
        pidguard.write_pid_file_with_mtime(record, p.pid, pidguard.lookup(p.pid).create_time)
        live = pidguard.probe_pid_file(record)
        assert (live.reason, live.answer, live.in_use, live.running, live.pid) == ("valid", "running", True, True, p.pid)
        assert _alive(p.pid)
    finally:
        p.kill()
        p.wait()
    gone = pidguard.probe_pid_file(record)
    assert (gone.reason, gone.answer, gone.in_use, gone.scope, gone.scope_members) == ("gone", "not-running", False, "group", None)
    assert os.path.exists(record), "a probe removed the record"
