"""``pidguard.spawn``: a command started inside a scope is stopped whole by ``stop_pid_file``.

The tree: a shell that double-forks and ``setsid``s a ``sleep`` (a daemon that leaves the
command's process group and session), then execs a ``sleep`` of its own (the recorded process).
Every process of the tree carries a marker in its environment, so survivors are counted by what
they are, not by the pids we happen to know; a process counts as alive unless it is a zombie
(this sandbox's pid 1 reaps orphans slowly). The caller's own child (the supervisor, or the
command) is reaped by the test with ``os.waitpid``, as the docstring of ``spawn`` says.
"""

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import pidguard
from conftest import proc_state, wait_until

MARK = "PIDGUARD_TEST_SPAWN_MARK"

# The shell records the daemon's pid in daemon.pid (in its working directory) once it has its
# own session, then becomes the recorded sleep.
TREE = ["sh", "-c", '(setsid sh -c "echo \\$\\$ > daemon.pid.tmp && mv daemon.pid.tmp daemon.pid; exec sleep 3600" &); exec sleep 3600']


def cgroup2_mounts():
    """Mount points of cgroup2 in /proc/self/mountinfo (the field after ' - ' is the type)."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            if right.split()[0] == "cgroup2":
                out.append(left.split()[4])
    return out


def marked(mark):
    """Live (not zombie) processes whose environment holds MARK=mark."""
    needle = f"{MARK}={mark}".encode()
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        if needle in env and proc_state(int(name)) not in (None, "Z", "X"):
            out.append(int(name))
    return out


def session_of(pid):
    with open(f"/proc/{pid}/stat", "rb") as f:
        data = f.read()
    return int(data[data.rindex(b")") + 2 :].split()[3])


def end_marked(mark):
    """End every live process carrying `mark` (ours: it inherited this test's environment), each
    through a pin: its token, the handle, then its environment read again while the handle
    still holds it, so a reused pid is never signalled. For a test that failed half-way."""
    for pid in marked(mark):
        try:
            with pidguard.ProcessRef(pid, pidguard.start_token(pid)) as ref:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    ours = f"{MARK}={mark}".encode() in f.read().split(b"\0")
                if ours and not ref.has_exited():
                    ref.signal(signal.SIGKILL)
        except (pidguard.PidguardError, OSError):
            pass


@pytest.fixture
def mark(monkeypatch):
    m = uuid.uuid4().hex
    monkeypatch.setenv(MARK, m)
    yield m
    end_marked(m)


def start_tree(tmp_path, scope):
    """Spawn TREE in `scope`; wait until the daemon has left the command's session. Returns the
    Spawned, the daemon's pid and its start token."""
    s = pidguard.spawn(TREE, tmp_path / "tree.pid", scope=scope, cwd=tmp_path)
    daemon_file = tmp_path / "daemon.pid"
    assert wait_until(daemon_file.exists), "the daemon never wrote its pid"
    daemon = int(daemon_file.read_text())
    token = pidguard.start_token(daemon)
    assert wait_until(lambda: session_of(daemon) == daemon), "the daemon never left its session"
    assert session_of(daemon) != session_of(s.pid), "the daemon did not escape the command's session"
    return s, daemon, token


def reap(s):
    """Reap the caller's own child of a spawn; its wait status."""
    child = s.supervisor_pid or s.pid
    _, status = os.waitpid(child, 0)
    return status


def leaf_dir(record):
    """The cgroup directory a `cgroup:` scope record names, below the cgroup2 mount."""
    path = record.split(":", 3)[3]
    return Path(cgroup2_mounts()[0]) / path.lstrip("/")


@pytest.fixture(scope="module")
def cgroup_leaf_possible(tmp_path_factory):
    """None when a cgroup v2 leaf can be made here, else why not (the test is skipped)."""
    d = tmp_path_factory.mktemp("probe")
    try:
        s = pidguard.spawn(["true"], d / "probe.pid", scope="cgroup")
    except pidguard.IoError as e:
        return str(e)
    reap(s)
    pidguard.stop_pid_file(d / "probe.pid")
    return None


@pytest.mark.parametrize("scope", ["cgroup", "supervisor"])
def test_a_scoped_tree_is_stopped_whole_setsid_daemon_included(tmp_path, mark, scope, cgroup_leaf_possible):
    if scope == "cgroup" and cgroup_leaf_possible:
        pytest.skip(f"no cgroup v2 leaf can be made here: {cgroup_leaf_possible}")
    s, daemon, _ = start_tree(tmp_path, scope)
    assert s.scope == scope and s.scope_record.startswith(scope + ":") and s.note is None
    assert (s.supervisor_pid is not None) == (scope == "supervisor")
    assert s.pid_file == tmp_path / "tree.pid" and s.cmd_file == tmp_path / "tree.sh"
    assert s.stdout == tmp_path / "tree.stdout.log" and s.stderr == tmp_path / "tree.stderr.log"
    assert repr(s).startswith(f"Spawned(pid={s.pid}, scope='{scope}'")
    assert list(s.to_dict()) == ["pid", "pid_file", "cmd_file", "stdout", "stderr", "scope", "scope_record", "supervisor_pid", "note", "run_as"]
    assert {s.pid, daemon} <= set(marked(mark))

    r = pidguard.stop_pid_file(tmp_path / "tree.pid", schedule="TERM/5/KILL/5")
    assert (r.outcome, r.scope, r.terminate.scope, r.pid_file_removed) == ("exited", scope, scope, True), r
    assert r.signals[0] == "TERM"
    assert marked(mark) == [], "a process of the scope survived the stop"
    assert proc_state(daemon) in (None, "Z", "X")
    if scope == "cgroup":
        assert not leaf_dir(s.scope_record).exists(), "the leaf was not removed"
    status = reap(s)
    # The command died of SIGTERM; a supervisor ends by the same signal (its status is the
    # command's own).
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == 15


def test_without_a_scope_the_setsid_daemon_survives_the_stop(tmp_path, mark):
    """The documented limitation of scope='group' (and what the scoped stop above is measured
    against): the command's group is stopped, the daemon that left it is not."""
    s, daemon, token = start_tree(tmp_path, "group")
    assert (s.scope, s.scope_record, s.supervisor_pid) == ("group", None, None)
    try:
        r = pidguard.stop_pid_file(tmp_path / "tree.pid", schedule="TERM/5/KILL/5")
        assert (r.outcome, r.scope) == ("exited", "group"), r
        assert marked(mark) == [daemon], "the daemon should have escaped a group stop"
        status = reap(s)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == 15
    finally:
        # Ours to end: pinned by the token read while it was known to be the daemon.
        if proc_state(daemon) not in (None, "Z", "X"):
            pidguard.terminate(daemon, token, schedule="KILL/5")
    assert marked(mark) == []


def test_cleanup_stops_a_spawned_hook_whole(tmp_path, mark, cgroup_leaf_possible):
    s, daemon, _ = start_tree(tmp_path, "auto")
    assert s.scope == ("supervisor" if cgroup_leaf_possible else "cgroup")
    os.rename(tmp_path / "tree.pid", tmp_path / "on_Snapshot__10_tree.bg.pid")
    os.rename(tmp_path / "tree.sh", tmp_path / "on_Snapshot__10_tree.bg.sh")
    [h] = pidguard.cleanup_background_hooks(tmp_path, is_tty=True, schedule="TERM/5/KILL/5")
    assert (h.outcome, h.scope) == ("exited", s.scope), h
    assert marked(mark) == []
    reap(s)


def test_a_guard_record_carries_the_scope(tmp_path, mark):
    s = pidguard.spawn(["sleep", "3600"], tmp_path / "svc.pid", scope="supervisor", guard=True)
    assert s.cmd_file is None and not (tmp_path / "svc.sh").exists()
    assert pidguard.guard.read(tmp_path / "svc.pid").fields["scope"] == s.scope_record
    r = pidguard.stop_pid_file(tmp_path / "svc.pid", schedule="TERM/5/KILL/5")
    assert r.outcome == "exited" and marked(mark) == []
    reap(s)


@pytest.mark.parametrize(
    "argv, kwargs, exc",
    [
        ([], {}, ValueError),
        ("sleep 1", {}, TypeError),
        (b"sleep", {}, TypeError),
        (["sleep", 1], {}, TypeError),
        (["sleep", None], {}, TypeError),
        (5, {}, TypeError),
        (["sleep", "1\0"], {}, ValueError),
        (["sleep", "1"], {"scope": "session"}, ValueError),
        (["sleep", "1"], {"scope": 1}, TypeError),
        (["sleep", "1"], {"cwd": 3}, TypeError),
        (["no-such-program-pidguard"], {}, pidguard.NotFoundError),
        (["sleep", "1"], {"env": ["A=1"]}, TypeError),
        (["sleep", "1"], {"env": {"A": 1}}, TypeError),
        (["sleep", "1"], {"env": {"": "1"}}, pidguard.InvalidArgumentError),
        (["sleep", "1"], {"env": {"A=B": "1"}}, pidguard.InvalidArgumentError),
        (["sleep", "1"], {"env": {"A": "1\0"}}, pidguard.InvalidArgumentError),
    ],
)
def test_bad_input_is_refused_before_anything_is_created(tmp_path, mark, argv, kwargs, exc):
    with pytest.raises(exc):
        pidguard.spawn(argv, tmp_path / "x.pid", **kwargs)
    assert list(tmp_path.iterdir()) == [] and marked(mark) == []


@pytest.mark.parametrize("scope", ["group", "supervisor", "auto"])
def test_env_is_the_commands_whole_environment_and_os_environ_is_untouched(tmp_path, scope):
    """``env=`` as ``subprocess.Popen(env=...)``: the command sees exactly that mapping (str and
    bytes alike), its PATH finds a bare program name, and ``os.environ`` is never swapped."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    probe = bin_dir / "pidguard-env-probe"
    probe.write_text("#!/bin/sh\nexec /usr/bin/env\n")
    probe.chmod(0o755)
    before = dict(os.environ)
    env = {"HOOK_A": "1", b"HOOK_B": b"two words", "PATH": f"{bin_dir}:/usr/bin:/bin"}
    s = pidguard.spawn(["pidguard-env-probe"], tmp_path / "e.pid", scope=scope, env=env)
    _, status = os.waitpid(s.supervisor_pid or s.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    pidguard.stop_pid_file(tmp_path / "e.pid")
    # (The probe's /bin/sh adds PWD itself.)
    seen = [line for line in Path(s.stdout).read_text().splitlines() if not line.startswith("PWD=")]
    assert seen == ["HOOK_A=1", "HOOK_B=two words", f"PATH={bin_dir}:/usr/bin:/bin"]
    assert dict(os.environ) == before
    # Not on this process's PATH: without env= it is not found.
    with pytest.raises(pidguard.NotFoundError):
        pidguard.spawn(["pidguard-env-probe"], tmp_path / "n.pid", scope=scope)


def test_an_empty_argv_is_an_invalid_argument_error(tmp_path):
    with pytest.raises(pidguard.InvalidArgumentError, match="empty"):
        pidguard.spawn([], tmp_path / "x.pid")


HIDDEN = r"""
import json, os, sys
import pidguard
from pathlib import Path
d = Path(sys.argv[1])
out = {}
try:
    pidguard.spawn(["sleep", "3600"], d / "cg.pid", scope="cgroup")
    out["cgroup"] = "started"
except pidguard.IoError as e:
    out["cgroup"] = "IoError: " + str(e)
out["files_after_cgroup"] = sorted(p.name for p in d.iterdir())
s = pidguard.spawn(["sh", "-c", "(setsid sleep 3600 &); exec sleep 3600"], d / "auto.pid")
out["auto"] = [s.scope, s.note]
r = pidguard.stop_pid_file(d / "auto.pid", schedule="TERM/5/KILL/5")
out["stop"] = [r.outcome, r.scope]
# The supervisor exits once its tree is gone: bounded, so a broken stop fails instead of hanging.
out["supervisor_exited"] = pidguard.ProcessRef.for_child(s.supervisor_pid).wait(20)
if out["supervisor_exited"]:
    os.waitpid(s.supervisor_pid, 0)
print(json.dumps(out))
"""


def test_with_cgroup2_hidden_cgroup_fails_cleanly_and_auto_falls_back_to_a_supervisor(tmp_path, mark):
    """In a mount namespace without cgroup2 (every cgroup2 mount unmounted there): an explicit
    scope='cgroup' fails with IoError before any file, process or leaf exists; 'auto' takes a
    supervisor, says why, and is still stopped whole."""
    mounts = cgroup2_mounts()
    if os.geteuid() != 0 or not mounts:
        pytest.skip("needs root and a cgroup2 mount to hide")
    probe = subprocess.run(["unshare", "--mount", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("cannot make a mount namespace: " + probe.stderr.decode(errors="replace"))
    script = "; ".join(f"umount -l {m}" for m in mounts) + '; exec "$0" "$@"'
    before = set(os.listdir(Path(mounts[0]) / "pidguard")) if (Path(mounts[0]) / "pidguard").exists() else set()
    p = subprocess.Popen(["unshare", "--mount", "sh", "-c", script, sys.executable, "-c", HIDDEN, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        out, _ = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, out
    res = json.loads(out)
    assert res["cgroup"].startswith("IoError: spawn: no cgroup leaf could be made"), res
    assert res["files_after_cgroup"] == [], "a failed spawn left files behind"
    assert res["auto"][0] == "supervisor" and "no cgroup leaf could be made" in res["auto"][1], res
    assert res["stop"] == ["exited", "supervisor"] and res["supervisor_exited"], res
    assert marked(mark) == []
    # No leaf of the hidden process (run-<its pid>-…) exists on the real cgroup2 mount.
    after = set(os.listdir(Path(mounts[0]) / "pidguard")) if (Path(mounts[0]) / "pidguard").exists() else set()
    assert [n for n in after - before if n.startswith(f"run-{p.pid}-")] == []
