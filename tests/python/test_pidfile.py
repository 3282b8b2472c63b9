"""The abx-dl pidfile, checked against the Python original's rules written out here
independently: content read with `int(open(p).read().strip())`, start time from `os.stat(p).st_mtime`,
compared with `psutil.Process(pid).create_time()` within the tolerance."""

import os
import shlex
import stat
import time
from pathlib import Path

import psutil
import pytest

import pidguard
from conftest import proc_state, wait_until

TOLERANCE = 5.0


def original_validate(pid_file, tolerance=TOLERANCE):
    """abx-dl's own validate_pid_file (process_utils), without the cmd check."""
    if not os.path.exists(pid_file):
        return False
    try:
        pid = int(open(pid_file).read().strip())
        proc = psutil.Process(pid)
        return abs(os.stat(pid_file).st_mtime - proc.create_time()) <= tolerance
    except (ValueError, psutil.Error):
        return False


def original_write(pid_file, pid, start_time):
    """abx-dl's own write_pid_file_with_mtime (process_utils): a plain write, then os.utime."""
    with open(pid_file, "w") as f:
        f.write(str(pid))
    os.utime(pid_file, (start_time, start_time))


def test_file_written_by_pidguard_reads_back_with_the_originals_rules(tmp_path, spawn):
    p = spawn.popen(["sleep", "infinity"])
    start = time.time()
    pid_file = tmp_path / "on_x.bg.pid"
    pidguard.write_pid_file_with_mtime(pid_file, p.pid, start)

    st = os.stat(pid_file)  # before reading: a read may update the atime (relatime)
    raw = open(pid_file).read()
    assert raw == str(p.pid), "content is the bare pid, no newline"
    assert int(raw.strip()) == p.pid
    assert abs(st.st_mtime - start) < 1e-6
    assert abs(st.st_atime - start) < 1e-6
    assert abs(st.st_mtime - psutil.Process(p.pid).create_time()) <= TOLERANCE
    assert stat.S_IMODE(st.st_mode) == 0o644
    assert original_validate(pid_file)
    assert pidguard.validate_pid_file(pid_file)


def test_file_written_the_original_way_validates(tmp_path, spawn):
    p = spawn.popen(["sleep", "infinity"])
    pid_file = tmp_path / "on_x.bg.pid"
    original_write(pid_file, p.pid, time.time())
    assert pidguard.validate_pid_file(pid_file) is True
    c = pidguard.check_pid_file(pid_file)
    assert c.valid and bool(c) and c.reason == "valid"
    assert c.token is None  # the original writes no token: the mtime rule decides
    assert c.pid == p.pid
    assert c.verdict == "unverifiable" and c.verdict_reason == "no-recorded-token"
    assert c.create_time == psutil.Process(p.pid).create_time()


def test_mtime_rule_and_tolerance_without_a_token(tmp_path, spawn):
    p = spawn.popen(["sleep", "infinity"])
    ct = psutil.Process(p.pid).create_time()
    pid_file = tmp_path / "on_x.bg.pid"
    original_write(pid_file, p.pid, ct - 100)
    assert pidguard.validate_pid_file(pid_file) is False
    assert pidguard.check_pid_file(pid_file).reason == "mtime-skew"
    assert original_validate(pid_file) is False
    assert pidguard.validate_pid_file(pid_file, None, 200.0) is True
    assert pidguard.validate_pid_file(pid_file, tolerance=200) is True
    # Strict `>` fails, as in the original: a skew of exactly the tolerance is valid.
    original_write(pid_file, p.pid, ct + 4.0)
    assert pidguard.validate_pid_file(pid_file, tolerance=4.0) is original_validate(pid_file, 4.0) is True


def test_token_decides_over_the_mtime(tmp_path, spawn):
    p = spawn.popen(["sleep", "infinity"])
    pid_file = tmp_path / "on_x.bg.pid"
    pidguard.write_pid_file_with_mtime(pid_file, p.pid, time.time())
    token = os.getxattr(pid_file, pidguard.TOKEN_XATTR).decode()
    assert token == pidguard.start_token(p.pid)
    # A clock step after the record: the mtime is far off, the token still matches.
    os.utime(pid_file, (1e9, 1e9))
    c = pidguard.check_pid_file(pid_file)
    assert c.valid and c.verdict == "match" and c.token == token

    prefix, machine, boot, ns, ticks, ino = token.split(":")
    cases = [
        # other start ticks, recorded without a pidfs inode (with inodes on both sides the inode decides alone)
        ("mismatch", f"{prefix}:{machine}:{boot}:{ns}:{int(ticks) + 1}:-"),
        ("mismatch", f"{prefix}:{machine}:00000000-0000-0000-0000-000000000000:{ns}:{ticks}:{ino}"),  # another boot
        ("foreign", f"{prefix}:othermachine:00000000-0000-4000-8000-000000000000:{ns}:{ticks}:{ino}"),
        ("foreign", f"{prefix}:{machine}:{boot}:1:{ticks}:{ino}"),  # another pid namespace
        ("bad-token", "not a token"),
    ]
    for reason, value in cases:
        os.setxattr(pid_file, pidguard.TOKEN_XATTR, value.encode())
        c = pidguard.check_pid_file(pid_file)
        assert (c.valid, c.reason) == (False, reason), value
        assert pidguard.validate_pid_file(pid_file) is False
    # Another machine id with the same boot id: the same kernel (rook/rook#182), judged.
    os.setxattr(pid_file, pidguard.TOKEN_XATTR, f"{prefix}:othermachine:{boot}:{ns}:{ticks}:{ino}".encode())
    assert pidguard.check_pid_file(pid_file).valid
    assert alive_and_untouched(p)


def alive_and_untouched(p):
    return p.poll() is None and proc_state(p.pid) in ("S", "R")


@pytest.mark.parametrize(
    "content",
    [b"", b"\n", b"503\n7\n", b"0", b"-1", b"+5", b"5_0", b"5\x00", b"99999999", b"abc", b"1 2", b"1.5"],
    ids=repr,
)
def test_malformed_content_is_false_never_an_exception(tmp_path, content):
    pid_file = tmp_path / "on_x.bg.pid"
    pid_file.write_bytes(content)
    assert pidguard.validate_pid_file(pid_file) is False
    assert pidguard.check_pid_file(pid_file).reason == "malformed"


def test_ten_megabytes_of_digits_is_rejected_quickly(tmp_path):
    pid_file = tmp_path / "on_x.bg.pid"
    pid_file.write_bytes(b"1" * (10 << 20))
    t = time.monotonic()
    assert pidguard.check_pid_file(pid_file).reason == "malformed"
    assert time.monotonic() - t < 5.0


def test_missing_symlink_fifo_and_directory(tmp_path, spawn):
    p = spawn.popen(["sleep", "infinity"])
    real = tmp_path / "real.pid"
    original_write(real, p.pid, time.time())
    assert pidguard.check_pid_file(tmp_path / "nope.pid").reason == "missing"
    assert pidguard.check_pid_file(tmp_path / "nodir" / "x.pid").reason == "missing"
    link = tmp_path / "link.pid"
    link.symlink_to(real)
    assert pidguard.check_pid_file(link).reason == "not-regular"
    fifo = tmp_path / "fifo.pid"
    os.mkfifo(fifo)
    t = time.monotonic()
    assert pidguard.validate_pid_file(fifo) is False  # and it does not block
    assert time.monotonic() - t < 5.0
    assert pidguard.check_pid_file(tmp_path).reason == "not-regular"


def test_gone_and_zombie(tmp_path, spawn):
    p = spawn.popen(["sh", "-c", "exit 0"])
    pid_file = tmp_path / "on_x.bg.pid"
    pidguard.write_pid_file_with_mtime(pid_file, p.pid, time.time())
    assert wait_until(lambda: proc_state(p.pid) == "Z")
    assert pidguard.check_pid_file(pid_file).reason == "zombie"
    p.wait()
    c = pidguard.check_pid_file(pid_file)
    assert (c.valid, c.reason, c.verdict) == (False, "gone", "gone")


def test_cmd_file_round_trip_and_check(tmp_path, spawn):
    argv = ["sleep", "infinity"]
    sh = tmp_path / "on_x.bg.sh"
    pidguard.write_cmd_file(sh, argv)
    assert sh.read_text() == "#!/bin/bash\n" + shlex.join(argv) + "\n"
    assert stat.S_IMODE(os.stat(sh).st_mode) == 0o755
    p = spawn.popen(argv)
    pid_file = tmp_path / "on_x.bg.pid"
    pidguard.write_pid_file_with_mtime(pid_file, p.pid, time.time())
    assert pidguard.validate_pid_file(pid_file, sh) is True
    assert pidguard.validate_pid_file(pid_file, tmp_path / "absent.sh") is True  # absent: skipped
    pidguard.write_cmd_file(sh, ["sleep", "31"])
    # A matching token alone decides: the argv rules are the evidence of token-less records.
    assert pidguard.validate_pid_file(pid_file, sh) is True
    os.removexattr(pid_file, pidguard.TOKEN_XATTR)
    assert pidguard.validate_pid_file(pid_file, sh) is False
    assert pidguard.check_pid_file(pid_file, sh).reason == "cmd-mismatch"
    pidguard.write_cmd_file(sh, ["chromium", "--remote-debugging-port=9222"])
    assert pidguard.check_pid_file(pid_file, sh).reason == "cmd-mismatch"


def test_cmd_file_quotes_like_shlex(tmp_path):
    argv = ["node", "/x y/hook.js", "--url=https://e.com/?a=1&b", "it's", "", "$HOME", "ü"]
    sh = tmp_path / "on_x.bg.sh"
    pidguard.write_cmd_file(str(sh), argv)
    lines = sh.read_text().splitlines()
    assert lines == ["#!/bin/bash", shlex.join(argv)]
    assert shlex.split(lines[-1]) == argv


def test_paths_may_be_str_bytes_or_pathlike(tmp_path, spawn):
    p = spawn.popen(["sleep", "infinity"])

    class P:
        def __init__(self, p):
            self.p = p

        def __fspath__(self):
            return self.p

    for i, make in enumerate([str, os.fsencode, Path, lambda s: P(str(s)), lambda s: P(os.fsencode(s))]):
        pid_file = tmp_path / f"on_{i}.pid"
        pidguard.write_pid_file_with_mtime(make(pid_file), p.pid, time.time())
        assert pidguard.validate_pid_file(make(pid_file), make(tmp_path / "none.sh"))
        assert pidguard.check_pid_file(make(pid_file)).valid
        pidguard.write_cmd_file(make(tmp_path / f"on_{i}.sh"), ["sleep", "infinity"])
        assert pidguard.validate_pid_file(make(pid_file), make(tmp_path / f"on_{i}.sh"))


def test_non_utf8_path_bytes(tmp_path, spawn):
    p = spawn.popen(["sleep", "infinity"])
    pid_file = os.fsencode(tmp_path) + b"/on_\xff.pid"
    pidguard.write_pid_file_with_mtime(pid_file, p.pid, time.time())
    assert open(pid_file, "rb").read() == str(p.pid).encode()
    assert pidguard.validate_pid_file(pid_file)
    assert pidguard.validate_pid_file(os.fsdecode(pid_file))  # the surrogate-escaped str form


def test_write_refuses_a_symlink_and_leaves_its_target_alone(tmp_path, spawn):
    p = spawn.popen(["sleep", "infinity"])
    target = tmp_path / "precious"
    target.write_text("keep me")
    link = tmp_path / "on_x.bg.pid"
    link.symlink_to(target)
    with pytest.raises(pidguard.UntrustedError):
        pidguard.write_pid_file_with_mtime(link, p.pid, time.time())
    assert target.read_text() == "keep me"
    assert os.path.islink(link)
    with pytest.raises(pidguard.UntrustedError):
        pidguard.write_cmd_file(link, ["sleep", "1"])
    assert target.read_text() == "keep me"


def test_write_mode_ignores_umask(tmp_path, spawn):
    p = spawn.popen(["sleep", "infinity"])
    old = os.umask(0)
    try:
        pidguard.write_pid_file_with_mtime(tmp_path / "a.pid", p.pid, time.time())
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "a.pid").st_mode) == 0o644


def test_nothing_written_on_bad_arguments(tmp_path):
    pid_file = tmp_path / "on_x.bg.pid"
    for pid, t, exc in [
        (os.getpid(), float("nan"), ValueError),
        (os.getpid(), float("inf"), ValueError),
        (os.getpid(), "now", TypeError),
        (os.getpid(), None, TypeError),
        (True, time.time(), TypeError),
        (1.0, time.time(), TypeError),
        ("1", time.time(), TypeError),
        (-5, time.time(), ValueError),
        (0, time.time(), ValueError),
        (2**63, time.time(), ValueError),
        (2**31, time.time(), ValueError),
        (10**7, time.time(), ValueError),  # above any pid_max: InvalidArgumentError, a ValueError
    ]:
        with pytest.raises(exc):
            pidguard.write_pid_file_with_mtime(pid_file, pid, t)
        assert not pid_file.exists()
        assert os.listdir(tmp_path) == []  # no temporary file left either
