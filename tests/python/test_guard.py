"""pidguard.guard: guard pidfiles from Python, on real files and real processes: racing
creators and acquirers, a holder that died, refused reads, modes.

Racing processes are our own children (Popen, own session), driven over their stdin and ended
by pid in the `spawn` fixture; nothing is killed by name.
"""

import errno
import gc
import os
import stat
import subprocess
import sys
import threading

import pytest

import pidguard
from pidguard import guard
from pidguard.guard import Entry


# A child that takes commands on stdin ("create PATH", "acquire PATH", "release", "exit") and
# answers one line each: "won", an exception class name, or release()'s result.
RACER = r"""
import sys
from pidguard import guard
me = sys.argv[1]
held = None
print("ready", flush=True)
for line in sys.stdin:
    cmd, _, arg = line.strip().partition(" ")
    try:
        if cmd == "create":
            guard.create(arg, guard.Entry.current(racer=me))
            out = "won"
        elif cmd == "acquire":
            held = guard.acquire(arg, racer=me)
            out = "won"
        elif cmd == "release":
            out = str(held.release()) if held is not None else "none"
            held = None
        else:
            break
    except Exception as e:
        out = type(e).__name__
    print(out, flush=True)
"""


class Racers:
    """N child processes that run RACER; `round(cmd)` sends one command to all (as close together
    as writing N pipes allows) and returns their answers, by racer index."""

    def __init__(self, spawn, n):
        self.procs = [
            spawn.popen(
                [sys.executable, "-c", RACER, str(i)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                bufsize=1,
            )
            for i in range(n)
        ]
        for p in self.procs:
            assert p.stdout.readline().strip() == "ready"

    def round(self, cmd):
        for p in self.procs:
            p.stdin.write(cmd + "\n")
            p.stdin.flush()
        return [p.stdout.readline().strip() for p in self.procs]

    def close(self):
        for p in self.procs:
            p.stdin.close()
            assert p.wait(timeout=60) == 0


def write_file(path, data, mode=0o600):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        os.fchmod(fd, mode)
        os.write(fd, data)
    finally:
        os.close(fd)


def token_with(field, value, pid=None):
    """Our own start token with one of its fields replaced (2 = boot id, 3 = pid namespace,
    1 = machine id)."""
    parts = pidguard.start_token(pid or os.getpid()).split(":")
    parts[field] = value
    return ":".join(parts)


def snapshot(path):
    """What must not change when a read is refused: the inode, mode, links, times and bytes (or
    a symlink's target); never opening a FIFO."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        data = os.readlink(path)
    elif stat.S_ISREG(st.st_mode):
        with open(path, "rb") as f:
            data = f.read()
    else:
        data = None
    return (st.st_ino, st.st_mode, st.st_nlink, st.st_size, st.st_mtime_ns, data)


# ---------------------------------------------------------------------------------------------
# Entry, encode, decode, token_sha256


def test_entry_keeps_field_order_and_encodes_exactly():
    e = Entry(42, "t", [("z", "1"), ("a", 'x"y')])
    assert (e.pid, e.start_token) == (42, "t")
    assert list(e.fields.items()) == [("z", "1"), ("a", 'x"y')]
    assert guard.encode(e) == b'{"pid":42,"start_token":"t","z":"1","a":"x\\"y"}\n'
    assert guard.decode(guard.encode(e)) == e
    assert Entry(42, "t", {"z": "1", "a": 'x"y'}) == e and hash(Entry(42, "t", {"z": "1", "a": 'x"y'})) == hash(e)
    assert Entry(42, "t") != e
    assert repr(Entry(7, "tok", {"s": "1"})) == "Entry(pid=7, start_token='tok', fields={'s': '1'})"
    e.fields["z"] = "changed"  # a copy: the Entry is immutable
    assert e.fields["z"] == "1"
    # decode keeps the file's order, whatever it is
    d = guard.decode(b'{"b":"1","start_token":"t","a":"2","pid":9}')
    assert (d.pid, list(d.fields)) == (9, ["b", "a"])


def test_entry_current_names_this_process():
    e = Entry.current(session="s1", socket="/run/x.sock")
    assert e.pid == os.getpid()
    assert e.start_token == pidguard.start_token(os.getpid())
    assert list(e.fields.items()) == [("session", "s1"), ("socket", "/run/x.sock")]
    assert Entry.current().fields == {}


@pytest.mark.parametrize(
    "args, exc",
    [
        ((True, "t"), TypeError),
        ((1.0, "t"), TypeError),
        (("1", "t"), TypeError),
        ((0, "t"), ValueError),
        ((-3, "t"), ValueError),
        ((2**40, "t"), ValueError),
        ((1, 5), TypeError),
        ((1, ""), pidguard.InvalidArgumentError),
        ((1, "t", {"pid": "x"}), pidguard.InvalidArgumentError),
        ((1, "t", {"start_token": "x"}), pidguard.InvalidArgumentError),
        ((1, "t", {"": "x"}), pidguard.InvalidArgumentError),
        ((1, "t", [("a", "1"), ("a", "2")]), pidguard.InvalidArgumentError),
        ((1, "t", {"a": "x" * 5000}), pidguard.InvalidArgumentError),
        ((1, "t", {"a": 1}), TypeError),
        ((1, "t", {1: "a"}), TypeError),
        ((1, "t", "ab"), TypeError),
        ((1, "t", [("a",)]), TypeError),
        ((1, "t", 5), TypeError),
    ],
)
def test_entry_argument_checks(args, exc):
    with pytest.raises(exc):
        Entry(*args)


def test_bad_arguments_of_the_functions(tmp_path):
    p = tmp_path / "g.json"
    e = Entry(1, "t")
    for call in (
        lambda: guard.create(p, "not an entry"),
        lambda: guard.create(5, e),
        lambda: guard.remove(p, {"pid": 1}),
        lambda: guard.replace(p, e, None),
        lambda: guard.read(None),
        lambda: guard.decode("text"),
        lambda: guard.encode(b"x"),
        lambda: guard.token_sha256(5),
        lambda: guard.acquire(p, e, session="s"),  # an entry or fields, not both
        lambda: guard.acquire(p, session=5),
        lambda: Entry.current(session=5),
    ):
        with pytest.raises(TypeError):
            call()
    with pytest.raises(ValueError):
        guard.read("")
    with pytest.raises(ValueError):
        guard.create("a\0b", e)
    assert not p.exists()


def test_token_sha256():
    assert guard.token_sha256("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert guard.token_sha256(b"abc") == guard.token_sha256("abc")
    assert guard.token_sha256("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


# ---------------------------------------------------------------------------------------------
# create, read


def test_create_modes_under_umask_zero_and_no_overwrite(tmp_path):
    p = tmp_path / "a" / "b" / "g.json"
    e = Entry.current(session="s1")
    old = os.umask(0)
    try:
        guard.create(p, e)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(p.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(p.parent.parent).st_mode) == 0o700
    assert p.read_bytes() == guard.encode(e)
    assert guard.read(p) == e and guard.read(str(p)) == e and guard.read(os.fsencode(p)) == e
    with pytest.raises(pidguard.AlreadyExistsError) as ei:
        guard.create(p, Entry(1, "other"))
    assert isinstance(ei.value, FileExistsError) and ei.value.errno == errno.EEXIST
    assert ei.value.filename == str(p)
    assert p.read_bytes() == guard.encode(e)


def test_create_race_between_processes_has_one_winner(tmp_path, spawn):
    """8 processes create the same path at once, 20 rounds: exactly one wins each round,
    the others get AlreadyExistsError, and the file holds the winner's whole record."""
    racers = Racers(spawn, 8)
    for r in range(20):
        p = tmp_path / f"round{r}" / "g.json"
        answers = racers.round(f"create {p}")
        winners = [i for i, a in enumerate(answers) if a == "won"]
        assert len(winners) == 1, answers
        assert sorted(set(answers)) == ["AlreadyExistsError", "won"], answers
        rec = guard.read(p)
        assert rec.fields == {"racer": str(winners[0])}
        assert rec.pid == racers.procs[winners[0]].pid
    racers.close()


def _read_refusal_cases(tmp_path):
    good = guard.encode(Entry(os.getpid(), "tok"))
    target = tmp_path / "target.json"
    write_file(target, good)

    def symlink(p):
        os.symlink(target, p)

    def directory(p):
        os.mkdir(p, 0o700)

    def fifo(p):
        os.mkfifo(p, 0o600)

    def hard_linked(p):
        write_file(p, good)
        os.link(p, str(p) + ".other")

    def insecure(p):
        write_file(p, good, 0o640)

    def world(p):
        write_file(p, good, 0o604)

    def too_large(p):
        write_file(p, b"{" + b" " * 5000 + b"}")

    def content(data):
        return lambda p: write_file(p, data)

    return [
        ("symlink", symlink, pidguard.SymlinkError, pidguard.UntrustedError),
        ("directory", directory, pidguard.IsDirectoryError, pidguard.UntrustedError),
        ("fifo", fifo, pidguard.NotRegularFileError, pidguard.UntrustedError),
        ("hard-linked", hard_linked, pidguard.HardLinkedError, pidguard.UntrustedError),
        ("group-readable", insecure, pidguard.InsecureModeError, pidguard.UntrustedError),
        ("world-readable", world, pidguard.InsecureModeError, pidguard.UntrustedError),
        ("too-large", too_large, pidguard.TooLargeError, pidguard.UntrustedError),
        ("not-json", content(b"1234\n"), pidguard.InvalidJsonError, pidguard.MalformedError),
        ("empty", content(b""), pidguard.InvalidJsonError, pidguard.MalformedError),
        ("non-string-field", content(b'{"pid":1,"start_token":"t","n":3}'), pidguard.InvalidJsonError, pidguard.MalformedError),
        ("no-pid", content(b'{"start_token":"t"}'), pidguard.BadPidError, pidguard.MalformedError),
        ("pid-zero", content(b'{"pid":0,"start_token":"t"}'), pidguard.BadPidError, pidguard.MalformedError),
        ("pid-negative", content(b'{"pid":-1,"start_token":"t"}'), pidguard.BadPidError, pidguard.MalformedError),
        ("pid-string", content(b'{"pid":"5","start_token":"t"}'), pidguard.BadPidError, pidguard.MalformedError),
        ("empty-token", content(b'{"pid":1,"start_token":""}'), pidguard.BadTokenError, pidguard.MalformedError),
        ("no-token", content(b'{"pid":1}'), pidguard.BadTokenError, pidguard.MalformedError),
    ], target


CASE_NAMES = [
    "symlink", "directory", "fifo", "hard-linked", "group-readable", "world-readable", "too-large",
    "not-json", "empty", "non-string-field", "no-pid", "pid-zero", "pid-negative", "pid-string",
    "empty-token", "no-token",
]


@pytest.mark.parametrize("name", CASE_NAMES)
def test_read_refusals_raise_their_own_class(tmp_path, name):
    """Each refusal of read() is its own class under its family, names the path,
    returns at once (a FIFO does not block), and changes nothing; check() and acquire() refuse
    the same file the same way (never as a dead holder)."""
    cases, target = _read_refusal_cases(tmp_path)
    (_, make, cls, family) = next(c for c in cases if c[0] == name)
    p = tmp_path / "g.json"
    make(p)
    before, target_before = snapshot(p), snapshot(target)

    result = {}

    def run():
        try:
            guard.read(p)
            result["exc"] = None
        except BaseException as e:  # noqa: B902 - reported below
            result["exc"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(30)
    assert not t.is_alive(), "read() blocked"
    e = result["exc"]
    assert type(e) is cls, repr(e)
    assert isinstance(e, family) and isinstance(e, pidguard.PidguardError) and isinstance(e, OSError)
    if family is pidguard.MalformedError:
        assert isinstance(e, ValueError)
    assert e.path == str(p) and e.filename == str(p) and str(p) in str(e)
    assert e.kind == cls.kind and e.code == cls.code
    for call in (lambda: guard.check(p), lambda: guard.acquire(p, takeover=True)):
        with pytest.raises(cls):
            call()
    assert snapshot(p) == before and snapshot(target) == target_before


def test_read_errnos_of_the_file_refusals(tmp_path):
    os.symlink(tmp_path / "nowhere", tmp_path / "link")
    with pytest.raises(pidguard.SymlinkError) as ei:
        guard.read(tmp_path / "link")
    assert ei.value.errno == errno.ELOOP
    with pytest.raises(pidguard.IsDirectoryError) as ei:
        guard.read(tmp_path)
    assert ei.value.errno == errno.EISDIR and isinstance(ei.value, IsADirectoryError)
    with pytest.raises(FileNotFoundError) as ei:
        guard.read(tmp_path / "missing")
    assert type(ei.value) is pidguard.NotFoundError and ei.value.errno == errno.ENOENT


# ---------------------------------------------------------------------------------------------
# remove, replace


def test_remove_only_by_content(tmp_path):
    p = tmp_path / "g.json"
    a, b = Entry(os.getpid(), "tok-a"), Entry(os.getpid(), "tok-b", {"s": "2"})
    assert guard.remove(p, a) is False  # missing: no error
    guard.create(p, a)
    assert guard.remove(p, b) is False and p.read_bytes() == guard.encode(a)
    assert guard.remove(p, a) is True and not p.exists()
    assert os.listdir(tmp_path) == []  # nothing renamed aside is left behind


def test_remove_after_replace_returns_false_and_keeps_the_new_bytes(tmp_path):
    p = tmp_path / "g.json"
    a, b = Entry(os.getpid(), "tok-a"), Entry(os.getpid(), "tok-b", {"s": "2"})
    guard.create(p, a)
    guard.replace(p, a, b)
    new = p.read_bytes()
    assert new == guard.encode(b)
    assert guard.remove(p, a) is False
    assert p.read_bytes() == new
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o600


def test_replace_with_a_stale_old_is_superseded_and_writes_nothing(tmp_path):
    p = tmp_path / "g.json"
    a, b, c = (Entry(os.getpid(), t) for t in ("tok-a", "tok-b", "tok-c"))
    guard.create(p, b)
    ino = os.stat(p).st_ino
    with pytest.raises(pidguard.SupersededError) as ei:
        guard.replace(p, a, c)
    assert ei.value.path == str(p)
    assert p.read_bytes() == guard.encode(b) and os.stat(p).st_ino == ino
    # A record that vanished in between is not an error: the new one is created.
    p.unlink()
    guard.replace(p, a, c)
    assert guard.read(p) == c


# ---------------------------------------------------------------------------------------------
# check


def test_check_verdicts(tmp_path, spawn):
    p = tmp_path / "g.json"
    v = guard.check(p)
    assert (v.found, v.entry, v.identity, v.reason, v.stale) == (False, None, None, None, False)
    assert not v.authorizes()

    me = Entry.current(s="1")
    guard.create(p, me)
    v = guard.check(p)
    assert (v.found, v.entry, v.identity, v.reason, v.stale) == (True, me, "match", "token-equal", False)
    assert v.owner_uid == os.getuid() and v.authorizes() and v.authorizes("lenient")
    guard.remove(p, me)

    # A record written in an earlier boot is a mismatch whatever runs at its pid.
    old_boot = Entry(os.getpid(), token_with(2, "00000000-0000-0000-0000-000000000000"))
    guard.create(p, old_boot)
    v = guard.check(p)
    assert (v.identity, v.reason, v.stale) == ("mismatch", "boot-id-differs", True)
    assert not v.authorizes("lenient")
    guard.remove(p, old_boot)

    # Another PID namespace: unverifiable, not stale, authorised only leniently.
    foreign = Entry(os.getpid(), token_with(3, "1"))
    guard.create(p, foreign)
    v = guard.check(p)
    assert (v.identity, v.reason, v.stale) == ("unverifiable", "foreign-pid-namespace", False)
    assert not v.authorizes("strict")
    with pytest.raises(ValueError):
        v.authorizes("loose")
    guard.remove(p, foreign)

    # A holder that exited.
    child = spawn.popen(["sleep", "infinity"])
    dead = Entry(child.pid, pidguard.start_token(child.pid))
    child.kill()
    child.wait()
    guard.create(p, dead)
    v = guard.check(p)
    assert v.identity in ("gone", "mismatch") and v.stale  # "mismatch" only if the pid was reused

    # A token that is not a pidguard start token cannot be judged.
    guard.remove(p, dead)
    guard.create(p, Entry(os.getpid(), "not-a-token"))
    with pytest.raises(pidguard.BadTokenError):
        guard.check(p)


# ---------------------------------------------------------------------------------------------
# acquire


def test_acquire_and_release_on_exit(tmp_path):
    p = tmp_path / "run" / "g.json"
    g = guard.acquire(p, session="s1", path="field named path", entry="field named entry")
    assert g.active and g.replaced is None and g.path == p
    with g as me:
        assert me == g.entry and me.pid == os.getpid()
        assert me.fields == {"session": "s1", "path": "field named path", "entry": "field named entry"}
        assert guard.read(p) == me and g.is_held()
    assert not p.exists() and not g.active and not g.is_held()
    assert g.release() is False  # already released: nothing to do


def test_release_on_exception_inside_the_with_block(tmp_path):
    p = tmp_path / "g.json"
    g = guard.acquire(p, session="s1")  # kept referenced: the exit, not garbage collection, releases
    with pytest.raises(RuntimeError, match="boom"):
        with g as me:
            assert guard.read(p) == me
            raise RuntimeError("boom")
    assert not p.exists() and not g.active


def test_release_removes_only_our_own_record(tmp_path):
    p = tmp_path / "g.json"
    other = Entry(os.getpid(), pidguard.start_token(os.getpid()), {"who": "successor"})
    with guard.acquire(p, who="me") as me:
        guard.replace(p, me, other)  # someone took over meanwhile
    assert guard.read(p) == other
    assert p.read_bytes() == guard.encode(other)


def test_guard_dropped_releases_and_keep_does_not(tmp_path):
    p = tmp_path / "g.json"
    g = guard.acquire(p)
    del g
    gc.collect()
    assert not p.exists()
    g = guard.acquire(p, s="kept")
    me = g.keep()
    assert not g.active and g.release() is False
    del g
    gc.collect()
    assert guard.read(p) == me
    assert guard.remove(p, me)


def test_a_second_acquire_is_held_with_the_holders_entry_and_verdict(tmp_path, spawn):
    """A live holder in another process: HeldError (a FileExistsError) carrying its record and
    verdict; the file is untouched. takeover=True replaces it, and the displaced holder's own
    release then removes nothing."""
    p = tmp_path / "g.json"
    holder = Racers(spawn, 1)
    assert holder.round(f"acquire {p}") == ["won"]
    before = p.read_bytes()
    with pytest.raises(pidguard.HeldError) as ei:
        guard.acquire(p, who="second")
    e = ei.value
    assert isinstance(e, FileExistsError) and e.errno == errno.EEXIST
    assert e.entry == guard.read(p) and e.entry.pid == holder.procs[0].pid == e.pid
    assert e.entry.fields == {"racer": "0"}
    assert (e.verdict.found, e.verdict.identity, e.verdict.reason) == (True, "match", "token-equal")
    assert e.verdict.entry == e.entry and e.path == str(p)
    assert p.read_bytes() == before

    with guard.acquire(p, takeover=True, who="second") as me:
        assert guard.read(p) == me
        assert holder.round("release") == ["False"]  # its record is gone: it removes nothing
        assert guard.read(p) == me
    holder.close()
    assert not p.exists()


def test_acquire_replaces_a_holder_that_was_killed(tmp_path, spawn):
    """The holder died without releasing (SIGKILL); the next acquire replaces its record."""
    p = tmp_path / "g.json"
    holder = Racers(spawn, 1)
    assert holder.round(f"acquire {p}") == ["won"]
    dead_pid = holder.procs[0].pid
    holder.procs[0].kill()
    holder.procs[0].wait()
    assert guard.read(p).pid == dead_pid
    g = guard.acquire(p, who="next")
    assert g.replaced is not None and g.replaced.entry.pid == dead_pid
    assert g.replaced.entry.fields == {"racer": "0"}
    assert g.replaced.identity in ("gone", "mismatch") and g.replaced.stale  # mismatch: pid reused
    assert guard.read(p) == g.entry
    assert g.release() is True and not p.exists()


def test_acquire_unverifiable_and_foreign_holders(tmp_path):
    p = tmp_path / "g.json"
    other_ns = Entry(os.getpid(), token_with(3, "1"), {"who": "old container"})
    guard.create(p, other_ns)
    with pytest.raises(pidguard.HeldError) as ei:
        guard.acquire(p)
    assert (ei.value.verdict.identity, ei.value.verdict.reason) == ("unverifiable", "foreign-pid-namespace")
    assert guard.read(p) == other_ns
    with guard.acquire(p, takeover=True) as me:
        assert guard.read(p) == me
    assert not p.exists()

    # Another machine: another machine id *and* boot id (an equal boot id proves the same kernel).
    parts = token_with(1, "0" * 32).split(":")
    parts[2] = "00000000-0000-4000-8000-000000000000"
    other_machine = Entry(os.getpid(), ":".join(parts))
    guard.create(p, other_machine)
    with pytest.raises(pidguard.HeldError) as ei:
        guard.acquire(p, takeover=True)  # never taken over from another machine
    assert ei.value.verdict.reason == "foreign-machine"
    assert guard.read(p) == other_machine

    # An earlier boot is proven stale: replaced without takeover.
    p.unlink()
    old_boot = Entry(os.getpid(), token_with(2, "00000000-0000-0000-0000-000000000000"))
    guard.create(p, old_boot)
    g = guard.acquire(p, Entry(os.getpid(), pidguard.start_token(os.getpid()), {"s": "new"}))
    assert g.replaced.identity == "mismatch" and g.replaced.entry == old_boot
    assert guard.read(p).fields == {"s": "new"}
    assert g.release()


def test_racing_acquires_over_a_stale_holder_have_one_owner(tmp_path, spawn):
    """6 processes acquire at once while the record names a dead holder: exactly one owns it
    (the rest see it held by that owner), every round; the owner's release removes it."""
    racers = Racers(spawn, 6)
    corpse = spawn.popen(["sleep", "infinity"])
    stale = Entry(corpse.pid, pidguard.start_token(corpse.pid), {"who": "dead"})
    corpse.kill()
    corpse.wait()
    for r in range(10):
        p = tmp_path / f"g{r}.json"
        guard.create(p, stale)
        answers = racers.round(f"acquire {p}")
        winners = [i for i, a in enumerate(answers) if a == "won"]
        assert len(winners) == 1, answers
        assert sorted(set(answers)) == ["HeldError", "won"], answers
        assert guard.read(p).fields == {"racer": str(winners[0])}
        released = racers.round("release")
        assert released[winners[0]] == "True" and not p.exists()
    racers.close()
