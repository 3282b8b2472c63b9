"""A privileged caller lends nothing to files a user planted on its way.

- ``spawn(stdout=…)`` as root never writes the command's output into a log a user made (mode
  0666 in a sticky world-writable directory): the log is replaced by one of root's own.
- ArchiveBox's shape — a Python process with uids (0, U, 0) calling ``pidguard.spawn`` — never
  execs a ``pidguard-scope`` program that U owns beside the extension module (U's program with a
  real uid of 0 becomes root with ``setresuid(0, 0, 0)``): the supervisor is the fork itself.
- ``pidguard.abx_dl``'s warnings show user-controlled names through core's escaping only.

Needs root (chown, setresuid); skipped otherwise. No signal is sent: the commands end by
themselves and the test reaps its own children.
"""

import logging
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import pidguard
import pidguard.abx_dl
from conftest import wait_until

U = 65534

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (chown, setresuid)")


@root_only
def test_a_log_a_user_planted_gets_none_of_roots_output(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    out = shared / "job.stdout.log"
    out.write_bytes(b"")
    out.chmod(0o666)
    os.chown(out, U, U)
    with open(out, "rb") as users_view:
        s = pidguard.spawn(["sh", "-c", "echo root-secret"], tmp_path / "job.pid", scope="group", stdout=out, stderr=shared / "job.stderr.log")
        os.waitpid(s.pid, 0)
        assert wait_until(lambda: out.read_bytes() == b"root-secret\n")
        assert users_view.read() == b"", "the user's file received root's output"
    st = out.lstat()
    assert st.st_uid == 0 and stat.S_IMODE(st.st_mode) & 0o022 == 0


PLANTED = """#!/bin/sh
# A user's program planted where the spawner looks for its supervisor program.
/usr/bin/id -ru > {marker}
exit 0
"""

CHILD = """
import os, sys, json
import pidguard  # imported before the uid is lowered, as ArchiveBox does
work = sys.argv[1]
os.setresuid(0, {uid}, 0)
s = pidguard.spawn(["sh", "-c", "exit 0"], os.path.join(work, "hook.pid"), scope="supervisor",
                   cwd=work)
exe = os.readlink(f"/proc/{{s.supervisor_pid}}/exe") if os.path.exists(f"/proc/{{s.supervisor_pid}}/exe") else None
os.waitpid(s.supervisor_pid, 0)
print(json.dumps({{"supervisor": s.supervisor_pid, "exe": exe}}))
"""


@pytest.fixture
def shared_tmp():
    """A fresh directory U can reach (pytest's own tmp_path is under root's 0700 directory)."""
    d = Path(tempfile.mkdtemp(prefix="pidguard-py-planted-"))
    d.chmod(0o755)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@root_only
def test_archivebox_shaped_spawner_never_execs_a_users_supervisor_program(shared_tmp):
    tmp_path = shared_tmp
    # A copy of the installed package in a directory U owns, with U's pidguard-scope beside the
    # extension module (where the lookup looks first).
    pkg_src = Path(pidguard.__file__).parent
    site = tmp_path / "site"
    shutil.copytree(pkg_src, site / "pidguard", ignore=shutil.ignore_patterns("pidguard-scope", "__pycache__"))
    work = tmp_path / "work"
    work.mkdir()
    marker = work / "planted-ran"
    prog = site / "pidguard" / "pidguard-scope"
    prog.write_text(PLANTED.format(marker=marker))
    prog.chmod(0o755)
    for p in [site, *site.rglob("*"), work]:
        os.chown(p, U, U, follow_symlinks=False)
    r = subprocess.run(
        [sys.executable, "-c", CHILD.format(uid=U), str(work)],
        env={**os.environ, "PYTHONPATH": str(site)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert not marker.exists(), f"the user's program ran as the supervisor (real uid {marker.read_text().strip()})"
    assert '"exe": "' + str(prog) + '"' not in r.stdout, r.stdout


def test_abx_dl_warnings_show_names_through_cores_escaping(tmp_path, caplog):
    evil = tmp_path / "c\x1b]0;PWNED\x07\x1b[2J\n[+] all clear"
    evil.mkdir()
    pid_file = evil / "hook.pid"
    sleeper = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        pid_file.write_text(f"{sleeper.pid}\n")
        pid_file.chmod(0o666)  # world-writable: refused (nothing sent), and the refusal is logged
        with caplog.at_level(logging.WARNING, logger="pidguard.abx_dl"):
            assert pidguard.abx_dl.safe_kill_process(pid_file) is False
        assert sleeper.poll() is None
    finally:
        sleeper.kill()
        sleeper.wait()
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert text, "nothing was logged"
    assert not any(ord(c) < 0x20 and c != "\n" or ord(c) == 0x7F for c in text), repr(text)
    assert "[+] all clear" not in text.split("\n"), repr(text)
    assert "\\x1b]0;PWNED\\x07\\x1b[2J\\n[+] all clear" in text, repr(text)
    assert pidguard._pidguard.printable("a\nb\x1b") == "a\\nb\\x1b"
    assert pidguard._pidguard.printable_path(b"a\xff\n") == "a\\xff\\n"
