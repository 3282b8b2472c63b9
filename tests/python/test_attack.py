"""Adversarial tests of the Python binding: argument abuse, planted files, and error reports
that must say what happened."""

import math
import os
import time

import pytest

import pidguard


def test_error_without_errno_keeps_its_message(tmp_path):
    # Seen failing before the fix: str(e) was "[Errno None] None: '<path>'" and e.strerror was
    # None, so the report dropped why the write was refused.
    (tmp_path / "victim").write_text("secret")
    os.symlink(tmp_path / "victim", tmp_path / "x.pid")
    with pytest.raises(pidguard.UntrustedError) as e:
        pidguard.write_pid_file_with_mtime(tmp_path / "x.pid", os.getpid(), time.time())
    assert e.value.errno is None
    assert "symlink" in str(e.value) and "symlink" in e.value.strerror, str(e.value)
    assert "None" not in str(e.value), str(e.value)
    assert e.value.filename == str(tmp_path / "x.pid")
    assert (tmp_path / "victim").read_text() == "secret"


@pytest.mark.parametrize("kind", ["symlink", "fifo", "dir", "dangling"])
def test_a_planted_target_is_refused_and_left_untouched(tmp_path, kind):
    victim = tmp_path / "victim"
    victim.write_text("secret")
    p = tmp_path / "on_x.bg.pid"
    if kind == "symlink":
        os.symlink(victim, p)
    elif kind == "fifo":
        os.mkfifo(p)
    elif kind == "dir":
        os.mkdir(p)
    else:
        os.symlink(tmp_path / "nowhere", p)
    with pytest.raises(pidguard.UntrustedError):
        pidguard.write_pid_file_with_mtime(p, os.getpid(), time.time())
    # Readers neither follow nor block (a FIFO without a writer would block a plain open).
    t0 = time.monotonic()
    assert pidguard.validate_pid_file(p) is False
    assert pidguard.check_pid_file(p).reason in ("not-regular", "missing")
    assert time.monotonic() - t0 < 10
    assert victim.read_text() == "secret" and not (tmp_path / "nowhere").exists()


def test_a_hard_linked_targets_content_is_left_untouched(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("secret")
    os.link(victim, tmp_path / "on_x.bg.pid")
    pidguard.write_pid_file_with_mtime(tmp_path / "on_x.bg.pid", os.getpid(), time.time())
    assert victim.read_text() == "secret" and os.stat(victim).st_nlink == 1
    assert (tmp_path / "on_x.bg.pid").read_text() == str(os.getpid())


def test_argument_abuse_is_rejected_before_any_call(tmp_path):
    p = tmp_path / "a.pid"
    for pid in (True, False, 1.0, "1", 2**64, -1, 0, None, float("nan")):
        with pytest.raises((TypeError, ValueError)):
            pidguard.write_pid_file_with_mtime(p, pid, time.time())
        # pid <= 0 is refused by core's rule (RefusedError), like every protected target.
        with pytest.raises((TypeError, ValueError, pidguard.RefusedError)):
            pidguard.terminate(pid)
    for t in (math.nan, math.inf, -math.inf, 1e300, "1", True, None):
        with pytest.raises((TypeError, ValueError)):
            pidguard.write_pid_file_with_mtime(p, os.getpid(), t)
    for tol in ("5", True):
        with pytest.raises(TypeError):
            pidguard.validate_pid_file(p, None, tol)
    # Out-of-range tolerances are failures, not exceptions, for the checks (False, never raised), and bad
    # input for cleanup: both decided in core.
    for tol in (math.nan, -1.0, math.inf):
        assert pidguard.validate_pid_file(p, None, tol) is False
        with pytest.raises(ValueError):
            pidguard.cleanup_background_hooks(tmp_path, tolerance=tol)
    assert not p.exists()

    class Raises:
        def __fspath__(self):
            raise RuntimeError("fspath exploded")

    with pytest.raises(RuntimeError, match="fspath exploded"):
        pidguard.check_pid_file(Raises())
    # bytes paths that are not UTF-8 work both ways.
    raw = os.fsencode(tmp_path) + b"/\xff\xfe.pid"
    pidguard.write_pid_file_with_mtime(raw, os.getpid(), time.time())
    assert pidguard.check_pid_file(raw).pid == os.getpid()


def test_own_pid_parent_and_init_are_never_signalled():
    me = os.getpid()
    for pid, token in ((me, pidguard.start_token(me)), (os.getppid(), None), (1, None), (1, pidguard.start_token(1))):
        with pytest.raises(pidguard.RefusedError):
            pidguard.terminate(pid, token, policy="lenient")
