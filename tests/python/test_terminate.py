"""terminate(pid, expected_token, policy, schedule): pinned, checked, whole group, GIL released."""

import json
import os
import signal
import threading
import time

import pytest

import pidguard
from conftest import alive, can_unshare, group_members, proc_state, run_in_pid_namespace, wait_until

IGNORE_TERM = "trap '' TERM; while :; do sleep 0.2; done"


def test_terminates_a_group_leader_and_its_group_after_term(spawn):
    p = spawn.popen(["sh", "-c", "sleep infinity & sleep infinity & wait"])
    assert wait_until(lambda: len(group_members(p.pid)) == 3)
    kids = [m for m in group_members(p.pid) if m != p.pid]
    token = pidguard.start_token(p.pid)
    t = time.monotonic()
    r = pidguard.terminate(p.pid, token)
    assert time.monotonic() - t < 1.9, "returned well before the 2 s wait of TERM/2/KILL/1"
    assert (r.pid, r.outcome, r.stopped, r.after) == (p.pid, "exited", True, "TERM")
    assert r.signals[:2] == ["TERM", "CONT"] and "KILL" not in r.signals
    assert r.group and r.pinned and r.survivors == []
    assert r.exit_code == 128 + signal.SIGTERM and r.exit_signal == signal.SIGTERM
    assert 0 <= r.elapsed < 10
    assert group_members(p.pid) == [] and not any(alive(k) for k in kids)
    assert p.wait() == -signal.SIGTERM  # left for Popen: not reaped by default


def test_escalates_to_kill_for_a_group_that_ignores_term(spawn):
    p = spawn.popen(["bash", "-c", f"(trap '' TERM; {IGNORE_TERM}) & {IGNORE_TERM}"])
    assert wait_until(lambda: len(group_members(p.pid)) >= 2)
    r = pidguard.terminate(p.pid, pidguard.start_token(p.pid), schedule="TERM/0.5/KILL/5")
    assert (r.outcome, r.after) == ("exited", "KILL")
    assert r.signals == ["TERM", "CONT", "KILL"]
    assert group_members(p.pid) == []
    assert p.wait() == -signal.SIGKILL


def test_reap_option_reaps_our_child(spawn):
    p = spawn.popen(["sleep", "infinity"])
    r = pidguard.terminate(p.pid, pidguard.start_token(p.pid), reap=True)
    assert r.outcome == "exited" and r.exit_code == 143
    assert proc_state(p.pid) is None  # reaped: no zombie left


def test_non_leader_is_terminated_alone(spawn):
    # A child that does not lead a group: its group is someone else's (here: the shell's).
    p = spawn.popen(["sh", "-c", "sleep infinity & echo $!; wait; exec sleep infinity"], stdout=__import__("subprocess").PIPE)
    child = int(p.stdout.readline())
    r = pidguard.terminate(child, pidguard.start_token(child))
    assert r.outcome == "exited" and not r.group
    assert r.exit_code is None  # not our child: unknown, never an invented 0
    time.sleep(0.2)
    assert alive(p.pid) and p.poll() is None, "the group leader was not touched"


def test_mismatched_token_is_refused_and_nothing_is_sent(spawn):
    p = spawn.popen(["sleep", "infinity"])
    token = pidguard.start_token(p.pid)
    prefix, machine, boot, ns, ticks, ino = token.split(":")
    for bad, refusal in [
        # other start ticks, recorded without an inode (with inodes on both sides the inode decides)
        (f"{prefix}:{machine}:{boot}:{ns}:{int(ticks) - 1}:-", "mismatch"),
        (f"{prefix}:{machine}:0-0-0:{ns}:{ticks}:{ino}", "mismatch"),  # another boot
        (f"{prefix}:elsewhere:0-0-0:{ns}:{ticks}:{ino}", "unverifiable"),  # another machine (and boot)
    ]:
        for policy in ("strict", "lenient"):
            with pytest.raises(pidguard.RefusedError) as e:
                pidguard.terminate(p.pid, bad, policy=policy)
            assert e.value.refusal == refusal, (bad, policy)
    assert alive(p.pid) and p.poll() is None


def test_policies_without_a_token(spawn):
    p = spawn.popen(["sleep", "infinity"])
    with pytest.raises(pidguard.RefusedError) as e:
        pidguard.terminate(p.pid)
    assert e.value.refusal == "unverifiable"
    assert alive(p.pid)
    r = pidguard.terminate(p.pid, policy="lenient")
    assert r.outcome == "exited"


def test_zombie_and_gone(spawn):
    p = spawn.popen(["true"])
    assert wait_until(lambda: proc_state(p.pid) == "Z")
    with pytest.raises(ProcessLookupError):
        pidguard.terminate(p.pid, policy="lenient")
    p.wait()
    with pytest.raises(pidguard.NoSuchProcessError):
        pidguard.terminate(p.pid, policy="lenient")


def test_terminate_releases_the_gil(spawn):
    p = spawn.popen(["bash", "-c", IGNORE_TERM])
    token = pidguard.start_token(p.pid)
    ticks = []
    stop = threading.Event()

    def counter():
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.01)

    th = threading.Thread(target=counter)
    th.start()
    try:
        time.sleep(0.05)
        t0 = time.monotonic()
        r = pidguard.terminate(p.pid, token, schedule="TERM/1/KILL/5")
        t1 = time.monotonic()
    finally:
        stop.set()
        th.join()
    assert r.after == "KILL" and t1 - t0 >= 0.9
    during = [t for t in ticks if t0 < t < t1]
    # Holding the GIL for the whole second would allow at most one tick; released, ~100.
    assert len(during) >= 10, len(during)


NAMESPACE_PROBE = r"""
import json, os, signal, subprocess, sys, time
import pidguard
out = {}
# pid 1 (ourselves here) and our own group are never signalled, under either policy.
for policy in ("strict", "lenient"):
    try:
        pidguard.terminate(1, pidguard.start_token(1), policy=policy)
        out["init-" + policy] = "signalled"
    except pidguard.RefusedError as e:
        out["init-" + policy] = e.refusal
# Record a process, let it die and be reaped, give its pid to a bystander group leader.
victim = subprocess.Popen(["sleep", "infinity"], start_new_session=True)
token = pidguard.start_token(victim.pid)
pid = victim.pid
victim.kill(); victim.wait()
with open("/proc/sys/kernel/ns_last_pid", "w") as f:
    f.write(str(pid - 1))
bystander = subprocess.Popen(["sh", "-c", "sleep infinity & wait"], start_new_session=True)
out["reused"] = bystander.pid == pid
time.sleep(0.2)
try:
    r = pidguard.terminate(pid, token)
    out["terminate"] = r.outcome
except pidguard.RefusedError as e:
    out["terminate"] = "refused:" + e.refusal
out["bystander_alive"] = bystander.poll() is None
out["bystander_group"] = sorted(
    int(d) for d in os.listdir("/proc") if d.isdigit() and os.getpgid(int(d)) == pid
) if out["reused"] else []
print(json.dumps(out))
"""


def test_pid_reuse_in_a_private_namespace_never_signals_the_new_owner():
    why = can_unshare()
    if why:
        pytest.skip(why)
    r = run_in_pid_namespace(NAMESPACE_PROBE)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["init-strict"] == "init" and out["init-lenient"] == "init"
    assert out["reused"], "could not force pid reuse with ns_last_pid"
    assert out["terminate"] == "refused:mismatch"
    assert out["bystander_alive"] and len(out["bystander_group"]) == 2


def test_judge_and_stop_pid_file_as_node_and_c_have_them(tmp_path, spawn):
    p = spawn.popen(["sleep", "infinity"])
    token = pidguard.start_token(p.pid)
    j = pidguard.judge(p.pid, token)
    assert (j.verdict, j.reason) == ("match", "token-equal")
    assert pidguard.judge(p.pid).verdict == "unverifiable"
    pid_file = tmp_path / "on_x.bg.pid"
    pidguard.write_pid_file_with_mtime(pid_file, p.pid, time.time())
    r = pidguard.stop_pid_file(pid_file, schedule="TERM/5/KILL/5")
    assert (r.outcome, r.after, r.status, r.pid_file_removed) == ("exited", "TERM", 0, True), r
    assert r.check.valid and r.terminate is not None and r.signals[:1] == ["TERM"]
    p.wait()
    assert pidguard.judge(p.pid, token).verdict == "gone"
    r = pidguard.stop_pid_file(pid_file)
    assert (r.outcome, r.stale_reason, r.status) == ("stale", "missing", 1)


def test_stop_pid_file_takes_a_guard_record_too(tmp_path, spawn):
    p = spawn.popen(["sleep", "infinity"])
    path = tmp_path / "g.json"
    pidguard.guard.create(path, pidguard.guard.Entry(p.pid, pidguard.start_token(p.pid)))
    r = pidguard.stop_pid_file(path, schedule="TERM/5/KILL/5")
    assert (r.format, r.outcome, r.pid_file_removed) == ("guard", "exited", True), r
    assert not path.exists()
