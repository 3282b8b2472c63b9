# Type-checked by test_stubs.py with `mypy --strict`: the public API as a user writes it.
import os
import time
from pathlib import Path
from typing import Dict, List, Optional

import pidguard


def use(out: Path) -> List[pidguard.HookReport]:
    pid: int = os.getpid()
    pidguard.write_pid_file_with_mtime(out / "on_x.bg.pid", pid, time.time())
    pidguard.write_pid_file_with_mtime(b"/tmp/on_x.bg.pid", pid, 1)
    pidguard.write_cmd_file(str(out / "on_x.bg.sh"), ["sleep", "1"])
    ok: bool = pidguard.validate_pid_file(out / "on_x.bg.pid", out / "on_x.bg.sh", tolerance=5.0)
    check: pidguard.PidFileCheck = pidguard.check_pid_file("x.pid")
    reason: str = check.reason
    token: str = pidguard.start_token(pid)
    info: pidguard.ProcessInfo = pidguard.lookup(pid)
    ct: float = info.create_time
    exe: Optional[Path] = info.exe
    r: pidguard.TerminateReport = pidguard.terminate(pid, token, policy="lenient", schedule="TERM/5/KILL/1")
    code: Optional[int] = r.exit_code

    def finalize(report: pidguard.HookReport) -> None:
        print(report.name, report.outcome)

    try:
        reports = pidguard.cleanup_background_hooks(out, out / "index.jsonl", False, finalize=finalize)
    except pidguard.NoSuchProcessError as e:
        errno: Optional[int] = e.errno
        raise
    print(ok, reason, ct, exe, code)
    return reports


def use_guard(out: Path) -> Optional[pidguard.guard.Entry]:
    from pidguard import guard

    me: guard.Entry = guard.Entry.current(session="s1", secret=guard.token_sha256(b"x"))
    other = guard.Entry(1, "token", {"a": "1"})
    other2 = guard.Entry(1, "token", [("a", "1")])
    data: bytes = guard.encode(me)
    assert guard.decode(data) == me and other == other2
    guard.create(out / "g.json", me)
    removed: bool = guard.remove(out / "g.json", me)
    guard.replace(str(out / "g.json"), me, other)
    v: guard.Verdict = guard.check(out / "g.json")
    identity: Optional[str] = v.identity
    fields: Dict[str, str] = guard.read(b"/tmp/g.json").fields
    try:
        with guard.acquire(out / "h.json", takeover=True, session="s1") as entry:
            print(entry.pid, removed, identity, fields, v.authorizes("lenient"))
        g: guard.Guard = guard.acquire(out / "h.json", me)
        released: bool = g.release()
    except pidguard.HeldError as e:
        holder: Optional[guard.Entry] = e.entry
        verdict: Optional[guard.Verdict] = e.verdict
        print(holder, verdict)
        return None
    print(released)
    return v.entry


async def use_abx_dl(out: Path, argv: List[str]) -> bool:
    import asyncio
    import signal

    import pidguard.abx_dl as process_utils

    ok: bool = pidguard.validate_pid_file(out / "h.pid", argv, None)
    process_utils.write_pid_file_with_mtime(out / "h.pid", os.getpid(), time.time())
    alive: bool = process_utils.is_process_alive(os.getpid())
    proc = await asyncio.create_subprocess_exec("sleep", "1", start_new_session=True)
    with pidguard.ProcessRef(proc.pid, policy="lenient") as ref:
        sent: bool = ref.signal_group(signal.SIGTERM) if ref.leads_group else ref.signal(signal.SIGTERM)
        exited: bool = await ref.wait_async(1.0) or ref.wait(0.5)
        fd: int = ref.fileno()
        print(sent, exited, fd, ref.token, ref.is_pinned)
    await process_utils.graceful_kill_process(proc, grace_period=process_utils.GRACEFUL_SHUTDOWN_TIMEOUT)
    return ok and alive and await process_utils.graceful_kill_by_pid_file(out / "h.pid", argv, grace_period=1.0)
