"""A pidfile carries its owner's authority, never more: a caller whose kill(2) reach is larger
than the pidfile owner's — real uid 0 with a lowered effective uid, as ArchiveBox started as root
runs (``getresuid()`` = (0, 999, 0)) — must not be steered at root's processes by a user's
pidfile, even one with the target's exact start token (anyone can compute it from /proc).

Each case runs in a child interpreter that switches to uids (0, U, 0) with ``os.setresuid`` after
making root's bystander (its own session) and the user's pidfile; every abx-dl shape and
pidguard's own stop and cleanup are tried in turn and the bystander must live through all of
them. A positive control stops the user's own process through the user's own pidfile, so the
test fails if the rule is too wide as well. Seen failing on the rule that compared the owner
with the effective uid only: the first call killed root's process.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

U = 4242

CHILD = textwrap.dedent(
    r'''
    import asyncio, json, os, subprocess, sys, tempfile, time
    import concurrent.futures.thread  # imported before the uid switch: the interpreter may sit in root's home
    import pidguard
    from pidguard import abx_dl

    U = int(sys.argv[1])
    SAVED = int(sys.argv[2])  # the saved uid: 0 (seteuid) or U (setresuid(0, U, U))
    base = tempfile.mkdtemp(prefix="pidguard-reach-")
    os.chmod(base, 0o755)
    hooks = os.path.join(base, "snap", "plug")
    os.makedirs(hooks)
    for d in (os.path.join(base, "snap"), hooks):
        os.chown(d, U, U)

    def alive(pid):
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except FileNotFoundError:
            return False

    own_dir = os.path.join(base, "own")
    os.mkdir(own_dir)
    os.chown(own_dir, U, U)

    def user_record(name, pid, where=hooks):
        path = os.path.join(where, name)
        pidguard.write_pid_file_with_mtime(path, pid, pidguard.lookup(pid).create_time)
        os.chown(path, U, U)
        return path

    def as_user():
        os.setgid(U)
        os.setuid(U)

    # Root's bystander, and the user's own process (both in sessions of their own).
    root_proc = subprocess.Popen(["sleep", "infinity"], start_new_session=True)
    own = [subprocess.Popen(["sleep", "infinity"], start_new_session=True, preexec_fn=as_user) for _ in range(2)]
    deadline = time.monotonic() + 30
    while any(open(f"/proc/{p.pid}/comm").read().strip() != "sleep" for p in [root_proc, *own]):
        assert time.monotonic() < deadline, "the processes never ran sleep"
        time.sleep(0.01)
    argv = ["sleep", "infinity"]
    records = {name: user_record(f"on_Snapshot__{name}.bg.pid", root_proc.pid) for name in
               ("argv", "noargv", "safe", "stop", "cleanup")}
    own_records = [user_record(f"on_Own__{i}.bg.pid", p.pid, own_dir) for i, p in enumerate(own)]

    os.setresuid(0, U, SAVED)  # ArchiveBox's shape: the effective uid is lowered, the real one is 0
    assert os.getresuid() == (0, U, SAVED)
    results = {}

    def attempt(name, call):
        try:
            results[name] = {"returned": repr(call())}
        except Exception as e:  # recorded, judged by the test
            results[name] = {"raised": type(e).__name__, "message": str(e)}
        results[name]["root_alive"] = alive(root_proc.pid)

    attempt("graceful_kill_by_pid_file argv", lambda: asyncio.run(
        abx_dl.graceful_kill_by_pid_file(records["argv"], argv, grace_period=1.0)))
    attempt("graceful_kill_by_pid_file []", lambda: asyncio.run(
        abx_dl.graceful_kill_by_pid_file(records["noargv"], [], grace_period=1.0)))
    attempt("safe_kill_process", lambda: abx_dl.safe_kill_process(records["safe"]))
    attempt("stop_pid_file", lambda: pidguard.stop_pid_file(records["stop"]).outcome)
    attempt("cleanup_background_hooks", lambda: [
        (r.outcome) for r in pidguard.cleanup_background_hooks(os.path.join(base, "snap"), schedule="TERM/1/KILL/1")])
    results["records kept"] = all(os.path.exists(p) for p in records.values())
    # The positive control: the user's own processes, named by the user's own pidfiles.
    results["own stopped"] = asyncio.run(abx_dl.graceful_kill_by_pid_file(own_records[0], argv, grace_period=1.0))
    results["own cleaned"] = [r.outcome for r in pidguard.cleanup_background_hooks(own_dir, schedule="TERM/1/KILL/1")]
    results["own alive"] = [alive(p.pid) for p in own]
    os.setresuid(0, 0, 0)
    for p in [root_proc, *own]:
        p.kill()
        p.wait()
    print(json.dumps(results))
    '''
)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: the caller lowers only its effective uid, as ArchiveBox does")
@pytest.mark.parametrize("saved", [0, U], ids=["saved-uid-0", "saved-uid-U"])
def test_a_real_uid_0_caller_is_not_steered_at_roots_process_by_a_users_pidfile(saved):
    out = subprocess.run([sys.executable, "-c", CHILD, str(U), str(saved)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    results = json.loads(out.stdout.strip().splitlines()[-1])
    for name in ("graceful_kill_by_pid_file argv", "graceful_kill_by_pid_file []", "safe_kill_process",
                 "stop_pid_file", "cleanup_background_hooks"):
        assert results[name]["root_alive"], f"{name} killed root's process: {results}"
    # The abx-dl shapes answer False (abx-dl's own shape), never raise for a record's state.
    for name in ("graceful_kill_by_pid_file argv", "graceful_kill_by_pid_file []", "safe_kill_process"):
        assert results[name] == {"returned": "False", "root_alive": True}, results
    assert results["stop_pid_file"] == {"returned": repr("refused"), "root_alive": True}, results
    assert results["records kept"], results
    assert results["own stopped"] is True and results["own cleaned"] == ["already-gone", "exited"], results
    assert results["own alive"] == [False, False], results
