"""abx-dl's own hook runner and cleanup, with a hook that starts a `setsid` daemon.

Run as ``python abx_dl_daemon.py`` with abx-dl importable (as released, or with
integrations/abx-dl/<version>.patch applied): a background hook is started through abx-dl's
``ProcessService`` (a ``ProcessEvent`` on its bus), forks a daemon into a session of its own,
and is then stopped by abx-dl's own cleanup (``stop_background_hooks``). Prints one JSON object:
``survivors`` (the daemon still running after the cleanup: 1 as released, 0 when the hook ran in
a pidguard scope) and ``scoped`` (whether the patched runner was in use). Meant for a private PID
namespace (scripts/test-integrations.sh): the daemon is killed by the namespace's end.
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
from abx_dl.services.process_service import ProcessService  # noqa: E402
import abx_dl.process_utils as pu  # noqa: E402

HOOK = """#!/bin/sh
setsid sh -c 'echo $$ > "$0.daemon"; exec sleep infinity' "$0" &
while [ ! -s "$0.daemon" ]; do sleep 0.01; done
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


async def main() -> dict:
    root = Path(tempfile.mkdtemp(prefix="abx-dl-daemon-"))
    hook = root / "plugins" / "demo" / "on_Snapshot__10_daemon.bg.sh"
    hook.parent.mkdir(parents=True)
    hook.write_text(HOOK)
    hook.chmod(0o755)
    bus = EventBus(name=f"integ_{os.getpid()}", max_history_size=None)
    svc = ProcessService(bus, emit_jsonl=False, interactive_tty=False)
    started: list = []
    bus.on(ProcessStartedEvent, lambda e: started.append(e))
    await bus.emit(
        ProcessEvent(
            plugin_name="demo",
            hook_name=hook.name,
            hook_path=str(hook),
            hook_args=[],
            is_background=True,
            output_dir=str(root / "snapshot" / "demo"),
            env={"PATH": os.environ["PATH"], "TMP_DIR": str(root / "tmp")},
            timeout=60,
        )
    ).now()
    s = started[0]
    daemon_file = Path(str(hook) + ".daemon")
    deadline = time.monotonic() + 20
    while not (s.stdout_file.exists() and s.stdout_file.read_text().strip()) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    daemon = int(daemon_file.read_text())
    await svc.stop_background_hooks()
    # A stopped daemon is gone within the cleanup; poll briefly for the kernel's reap.
    deadline = time.monotonic() + 3
    while alive(daemon) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    await asyncio.wait_for(svc.wait_for_background_completions(), 30)
    return {
        "survivors": int(alive(daemon)),
        "hook_alive": int(alive(s.pid)),
        "scoped": type(s.subprocess).__name__ == "ScopedProcess",
        "scope": getattr(getattr(pu, "pidguard", None), "__name__", None) and "pidguard",
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main())))
