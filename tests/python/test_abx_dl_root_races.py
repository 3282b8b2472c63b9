"""Root runs ``pidguard.abx_dl`` over a directory a user can write, while that user swaps the
pidfile's directory with a symlink to a root directory (``renameat2(RENAME_EXCHANGE)`` in a
loop). Whatever the timing, root must not kill its own process through the user's pidfile, and
must not delete its own file through the user's stale one: the owner and mode that decide come
from the descriptor the record was read from, and a stale record is removed through the
directory descriptor it was judged in.

Each race runs inside a private PID and mount namespace (``unshare --pid --fork --mount-proc``)
on its own tmpfs, with uid 65534 as the attacker (a forked child that dropped every uid), against
a process and files the test made; bounded in calls and time. Seen failing on the shim that
checked the owner with ``os.lstat(pid_file)`` and removed stale records with
``os.unlink(pid_file)``: root's process died of SIGTERM within a few calls, and root's 0600 file
in a root-only directory was deleted within a few thousand.
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

NOBODY = 65534

INNER = textwrap.dedent(
    r'''
    import asyncio, ctypes, json, os, signal, subprocess, sys, tempfile, time
    import pidguard
    from pidguard import abx_dl

    mode, max_calls, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    NOBODY = 65534
    base = tempfile.mkdtemp(prefix="pidguard-race-")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755", "pidguard-race", base], check=True)
    user, root = os.path.join(base, "user"), os.path.join(base, "root")
    os.mkdir(user); os.chown(user, NOBODY, NOBODY)
    os.mkdir(root, 0o755 if mode == "kill" else 0o700)
    hooks, alt = os.path.join(user, "hooks"), os.path.join(user, "alt")
    os.mkdir(hooks); os.chown(hooks, NOBODY, NOBODY)
    root_hooks = os.path.join(root, "hooks")
    os.mkdir(root_hooks, 0o755 if mode == "kill" else 0o700)
    os.symlink(root_hooks, alt); os.lchown(alt, NOBODY, NOBODY)
    pid_file = os.path.join(hooks, "on_x.pid")
    root_file = os.path.join(root_hooks, "on_x.pid")

    # Root's own process (its own session), and root's file of the same name.
    victim = subprocess.Popen(["sleep", "infinity"], start_new_session=True)
    info = pidguard.lookup(victim.pid)
    if mode == "kill":
        # Root's daemon pidfile (root-owned, 0644) and the user's copy with the real token
        # (anyone can compute it; written here by root, then given to the user).
        pidguard.write_pid_file_with_mtime(root_file, victim.pid, info.create_time)
        pidguard.write_pid_file_with_mtime(pid_file, victim.pid, info.create_time)
        os.chown(pid_file, NOBODY, NOBODY)
    else:
        with open(root_file, "w") as f:
            f.write("root's secret\n")
        os.chmod(root_file, 0o600)
        dead = subprocess.Popen(["true"]); dead.wait()
        stale = str(dead.pid).encode()

    libc = ctypes.CDLL(None, use_errno=True)
    stop_at = time.monotonic() + seconds
    r, w = os.pipe()
    attacker = os.fork()
    if attacker == 0:
        # The user: every uid and gid 65534, no supplementary groups.
        os.close(r)
        os.setgroups([]); os.setresgid(NOBODY, NOBODY, NOBODY); os.setresuid(NOBODY, NOBODY, NOBODY)
        real = os.open(hooks, os.O_RDONLY | os.O_DIRECTORY)
        stopping = []
        signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
        swaps = 0
        a, b = hooks.encode(), alt.encode()
        while not stopping and time.monotonic() < stop_at:
            if mode == "unlink":
                # Put the stale record back (in the real directory, by its descriptor).
                try:
                    fd = os.open("on_x.pid", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=real)
                    os.write(fd, stale); os.close(fd)
                except FileExistsError:
                    pass
            if libc.renameat2(-100, a, -100, b, 2) == 0:
                swaps += 1
        os.write(w, str(swaps).encode())
        os._exit(0)
    os.close(w)

    calls = 0
    async def graceful():
        global calls
        while calls < max_calls and time.monotonic() < stop_at:
            calls += 1
            await abx_dl.graceful_kill_by_pid_file(pid_file, [], grace_period=5)
            if victim.poll() is not None or not os.path.exists(root_file):
                return
    while calls < max_calls and time.monotonic() < stop_at:
        calls += 1
        abx_dl.safe_kill_process(pid_file, None, signal.SIGTERM)
        if victim.poll() is not None or not os.path.exists(root_file):
            break
        if calls % 2 == 0:
            asyncio.run(graceful())
            if victim.poll() is not None or not os.path.exists(root_file):
                break
    os.kill(attacker, signal.SIGTERM)
    os.waitpid(attacker, 0)
    swaps = int(os.read(r, 64) or b"0")
    victim_alive = victim.poll() is None
    root_file_kept = os.path.exists(root_file)
    victim.kill(); victim.wait()
    print(json.dumps({"calls": calls, "swaps": swaps, "victim_alive": victim_alive,
                      "victim_returncode": victim.returncode, "root_file_kept": root_file_kept}))
    '''
)


def _can_race() -> str:
    if os.geteuid() != 0:
        return "needs root (the deputy is root; the attacker is uid 65534)"
    if not shutil.which("unshare") or not shutil.which("mount"):
        return "needs unshare(1) and mount(8)"
    probe = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "true"], capture_output=True)
    if probe.returncode != 0:
        return "cannot make a private PID and mount namespace here"
    return ""


def _race(tmp_path, mode: str) -> dict:
    script = tmp_path / "race.py"
    script.write_text(INNER)
    out = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, str(script), mode, "20000", "20"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    # The race was run: the user swapped the directories while root made its calls.
    assert result["calls"] > 0 and result["swaps"] > 0, result
    return result


@pytest.mark.skipif(bool(_can_race()), reason=_can_race() or "ok")
def test_root_never_kills_its_own_process_through_a_users_pidfile_under_a_directory_swap(tmp_path):
    r = _race(tmp_path, "kill")
    assert r["victim_alive"], f"root's process was signalled through the user's pidfile: {r}"


@pytest.mark.skipif(bool(_can_race()), reason=_can_race() or "ok")
def test_root_never_deletes_its_own_file_through_a_users_stale_pidfile_under_a_directory_swap(tmp_path):
    r = _race(tmp_path, "unlink")
    assert r["root_file_kept"], f"root's 0600 file in a root-only directory was deleted: {r}"
