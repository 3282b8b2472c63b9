"""At the edges, from Python and pidguard.abx_dl: a leader whose main thread exited while a
worker runs, no /proc, a live pid above kernel.pid_max, a machine id written after the record.
Every process is started here and ended here by pid; the cases that change /proc or pid_max run
in a private mount or PID namespace."""

import asyncio
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import pidguard
import pidguard.abx_dl as A

from conftest import alive, can_unshare, run_in_pid_namespace, wait_until

LEADER_EXITS_C = r"""
#include <pthread.h>
#include <unistd.h>
static void *w(void *a) { (void)a; for (;;) pause(); return 0; }
int main(void) { pthread_t t; pthread_create(&t, 0, w, 0); pthread_exit(0); }
"""


def _status(pid):
    try:
        return Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return ""


@pytest.fixture
def leader_exits(tmp_path):
    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    src = tmp_path / "leader_exits.c"
    src.write_text(LEADER_EXITS_C)
    exe = tmp_path / "leader_exits"
    subprocess.run(["cc", "-O2", "-pthread", "-o", str(exe), str(src)], check=True)
    return exe


def _start_leader_exits(spawn, exe):
    p = spawn.popen([str(exe)])
    ok = wait_until(lambda: "State:\tZ" in _status(p.pid) and "Threads:\t2" in _status(p.pid))
    assert ok, _status(p.pid)
    return p


def _create_time(pid):
    return pidguard.lookup(pid).create_time


def test_a_leader_whose_main_thread_exited_is_alive(spawn, leader_exits, tmp_path):
    p = _start_leader_exits(spawn, leader_exits)
    info = pidguard.lookup(p.pid)
    assert info.state == "Z" and not info.is_zombie, info
    assert A.is_process_alive(p.pid)
    tok = pidguard.start_token(p.pid)
    assert pidguard.judge(p.pid, tok).verdict == "match"
    # A token-less record, as abx-dl writes it, with the argv in its .sh: judged and stopped.
    pf = tmp_path / "on_Snapshot__1_lz.bg.pid"
    A.write_pid_file_with_mtime(pf, p.pid, _create_time(p.pid))
    os.removexattr(pf, "user.pidguard.token")
    sh = tmp_path / "on_Snapshot__1_lz.bg.sh"
    pidguard.write_cmd_file(sh, [str(leader_exits)])
    assert A.validate_pid_file(pf, sh)
    assert asyncio.run(A.graceful_kill_by_pid_file(pf, sh, grace_period=5.0))
    assert wait_until(lambda: p.poll() is not None)


def test_cleanup_stops_a_leader_whose_main_thread_exited(spawn, leader_exits, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    p = _start_leader_exits(spawn, leader_exits)
    A.write_pid_file_with_mtime(out / "on_Snapshot__1_lz.bg.pid", p.pid, _create_time(p.pid))
    reports = pidguard.cleanup_background_hooks(out, schedule="TERM/5/KILL/5")
    assert reports[0].outcome == "exited", reports[0].to_dict()
    assert wait_until(lambda: p.poll() is not None)


def test_an_equal_boot_id_proves_the_same_kernel_whatever_the_machine_id(spawn, tmp_path):
    p = spawn.popen(["sleep", "infinity"])
    assert wait_until(lambda: pidguard.lookup(p.pid).name == "sleep")
    f = pidguard.start_token(p.pid).split(":")
    f[1] = "writtenbeforemachineid"
    assert pidguard.judge(p.pid, ":".join(f)).verdict == "match"
    pf = tmp_path / "on_Snapshot__1_h.bg.pid"
    A.write_pid_file_with_mtime(pf, p.pid, _create_time(p.pid))
    os.setxattr(pf, "user.pidguard.token", ":".join(f).encode())
    assert A.validate_pid_file(pf)
    # Another machine: another machine id and boot id. Never judged.
    f[2] = "00000000-0000-4000-8000-000000000000"
    j = pidguard.judge(p.pid, ":".join(f))
    assert (j.verdict, j.reason) == ("unverifiable", "foreign-machine")


NO_PROC = r"""
import asyncio, json, os, sys
import pidguard, pidguard.abx_dl as A
assert not os.path.exists("/proc/self"), "/proc is still mounted"
pid, tok, d = int(sys.argv[1]), sys.argv[2], sys.argv[3]
j = pidguard.judge(pid, tok)
out = {"judge": [j.verdict, j.reason]}
pf = os.path.join(d, "out", "on_Snapshot__1_h.bg.pid")
out["validate"] = A.validate_pid_file(pf)
out["alive"] = A.is_process_alive(pid)
out["kill"] = asyncio.run(A.graceful_kill_by_pid_file(pf, None, grace_period=1.0))
r = pidguard.cleanup_background_hooks(os.path.join(d, "out"), schedule="TERM/1/KILL/1")
out["cleanup"] = [r[0].outcome, r[0].pid_file_removed]
out["exists"] = os.path.exists(pf)
print(json.dumps(out))
"""


def test_without_proc_every_record_is_kept(spawn, tmp_path):
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare")
    (tmp_path / "out").mkdir()
    p = spawn.popen(["sleep", "infinity"])
    assert wait_until(lambda: pidguard.lookup(p.pid).name == "sleep")
    A.write_pid_file_with_mtime(tmp_path / "out" / "on_Snapshot__1_h.bg.pid", p.pid, _create_time(p.pid))
    tok = pidguard.start_token(p.pid)
    script = 'while mountpoint -q /proc; do umount -l /proc || exit 99; done; exec "$0" "$@"'
    r = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script,
         sys.executable, "-c", NO_PROC, str(p.pid), tok, str(tmp_path)],
        capture_output=True, text=True, timeout=120,
    )
    assert r.returncode == 0, r.stderr
    import json
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["judge"] == ["unverifiable", "machine-identity-unreadable: ENOENT"], out
    assert out["validate"] is False and out["kill"] is False, out
    assert out["alive"] is True, out  # a failed read is not proof of death
    assert out["cleanup"] == ["unverified", False] and out["exists"], out
    assert alive(p.pid)


ABOVE_PID_MAX = r"""
import json, os, subprocess, time
import pidguard, pidguard.abx_dl as A
def put(f, v):
    with open("/proc/sys/kernel/" + f, "w") as fh:
        fh.write(v)
try:
    put("pid_max", "100000"); put("ns_last_pid", "50000")
except OSError as e:
    print(json.dumps({"skip": str(e)})); raise SystemExit(0)
p = subprocess.Popen(["sleep", "infinity"], start_new_session=True)
while pidguard.lookup(p.pid).name != "sleep":
    time.sleep(0.01)
d = os.environ["EDGE_DIR"]
pf = os.path.join(d, "on_Snapshot__1_h.bg.pid")
A.write_pid_file_with_mtime(pf, p.pid, pidguard.lookup(p.pid).create_time)
put("pid_max", "32768")
out = {"pid": p.pid, "valid": A.validate_pid_file(pf), "alive": A.is_process_alive(p.pid)}
r = pidguard.cleanup_background_hooks(d, schedule="TERM/5/KILL/5")
out["cleanup"] = r[0].outcome
p.wait()
print(json.dumps(out))
"""


def test_a_live_pid_above_pid_max_is_judged_by_its_identity(tmp_path):
    why = can_unshare()
    if why or os.geteuid() != 0:
        pytest.skip(why or "needs root")
    os.environ["EDGE_DIR"] = str(tmp_path)
    try:
        r = run_in_pid_namespace(ABOVE_PID_MAX)
    finally:
        del os.environ["EDGE_DIR"]
    assert r.returncode == 0, r.stderr
    import json
    out = json.loads(r.stdout.strip().splitlines()[-1])
    if "skip" in out:
        pytest.skip(out["skip"])
    assert out["pid"] > 32768 and out["valid"] and out["alive"], out
    assert out["cleanup"] == "exited", out
