"""pidguard.abx_dl, the drop-in for abx-dl's process_utils, and pidguard.ProcessRef.

Every process is started here and ended here through a ProcessRef pinned right after spawn (so
cleanup reaches the group even after asyncio reaped the leader, and never a stranger). The
comparison with abx-dl's own code runs in tests/abx_dl (scripts/test-abx-dl.sh: it needs
Python >= 3.12).
"""

import asyncio
import os
import selectors
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

import pidguard
import pidguard.abx_dl as A

from conftest import alive, group_members, handles_term, wait_until

NODE = shutil.which("node")

# The public names of abx_dl.process_utils in abx-dl 1.13.273 (tests/abx_dl checks them against
# the installed release), plus the names older releases import.
CURRENT = {
    "GRACEFUL_SHUTDOWN_TIMEOUT",
    "validate_pid_file",
    "write_pid_file_with_mtime",
    "is_process_alive",
    "graceful_kill_process",
    "graceful_kill_by_pid_file",
}
OLDER = {"write_cmd_file", "safe_kill_process", "cleanup_background_hooks"}


class Procs:
    """Spawned hooks, each pinned at once; every group is SIGKILLed at the end."""

    def __init__(self):
        self.refs = []

    def pin(self, pid):
        ref = pidguard.ProcessRef(pid, policy="lenient")
        self.refs.append(ref)
        return ref

    async def spawn(self, *argv, **kw):
        kw.setdefault("start_new_session", True)
        kw.setdefault("stdin", subprocess.DEVNULL)
        p = await asyncio.create_subprocess_exec(*argv, **kw)
        self.pin(p.pid)
        return p

    def close(self):
        for ref in self.refs:
            try:
                if ref.leads_group:
                    ref.signal_group(signal.SIGKILL)
                else:
                    ref.signal(signal.SIGKILL)
            except (ValueError, pidguard.PidguardError):
                pass
            ref.close()


@pytest.fixture
def procs():
    p = Procs()
    yield p
    p.close()


def run(coro):
    """Run a coroutine with a 10 ms ticker beside it; returns (result, ticks)."""

    async def main():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        t = asyncio.create_task(ticker())
        try:
            return await coro(), ticks
        finally:
            t.cancel()

    return asyncio.run(main())


def wait_members(pgid, n):
    assert wait_until(lambda: len(group_members(pgid)) >= n), group_members(pgid)


# --- names and shapes ---------------------------------------------------------------------


def test_names_are_those_of_process_utils():
    assert set(A.__all__) == CURRENT | OLDER
    assert A.GRACEFUL_SHUTDOWN_TIMEOUT == 15.0
    assert asyncio.iscoroutinefunction(A.graceful_kill_process)
    assert asyncio.iscoroutinefunction(A.graceful_kill_by_pid_file)
    assert callable(A._send_signal)  # abx-dl's process service imports this private name
    assert A.cleanup_background_hooks is pidguard.cleanup_background_hooks


# --- validate_pid_file: the current argv rules, parity ------------------------------------


def tokenless(pid_file):
    """Drop the start token: the record is then judged by the original's mtime and argv rules."""
    os.removexattr(pid_file, pidguard.TOKEN_XATTR)


def test_argv_list_record(tmp_path, spawn):
    p = spawn.popen(["sleep", "1000"])
    pf = tmp_path / "h.pid"
    A.write_pid_file_with_mtime(pf, p.pid, time.time())
    tokenless(pf)
    assert A.validate_pid_file(pf, ["sleep", "1000"]) is True
    assert A.validate_pid_file(pf, ["sleep", "999"]) is False
    assert pidguard.check_pid_file(pf, ["sleep", "999"]).reason == "cmd-mismatch"
    assert A.validate_pid_file(pf, []) is True  # nothing recorded
    assert pidguard.validate_pid_file(pf, ("sleep", "1000")) is True
    # Every failure is False, never an exception, as in the original.
    assert A.validate_pid_file(pf, ["sleep", Path("/x")]) is False
    # abx-dl's tolerance=None is False for every file (its comparison with None raises); a
    # translation of its call shape in pidguard.abx_dl. pidguard's own None is the default.
    assert A.validate_pid_file(pf, ["sleep", "1000"], None) is False
    assert pidguard.validate_pid_file(pf, None, None) is True
    assert pidguard.check_pid_file(pf, tolerance=None).reason == "valid"
    assert A.validate_pid_file(str(pf) + "\0", []) is False
    with pytest.raises(TypeError):
        pidguard.validate_pid_file(pf, ["sleep", 5])


def chrome_hook(tmp_path):
    """A hook under plugins/chrome/ run through its shebang: node when installed, else sh."""
    d = tmp_path / "plugins" / "chrome"
    d.mkdir(parents=True)
    hook = d / "on_Snapshot__00_chrome_launch.daemon.bg.js"
    if NODE:
        hook.write_text("#!/usr/bin/env node\nsetInterval(() => {}, 1000);\n")
    else:
        hook.write_text("#!/bin/sh\nwhile :; do sleep 1; done\n")
    hook.chmod(0o755)
    return hook


@pytest.mark.parametrize("url", ["https://example.com/", "https://www.google.com/chrome/", "https://chromium.org/"])
@pytest.mark.parametrize("with_token", [True, False])
def test_chrome_hook_through_its_shebang_is_valid(tmp_path, spawn, url, with_token):
    hook = chrome_hook(tmp_path)
    argv = [str(hook), f"--url={url}"]
    p = spawn.popen(argv)
    # Until `env` has exec'd node, the live argv is `/usr/bin/env node hook.js …`: wait for node.
    assert wait_until(lambda: (lambda a: len(a) > 2 and not a[0].endswith(b"env"))(open(f"/proc/{p.pid}/cmdline", "rb").read().split(b"\0")))
    pf = tmp_path / "hook.pid"
    A.write_pid_file_with_mtime(pf, p.pid, time.time())
    if not with_token:
        tokenless(pf)
    sh = tmp_path / "hook.sh"
    A.write_cmd_file(sh, argv)
    # The live argv is the kernel's shebang rewrite: node (or sh) /abs/hook.js --url=…
    assert A.validate_pid_file(pf, argv) is True
    assert pidguard.validate_pid_file(pf, sh) is True
    assert pidguard.check_pid_file(pf, sh).reason == "valid"


def test_pid_content_stripped_as_str_strip(tmp_path, spawn):
    p = spawn.popen(["sleep", "1000"])
    pf = tmp_path / "h.pid"
    for text in ["\x0b{}\x1c", "\x1d\x1e{}\x1f", "\u3000{}\u00a0", "\u2028{}\u2029\n"]:
        A.write_pid_file_with_mtime(pf, p.pid, time.time())
        data = text.format(p.pid).encode()
        assert data.decode().strip() == str(p.pid)  # what the original reads
        with open(pf, "r+b") as f:
            f.write(data)
        assert A.validate_pid_file(pf, ["sleep", "1000"]) is True, repr(text)
    for text in ["\x01{}", "+{}", "{}_"]:
        pf.write_text(text.format(p.pid))
        assert A.validate_pid_file(pf, []) is False, repr(text)


def test_write_cmd_file_writes_what_the_original_writes(tmp_path, spawn):
    for argv in [["node", "/x/hook.js", "--url=https://a.example/?q=1&b"], ["x", "a\nb", "it's", ""], []]:
        sh = tmp_path / "c.sh"
        A.write_cmd_file(sh, argv)
        assert sh.read_text() == "#!/bin/bash\n" + shlex.join(argv) + "\n"
        assert sh.stat().st_mode & 0o777 == 0o755
    # A line break inside an argument is read back as one argument.
    script = tmp_path / "a\nb"
    script.write_text("while :; do sleep 1; done\n")
    p = spawn.popen(["/bin/sh", str(script)])
    assert wait_until(lambda: b"a\nb" in open(f"/proc/{p.pid}/cmdline", "rb").read())
    pf = tmp_path / "h.pid"
    A.write_pid_file_with_mtime(pf, p.pid, time.time())
    tokenless(pf)
    A.write_cmd_file(sh, ["/bin/sh", str(script)])
    assert pidguard.check_pid_file(pf, sh).reason == "valid"
    A.write_cmd_file(sh, ["/bin/sh", str(tmp_path / "a")])
    assert pidguard.check_pid_file(pf, sh).reason == "cmd-mismatch"
    sh.write_text("")  # an empty file records nothing
    assert pidguard.check_pid_file(pf, sh).reason == "valid"


# --- ProcessRef -----------------------------------------------------------------------------


def test_process_ref_pins_signals_and_closes(spawn):
    p = spawn.popen(["sh", "-c", "sleep 1000 & wait"])
    wait_members(p.pid, 2)
    with pidguard.ProcessRef(p.pid, policy="lenient") as ref:
        assert ref.pid == p.pid and ref.is_pinned and ref.leads_group and not ref.closed
        assert ref.token == pidguard.start_token(p.pid)
        assert ref.wait(0.05) is False and not ref.has_exited()
        sel = selectors.DefaultSelector()
        sel.register(ref.fileno(), selectors.EVENT_READ)
        assert sel.select(0) == []
        assert ref.signal(signal.SIGKILL) is True
        assert sel.select(20) and ref.wait(20) is True and ref.has_exited()
        sel.close()
        p.wait()
        # The leader is reaped; its child still holds the group, and the pidfd reaches it.
        assert len(group_members(p.pid)) == 1
        assert ref.signal(signal.SIGTERM) is False
        assert ref.signal_group(signal.SIGKILL) is True
        assert wait_until(lambda: not group_members(p.pid))
    assert ref.closed and "closed" in repr(ref)
    for call in (ref.fileno, ref.has_exited, lambda: ref.signal(15), lambda: ref.wait(0)):
        with pytest.raises(ValueError):
            call()
    ref.close()  # idempotent


def test_process_ref_refusals_and_arguments(spawn):
    with pytest.raises(pidguard.RefusedError):
        pidguard.ProcessRef(os.getpid(), policy="lenient")
    with pytest.raises(pidguard.RefusedError):
        pidguard.ProcessRef(1, policy="lenient")
    p = spawn.popen(["sleep", "1000"])
    with pytest.raises(pidguard.RefusedError) as e:
        pidguard.ProcessRef(p.pid)  # strict: no token, identity unverifiable
    assert e.value.refusal == "unverifiable"
    with pidguard.ProcessRef(p.pid, pidguard.start_token(p.pid)) as ref:
        with pytest.raises(pidguard.InvalidArgumentError):
            ref.signal(0)
        with pytest.raises(TypeError):
            ref.signal(True)
        with pytest.raises(ValueError):
            ref.wait(-1)
        report = ref.terminate("TERM/5/KILL/5")
        assert report.outcome == "exited" and report.after == "TERM" and not ref.closed  # the handle is kept
    p.wait()
    with pytest.raises(pidguard.NoSuchProcessError):
        pidguard.ProcessRef(p.pid, policy="lenient")


def test_wait_async_leaves_the_loop_free(procs):
    async def go():
        p = await procs.spawn("sleep", "0.5")
        ref = procs.refs[-1]
        assert await ref.wait_async(0.01) is False
        return await ref.wait_async(20)

    exited, ticks = run(go)
    assert exited is True and ticks >= 5


# --- graceful_kill_process / graceful_kill_by_pid_file --------------------------------------


def test_graceful_kill_process_term_then_group(procs):
    async def go():
        p = await procs.spawn("sh", "-c", "sleep 1000 & wait")
        await asyncio.to_thread(wait_members, p.pid, 2)
        await A.graceful_kill_process(p, grace_period=20)
        return p

    p, ticks = run(go)
    assert p.returncode == -signal.SIGTERM
    assert not group_members(p.pid)


def test_graceful_kill_process_escalates_after_grace_period_loop_free(procs):
    async def go():
        p = await procs.spawn("sh", "-c", "trap '' TERM; while :; do sleep 0.05; done")
        assert await asyncio.to_thread(wait_until, lambda: handles_term(p.pid))  # the trap is set
        await A.graceful_kill_process(p, grace_period=1.0)
        return p

    p, ticks = run(go)
    assert p.returncode == -signal.SIGKILL
    assert ticks >= 10  # the 10 ms timer kept ticking through the whole grace period


def test_graceful_kill_process_respects_grace_period(procs):
    # A hook that needs half a second to flush after SIGTERM, then exits 0: a long grace period
    # lets it; a short one kills it.
    script = "trap 'sleep 0.5; exit 0' TERM; while :; do sleep 0.05; done"

    async def go(grace):
        p = await procs.spawn("sh", "-c", script)
        assert await asyncio.to_thread(wait_until, lambda: handles_term(p.pid))  # the trap is set
        await A.graceful_kill_process(p, grace_period=grace)
        return p

    assert run(lambda: go(20))[0].returncode == 0
    assert run(lambda: go(0.05))[0].returncode == -signal.SIGKILL


def test_graceful_kill_process_reaches_the_group_after_the_leader(procs):
    # The leader exits on SIGTERM; its child ignores SIGTERM. The original returns when the
    # leader is gone and leaves the child running; pidguard kills it when grace_period ends.
    async def go():
        p = await procs.spawn("sh", "-c", "(trap '' TERM; while :; do sleep 0.05; done) & wait")
        await asyncio.to_thread(wait_members, p.pid, 2)
        # the child's trap is set (the leader itself does not handle TERM)
        assert await asyncio.to_thread(
            wait_until, lambda: any(handles_term(m) for m in group_members(p.pid) if m != p.pid)
        )
        await A.graceful_kill_process(p, grace_period=0.5)
        return p

    p, ticks = run(go)
    assert p.returncode == -signal.SIGTERM
    assert wait_until(lambda: not group_members(p.pid)), group_members(p.pid)


def test_graceful_kill_process_leaves_a_reaped_process_alone(procs):
    async def go():
        p = await asyncio.create_subprocess_exec("true")
        await p.wait()
        await A.graceful_kill_process(p)  # the pid may be anyone's by now: nothing is sent
        return p

    assert run(go)[0].returncode == 0


def test_graceful_kill_by_pid_file(tmp_path, procs):
    pf = tmp_path / "h.pid"

    async def go():
        p = await procs.spawn("sleep", "1000")
        A.write_pid_file_with_mtime(pf, p.pid, time.time())
        signalled = await A.graceful_kill_by_pid_file(pf, ["sleep", "1000"], grace_period=20)
        await p.wait()
        again = await A.graceful_kill_by_pid_file(pf, ["sleep", "1000"])
        return signalled, again, p

    (signalled, again, p), ticks = run(go)
    assert signalled is True and p.returncode == -signal.SIGTERM
    assert again is False and not pf.exists()  # gone: the record is removed


def test_record_naming_another_process_is_not_signalled(tmp_path, procs):
    # A pid reused within the tolerance by a retry of the same hook, simulated: the record of
    # the first run (its token, its start time) names the retry's pid. The retry has the same
    # argv and started seconds later, so the original's mtime and argv rules pass and it would
    # be killed; the token proves it is another process.
    pf = tmp_path / "h.pid"

    async def go():
        first = await procs.spawn("sleep", "1000")
        A.write_pid_file_with_mtime(pf, first.pid, time.time())
        retry = await procs.spawn("sleep", "1000")
        with open(pf, "r+b") as f:
            f.truncate(0)
            f.write(str(retry.pid).encode())
        os.utime(pf, (time.time(), time.time()))
        assert pidguard.check_pid_file(pf, ["sleep", "1000"]).reason == "mismatch"
        return retry, await A.graceful_kill_by_pid_file(pf, ["sleep", "1000"], grace_period=1)

    (retry, signalled), _ = run(go)
    assert signalled is False and alive(retry.pid)
    assert not pf.exists()  # proven stale: removed


def test_record_that_cannot_be_judged_is_kept(tmp_path, procs):
    # Another machine's record (its token's machine id and boot id differ): never judged, never
    # removed. (The machine id alone is not consulted when the boot ids are equal.)
    pf = tmp_path / "h.pid"

    async def go():
        p = await procs.spawn("sleep", "1000")
        A.write_pid_file_with_mtime(pf, p.pid, time.time())
        token = os.getxattr(pf, pidguard.TOKEN_XATTR).decode().split(":")
        token[1] = "0" * len(token[1])
        token[2] = "00000000-0000-4000-8000-000000000000"
        os.setxattr(pf, pidguard.TOKEN_XATTR, ":".join(token).encode())
        assert pidguard.check_pid_file(pf, []).reason == "foreign"
        return p, await A.graceful_kill_by_pid_file(pf, [], grace_period=1)

    (p, signalled), _ = run(go)
    assert signalled is False and alive(p.pid) and pf.exists()


def test_old_names(tmp_path, spawn):
    p = spawn.popen(["sleep", "1000"])
    pf, sh = tmp_path / "h.pid", tmp_path / "h.sh"
    A.write_pid_file_with_mtime(pf, p.pid, time.time())
    A.write_cmd_file(sh, ["sleep", "1000"])
    assert A.safe_kill_process(pf, sh, signal.SIGTERM) is True
    assert p.wait(20) == -signal.SIGTERM
    assert A.safe_kill_process(pf, sh) is False and not pf.exists()


def test_is_process_alive_and_send_signal(spawn):
    assert A.is_process_alive(os.getpid()) is True
    assert A.is_process_alive(0) is False and A.is_process_alive(-1) is False
    assert A.is_process_alive(1) is True
    with pytest.raises(TypeError):
        A.is_process_alive("1")
    p = spawn.popen(["sleep", "1000"])
    assert A.is_process_alive(p.pid) is True
    assert A._send_signal(p.pid, signal.SIGKILL) is True
    assert wait_until(lambda: pidguard.lookup(p.pid).state == "Z")
    assert A.is_process_alive(p.pid) is False  # a zombie is not alive
    assert A._send_signal(p.pid, signal.SIGKILL) is False
    p.wait()
    assert A.is_process_alive(p.pid) is False
    assert A._send_signal(os.getpid(), 0) is False and A._send_signal(1, signal.SIGTERM) is False


def test_the_swap_and_the_differences_are_documented():
    from conftest import REPO

    readme = (REPO / "docs/python.md").read_text().split("\n## Using pidguard in abx-dl\n", 1)[1].split("\n## ", 1)[0]
    swap = 'sys.modules["abx_dl.process_utils"] = pidguard.abx_dl'
    assert swap in readme and swap in A.__doc__
    for n in range(1, 9):  # the numbered differences, in both places
        assert f"\n{n}. " in readme and f"\n{n}. " in A.__doc__, n
    for word in ("chrome", "tolerance=None", "str.strip()", "is_process_alive", "grace_period", "zombie"):
        assert word in readme and word in A.__doc__, word


def test_graceful_kill_by_pid_file_escalates_loop_free(tmp_path, procs):
    pf = tmp_path / "h.pid"

    async def go():
        ready = tmp_path / "ready"
        p = await procs.spawn("sh", "-c", f"trap '' TERM; : > {ready}; while :; do sleep 0.05; done")
        while not ready.exists():  # the trap is set
            await asyncio.sleep(0.01)
        A.write_pid_file_with_mtime(pf, p.pid, time.time())
        signalled = await A.graceful_kill_by_pid_file(pf, [], grace_period=1.0)
        await p.wait()
        return signalled, p

    (signalled, p), ticks = run(go)
    assert signalled is True and p.returncode == -signal.SIGKILL
    assert ticks >= 10  # the 10 ms timer kept ticking through the grace period


def test_process_ref_terminate_and_close_while_another_thread_waits(spawn):
    import platform
    import threading

    if platform.machine() != "x86_64":
        pytest.skip("reads x86_64 syscall numbers from /proc/self/task/<tid>/syscall")
    p = spawn.popen(["sleep", "1000"])
    ref = pidguard.ProcessRef(p.pid, policy="lenient")
    result, tid = [], []

    def wait():
        tid.append(threading.get_native_id())
        result.append(ref.wait(30))

    def blocked_in_poll():
        # The waiter's thread is inside poll(2)/ppoll(2) on the pidfd, the GIL released.
        try:
            with open(f"/proc/self/task/{tid[0]}/syscall") as f:
                return f.read().split()[0] in ("7", "271")  # x86_64 poll, ppoll
        except (IndexError, OSError):
            return False

    waiter = threading.Thread(target=wait)
    waiter.start()
    assert wait_until(blocked_in_poll)
    # terminate() works on the shared handle while the other thread waits on it, and its exit
    # wakes the waiter; the handle is kept.
    r = ref.terminate("TERM/5/KILL/5")
    assert r.outcome == "exited" and r.after == "TERM", r
    waiter.join(30)
    assert result == [True]
    ref.close()
    assert ref.closed


def test_graceful_kill_process_reaches_the_group_of_a_leader_that_exited_unreaped(spawn):
    """The leader has exited but the spawner has not reaped it yet: it is still the caller's
    child (a zombie pins its pid and group), so its leftover member is stopped, as the
    original's killpg stops it."""
    p = spawn.popen(["bash", "-c", "sleep 1000 & exit 0"])
    found = []

    def one_member():
        # One read, kept, without the leader (alive until bash exits): a second scan could differ.
        found[:] = [m for m in group_members(p.pid) if m != p.pid]
        return len(found) == 1

    assert wait_until(one_member)
    member = found[0]
    assert wait_until(lambda: open(f"/proc/{p.pid}/stat").read().split(") ")[1][0] == "Z")

    class Unreaped:  # what asyncio's Process looks like before its watcher reaps the child
        pid = p.pid
        returncode = None

        async def wait(self):
            while p.poll() is None:
                await asyncio.sleep(0.01)
            return p.returncode

    ref = pidguard.ProcessRef.for_child(p.pid)
    assert ref.leads_group
    ref.close()
    run(lambda: A.graceful_kill_process(Unreaped(), grace_period=5))
    assert wait_until(lambda: not alive(member), timeout=10)
    with pytest.raises(ValueError):  # not our child: nothing pinned, nothing sent
        pidguard.ProcessRef.for_child(os.getppid())


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (the owner rule binds a privileged caller)")
def test_another_users_pidfile_aims_only_at_that_users_processes(tmp_path, procs):
    # Core's owner rule (not "root only"): root acts on uid 65534's pidfile against uid 65534's
    # process, and refuses it against root's own process, keeping the record byte for byte.
    users, roots = tmp_path / "u.pid", tmp_path / "r.pid"

    async def go():
        mine = await procs.spawn("sleep", "1000")  # root's
        theirs = await procs.spawn("sleep", "1000", user=65534, group=65534)
        for pf, p in ((roots, mine), (users, theirs)):
            A.write_pid_file_with_mtime(pf, p.pid, pidguard.lookup(p.pid).create_time)
            os.chown(pf, 65534, 65534)
        before = roots.read_bytes()
        ref, report = pidguard.ProcessRef.for_pid_file(roots, [])
        assert ref is None and report.outcome == "refused" and report.refusal == "untrusted-pidfile"
        refused = await A.graceful_kill_by_pid_file(roots, [], grace_period=1)
        assert roots.read_bytes() == before
        signalled = await A.graceful_kill_by_pid_file(users, [], grace_period=20)
        if signalled:
            await asyncio.wait_for(theirs.wait(), 20)
        return mine, refused, signalled, theirs

    (mine, refused, signalled, theirs), _ = run(go)
    assert refused is False and alive(mine.pid) and roots.exists()
    assert signalled is True and theirs.returncode == -signal.SIGTERM
