"""abx-dl's own process service, in-process: the spawn's loop-turn ordering and the memory guard.

Run as ``python abx_dl_paths.py NAME [variant]`` inside a private PID namespace, with abx-dl as
released or with the integration (``PIDGUARD_INTEGRATIONS=abx_dl`` and pidguard's ``.pth``).
Prints one JSON object.

- ``ordering``: a background hook is started through a ``ProcessEvent``; a ticker callback runs at
  every turn of the event loop (``call_soon`` rescheduling itself) and records every turn where
  the hook's PID file exists but the hook is not in ``ProcessService._active_hooks`` (the window
  1.13.423 closes: a Ctrl+C handled in that turn misses the child). ``unregistered_turns``: how
  many. Variant ``to_thread`` (integrated only) runs pidguard.spawn in ``asyncio.to_thread``, as
  the old patch did, to show the ticker sees that window.
- ``force_kill``: the same tree; abx-dl's ``force_kill_owned_processes()`` (the third Ctrl+C).
- ``memory``: a background hook starts a ``setsid`` grandchild and a double-forked ``setsid``
  daemon; abx-dl's ``_enforce_memory_limit(started, limit=1)`` (1.13.423 and later) decides to
  kill. ``reason`` is abx-dl's text; ``survivors``: hook-tree processes still running after it.
"""

import asyncio
import faulthandler
import json
import os
import sys
import tempfile
import time
from pathlib import Path

faulthandler.dump_traceback_later(float(os.environ.get("SCENARIO_TIMEOUT", "60")), exit=True)

from abxbus import EventBus  # noqa: E402
from abx_dl.events import ProcessEvent, ProcessStartedEvent  # noqa: E402
import abx_dl.services.process_service as ps  # noqa: E402

HOOK = r"""#!/bin/sh
d=$(dirname "$0")
setsid sh -c 'echo $$ > "$0/grandchild"; exec sleep 1000' "$d" &
setsid sh -c 'setsid sh -c "echo \$\$ > $0/daemon; exec sleep 1000" & exit 0' "$d" &
while [ ! -s "$d/grandchild" ] || [ ! -s "$d/daemon" ]; do sleep 0.01; done
echo ready
while :; do sleep 0.1; done
"""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return False
    return data[data.rindex(b")") + 2 :].split()[0] not in (b"Z", b"X")


async def start(root: Path):
    hook = root / "plugins" / "demo" / "on_Snapshot__10_tree.bg.sh"
    hook.parent.mkdir(parents=True)
    hook.write_text(HOOK)
    hook.chmod(0o755)
    bus = EventBus(name=f"paths_{os.getpid()}", max_history_size=None)
    svc = ps.ProcessService(bus, emit_jsonl=False, interactive_tty=False)
    started: list = []
    bus.on(ProcessStartedEvent, lambda e: started.append(e))
    ev = ProcessEvent(
        plugin_name="demo", hook_name=hook.name, hook_path=str(hook), hook_args=[], is_background=True,
        output_dir=str(root / "snapshot" / "demo"), env={"PATH": os.environ["PATH"], "TMP_DIR": str(root / "tmp")}, timeout=60,
    )
    return bus, svc, started, ev, hook


async def ordering(variant: str) -> dict:
    root = Path(tempfile.mkdtemp(prefix="abx-dl-order-"))
    if variant == "to_thread":
        view = ps.asyncio
        inner = view.create_subprocess_exec

        # The old patch's shape: the record is written in a worker thread, the coroutine yields
        # to the loop before it returns.
        async def old_patch(*cmd, **kw):
            proc = await inner(*cmd, **kw)
            await asyncio.sleep(0)
            return proc

        view.create_subprocess_exec = old_patch
    bus, svc, started, ev, hook = await start(root)
    # Where the release keeps hook PID files: TMP_DIR/process (1.13.423), the plugin's output
    # directory (1.13.127).
    pid_dirs = [root / "tmp" / "process", root / "snapshot" / "demo"]
    loop = asyncio.get_running_loop()
    counts = {"turns": 0, "unregistered": 0}
    stop = False

    def tick():
        counts["turns"] += 1
        pid_files = [f for d in pid_dirs if d.exists() for f in d.glob("*.pid")]
        if pid_files and not svc._active_hooks:
            counts["unregistered"] += 1
        if not stop:
            loop.call_soon(tick)

    loop.call_soon(tick)
    await bus.emit(ev).now()
    s = started[0]
    stop = True
    await svc.stop_background_hooks()
    await asyncio.wait_for(svc.wait_for_background_completions(), 30)
    return {"unregistered_turns": counts["unregistered"], "turns": counts["turns"], "scoped": type(s.subprocess).__name__ == "ScopedProcess"}


async def memory(kind: str = "memory") -> dict:
    if kind == "memory" and not hasattr(ps, "_enforce_memory_limit"):
        return {"skipped": "this abx-dl has no _enforce_memory_limit"}
    root = Path(tempfile.mkdtemp(prefix="abx-dl-mem-"))
    bus, svc, started, ev, hook = await start(root)
    await bus.emit(ev).now()
    s = started[0]
    d = hook.parent
    deadline = time.monotonic() + 20
    while not ((d / "grandchild").exists() and (d / "daemon").exists()) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.1)
    pids = {n: int((d / n).read_text()) for n in ("grandchild", "daemon")}
    pids["hook"] = s.pid
    if kind == "memory":
        reason = await asyncio.to_thread(ps._enforce_memory_limit, s, 1)
    else:  # the third Ctrl+C: called synchronously from the terminal owner's signal path
        svc.force_kill_owned_processes()
        reason = "force_kill_owned_processes"
    deadline = time.monotonic() + 3
    while any(alive(p) for p in pids.values()) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    survivors = sorted(n for n, p in pids.items() if alive(p))
    await svc.stop_background_hooks()
    await asyncio.wait_for(svc.wait_for_background_completions(), 30)
    return {"reason": reason, "survivors": len(survivors), "which": survivors, "scoped": type(s.subprocess).__name__ == "ScopedProcess"}


def main() -> None:
    name = sys.argv[1]
    variant = sys.argv[2] if len(sys.argv) > 2 else ""
    out = asyncio.run(ordering(variant) if name == "ordering" else memory(name))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
