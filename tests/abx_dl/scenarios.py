"""Hook lifecycles driven through abx-dl's own process code, with or without pidguard.

Run as ``python scenarios.py NAME`` with ``PIDGUARD_SWAP=1`` to put ``pidguard.abx_dl`` in
place of ``abx_dl.process_utils`` (the documented one-line migration, made before abx-dl is
imported) or ``PIDGUARD_SWAP=0`` for abx-dl as released. Prints one JSON object: what was
observed. Hooks are spawned by abx-dl's ``ProcessService`` (a ``ProcessEvent`` on its bus: its
``create_subprocess_exec(start_new_session=True)`` and ``write_pid_file_with_mtime``) and
stopped through its kill paths (``stop_background_hooks`` → ``ProcessKillEvent`` →
``graceful_kill_process``; ``graceful_kill_by_pid_file`` as its cleanup handlers call it).

Meant to run inside a private PID namespace (scripts/test-abx-dl.sh): the pid-reuse scenario
forces a pid with ``ns_last_pid``. Every process started here is ended here: leftovers are found
by their process group (inside the namespace) and killed through a pidfd.
"""

import asyncio
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

SWAP = os.environ.get("PIDGUARD_SWAP") == "1"
if SWAP:
    import pidguard.abx_dl

    sys.modules["abx_dl.process_utils"] = pidguard.abx_dl  # the whole migration

import pidguard  # for cleanup and observation only
from abxbus import EventBus
from abx_dl.events import ProcessCompletedEvent, ProcessEvent, ProcessStartedEvent
import abx_dl.services.process_service as ps
from abx_dl.services.process_service import ProcessService

NODE = shutil.which("node")


def live_members(pgid):
    """Live (non-zombie) pids in process group pgid (read from /proc)."""
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


def ppid(pid):
    """The parent pid of pid (field 4 of /proc/PID/stat), or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    return int(data[data.rindex(b")") + 2 :].split()[1])


def alive(pid):
    try:
        return pidguard.lookup(pid).state not in ("Z", "X")
    except pidguard.PidguardError:
        return False


def kill_group_leftovers(pgid):
    """End what a scenario left in a hook's group, each member pinned first."""
    for pid in live_members(pgid):
        try:
            with pidguard.ProcessRef(pid, policy="lenient") as ref:
                ref.signal(signal.SIGKILL)
        except (pidguard.PidguardError, ValueError):
            pass


def tokenless_copy(pid_file: Path) -> Path:
    """A copy of a pidfile without pidguard's start token: what the original would have written
    (judged by the mtime and argv rules alone)."""
    copy = pid_file.with_name(pid_file.name + ".tokenless")
    shutil.copy2(pid_file, copy)
    try:
        os.removexattr(copy, pidguard.TOKEN_XATTR)
    except OSError:
        pass
    return copy


class Run:
    """One bus with abx-dl's ProcessService, a tick counter (10 ms timer) and hook helpers."""

    def __init__(self, root: Path):
        self.root = root
        self.bus = EventBus(name=f"pidguard_{os.getpid()}", max_history_size=None)
        self.svc = ProcessService(self.bus, emit_jsonl=False, interactive_tty=False)
        self.started: list = []
        self.completed: list = []
        self.bus.on(ProcessStartedEvent, lambda e: self.started.append(e))
        self.bus.on(ProcessCompletedEvent, lambda e: self.completed.append(e))
        self.ticks = 0
        self.groups: list[int] = []

    async def ticker(self):
        while True:
            await asyncio.sleep(0.01)
            self.ticks += 1

    def hook(self, plugin, name, text):
        path = self.root / "plugins" / plugin / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(0o755)
        return path

    async def spawn(self, hook: Path, args, *, background=True, timeout=30):
        n = len(self.started)
        ev = ProcessEvent(
            plugin_name=hook.parent.name,
            hook_name=hook.name,
            hook_path=str(hook),
            hook_args=list(args),
            is_background=background,
            output_dir=str(self.root / "snapshot" / hook.parent.name),
            env={"PATH": os.environ["PATH"], "TMP_DIR": str(self.root / "tmp")},
            timeout=timeout,
        )
        await self.bus.emit(ev).now()
        started = self.started[n]
        self.groups.append(started.pid)
        # Ready: the hook has printed its first line (its signal handlers are installed).
        deadline = time.monotonic() + 20
        while not started.stdout_file.exists() or not started.stdout_file.read_text().strip():
            if time.monotonic() > deadline or started.subprocess.returncode is not None:
                break
            await asyncio.sleep(0.02)
        return started

    def finish(self):
        for g in self.groups:
            kill_group_leftovers(g)


# --- hooks ------------------------------------------------------------------------------------

if NODE:
    NODE_HOOK = "#!/usr/bin/env node\nconsole.log('ready');\nsetInterval(() => {}, 1000);\n"
else:  # said in the result: "node": null
    NODE_HOOK = "#!/bin/sh\necho ready\nwhile :; do sleep 0.1; done\n"
SLEEPER = "#!/bin/sh\necho ready\nwhile :; do sleep 0.1; done\n"
# Forks nothing and starts no thread, so it takes no pid while it runs (the reuse scenario).
QUIET = "#!/usr/bin/env python3\nimport time\nprint('ready', flush=True)\ntime.sleep(1000)\n"
TERM_IGNORING = "#!/bin/sh\ntrap '' TERM\necho ready\nwhile :; do sleep 0.1; done\n"
SLOW_FLUSH = "#!/bin/sh\ntrap 'sleep 1; exit 0' TERM\necho ready\nwhile :; do sleep 0.1; done\n"
# The child says it ignores SIGTERM (a file next to the hook) only once its trap is set: the
# scenario waits for that file, not for a count of members that a busy machine may reach first.
LEAVES_CHILD = "#!/bin/sh\n(trap '' TERM; : > \"$0.trapped\"; while :; do sleep 0.1; done) &\necho ready\nwait\n"


# --- scenarios --------------------------------------------------------------------------------


async def chrome_node_hook(run: Run):
    """A node hook started through its shebang under plugins/chrome/, URL naming Chrome; validated
    with its argv list, then stopped by abx-dl's graceful_kill_by_pid_file and (a second one)
    by stop_background_hooks."""
    hook = run.hook("chrome", "on_Snapshot__00_chrome_launch.daemon.bg.js", NODE_HOOK)
    url = "--url=https://www.google.com/chrome/"
    s = await run.spawn(hook, [url])
    live = open(f"/proc/{s.pid}/cmdline", "rb").read().split(b"\0")[:-1]
    argv = [s.hook_path, *s.hook_args]
    valid = ps.validate_pid_file(s.pid_file, argv)
    tokenless_valid = ps.validate_pid_file(tokenless_copy(s.pid_file), argv)
    signalled = await ps.graceful_kill_by_pid_file(s.pid_file, argv, grace_period=10)
    await asyncio.wait_for(s.subprocess.wait(), 20)
    s2 = await run.spawn(hook, ["--url=https://example.com/"])
    await run.svc.stop_background_hooks()
    return {
        "node": NODE is not None,
        "live_argv0": os.path.basename(live[0].decode()),
        "valid": valid,
        "tokenless_valid": tokenless_valid,
        "by_pid_file_signalled": signalled,
        "returncode": s.subprocess.returncode,
        "stopped_returncode": s2.subprocess.returncode,
        "group_left": len(live_members(s.pid)) + len(live_members(s2.pid)),
    }


async def url_naming_chrome(run: Run):
    """A hook of another plugin whose URL names Chrome and Chromium."""
    hook = run.hook("wget", "on_Snapshot__50_wget.bg.sh", SLEEPER)
    s = await run.spawn(hook, ["--url=https://www.google.com/chrome/?q=chromium"])
    argv = [s.hook_path, *s.hook_args]
    valid = ps.validate_pid_file(s.pid_file, argv)
    signalled = await ps.graceful_kill_by_pid_file(s.pid_file, argv, grace_period=10)
    await asyncio.wait_for(s.subprocess.wait(), 20)
    return {"valid": valid, "by_pid_file_signalled": signalled, "returncode": s.subprocess.returncode}


async def argv_list_record(run: Run):
    """validate_pid_file with the argv list abx-dl passes, and others."""
    hook = run.hook("wget", "on_Snapshot__50_wget.bg.sh", SLEEPER)
    s = await run.spawn(hook, ["--url=https://example.com/"])
    other = run.hook("wget", "on_Snapshot__51_other.bg.sh", SLEEPER)
    answers = {
        "own_argv": ps.validate_pid_file(s.pid_file, [s.hook_path, *s.hook_args]),
        "empty_argv": ps.validate_pid_file(s.pid_file, []),
        "other_url": ps.validate_pid_file(s.pid_file, [s.hook_path, "--url=https://other.example/"]),
        "other_hook": ps.validate_pid_file(s.pid_file, [str(other), *s.hook_args]),
        "interpreter_form": ps.validate_pid_file(s.pid_file, ["/bin/sh", s.hook_path]),
    }
    bare = tokenless_copy(s.pid_file)
    answers["tokenless_own_argv"] = ps.validate_pid_file(bare, [s.hook_path, *s.hook_args])
    answers["tokenless_other_hook"] = ps.validate_pid_file(bare, [str(other), *s.hook_args])
    await run.svc.stop_background_hooks()
    answers["returncode"] = s.subprocess.returncode
    return answers


async def pid_reused_by_retry(run: Run):
    """The record of a hook's first run, left behind (as by an abx-dl that died), names a pid
    that a retry of the same hook now holds: same argv, started within the tolerance. abx-dl's
    cleanup path (graceful_kill_by_pid_file) must not kill the retry."""
    hook = run.hook("chrome", "on_Snapshot__20_chrome_tab.bg.py", QUIET)
    args = ["--url=https://example.com/"]
    with open("/proc/sys/kernel/ns_last_pid", "w") as f:
        f.write("1000")  # room below the first run's pid for the service's own threads
    first = await run.spawn(hook, args)
    left_behind = run.root / "left-behind.pid"
    shutil.copy2(first.pid_file, left_behind)  # content, mtime and (pidguard's) xattr
    pid = first.pid
    await run.svc.stop_background_hooks()
    await asyncio.wait_for(first.subprocess.wait(), 20)
    retry = None
    got = []
    skew = 0  # pids the service's own threads take between our write and its fork
    for _ in range(8):
        # The next fork in this PID namespace (after the service's threads) gets `pid`.
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(pid - 1 - skew))
        s = await run.spawn(hook, args)
        got.append(s.pid)
        if s.pid == pid:
            retry = s
            break
        skew = max(0, skew + s.pid - pid)
        await run.svc.stop_background_hooks()
    if retry is None:
        return {"skipped": f"could not force pid {pid} onto the retry (got {got})"}
    same_argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")[1:-1] == [str(hook).encode(), *(a.encode() for a in args)]
    signalled = await ps.graceful_kill_by_pid_file(left_behind, [str(hook), *args], grace_period=2)
    await asyncio.sleep(0.2)
    out = {
        "reused": True,
        "retry_same_argv": same_argv,
        "by_pid_file_signalled": signalled,
        "retry_alive": alive(retry.pid) and retry.subprocess.returncode is None,
        "record_removed": not left_behind.exists(),
    }
    await run.svc.stop_background_hooks()
    return out


async def term_ignoring_hook(run: Run):
    """A hook that ignores SIGTERM, stopped by stop_background_hooks (grace = its timeout, 2 s)."""
    hook = run.hook("chrome", "on_Snapshot__30_stubborn.bg.sh", TERM_IGNORING)
    s = await run.spawn(hook, [], timeout=2)
    t0 = time.monotonic()
    run.ticks = 0
    await run.svc.stop_background_hooks()
    elapsed = time.monotonic() - t0
    return {
        "returncode": s.subprocess.returncode,
        "waited_grace_period": elapsed >= 2.0,
        "loop_ticked": run.ticks >= 50,
        "group_left": len(live_members(s.pid)),
    }


async def grace_period_respected(run: Run):
    """A hook that needs 1 s to flush after SIGTERM: a 10 s grace period lets it exit 0, a
    0.2 s one kills it; through graceful_kill_process (live) and graceful_kill_by_pid_file."""
    hook = run.hook("chrome", "on_Snapshot__40_flush.bg.sh", SLOW_FLUSH)
    out = {}
    for name, grace in (("long", 10.0), ("short", 0.2)):
        s = await run.spawn(hook, [])
        await ps.graceful_kill_process(s.subprocess, grace_period=grace)
        out[f"process_{name}"] = s.subprocess.returncode
        s = await run.spawn(hook, [])
        run.ticks = 0
        signalled = await ps.graceful_kill_by_pid_file(s.pid_file, [s.hook_path, *s.hook_args], grace_period=grace)
        await asyncio.wait_for(s.subprocess.wait(), 20)
        out[f"pid_file_{name}"] = [signalled, s.subprocess.returncode]
    return out


async def leader_exits_leaving_children(run: Run):
    """The hook's leader exits on SIGTERM; a child in its group ignores SIGTERM."""
    hook = run.hook("chrome", "on_Snapshot__50_launcher.bg.sh", LEAVES_CHILD)
    s = await run.spawn(hook, [], timeout=1)
    trapped = Path(str(hook) + ".trapped")
    deadline = time.monotonic() + 60
    while not trapped.exists() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    # The leader and its child (both `sh`): the leader itself and its direct children. The
    # child's short-lived `sleep 0.1` comes and goes with the timing of the machine — and between
    # its fork and its exec it is a third `sh` — so only the leader's own children count.
    before = len([m for m in live_members(s.pid) if m == s.pid or ppid(m) == s.pid])
    await run.svc.stop_background_hooks()
    # The original leaves the TERM-ignoring child for good; pidguard's SIGKILLed members are gone
    # once the kernel has reaped them into zombies: poll for an empty group, with a deadline.
    deadline = time.monotonic() + 3
    while live_members(s.pid) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return {
        "members_before": before,
        "child_trapped": trapped.exists(),
        "returncode": s.subprocess.returncode,
        "group_left": len(live_members(s.pid)),
    }


SCENARIOS = {
    f.__name__: f
    for f in (
        chrome_node_hook,
        url_naming_chrome,
        argv_list_record,
        pid_reused_by_retry,
        term_ignoring_hook,
        grace_period_respected,
        leader_exits_leaving_children,
    )
}


async def main(name):
    root = Path(tempfile.mkdtemp(prefix=f"abx-{name}-"))
    run = Run(root)
    # Start every worker thread of the default executor now, so that the service's
    # asyncio.to_thread calls take no pids later (the pid-reuse scenario counts on it).
    await asyncio.gather(*(asyncio.to_thread(time.sleep, 0.05) for _ in range(64)))
    ticker = asyncio.create_task(run.ticker())
    try:
        result = await asyncio.wait_for(SCENARIOS[name](run), 120)
        try:
            await asyncio.wait_for(run.bus.wait_until_idle(), 30)
        except Exception as e:  # noqa: BLE001 - reported, not hidden
            result["bus_idle_error"] = repr(e)
        result["swapped"] = ps.graceful_kill_process.__module__ == "pidguard.abx_dl"
        return result
    finally:
        ticker.cancel()
        run.finish()
        # Let abx-dl's completion tasks finish writing their records before the files go.
        await asyncio.wait_for(run.svc.wait_for_background_completions(), 30)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1]))))
