"""``pidguard.spawn(..., user=, group=, extra_groups=)``: a command started as another identity
runs with exactly that identity, in a scope it cannot leave or widen, and a stop by its spawner
reaches its whole tree.

Needs root (to start commands as ``nobody``); skipped otherwise. The callers that are not root
(an unprivileged caller, the "ArchiveBox shape" with ids (0, U, 0)) are child Python processes
that import pidguard as root and then change their own ids, so they need no access to the
virtualenv as ``nobody``. Survivors are counted by a marker in the environment, as in
test_spawn.py, so a process that escaped is found whatever its pid.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

import pidguard
from conftest import proc_state, wait_until
from test_spawn import MARK, cgroup2_mounts, end_marked, leaf_dir, marked, reap, session_of

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="starting a command as another user needs root")

NOBODY = 65534
NOGROUP = 65534

# A plain child, a setsid grandchild and a double-forked setsid daemon, each writing its pid;
# the shell then becomes the recorded sleep.
TREE = [
    "sh",
    "-c",
    "sleep 3600 & echo $! > child.pid; "
    "setsid sh -c 'echo $$ > grand.pid; exec sleep 3600' & "
    '(setsid sh -c "echo \\$\\$ > daemon.pid.tmp && mv daemon.pid.tmp daemon.pid; exec sleep 3600" &); '
    "exec sleep 3600",
]


@pytest.fixture
def mark(monkeypatch):
    import uuid

    m = uuid.uuid4().hex
    monkeypatch.setenv(MARK, m)
    yield m
    end_marked(m)


@pytest.fixture
def shared_dir():
    """A directory that nobody may write (and traverse to): /tmp/pidguard-user-XXXX, mode 0777."""
    d = Path(tempfile.mkdtemp(prefix="pidguard-user-", dir="/tmp"))
    d.chmod(0o777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def ids_of(pid):
    """(Uid line, Gid line, Groups line) of /proc/<pid>/status, as lists of ints."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("Uid", "Gid", "Groups"):
                out[key] = [int(v) for v in value.split()]
    return out["Uid"], out["Gid"], out["Groups"]


def read_pid(path):
    """The pid a shell wrote with `echo`: wait until the whole line is there (the file exists
    before its text does)."""
    assert wait_until(lambda: path.exists() and path.read_text().endswith("\n")), f"{path.name} was never written"
    return int(path.read_text())


@pytest.fixture(scope="module")
def cgroup_ok(tmp_path_factory):
    d = tmp_path_factory.mktemp("probe")
    try:
        s = pidguard.spawn(["true"], d / "probe.pid", scope="cgroup")
    except pidguard.IoError as e:
        return str(e)
    reap(s)
    pidguard.stop_pid_file(d / "probe.pid")
    return None


@pytest.mark.parametrize("scope", ["cgroup", "supervisor"])
def test_the_tree_runs_as_exactly_the_identity_asked_for_and_a_stop_reaches_all_of_it(shared_dir, mark, scope, cgroup_ok):
    if scope == "cgroup" and cgroup_ok:
        pytest.skip(f"no cgroup v2 leaf here: {cgroup_ok}")
    s = pidguard.spawn(TREE, shared_dir / "tree.pid", scope=scope, cwd=shared_dir, user="nobody", group=NOGROUP, extra_groups=[NOGROUP, 100])
    try:
        assert s.scope == scope and s.run_as == "uid=65534 gid=65534 groups=100,65534", s
        pids = {"command": s.pid}
        for name in ("child", "grand", "daemon"):
            pids[name] = read_pid(shared_dir / f"{name}.pid")
        assert wait_until(lambda: session_of(pids["daemon"]) == pids["daemon"])
        for name, pid in pids.items():
            uid, gid, groups = ids_of(pid)
            assert uid == [NOBODY] * 4 and gid == [NOGROUP] * 4, (name, uid, gid)
            assert sorted(groups) == [100, NOGROUP], (name, groups)
        # The spawner's identity stays where it must: the supervisor, the leaf, the record.
        if scope == "supervisor":
            assert ids_of(s.supervisor_pid)[0] == [0] * 4
        else:
            assert leaf_dir(s.scope_record).stat().st_uid == 0
        assert os.stat(shared_dir / "tree.pid").st_uid == 0
        assert os.getxattr(shared_dir / "tree.pid", "user.pidguard.run_as") == b"uid=65534 gid=65534 groups=100,65534"
        assert set(pids.values()) <= set(marked(mark))

        r = pidguard.stop_pid_file(shared_dir / "tree.pid", schedule="TERM/5/KILL/5")
        assert (r.outcome, r.scope, r.pid_file_removed) == ("exited", scope, True), r
        assert marked(mark) == [], "a process of the scope survived the stop"
    finally:
        reap(s)


def test_user_alone_gives_the_users_primary_group_and_its_initgroups_groups_never_roots(shared_dir, mark):
    s = pidguard.spawn(["sleep", "3600"], shared_dir / "one.pid", scope="supervisor", user=NOBODY)
    try:
        uid, gid, groups = ids_of(s.pid)
        assert uid == [NOBODY] * 4 and gid == [NOGROUP] * 4 and groups == [NOGROUP]
        assert s.run_as == "uid=65534 gid=65534 groups=65534"
        pidguard.stop_pid_file(shared_dir / "one.pid", schedule="KILL/5")
    finally:
        reap(s)


def test_empty_extra_groups_means_none_and_names_resolve(shared_dir, mark):
    s = pidguard.spawn(["sleep", "3600"], shared_dir / "g.pid", scope="group", user="nobody", group="nogroup", extra_groups=[])
    try:
        assert ids_of(s.pid) == ([NOBODY] * 4, [NOGROUP] * 4, [])
        pidguard.stop_pid_file(shared_dir / "g.pid", schedule="KILL/5")
    finally:
        reap(s)


def test_the_command_cannot_leave_or_write_its_leaf(shared_dir, mark, cgroup_ok):
    if cgroup_ok:
        pytest.skip(f"no cgroup v2 leaf here: {cgroup_ok}")
    mount = cgroup2_mounts()[0]
    script = textwrap.dedent(
        f"""
        d={mount}$(sed -n 's/^0:://p' /proc/self/cgroup)
        try() {{ if (eval "$2") 2>/dev/null; then echo "$1"; fi; }}
        try wrote-procs 'echo $$ > $d/cgroup.procs'
        try wrote-freeze 'echo 0 > $d/cgroup.freeze'
        try wrote-kill-file 'test -w $d/cgroup.kill'
        try moved-to-parent 'echo $$ > $(dirname $d)/cgroup.procs'
        try moved-to-root 'echo $$ > {mount}/cgroup.procs'
        try made-child 'mkdir $d/escape'
        echo "in $d"
        echo done
        """
    )
    s = pidguard.spawn(["sh", "-c", script], shared_dir / "leaf.pid", scope="cgroup", user=NOBODY)
    try:
        leaf = leaf_dir(s.scope_record)
        out = shared_dir / "leaf.stdout.log"
        assert wait_until(lambda: out.read_text().endswith("done\n")), out.read_text()
        lines = out.read_text().splitlines()
        assert lines == [f"in {leaf}", "done"], f"the command reached outside its rights: {lines}"
    finally:
        reap(s)
        pidguard.stop_pid_file(shared_dir / "leaf.pid", schedule="KILL/5")


# A child Python process: imports pidguard as root, takes the ids given, then spawns.
CALLER = textwrap.dedent(
    """
    import json, os, sys
    import pidguard
    ids, req = json.loads(sys.argv[1]), json.loads(sys.argv[2])
    if ids.get("groups") is not None:
        os.setgroups(ids["groups"])
    if ids.get("resgid"):
        os.setresgid(*ids["resgid"])
    if ids.get("resuid"):
        os.setresuid(*ids["resuid"])
    out = {"getresuid": os.getresuid()}
    try:
        s = pidguard.spawn(req["argv"], req["pid_file"], cwd=req["cwd"], scope=req["scope"], **req["as"])
    except pidguard.PidguardError as e:
        out.update(error=type(e).__name__, permission=isinstance(e, PermissionError), message=str(e))
        print(json.dumps(out)); sys.exit(0)
    out.update(pid=s.pid, scope=s.scope, supervisor=s.supervisor_pid, run_as=s.run_as)
    print(json.dumps(out), flush=True)
    sys.stdin.readline()  # the test has looked at the tree: stop it, as this caller
    r = pidguard.stop_pid_file(req["pid_file"], schedule="TERM/5/KILL/5")
    print(json.dumps({"outcome": r.outcome, "removed": r.pid_file_removed, "scope": r.scope}), flush=True)
    if s.supervisor_pid:
        os.waitpid(s.supervisor_pid, 0)
    else:
        os.waitpid(s.pid, 0)
    """
)


def run_caller(ids, req):
    return subprocess.Popen(
        [sys.executable, "-c", CALLER, json.dumps(ids), json.dumps(req)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


@pytest.mark.parametrize(
    "ask",
    [{"user": 0}, {"user": NOBODY, "extra_groups": [0]}, {"group": 0}, {"user": 1}],
    ids=["root", "root-group-as-extra", "gid-0", "another-user"],
)
def test_an_unprivileged_caller_gets_permission_denied_and_nothing_is_started(shared_dir, mark, ask):
    req = {"argv": ["sleep", "3600"], "pid_file": str(shared_dir / "x.pid"), "cwd": str(shared_dir), "scope": "auto", "as": ask}
    p = run_caller({"groups": [], "resgid": [NOGROUP] * 3, "resuid": [NOBODY] * 3}, req)
    out, _ = p.communicate(timeout=60)
    res = json.loads(out.splitlines()[0])
    assert res["getresuid"] == [NOBODY] * 3
    assert res.get("error") == "PermissionDeniedError" and res["permission"], res
    assert "nothing was started" in res["message"]
    assert sorted(os.listdir(shared_dir)) == [], "a refused spawn left a file"
    assert marked(mark) == [], "a refused spawn left a process"


def test_an_unprivileged_caller_may_start_a_command_as_itself(shared_dir, mark):
    req = {"argv": ["sleep", "3600"], "pid_file": str(shared_dir / "self.pid"), "cwd": str(shared_dir), "scope": "supervisor", "as": {"user": NOBODY}}
    p = run_caller({"groups": [], "resgid": [NOGROUP] * 3, "resuid": [NOBODY] * 3}, req)
    try:
        res = json.loads(p.stdout.readline())
        assert "error" not in res, res
        assert ids_of(res["pid"]) == ([NOBODY] * 4, [NOGROUP] * 4, [])
        p.stdin.write("\n")
        p.stdin.flush()
        assert json.loads(p.stdout.readline())["outcome"] == "exited"
    finally:
        p.communicate(timeout=60)


@pytest.mark.parametrize("scope", ["auto", "supervisor"])
@pytest.mark.parametrize("shape", ["setresuid", "seteuid"])
def test_the_archivebox_shape_real_root_effective_u_spawns_as_u(shared_dir, mark, scope, shape):
    """ArchiveBox's image: real uid 0, effective uid U (and root's gid and groups), spawning as
    U. The tree runs as (U, U, U) with U's groups (none of root's), the record is U's, and a stop
    by the same caller leaves no survivor."""
    ids = {"resuid": [0, NOBODY, 0]} if shape == "setresuid" else {}
    pid_file = shared_dir / "hook.pid"
    req = {"argv": TREE, "pid_file": str(pid_file), "cwd": str(shared_dir), "scope": scope, "as": {"user": NOBODY}}
    code = CALLER if shape == "setresuid" else CALLER.replace("out = {", "os.seteuid(%d)\nout = {" % NOBODY)
    p = subprocess.Popen([sys.executable, "-c", code, json.dumps(ids), json.dumps(req)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        res = json.loads(p.stdout.readline())
        assert res["getresuid"] == [0, NOBODY, 0] and "error" not in res, res
        assert res["run_as"] == "uid=65534 gid=65534 groups=65534"
        pids = [res["pid"]] + [read_pid(shared_dir / f"{n}.pid") for n in ("child", "grand", "daemon")]
        for pid in pids:
            assert ids_of(pid) == ([NOBODY] * 4, [NOGROUP] * 4, [NOGROUP]), pid
        assert os.stat(pid_file).st_uid == NOBODY, "the record is the caller's effective uid's"
        assert set(pids) <= set(marked(mark))
        p.stdin.write("\n")
        p.stdin.flush()
        stop = json.loads(p.stdout.readline())
        assert (stop["outcome"], stop["removed"]) == ("exited", True), stop
        # The caller itself carries the marker too (it is our child, still running).
        assert [x for x in marked(mark) if x != p.pid] == [], "a process of the tree survived the stop"
    finally:
        p.communicate(timeout=60)


def test_a_signalled_command_reads_as_signalled_through_its_supervisor(tmp_path):
    """Item: the supervisor ends by the command's own signal, so waitpid says WIFSIGNALED,
    asyncio's returncode is -15 and waitid says CLD_KILLED."""
    for scope in ("supervisor", "group"):
        s = pidguard.spawn(["sh", "-c", "kill -TERM $$"], tmp_path / f"k-{scope}.pid", scope=scope)
        child = s.supervisor_pid or s.pid
        fd = os.pidfd_open(child)
        try:
            info = os.waitid(os.P_PIDFD, fd, os.WEXITED | os.WNOWAIT)
            assert (info.si_code, info.si_status) == (os.CLD_KILLED, signal.SIGTERM), (scope, info)
        finally:
            os.close(fd)
        _, status = os.waitpid(child, 0)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM and not os.WCOREDUMP(status)
        assert os.waitstatus_to_exitcode(status) == -signal.SIGTERM
