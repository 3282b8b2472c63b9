"""The exception hierarchy of pidguard.

Every error pidguard raises is a :class:`PidguardError`, itself an :class:`OSError`, with one
subclass per error kind of the core library (``pidguard::ErrorKind``). Each class carries the
kind's stable ``kind`` slug and ``code`` (the C status is ``-code``); each instance has
``errno`` (where the failure has one, else None), ``strerror`` (the message), ``filename``
and ``path`` (the path it is about, or None), ``pid`` (the pid it is about, or None), for
:class:`RefusedError` ``refusal`` (why signalling was refused, e.g. ``"own-group"``) and, for
:class:`HeldError`, ``entry`` and ``verdict`` (who holds the guard pidfile, and why it was not
taken over).

Where a kind has a natural builtin twin the class also derives from it, so the usual
``except`` clauses work::

    AlreadyExistsError  -> FileExistsError        NotFoundError       -> FileNotFoundError
    NoSuchProcessError  -> ProcessLookupError     PermissionDeniedError -> PermissionError
    TimedOutError       -> TimeoutError           HeldError           -> FileExistsError
    InvalidArgumentError, MalformedError -> ValueError

Bad argument *types* raise plain :class:`TypeError`, and plain out-of-range values (a negative
pid, a NaN time) plain :class:`ValueError`, before any system call.

The list of kinds comes from the native module (``_pidguard.ERROR_KINDS``); a kind added to
core later and not yet declared here still gets a class at import (and the parity test fails
until it is declared).
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple, Type

from . import _pidguard

__all__ = [
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


class PidguardError(OSError):
    """Base class of every pidguard error (an :class:`OSError`)."""

    #: The stable slug of the error kind (``"no-such-process"``); None on the base class.
    kind: Optional[str] = None
    #: The stable code of the error kind (the C status is ``-code``); 0 on the base class.
    code: int = 0
    #: The path the error is about, if any (also in ``filename``).
    path: Optional[str] = None
    #: The pid the error is about, if any.
    pid: Optional[int] = None
    #: Why signalling was refused, for :class:`RefusedError` (``"mismatch"``, ``"init"``, …).
    refusal: Optional[str] = None

    def __str__(self) -> str:
        # OSError prints "[Errno None] None: 'path'" for an error without errno once
        # ``filename`` is set, which drops the message; the message already names the path.
        if self.errno is None and self.strerror is not None:
            return str(self.strerror)
        return super().__str__()


class InvalidArgumentError(PidguardError, ValueError):
    """An argument is out of its documented range: a pid above pid_max, a malformed schedule
    or start token (EINVAL)."""

    kind = "invalid-argument"
    code = 1


class NotFoundError(PidguardError, FileNotFoundError):
    """A file or directory that must exist does not (ENOENT)."""

    kind = "not-found"
    code = 2


class AlreadyExistsError(PidguardError, FileExistsError):
    """A file that must not exist does (EEXIST)."""

    kind = "already-exists"
    code = 3


class MalformedError(PidguardError, ValueError):
    """A file's content is not what its format allows."""

    kind = "malformed"
    code = 4


class UntrustedError(PidguardError):
    """A file was refused before its content was trusted: a symlink, FIFO, directory, hard
    link, insecure mode or owner, or too large."""

    kind = "untrusted"
    code = 5


class NoSuchProcessError(PidguardError, ProcessLookupError):
    """No process has this pid, or it is a zombie (ESRCH)."""

    kind = "no-such-process"
    code = 6


class PermissionDeniedError(PidguardError, PermissionError):
    """The kernel refused the operation (EPERM/EACCES)."""

    kind = "permission-denied"
    code = 7


class TimedOutError(PidguardError, TimeoutError):
    """A wait ran past its deadline (ETIMEDOUT)."""

    kind = "timed-out"
    code = 8


class HeldError(PidguardError, FileExistsError):
    """A guard pidfile is held by a process that is not proven stale (its identity is
    ``'match'`` or ``'unverifiable'``): raised by :func:`pidguard.guard.acquire`.

    ``entry`` is the holder's :class:`pidguard.guard.Entry` and ``verdict`` the
    :class:`pidguard.guard.Verdict` that kept it from being taken over (``verdict.identity``,
    ``verdict.reason``); ``pid`` is the holder's pid. ``errno`` is ``EEXIST``.
    """

    kind = "held"
    code = 9
    #: The holder's record.
    entry: Optional[_pidguard.Entry] = None
    #: The verdict on the holder.
    verdict: Optional[_pidguard.Verdict] = None


class SupersededError(PidguardError):
    """A guard replace found that the file no longer holds the record it meant to retire."""

    kind = "superseded"
    code = 10


class UnsupportedError(PidguardError):
    """The kernel or file system lacks a needed feature (ENOSYS, EOPNOTSUPP)."""

    kind = "unsupported"
    code = 11


class RefusedError(PidguardError):
    """Signalling was refused by a safety rule or the policy; ``refusal`` says which."""

    kind = "refused"
    code = 12


class IoError(PidguardError):
    """Any other operating-system error; ``errno`` says which."""

    kind = "io"
    code = 13


class PanicError(PidguardError):
    """An internal error in pidguard was caught (a bug: please report it)."""

    kind = "panic"
    code = 14


# Kinds that name one rule of the guard-pidfile read contract. Each derives from its family
# (``UntrustedError`` or ``MalformedError``, as ``ErrorKind::family`` says in core), so a handler
# of the family also catches it.


class SymlinkError(UntrustedError):
    """The path is a symlink; it is never followed."""

    kind = "symlink"
    code = 15


class IsDirectoryError(UntrustedError, IsADirectoryError):
    """The path is a directory."""

    kind = "is-directory"
    code = 16


class NotRegularFileError(UntrustedError):
    """The path is a FIFO, socket or device, not a regular file."""

    kind = "not-regular-file"
    code = 17


class HardLinkedError(UntrustedError):
    """The file has more than one hard link."""

    kind = "hard-linked"
    code = 18


class InsecureModeError(UntrustedError):
    """The file is group- or world-accessible."""

    kind = "insecure-mode"
    code = 19


class TooLargeError(UntrustedError):
    """The file is larger than its format allows (4096 bytes for a guard pidfile)."""

    kind = "too-large"
    code = 20


class InvalidJsonError(MalformedError):
    """The file is not one JSON object of the guard format."""

    kind = "invalid-json"
    code = 21


class BadPidError(MalformedError):
    """The record's pid is missing, not an integer, or not positive."""

    kind = "bad-pid"
    code = 22


class BadTokenError(MalformedError):
    """The record's start token is missing, empty, or not a pidguard token."""

    kind = "bad-token"
    code = 23


def _camel(slug: str) -> str:
    return "".join(part.capitalize() for part in slug.split("-")) + "Error"


#: The classes declared above, by code.
def _all_subclasses(cls: Type[PidguardError]) -> "list[Type[PidguardError]]":
    out = []
    for sub in cls.__subclasses__():
        out.append(sub)
        out.extend(_all_subclasses(sub))
    return out


_DECLARED: Dict[int, Type[PidguardError]] = {
    cls.code: cls for cls in _all_subclasses(PidguardError) if cls.kind is not None
}

#: Every kind of the native library, by code, with a class for each (created for a kind not
#: declared above, so that no error is ever raised as the bare base class).
BY_CODE: Dict[int, Type[PidguardError]] = {}
for _code, _slug, _errno in _pidguard.ERROR_KINDS:
    _cls = _DECLARED.get(_code)
    if _cls is None or _cls.kind != _slug:
        _cls = type(_camel(_slug), (PidguardError,), {"kind": _slug, "code": _code, "__module__": __name__})
    BY_CODE[_code] = _cls
del _code, _slug, _errno, _cls


def _from_native(
    code: int,
    slug: str,
    errno: Optional[int],
    message: str,
    path: Optional[object],
    pid: Optional[int],
    refusal: Optional[str],
    holder: Optional[_pidguard.Verdict] = None,
) -> PidguardError:
    """Build the exception for a core error (called by the native module). ``holder`` is the
    verdict on the holder of a guard pidfile, for :class:`HeldError`."""
    cls = BY_CODE.get(code, PidguardError)
    # Always (errno, message), so ``strerror`` is the message even without an errno.
    exc = cls(errno, message)
    if path is not None:
        exc.path = str(path)
        exc.filename = str(path)
    exc.pid = pid
    exc.refusal = refusal
    if holder is not None and isinstance(exc, HeldError):
        exc.verdict = holder
        exc.entry = holder.entry
    if cls is PidguardError:
        exc.kind, exc.code = slug, code
    return exc

