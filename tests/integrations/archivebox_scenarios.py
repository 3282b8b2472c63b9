"""ArchiveBox's own process code under forced PID reuse, and its crawl cleanup.

Run as ``python archivebox_scenarios.py NAME`` from an initialised ArchiveBox data directory,
as root (ArchiveBox then runs with real uid 0 and effective uid 999, its `archivebox` user),
inside a private PID namespace (scripts/test-integrations.sh), with ArchiveBox as released or
with pidguard.integrations.archivebox (PIDGUARD_INTEGRATIONS=archivebox,abx_dl and pidguard's
.pth). Prints one JSON object.

- ``terminate``: a hook (``sleep``) launched by ``Process.launch`` is SIGKILLed and reaped; a
  stranger running the same binary takes its PID within a second (``ns_last_pid``); then
  ``Process.terminate()``. ``stranger_hit``: the stranger died of a signal.
- ``kill_tree``: a hook whose child exits on SIGTERM (its parent ignores SIGTERM and reaps it);
  a helper gives the child's PID to a stranger the moment it is free; ``Process.kill_tree()``.
- ``crawl_cleanup``: a browser stand-in (``sleep``, all uids 999, as abx-dl's hooks run) is
  recorded in the crawl's ``chrome/chrome.pid`` (pid, start time as mtime, as abx-plugins
  writes it); ``Crawl.cleanup_runtime()``. ``browser``: ``stopped`` or ``orphaned`` (still
  running with no record left).
"""

import faulthandler
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

faulthandler.dump_traceback_later(float(os.environ.get("SCENARIO_TIMEOUT", "60")), exit=True)
# The small Python programs started below run with the system's interpreter: they run with real
# uid 0 and effective uid 999 (secure execution), where a pyenv build cannot load its libpython.
HELPER_PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable

# Gives a freed PID to a stranger: run as a separate process (it takes back effective uid 0 for
# ns_last_pid, which the scenario's own process, ArchiveBox's, must not do mid-call).
REUSER = r"""
import os, subprocess, sys, time
os.seteuid(0)
target = int(sys.argv[1])
print("watching", flush=True)
deadline = time.monotonic() + 30
while os.path.exists(f"/proc/{target}") and time.monotonic() < deadline:
    time.sleep(0.0005)
with open("/proc/sys/kernel/ns_last_pid", "w") as f:
    f.write(str(target - 1))
stranger = subprocess.Popen(["sleep", "1001"])
print(stranger.pid, flush=True)
deadline = time.monotonic() + float(sys.argv[2])
while stranger.poll() is None and time.monotonic() < deadline:
    time.sleep(0.01)
rc = stranger.poll()
if rc is None:
    stranger.kill()
    stranger.wait()
print(rc if rc is not None else "alive", flush=True)
"""


def launch_hook(Process, Machine, cmd):
    # A directory of its own: the hook's stdout.log and stderr.log are kept in its pwd.
    pwd = tempfile.mkdtemp(prefix="hook-", dir=os.getcwd())
    p = Process.objects.create(machine=Machine.current(), process_type=Process.TypeChoices.HOOK, cmd=cmd, pwd=pwd, timeout=60)
    p.launch(background=True)
    return p


def reuser_for(pid: int, watch: float) -> subprocess.Popen:
    """The helper that gives pid to a stranger once it is free; it reports the stranger's pid,
    then how the stranger ended within `watch` seconds (its exit code, negative for a signal)."""
    r = subprocess.Popen([HELPER_PYTHON, "-c", REUSER, str(pid), str(watch)], stdout=subprocess.PIPE, text=True)
    assert r.stdout.readline().strip() == "watching"
    return r


def stranger_report(r: subprocess.Popen, pid: int) -> dict:
    stranger = int(r.stdout.readline())
    rc = r.stdout.readline().strip()
    r.wait()
    return {"reused": stranger == pid, "stranger_hit": rc != "alive" and int(rc) < 0, "pids": [pid, stranger]}


def terminate(Process, Machine):
    hook = launch_hook(Process, Machine, ["sleep", "1000"])
    r = reuser_for(hook.pid, 3)
    os.kill(hook.pid, signal.SIGKILL)
    os.waitpid(hook.pid, 0)
    deadline = time.monotonic() + 10
    while Path("/proc/sys/kernel/ns_last_pid").read_text().strip() != str(hook.pid) and time.monotonic() < deadline:
        time.sleep(0.005)  # the stranger has the pid
    hook.terminate(graceful_timeout=1.0)
    return {**stranger_report(r, hook.pid), "token": "_ARCHIVEBOX_START_TOKEN" in hook.env}


def kill_tree(Process, Machine):
    parent = (
        "import os, signal, subprocess, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "child = subprocess.Popen(['sleep', '1000'], preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL))\n"
        "print(child.pid, flush=True)\n"
        "child.wait()\n"
        "signal.pause()\n"
    )
    hook = launch_hook(Process, Machine, [HELPER_PYTHON, "-c", parent])
    deadline = time.monotonic() + 20
    while not (hook.stdout_file.exists() and hook.stdout_file.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.01)
    if not hook.stdout_file.read_text().strip():
        raise RuntimeError(f"the hook did not start: {hook.stderr_file.read_text()[-2000:]}")
    child = int(hook.stdout_file.read_text().split()[0])
    r = reuser_for(child, 4)
    hook.kill_tree(graceful_timeout=1.0)
    report = stranger_report(r, child)
    try:
        os.kill(hook.pid, signal.SIGKILL)
    except OSError:
        pass
    return {**report, "token": "_ARCHIVEBOX_START_TOKEN" in hook.env}


def crawl_cleanup(Process, Machine):
    from archivebox.crawls.models import Crawl

    crawl = Crawl.objects.create(urls="https://example.com")
    chrome_dir = crawl.output_dir / "chrome"
    chrome_dir.mkdir(parents=True, exist_ok=True)

    def drop():  # abx-dl's permanent drop for hooks when real uid is 0 and effective is not
        uid, gid = os.geteuid(), os.getegid()
        os.seteuid(0)
        os.setgroups([gid])
        os.setgid(gid)
        os.setuid(uid)

    browser = subprocess.Popen(["sleep", "1002"], preexec_fn=drop)
    pid_file = chrome_dir / "chrome.pid"
    pid_file.write_text(str(browser.pid))
    with open(f"/proc/{browser.pid}/stat") as f:
        ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/stat") as f:
        btime = next(int(line.split()[1]) for line in f if line.startswith("btime"))
    start = btime + ticks / os.sysconf("SC_CLK_TCK")
    os.utime(pid_file, (start, start))
    crawl.cleanup_runtime()
    deadline = time.monotonic() + 5
    while browser.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    running = browser.poll() is None
    if running:
        browser.kill()
        browser.wait()
    return {"browser": "orphaned" if running and not pid_file.exists() else ("kept" if running else "stopped")}


if __name__ == "__main__":
    import archivebox  # noqa: F401 - drops to the archivebox user (effective uid)
    from archivebox.config.django import setup_django

    setup_django()
    from archivebox.machine.models import Machine, Process

    print(json.dumps({"uids": os.getresuid(), **globals()[sys.argv[1]](Process, Machine)}))
