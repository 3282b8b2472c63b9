"""The exception hierarchy (parity with core's ErrorKind table, builtin twins, errno) and the
argument checks, which raise TypeError/ValueError before any system call."""

import errno
import os
import subprocess
import sys
import time

import pytest

import pidguard
from pidguard import _pidguard, errors

TWINS = {
    "already-exists": FileExistsError,
    "not-found": FileNotFoundError,
    "no-such-process": ProcessLookupError,
    "permission-denied": PermissionError,
    "timed-out": TimeoutError,
    "held": FileExistsError,
    "invalid-argument": ValueError,
    "malformed": ValueError,
}


def camel(slug):
    return "".join(p.capitalize() for p in slug.split("-")) + "Error"


def test_every_core_error_kind_has_a_declared_class():
    kinds = _pidguard.ERROR_KINDS
    assert len(kinds) >= 14 and [k[0] for k in kinds] == sorted({k[0] for k in kinds})
    declared = {c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, pidguard.PidguardError)}
    declared.discard(pidguard.PidguardError)
    for code, slug, default_errno in kinds:
        name = camel(slug)
        cls = getattr(errors, name, None)
        assert cls is not None, f"core kind {slug!r} (code {code}) has no class {name} in errors.py"
        assert cls in declared and name in errors.__all__ and name in pidguard.__all__
        assert getattr(pidguard, name) is cls
        assert (cls.kind, cls.code) == (slug, code)
        assert errors.BY_CODE[code] is cls
        assert issubclass(cls, pidguard.PidguardError) and issubclass(cls, OSError)
        if slug in TWINS:
            assert issubclass(cls, TWINS[slug]), (cls, TWINS[slug])
        if default_errno is not None:
            assert errno.errorcode.get(default_errno), default_errno
    # Nothing declared that core does not have.
    assert {c.code for c in declared} == {k[0] for k in kinds}
    assert issubclass(pidguard.PidguardError, OSError)


def test_factory_sets_errno_path_pid_and_refusal():
    e = errors._from_native(6, "no-such-process", errno.ESRCH, "pid 7: gone", None, 7, None)
    assert type(e) is pidguard.NoSuchProcessError
    assert (e.errno, e.strerror, e.pid, e.path, e.refusal) == (errno.ESRCH, "pid 7: gone", 7, None, None)
    e = errors._from_native(4, "malformed", None, "bad", "/x", None, None)
    assert e.errno is None and e.path == "/x" and e.filename == "/x" and isinstance(e, ValueError)
    # A kind appended to core later still gets its own class, never the bare base.
    e = errors._from_native(999, "brand-new", None, "m", None, None, None)
    assert isinstance(e, pidguard.PidguardError) and (e.kind, e.code) == ("brand-new", 999)


def test_real_errors_carry_errno_and_twin(tmp_path, spawn):
    with pytest.raises(FileNotFoundError) as e:
        pidguard.write_pid_file_with_mtime(tmp_path / "no" / "x.pid", os.getpid(), time.time())
    assert type(e.value) is pidguard.NotFoundError and e.value.errno == errno.ENOENT
    assert e.value.filename == str(tmp_path / "no" / "x.pid")

    with pytest.raises(ValueError) as e:
        pidguard.terminate(os.getpid(), schedule="TERM/x")
    assert type(e.value) is pidguard.InvalidArgumentError and e.value.errno == errno.EINVAL

    with pytest.raises(ValueError) as e:
        pidguard.terminate(os.getpid(), "linux1:garbage")
    assert type(e.value) is pidguard.InvalidArgumentError

    with pytest.raises(pidguard.RefusedError) as e:
        pidguard.terminate(os.getpid(), policy="lenient")
    assert e.value.refusal == "own-pid" and e.value.pid == os.getpid() and e.value.errno is None

    with pytest.raises(ProcessLookupError) as e:
        p = spawn.popen(["true"])
        p.wait()
        pidguard.terminate(p.pid)
    assert type(e.value) is pidguard.NoSuchProcessError and e.value.errno == errno.ESRCH

    with pytest.raises(FileNotFoundError):
        pidguard.cleanup_background_hooks(tmp_path / "absent")
    with pytest.raises(pidguard.InvalidArgumentError):
        (tmp_path / "file").write_text("")
        pidguard.cleanup_background_hooks(tmp_path / "file")


def test_permission_error_for_a_non_root_caller(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to switch to an unprivileged user")
    os.chmod(tmp_path, 0o755)
    target = tmp_path / "x.pid"
    pid = os.fork()
    if pid == 0:  # the child: drop to nobody, try to write into root's directory
        status = 9
        try:
            os.setgid(65534)
            os.setuid(65534)
            pidguard.write_pid_file_with_mtime(target, os.getpid(), time.time())
            status = 2
        except PermissionError as e:
            ok = isinstance(e, pidguard.PermissionDeniedError) and e.errno in (errno.EACCES, errno.EPERM)
            status = 0 if ok else 3
        except BaseException:
            status = 4
        finally:
            os._exit(status)
    _, st = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(st) == 0
    assert not target.exists()


PID_FUNCS = [
    ("lookup", lambda pid: pidguard.lookup(pid)),
    ("start_token", lambda pid: pidguard.start_token(pid)),
    ("terminate", lambda pid: pidguard.terminate(pid)),
    ("terminate-lenient", lambda pid: pidguard.terminate(pid, policy="lenient", schedule="KILL/1")),
    ("write_pid_file_with_mtime", lambda pid: pidguard.write_pid_file_with_mtime("/nonexistent-dir/x.pid", pid, 1.0)),
]


class Index:
    def __index__(self):
        raise RuntimeError("boom")


@pytest.mark.parametrize("name,call", PID_FUNCS, ids=[n for n, _ in PID_FUNCS])
@pytest.mark.parametrize(
    "bad,exc",
    [
        (True, TypeError),
        (False, TypeError),
        (1.0, TypeError),
        (float("nan"), TypeError),
        ("1", TypeError),
        (b"1", TypeError),
        (None, TypeError),
        ([1], TypeError),
        (object(), TypeError),
        (-1, ValueError),
        (0, ValueError),
        (-(2**70), ValueError),
        (2**31, ValueError),
        (2**70, ValueError),
        (4_194_305, ValueError),  # above the kernel's PID_MAX_LIMIT
        (10**7, ValueError),
    ],
    ids=repr,
)
def test_bad_pids_are_rejected_before_any_system_call(name, call, bad, exc):
    # A pid that fits a pid_t but names no process that may be signalled (<= 0, above pid_max)
    # is core's to judge, the same in every language: terminate refuses it (RefusedError, the
    # rule named), the other calls call it an invalid argument (a ValueError).
    refused = name.startswith("terminate") and exc is ValueError and isinstance(bad, int) and -(2**31) <= bad < 2**31
    with pytest.raises(pidguard.RefusedError if refused else exc) as e:
        call(bad)
    assert not isinstance(e.value, pidguard.NoSuchProcessError)
    if refused:
        assert e.value.refusal in ("non-positive-pid", "above-pid-max"), e.value.refusal
    else:
        assert not isinstance(e.value, pidguard.RefusedError)


def test_bad_arguments_of_the_other_functions(tmp_path):
    p = tmp_path / "x.pid"
    for call, exc in [
        (lambda: pidguard.validate_pid_file(123), TypeError),
        (lambda: pidguard.validate_pid_file(None), TypeError),
        (lambda: pidguard.validate_pid_file(p, 5), TypeError),
        (lambda: pidguard.validate_pid_file(p, None, "5"), TypeError),
        (lambda: pidguard.validate_pid_file(p, None, True), TypeError),
        (lambda: pidguard.validate_pid_file("a\0b"), ValueError),
        (lambda: pidguard.validate_pid_file(""), ValueError),
        (lambda: pidguard.write_cmd_file(tmp_path / "x.sh", "sleep 1"), TypeError),
        (lambda: pidguard.write_cmd_file(tmp_path / "x.sh", ["sleep", 1]), TypeError),
        (lambda: pidguard.write_cmd_file(tmp_path / "x.sh", 5), TypeError),
        (lambda: pidguard.write_cmd_file(tmp_path / "x.sh", ["a\0b"]), ValueError),
        (lambda: pidguard.validate_pid_file(p, ["sleep", 5]), TypeError),
        (lambda: pidguard.terminate(os.getpid(), 5), TypeError),
        (lambda: pidguard.terminate(os.getpid(), policy="loose"), ValueError),
        (lambda: pidguard.terminate(os.getpid(), policy=1), TypeError),
        (lambda: pidguard.terminate(os.getpid(), schedule=5), TypeError),
        (lambda: pidguard.terminate(os.getpid(), schedule="TERM"), ValueError),
        (lambda: pidguard.terminate(os.getpid(), schedule="forever/TERM"), ValueError),
        (lambda: pidguard.cleanup_background_hooks(tmp_path, schedule="bogus"), ValueError),
        (lambda: pidguard.cleanup_background_hooks(tmp_path, pattern="a/b"), ValueError),
        (lambda: pidguard.cleanup_background_hooks(tmp_path, pattern=""), ValueError),
        (lambda: pidguard.cleanup_background_hooks(tmp_path, finalize=5), TypeError),
        (lambda: pidguard.cleanup_background_hooks(tmp_path, 5), TypeError),
        (lambda: pidguard.cleanup_background_hooks(tmp_path, tolerance=-1), ValueError),
        (lambda: pidguard.lookup(Index()), TypeError),
    ]:
        with pytest.raises(exc):
            call()
    assert not p.exists() and not (tmp_path / "x.sh").exists()
    # A tolerance out of range is a failure like any other for the checks (False, never
    # an exception; core decides), and bad input for cleanup (core refuses it).
    assert pidguard.validate_pid_file(p, None, -1.0) is False
    assert pidguard.validate_pid_file(p, None, float("nan")) is False
    assert pidguard.check_pid_file(p, tolerance=float("inf")).valid is False


def test_no_system_error_or_panic_text_reaches_python(tmp_path, monkeypatch):
    """Odd inputs of every kind: only TypeError, ValueError or a PidguardError, never a
    SystemError, pyo3's PanicException or a message with Rust panic text."""
    # A relative bytes path (b"\xff\xfe") is a valid file name: write it here, not in the tree.
    monkeypatch.chdir(tmp_path)

    class BadPath:
        def __fspath__(self):
            raise RuntimeError("fspath failed")

    class NotPath:
        def __fspath__(self):
            return 5

    weird = [None, True, -1, 2**100, 1.5, float("nan"), "", "\0", b"\xff\xfe", [], {}, object(), NotPath()]
    funcs = [
        lambda a: pidguard.write_pid_file_with_mtime(tmp_path / "w.pid", a, a),
        lambda a: pidguard.write_pid_file_with_mtime(a, 1, 1.0),
        lambda a: pidguard.validate_pid_file(a, a, a),
        lambda a: pidguard.check_pid_file(tmp_path / "c.pid", a),
        lambda a: pidguard.write_cmd_file(a, a),
        lambda a: pidguard.lookup(a),
        lambda a: pidguard.start_token(a),
        lambda a: pidguard.terminate(a, a, policy=a, schedule=a),
        lambda a: pidguard.cleanup_background_hooks(a, a, a, schedule=a, pattern=a, tolerance=a, finalize=a),
    ]
    for f in funcs:
        for a in weird:
            try:
                f(a)
            except (TypeError, ValueError, pidguard.PidguardError) as e:
                text = str(e)
                assert "panicked" not in text and "RUST_BACKTRACE" not in text, text
            except BaseException as e:  # noqa: B036 - anything else is the failure this test is about
                pytest.fail(f"{type(e).__name__}: {e}")
    with pytest.raises(RuntimeError, match="fspath failed"):  # the caller's own exception, unchanged
        pidguard.validate_pid_file(BadPath())
