"""Guard pidfiles: one JSON record per file, exactly one winner, removal by content.

A guard pidfile says "this process holds this name": a single-instance daemon, a watcher
serving one session. The file holds one :class:`Entry` — the holder's ``pid``, its
``start_token`` and the caller's own string ``fields`` — as one JSON line (:func:`encode`)::

    {"pid":4242,"start_token":"linux1:…","session":"s1"}

- :func:`create` writes it so that it appears fully written or not at all, and exactly one of
  any number of racing creators wins (the others get :class:`~pidguard.AlreadyExistsError`, a
  ``FileExistsError``). Mode 0600, parent directory 0700, whatever the umask.
- :func:`read` refuses, each with its own exception class, a symlink, a directory, a FIFO (at
  once), a second hard link, group or world bits, more than 4096 bytes
  (:class:`~pidguard.UntrustedError` subclasses), and bad JSON, a bad pid or token
  (:class:`~pidguard.MalformedError` subclasses, ``ValueError`` s). A refusal never reads as
  "the holder is dead".
- :func:`remove` unlinks only a file whose bytes are exactly ``encode(entry)`` (False
  otherwise); :func:`replace` retires a record by content and raises
  :class:`~pidguard.SupersededError` when someone else replaced it first.
- :func:`check` judges the holder: a :class:`Verdict` with ``found``, ``entry`` and
  ``identity`` (``'match'``, ``'mismatch'``, ``'unverifiable'`` or ``'gone'``).
- :func:`acquire` is the single-instance helper::

      with pidguard.guard.acquire("/run/myapp/watcher.json", session="s1") as entry:
          ...   # we hold the name; leaving the block removes our record, and only ours

  It creates the record, or replaces a holder proven stale (``'gone'``, ``'mismatch'``); a
  holder that is ``'match'`` or ``'unverifiable'`` raises :class:`~pidguard.HeldError` (a
  ``FileExistsError``) whose ``entry`` and ``verdict`` say who and why, unless
  ``takeover=True``.

A record on a persistent volume written by an earlier container (another PID namespace, same
boot) is ``'unverifiable'``: nothing visible proves that namespace dead, so it is reported as
held. Put guard pidfiles on ``/run``, which a restart empties. Paths may be ``str``, ``bytes``
or ``os.PathLike``; every call that touches the file system releases the GIL.
"""

from ._pidguard import GUARD_MAX_BYTES as MAX_BYTES
from ._pidguard import Entry, Guard, Verdict
from ._pidguard import guard_acquire as acquire
from ._pidguard import guard_check as check
from ._pidguard import guard_create as create
from ._pidguard import guard_decode as decode
from ._pidguard import guard_encode as encode
from ._pidguard import guard_read as read
from ._pidguard import guard_remove as remove
from ._pidguard import guard_replace as replace
from ._pidguard import token_sha256

__all__ = [
    "MAX_BYTES",
    "Entry",
    "Verdict",
    "Guard",
    "encode",
    "decode",
    "create",
    "read",
    "remove",
    "replace",
    "check",
    "acquire",
    "token_sha256",
]
