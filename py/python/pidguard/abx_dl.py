"""A drop-in for abx-dl's ``abx_dl.process_utils``, safe against pid reuse.

abx-dl (checked against its release 1.13.273) keeps its hooks' pidfiles, validates them and
stops hooks through ``abx_dl.process_utils``. This module has the same public names with the
same call shapes, so the whole migration is one line, before abx-dl is imported::

    import sys, pidguard.abx_dl
    sys.modules["abx_dl.process_utils"] = pidguard.abx_dl

(or ``from pidguard.abx_dl import …`` where ``from abx_dl.process_utils import …`` was). It
also has the names older releases import (``write_cmd_file``, ``safe_kill_process``,
``cleanup_background_hooks``) and the private ``_send_signal`` that abx-dl's process service
imports.

Same as the original:

- ``validate_pid_file(pid_file, expected_argv, tolerance=5.0)``: the pidfile holds the pid, its
  mtime the start time; a token-less record is valid when ``|mtime - create_time| <=
  tolerance`` and the argv rules of the current release pass (realpaths of absolute paths, the
  kernel's shebang rewrite ``node /abs/hook.js``, ``python*``/``node*`` names folded,
  ``--remote-debugging-port`` kept). Every failure is False, never an exception: an empty
  ``expected_argv`` skips the argv rules; ``tolerance=None`` is False; whitespace around the pid
  is what ``str.strip()`` removes. There is no rule about the words ``chrome``/``chromium``.
- ``graceful_kill_process`` and ``graceful_kill_by_pid_file`` send SIGTERM to the hook's process
  group (the hook alone when it does not lead one), wait up to ``grace_period`` seconds, then
  send SIGKILL; ``graceful_kill_by_pid_file`` removes a stale pidfile and returns whether it
  signalled the hook.
- ``write_cmd_file`` writes ``#!/bin/bash`` and ``shlex.join(cmd)`` (an argument with a line
  break is quoted, an empty argv gives the shebang line alone), mode 0755.

Different, on purpose:

1. **A token decides.** ``write_pid_file_with_mtime`` also stores the child's start token in
   the ``user.pidguard.token`` extended attribute; a record with a token is valid exactly when
   the live process has that token. A pid reused within the tolerance (a retry of the same hook
   that got the same pid: same argv, start times seconds apart) is not valid, so it is never
   signalled; a live hook whose argv changed (``exec``, a wrapper) stays valid. Records without
   a token (written by the original) get the original's mtime and argv rules.
2. **Pinned signals.** Every signal goes through a pidfd opened *before* the identity is
   checked again (``pidguard.ProcessRef``), never ``kill``/``killpg`` on a number: a hook that
   exits and is reaped between the check and the signal cannot be replaced by a stranger. The
   original's ``killpg(pid)`` on a hook that does not lead its group signals whatever group has
   that number; here such a hook is signalled alone. Pid <= 0, pid 1, the caller and its own
   group are never signalled (the original's ``is_process_alive(0)`` is True: ``kill(0, 0)``
   probes the caller's own group; here it is False).
3. **The whole group, after the leader.** The original returns as soon as the leader exits,
   leaving children that outlive it (a browser whose launcher exited on SIGTERM) running for
   ever. Here the group counts as stopped only when no live member is left: members still there
   when ``grace_period`` ends get SIGKILL, through the pidfd, which reaches the group after the
   leader has been reaped.
4. **No polling, nothing blocking the event loop.** The whole schedule — SIGTERM, the wait on
   the pidfds of the hook and its group (or its scope), SIGKILL for what is left when
   ``grace_period`` ends, a last wait of 2 s — is core's ``terminate``, run in a worker thread
   (``graceful_kill_by_pid_file`` of the original polls ``is_process_alive`` after 0.2, 0.3,
   0.45, 0.675, then every 1 s, and sleeps 0.5 s after SIGKILL). Nothing here sends a signal by
   hand.
9. **Never raises for a record's state.** What the record or the process allows is core's
   decision; when it allows nothing (stale, unverifiable, foreign, refused by the owner rule —
   a user's record whose group holds another user's process —, EPERM), these functions return
   False and say why in the ``pidguard.abx_dl`` log, as abx-dl's own return False.
5. **A pidfile is removed only on proof** that its process is gone or another one
   (``gone``, ``zombie``, ``mismatch``, ``mtime-skew``, ``cmd-mismatch``) or that it is not a
   pidfile (``malformed``). A record whose live identity could not be read (``unverifiable``:
   EPERM, EMFILE, a ``hidepid`` /proc), another machine's or PID namespace's (``foreign``), or
   an unreadable one is kept, and nothing is signalled. The judging, the removal and every
   refusal are core's (``pidguard.ProcessRef.for_pid_file``, core's ``pin_pid_file``): the
   directory is opened once, the record read from it, its owner and mode taken from that
   descriptor, and a stale record removed by content through that directory's descriptor —
   never by a second lookup of the path. A pidfile owned by another user aims only at that
   user's processes (each group member checked right before its own signal); a world-writable
   one — or, when running as root, a group-writable one — at none (kept, nothing signalled).
6. **Safer files.** ``write_pid_file_with_mtime`` writes through a temporary file and
   ``rename`` (no reader sees an empty file or a wrong mtime), refuses a symlink, FIFO or
   directory at the path, and raises ``ValueError`` for a pid outside 1 to 4194304 or a
   non-finite start time before writing anything. Paths may be ``str``, ``bytes`` or
   ``os.PathLike``; pidfile content must be one decimal pid (no sign, no underscore, no
   non-ASCII digit, which ``int()`` would accept).
7. ``is_process_alive(pid)``: a zombie is not alive (the original's ``kill(pid, 0)`` says it
   is); EPERM, or a /proc that cannot be read, means alive.
8. ``graceful_kill_process`` on a process that asyncio has already reaped (its ``returncode``
   is set) sends nothing: the pid may name another process by then (the original sends
   ``killpg(pid)`` anyway). A leader that has exited but is not yet reaped when the call is
   made is pinned as the caller's child (``ProcessRef.for_child``), and its leftover group
   members are stopped, as the original's ``killpg`` stops them.

The pin is exact while asyncio reaps children on the event loop's thread (its
``PidfdChildWatcher``, the default of Python 3.12 on Linux >= 5.3): between ``returncode is
None`` and the pidfd's opening nothing can reap the child. With a thread-based child watcher a
reap (and reuse) in that instant remains possible, as in the original.
"""

import asyncio
import logging as _logging
import math as _math
import os
import signal
from typing import Any as _Any, Optional as _Optional, Union as _Union

from . import _pidguard
from ._process import ProcessRef as _ProcessRef
from .errors import PidguardError as _PidguardError

__all__ = [
    "GRACEFUL_SHUTDOWN_TIMEOUT",
    "validate_pid_file",
    "write_pid_file_with_mtime",
    "is_process_alive",
    "graceful_kill_process",
    "graceful_kill_by_pid_file",
    # imported by older releases
    "write_cmd_file",
    "safe_kill_process",
    "cleanup_background_hooks",
]

# Grace period before escalating from SIGTERM to SIGKILL, seconds (abx-dl's value: Chrome needs
# up to 15 s to flush its user_data_dir).
GRACEFUL_SHUTDOWN_TIMEOUT = 15.0

# How long the SIGKILL step waits for the hook, seconds (the original's value).
_KILL_WAIT = 2.0
_log = _logging.getLogger("pidguard.abx_dl")

_Path = _Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]

write_cmd_file = _pidguard.write_cmd_file
cleanup_background_hooks = _pidguard.cleanup_background_hooks


def validate_pid_file(pid_file: _Path, expected_argv: _Any = None, tolerance: _Any = 5.0) -> bool:
    """True when ``pid_file`` names a live process that is still the one it recorded.

    ``expected_argv``: the hook's argv as a list of str (abx-dl's current release), or the path
    of its ``.sh`` file (older releases), or None/``[]`` (no argv rules). ``tolerance``: seconds
    between the file's mtime and the process's create time, for records without a start token.
    Every failure is False, never an exception (a non-str argv item, a path with a NUL,
    ``tolerance=None`` included), as in the original. See the module doc for the rules.
    """
    if tolerance is None:
        # A translation of abx-dl's call shape, not a rule of pidguard: abx-dl's comparison with
        # None raises inside its ``try``, so its answer is False for every file (pidguard's own
        # ``validate_pid_file`` takes None as the default tolerance).
        return False
    try:
        return bool(_pidguard.validate_pid_file(pid_file, expected_argv, tolerance))
    except (TypeError, ValueError):
        return False


def write_pid_file_with_mtime(pid_file: _Path, pid: int, start_time: float) -> None:
    """Write ``pid`` to ``pid_file`` with mtime and atime ``start_time`` (seconds since the
    epoch), plus the child's start token in the ``user.pidguard.token`` xattr, atomically.

    Raises TypeError/ValueError (pid outside 1 to 4194304, non-finite start time) before writing;
    UntrustedError (an OSError) for a symlink, FIFO or directory at the path; other OSErrors from
    the file system. abx-dl catches ``(OSError, ValueError)`` around it.
    """
    _pidguard.write_pid_file_with_mtime(pid_file, pid, start_time)


def is_process_alive(pid: int) -> bool:
    """Whether a process with this pid exists and has not exited (core's
    ``is_process_alive``): a zombie is not alive; a process of another user is (EPERM), and so
    is one whose /proc entry cannot be read (a failed read is not proof of death). Pid <= 0 is
    False (it names no single process).

    Raises TypeError when ``pid`` is not an int.
    """
    return _pidguard.is_process_alive(pid)


def _send_signal(pid: int, sig: int) -> bool:
    """Signal ``pid``'s process group when it leads one, else the process alone, through a pidfd
    opened first (abx-dl's process service imports this private helper). True when sent; False
    when there is no such process, it is a protected target (pid 1, the caller, its group) or
    the kernel refused (EPERM)."""
    try:
        with _ProcessRef(pid, policy="lenient") as ref:
            return ref.signal_group(sig) if ref.leads_group else ref.signal(sig)
    except (_PidguardError, ValueError, TypeError):
        return False


def _seconds(grace_period: _Any) -> float:
    g = float(grace_period)
    if _math.isnan(g) or g < 0:
        return 0.0
    return min(g, 86_400.0)


async def _stop(ref: _ProcessRef, grace_period: float) -> bool:
    """Stop the pinned hook with its group (or its whole scope, when it has one): core's
    ``terminate`` with the schedule ``TERM/<grace_period>/KILL/2``, in a worker thread. True when
    SIGTERM was sent; False — logged, never raised — when nothing could be done as asked (it was
    already gone, a rule refused it, the kernel said EPERM). Closes ``ref``."""
    schedule = f"TERM/{grace_period:.3f}/KILL/{_KILL_WAIT:g}"
    try:
        try:
            report = await asyncio.to_thread(ref.terminate, schedule)
        except _PidguardError as e:
            _log.warning("pid %s not stopped: %s", ref.pid, _pidguard.printable(e))
            return False
        return bool(report.signals)
    finally:
        ref.close()


async def graceful_kill_process(
    process: "asyncio.subprocess.Process",
    *,
    grace_period: float = GRACEFUL_SHUTDOWN_TIMEOUT,
) -> None:
    """SIGTERM → wait → SIGKILL a live asyncio subprocess and its process group.

    The child is pinned with a pidfd before the first signal (while asyncio has not reaped it,
    the pid is provably still the child's). The wait is on the pidfd's readiness, then on the
    group's remaining members; whatever is left after ``grace_period`` seconds gets SIGKILL,
    and the call then waits up to 2 s more. Returns once the hook is gone (or after that wait),
    with ``process.returncode`` set as the original leaves it. A process already reaped, or not
    there any more, is left alone.
    """
    pid = process.pid
    if pid is None or process.returncode is not None:
        return
    try:
        # Our own unreaped child: pinned without a token, even when it has exited already (a
        # zombie), so the rest of its group is still reached.
        ref = _ProcessRef.for_child(pid)
    except (_PidguardError, ValueError):
        return  # reaped meanwhile, not our child, or a protected target
    if not await _stop(ref, _seconds(grace_period)):
        return
    try:
        await asyncio.wait_for(process.wait(), timeout=_KILL_WAIT)
    except asyncio.TimeoutError:
        pass


def _judge(pid_file: _Path, expected_argv: _Any) -> _Optional[_ProcessRef]:
    """Core's ``pin_pid_file``: the record judged through its directory's descriptor, retired
    there when proven stale, refused by core's owner rule; the pinned process when it may be
    signalled, else None (every error included, as the original's failures are False)."""
    try:
        ref, report = _ProcessRef.for_pid_file(pid_file, expected_argv)
    except (_PidguardError, TypeError, ValueError) as e:
        _log.warning("%s: not signalled: %s", _pidguard.printable_path(pid_file), _pidguard.printable(e))
        return None
    if ref is None and report is not None and report.outcome != "stale":
        _log.warning("%s: not signalled: %s", _pidguard.printable_path(pid_file), _pidguard.printable(report.detail or report.outcome))
    return ref


async def graceful_kill_by_pid_file(
    pid_file: _Path,
    expected_argv: _Any,
    *,
    grace_period: float = GRACEFUL_SHUTDOWN_TIMEOUT,
) -> bool:
    """Judge a pidfile, then SIGTERM → wait → SIGKILL the hook it names and its group.

    ``expected_argv``: the hook's argv (list of str) or its ``.sh`` path. A record proven stale
    is removed and nothing is signalled; one that cannot be judged (identity unreadable,
    foreign) is kept and nothing is signalled. Otherwise as :func:`graceful_kill_process`.
    Returns True when the hook was signalled, False otherwise. The pidfile itself is left to
    the caller, as in the original.
    """
    ref = _judge(pid_file, expected_argv)
    if ref is None:
        return False
    return await _stop(ref, _seconds(grace_period))


def safe_kill_process(pid_file: _Path, cmd_file: _Any = None, signal_num: int = signal.SIGTERM) -> bool:
    """Older releases' one-shot stop: judge the pidfile (removing it when proven stale), then
    send ``signal_num`` to the process alone through a pidfd. True when sent."""
    ref = _judge(pid_file, cmd_file)
    if ref is None:
        return False
    with ref:
        try:
            return ref.signal(signal_num)
        except (_PidguardError, ValueError) as e:
            _log.warning("pid %s not signalled: %s", ref.pid, _pidguard.printable(e))
            return False
