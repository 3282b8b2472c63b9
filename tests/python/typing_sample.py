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
