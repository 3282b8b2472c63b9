"""abx-dl's own command line, a `.bg.` hook whose tree leaves its process group, N runs.

Run as ``python abx_dl_cli.py RUNS SHAPE`` with the abx-dl to test first on PATH's
``abx-dl``-owning Python (``sys.executable``), inside a private PID namespace with a loopback-only
network (scripts/test-integrations.sh, scripts/check-upstream.sh). SHAPE is ``root`` (abx-dl runs
as root) or ``archivebox`` (real uid 0, effective uid/gid 65534, as ArchiveBox run as root: abx-dl
then drops its hooks to 65534 for good). The column (released or integrated) is the environment's:
``PIDGUARD_INTEGRATIONS=abx_dl`` with pidguard's ``.pth`` file in that Python turns the
integration on.

Each run: ``abx-dl dl --plugins=demo --no-install file:///etc/hostname`` with a plugin of two
hooks. ``on_Snapshot__10_tree.bg.sh`` starts a plain child (``sleep``), a ``setsid`` grandchild
and a double-forked ``setsid`` daemon, records their pids and its own uids, then waits to be
stopped; ``on_Snapshot__20_wait.sh`` (foreground) returns once the tree is up, so abx-dl's
snapshot cleanup stops the background hook. Survivors are counted after abx-dl has exited
(polled for 3 s, for the kernel's reap). Prints one JSON object: ``runs``, ``survivors`` (per
run), ``hook_uids`` (the hook's real/effective/saved uid, per run), ``exit_codes``, ``scoped``
(whether the hook's record carried a pidguard scope), ``integration`` (``$PIDGUARD_INTEGRATIONS``).
Processes left running are not signalled here: the namespace's end kills them.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TREE = r"""#!/bin/sh
d=${TREE_DIR:?}
grep '^Uid:' /proc/self/status > "$d/uids"
sleep 1000 & echo $! > "$d/child"
setsid sh -c 'echo $$ > "$0/grandchild"; exec sleep 1000' "$d" &
setsid sh -c 'setsid sh -c "echo \$\$ > $0/daemon; exec sleep 1000" & exit 0' "$d" &
while [ ! -s "$d/grandchild" ] || [ ! -s "$d/daemon" ]; do sleep 0.01; done
echo '{"type":"ArchiveResult","status":"started"}'
while :; do sleep 0.1; done
"""
WAIT = r"""#!/bin/sh
d=${TREE_DIR:?}
n=0; while { [ ! -s "$d/grandchild" ] || [ ! -s "$d/daemon" ]; } && [ $n -lt 3000 ]; do sleep 0.01; n=$((n+1)); done
echo '{"type":"ArchiveResult","status":"succeeded","output_str":"tree up"}'
"""
LAUNCH = r"""
import os, sys
if os.environ.get("SHAPE") == "archivebox":
    os.setegid(65534); os.seteuid(65534)
from abx_dl import main
sys.argv = ["abx-dl", *sys.argv[1:]]
sys.exit(main())
"""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return False
    return data[data.rindex(b")") + 2 :].split()[0] not in (b"Z", b"X")


def one_run(root: Path, shape: str) -> dict:
    plugins = root / "plugins" / "demo"
    plugins.mkdir(parents=True)
    for name, text in (("on_Snapshot__10_tree.bg.sh", TREE), ("on_Snapshot__20_wait.sh", WAIT)):
        (plugins / name).write_text(text)
        (plugins / name).chmod(0o755)
    tree, out, tmp = root / "tree", root / "out", root / "tmp"
    for d in (tree, out, tmp):
        d.mkdir()
        d.chmod(0o1777)
    for d in (root, root / "plugins", plugins):
        d.chmod(0o755)
    env = dict(os.environ, TREE_DIR=str(tree), ABX_PLUGINS_DIR=str(root / "plugins"), SHAPE=shape, TMP_DIR=str(tmp), HOME=str(tmp))
    log = root / "abx-dl.log"
    with open(log, "wb") as f:
        rc = subprocess.run(
            [sys.executable, "-c", LAUNCH, "dl", "--plugins=demo", "--no-install", "-d", str(out), "file:///etc/hostname"],
            cwd=out, env=env, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=float(os.environ.get("RUN_TIMEOUT", "100")),
        ).returncode
    pids = {}
    for name in ("child", "grandchild", "daemon"):
        try:
            pids[name] = int((tree / name).read_text())
        except (OSError, ValueError):
            pids[name] = None
    deadline = time.monotonic() + 3
    while any(p and alive(p) for p in pids.values()) and time.monotonic() < deadline:
        time.sleep(0.05)
    survivors = sorted(n for n, p in pids.items() if p and alive(p))
    try:
        uids = (tree / "uids").read_text().split()[1:4]
    except OSError:
        uids = []
    text = log.read_text(errors="replace")
    return {
        "exit_code": rc,
        "survivors": survivors,
        "tree_started": all(pids.values()),
        "uids": [int(u) for u in uids],
        "fallback": "started as released" in text,
        "log_tail": text[-600:] if rc != 0 or not all(pids.values()) else "",
    }


def main() -> None:
    runs, shape = int(sys.argv[1]), sys.argv[2]
    results = []
    for i in range(runs):
        root = Path(tempfile.mkdtemp(prefix=f"abx-dl-cli-{i}-"))
        root.chmod(0o755)
        try:
            results.append(one_run(root, shape))
        finally:
            shutil.rmtree(root, ignore_errors=True)
    print(json.dumps({
        "runs": runs,
        "shape": shape,
        "integration": os.environ.get("PIDGUARD_INTEGRATIONS", ""),
        "survivors": [len(r["survivors"]) for r in results],
        "which": [r["survivors"] for r in results],
        "tree_started": [r["tree_started"] for r in results],
        "hook_uids": [r["uids"] for r in results],
        "exit_codes": [r["exit_code"] for r in results],
        "fallback": any(r["fallback"] for r in results),
        "log_tail": next((r["log_tail"] for r in results if r["log_tail"]), ""),
    }))


if __name__ == "__main__":
    main()
