"""pidguard: track and stop processes by pid, safe against pid reuse.

A pid is a number the kernel hands out again. pidguard identifies a process by the pair
(pid, start token) and signals only through a pidfd pinned *before* the identity is
re-checked, so a signal never reaches a process that reused the number.

The abx-dl functions keep their original call shapes, so ``from pidguard import …`` can
replace them::

    write_pid_file_with_mtime(pid_file, pid, start_time)
    validate_pid_file(pid_file, cmd_file_or_argv=None, tolerance=5.0) -> bool
    cleanup_background_hooks(output_dir, index_path=None, is_tty=False, *, schedule=…,
                             pattern="on_*.pid", tolerance=5.0, finalize=None) -> list[HookReport]

plus :func:`write_cmd_file`, :func:`check_pid_file`, :func:`lookup`, :func:`start_token` and
:func:`terminate`, :func:`spawn` (start a command inside a scope — a cgroup v2 leaf or a
subreaper supervisor — that :func:`stop_pid_file` stops whole; the caller reaps its child), :class:`ProcessRef` (a pinned handle: signals, waits, ``fileno()`` for
selectors, ``await wait_async()``), the drop-in for abx-dl's ``process_utils`` in
:mod:`pidguard.abx_dl`, and the guard-pidfile API in :mod:`pidguard.guard` (one JSON record per
file; ``with pidguard.guard.acquire(path, **fields) as entry:`` for a single instance). Paths may be ``str``, ``bytes`` or ``os.PathLike``; times are float seconds.
Every error is a :class:`PidguardError` (an ``OSError``); see :mod:`pidguard.errors`. Calls that
wait (``terminate``, ``cleanup_background_hooks``) release the GIL.
"""

import sys as _sys

if not _sys.platform.startswith("linux"):
    # Before the native module is loaded: on a system it was never built for, a clear refusal
    # that says why, instead of a loader error (or worse) from a foreign binary. An ImportError,
    # so `except ImportError` keeps working for an optional dependency; made here, not declared,
    # since it exists only where the module does not.
    raise type("UnsupportedPlatformError", (ImportError,), {"__module__": "pidguard"})(
        f"pidguard: unsupported platform {_sys.platform!r}: pidguard is run-tested on Linux only; "
        "macOS and FreeBSD are compile-checked only and no package is built for them. "
        "See docs/platforms.md in pidguard's source for what works where."
    )

from ._pidguard import (
    DEFAULT_SCHEDULE,
    DEFAULT_TOLERANCE,
    TOKEN_XATTR,
    HookReport,
    Judgement,
    PidFileCheck,
    Probe,
    ProcessInfo,
    Spawned,
    StopReport,
    TerminateReport,
    __version__,
    check_pid_file,
    cleanup_background_hooks,
    is_process_alive,
    judge,
    lookup,
    probe_pid_file,
    spawn,
    start_token,
    stop_pid_file,
    terminate,
    validate_pid_file,
    write_cmd_file,
    write_pid_file_with_mtime,
)
from .errors import (
    AlreadyExistsError,
    HeldError,
    InvalidArgumentError,
    IoError,
    MalformedError,
    NoSuchProcessError,
    NotFoundError,
    PanicError,
    PermissionDeniedError,
    PidguardError,
    RefusedError,
    SupersededError,
    TimedOutError,
    UnsupportedError,
    UntrustedError,
    SymlinkError,
    IsDirectoryError,
    NotRegularFileError,
    HardLinkedError,
    InsecureModeError,
    TooLargeError,
    InvalidJsonError,
    BadPidError,
    BadTokenError,
)
from ._process import ProcessRef
from . import guard

__all__ = [
    "__version__",
    "DEFAULT_SCHEDULE",
    "DEFAULT_TOLERANCE",
    "TOKEN_XATTR",
    # the abx-dl functions
    "write_pid_file_with_mtime",
    "validate_pid_file",
    "cleanup_background_hooks",
    "write_cmd_file",
    "check_pid_file",
    "stop_pid_file",
    "probe_pid_file",
    # starting a command in a scope
    "spawn",
    # identity and signalling
    "lookup",
    "is_process_alive",
    "start_token",
    "judge",
    "terminate",
    "ProcessRef",
    # guard pidfiles (pidguard.guard)
    "guard",
    # result types
    "HookReport",
    "Judgement",
    "PidFileCheck",
    "Probe",
    "ProcessInfo",
    "Spawned",
    "StopReport",
    "TerminateReport",
    # errors
    "PidguardError",
    "InvalidArgumentError",
    "NotFoundError",
    "AlreadyExistsError",
    "MalformedError",
    "UntrustedError",
    "NoSuchProcessError",
    "PermissionDeniedError",
    "TimedOutError",
    "HeldError",
    "SupersededError",
    "UnsupportedError",
    "RefusedError",
    "IoError",
    "PanicError",
    "SymlinkError",
    "IsDirectoryError",
    "NotRegularFileError",
    "HardLinkedError",
    "InsecureModeError",
    "TooLargeError",
    "InvalidJsonError",
    "BadPidError",
    "BadTokenError",
]
