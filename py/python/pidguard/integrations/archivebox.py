"""ArchiveBox's process rows judged by start token, its kills through pidguard: wraps names of
the released ``archivebox.machine.models``, ``archivebox.crawls.models``,
``archivebox.core.models`` and ``archivebox.services.process_service`` at import time.

Turn it on with ``pidguard.integrations.archivebox.install()`` once Django is set up (or
``PIDGUARD_INTEGRATIONS=archivebox,abx_dl`` with the ``.pth`` file of
:mod:`pidguard.integrations`: installed when ``archivebox.machine.models`` is imported). Releases
known: ``SUPPORTED`` (0.9.73, the stable, to the 0.9.74 pre-releases). The abx-dl integration
(:mod:`pidguard.integrations.abx_dl`) is what puts ArchiveBox's hooks in scopes; this one is
about ArchiveBox's own rows.

A row keeps its process's start token in ``Process.env["_ARCHIVEBOX_START_TOKEN"]``, beside the
PID-namespace key ArchiveBox already keeps there (no schema change):

- ``Process.launch`` (wrapped): the token of the child it has just started, read right after it
  returns (the ``Popen`` is not collected yet, so the child is unreaped and the pid its own).
- ``ProcessService.on_ProcessStartedEvent__save_to_db`` and ``_save_completed_process_to_db``
  (wrapped, with ``normalize_process_env``): a hook's row gets the token the spawner recorded —
  the ``ScopedProcess`` of the abx-dl integration, else the hook's PID file — and keeps it when
  the hook completes (the released completion handler rebuilds the row's env from the event and
  dropped it).

With a token:

- ``Process.proc`` (wrapped property): the live process is the row's exactly when
  ``pidguard.judge(pid, token)`` says ``match`` (released: create time within 5 s and argv[0]'s
  name, which a same-binary process taking the pid within 5 s passes). What it returns is a
  psutil-like view whose ``terminate``/``kill``/``send_signal`` go through a pidfd opened for
  that token and whose ``wait`` waits on it; ``Process.terminate`` and ``Process.kill`` (released
  code) therefore never reach another process. Without a token the released checks decide, and
  the view signals through a pidfd opened for the token read when it was made.
- ``Process.kill_tree`` (replaced: its released body signals numbers with ``os.kill`` and polls
  ``kill(pid, 0)``): the same schedule — SIGTERM to the tree, wait ``graceful_timeout``, SIGKILL
  to what is left — on pidfds opened for the tokens read when the tree was listed, so a child that
  exits and whose pid is taken meanwhile is never signalled; the row's exit code and status as
  released (128 + SIGKILL when one was needed, else 128 + SIGTERM, or 0).
- ``Crawl.cleanup_runtime``, ``Snapshot.finalize_output_metadata``, ``Binary.cleanup``
  (wrapped): before the released code removes every ``**/*.pid``, each record is stopped through
  ``pidguard.stop_pid_file`` (a process its record proves alive is stopped with its scope or
  group; a stale record removed; one that cannot be judged kept by pidguard — the released code
  then removes it).
"""

import logging
import os
import signal
import sys
import threading
import time
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Dict, Optional

import pidguard
from pidguard._process import ProcessRef

from . import IntegrationRefused, _set_status, check_range, when_imported

__all__ = ["SUPPORTED", "SITES", "TOKEN_KEY", "install", "install_when_imported"]

DIST = "archivebox"
SUPPORTED = ((0, 9, 73), (0, 9, 75))
TOKEN_KEY = "_ARCHIVEBOX_START_TOKEN"
SITES = {
    "archivebox.machine.models": ["Process.proc", "Process.launch", "Process.kill_tree", "Process.terminate", "Binary.cleanup"],
    "archivebox.crawls.models": ["Crawl.cleanup_runtime"],
    "archivebox.core.models": ["Snapshot.finalize_output_metadata"],
    "archivebox.services.process_service": [
        "normalize_process_env",
        "ProcessService.on_ProcessStartedEvent__save_to_db",
        "ProcessService._save_completed_process_to_db",
    ],
}

_log = logging.getLogger("pidguard.integrations.archivebox")
_installed = False
_lock = threading.Lock()
# The token of the row being saved by a wrapped ProcessService handler (see normalize_process_env).
_row_token: ContextVar[Optional[str]] = ContextVar("_row_token", default=None)
# (pid, start_ts) -> token, as the started handler saw it, for the completion handler.
_tokens: Dict[Any, str] = {}


def _read_token(pid: int) -> Optional[str]:
    try:
        return pidguard.start_token(pid)
    except (pidguard.PidguardError, ValueError):
        return None


def _psutil_view(psutil: Any, inner: Any, token: Optional[str]) -> Any:
    """A psutil.Process whose signals go through a pidfd opened for ``token`` and whose
    ``wait`` waits on it; reads are psutil's."""

    class GuardedProcess:
        def __init__(self, p: Any, tok: Optional[str]) -> None:
            self._p, self._token = p, tok

        def __getattr__(self, name: str) -> Any:
            return getattr(self._p, name)

        @property
        def pid(self) -> int:
            return self._p.pid

        def _ref(self) -> ProcessRef:
            if self._token is None:
                raise psutil.AccessDenied(self._p.pid, msg="pidguard: no start token; not signalled")
            try:
                return ProcessRef(self._p.pid, self._token)
            except pidguard.NoSuchProcessError:
                raise psutil.NoSuchProcess(self._p.pid) from None
            except (pidguard.PidguardError, ValueError) as e:
                raise psutil.NoSuchProcess(self._p.pid, msg=f"pidguard: {e}") from None

        def send_signal(self, sig: int) -> None:
            with self._ref() as ref:
                try:
                    ref.signal(sig)
                except pidguard.NoSuchProcessError:
                    raise psutil.NoSuchProcess(self._p.pid) from None

        def terminate(self) -> None:
            self.send_signal(signal.SIGTERM)

        def kill(self) -> None:
            self.send_signal(signal.SIGKILL)

        def wait(self, timeout: Optional[float] = None) -> Optional[int]:
            try:
                ref = self._ref()
            except psutil.NoSuchProcess:
                return None
            with ref:
                if not ref.wait(timeout):
                    raise psutil.TimeoutExpired(timeout, pid=self._p.pid)
            return None

        def children(self, recursive: bool = False) -> list:
            return [GuardedProcess(c, _read_token(c.pid)) for c in self._p.children(recursive=recursive)]

    return GuardedProcess(inner, token)


def _stop_records(output_dir: Any) -> None:
    """pidguard.stop_pid_file on every ``**/*.pid`` below ``output_dir`` (errors logged)."""
    root = Path(output_dir)
    if not root.exists():
        return
    for pid_file in root.glob("**/*.pid"):
        try:
            pidguard.stop_pid_file(pid_file, schedule="TERM/5/KILL/2")
        except (pidguard.PidguardError, OSError, ValueError) as e:
            _log.warning("%s: not stopped: %s", pid_file, e)


def _get(modname: str, dotted: str) -> Any:
    obj: Any = sys.modules[modname]
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def _wrap_machine_models(m: Any) -> None:
    """archivebox.machine.models: its models' kill paths, and Binary.cleanup stops first."""
    _wrap_models(m)
    _stop_first(m.Binary, "cleanup")


def _parts() -> Dict[str, Any]:
    """module -> the function that wraps its names (each run once its module is imported)."""
    return {
        "archivebox.machine.models": _wrap_machine_models,
        "archivebox.crawls.models": lambda m: _stop_first(m.Crawl, "cleanup_runtime"),
        "archivebox.core.models": lambda m: _stop_first(m.Snapshot, "finalize_output_metadata"),
        "archivebox.services.process_service": _wrap_service,
    }


_done: Dict[str, str] = {}


def _install_part(modname: str, module: Any) -> None:
    """Wrap one module's names after checking every one of them exists (else nothing of that
    module is wrapped, and the refusal is recorded in ``status()``)."""
    with _lock:
        if modname in _done:
            return
        for dotted in SITES[modname]:
            try:
                _get(modname, dotted)
            except AttributeError:
                _done[modname] = "refused"
                why = f"{modname}.{dotted} is missing: this ArchiveBox release moved a name the integration wraps"
                _set_status("archivebox", f"refused: {why}")
                raise IntegrationRefused(why) from None
        _parts()[modname](module)
        _done[modname] = "installed"
        if all(_done.get(m) == "installed" for m in SITES):
            _set_status("archivebox", f"installed {_version}")


_version = ""


def install() -> str:
    """Wrap the names of ``SITES``, each module's once it is imported (those imported already:
    now; needs Django set up to import them here). Returns the ArchiveBox version. Idempotent.
    Raises IntegrationRefused when ArchiveBox is outside ``SUPPORTED`` or a name of an imported
    module is missing (nothing of that module changed)."""
    global _version, _installed
    import importlib

    try:
        _version = check_range(DIST, SUPPORTED)
    except IntegrationRefused as e:
        _set_status("archivebox", f"refused: {e}")
        raise
    for modname in SITES:
        _install_part(modname, importlib.import_module(modname))
    _installed = True
    return _version


def _stop_first(cls: Any, name: str) -> None:
    released = getattr(cls, name)

    def wrapped(self: Any, *a: Any, **kw: Any) -> Any:
        _stop_records(self.output_dir)
        return released(self, *a, **kw)

    wrapped.__name__, wrapped.__doc__, wrapped.__wrapped__ = name, released.__doc__, released  # type: ignore[attr-defined]
    setattr(cls, name, wrapped)


def _wrap_models(m: Any) -> None:
    Process, psutil = m.Process, m.psutil
    released_proc = Process.proc.fget
    released_launch = Process.launch

    def proc(self: Any) -> Any:
        token = (self.env or {}).get(TOKEN_KEY)
        if not token:
            inner = released_proc(self)
            return None if inner is None else _psutil_view(psutil, inner, _read_token(inner.pid))
        if not self.pid or not self.shares_pid_namespace:
            return None
        machine = m.Machine.current_readonly()
        if machine is None or self.machine_id != machine.id:
            return None
        try:
            if pidguard.judge(self.pid, token).verdict != "match":
                return None
            inner = psutil.Process(self.pid)
        except (pidguard.PidguardError, ValueError, psutil.Error):
            return None
        return _psutil_view(psutil, inner, token)

    proc.__doc__ = "The live process of this row (pidguard integration: judged by its start token when it has one). " + (released_proc.__doc__ or "")
    Process.proc = property(proc)

    def launch(self: Any, background: bool = False, cwd: Optional[str] = None) -> Any:
        result = released_launch(self, background=background, cwd=cwd)
        if self.pid:
            token = _read_token(self.pid)
            if token and (self.env or {}).get(TOKEN_KEY) != token:
                self.env = {**(self.env or {}), TOKEN_KEY: token}
                type(self).objects.filter(id=self.id).update(env=self.env)
        return result

    launch.__doc__, launch.__wrapped__ = released_launch.__doc__, released_launch  # type: ignore[attr-defined]
    Process.launch = launch

    def kill_tree(self: Any, graceful_timeout: float = 2.0) -> int:
        if not self.shares_pid_namespace:
            return 0
        root = self.proc
        if root is None:
            if self.status != self.StatusChoices.EXITED:
                self.status = self.StatusChoices.EXITED
                self.ended_at = self.ended_at or m.timezone.now()
                self.save()
            return 0
        try:
            members = [*root.children(recursive=True), root]
        except psutil.Error:
            members = [root]
        refs = []
        for p in members:
            try:
                refs.append(p._ref())
            except psutil.Error:
                pass  # gone since the listing, or its pid is another process's now
        try:
            for ref in refs:
                try:
                    ref.signal(signal.SIGTERM)
                except (pidguard.PidguardError, ValueError):
                    pass
            deadline = time.monotonic() + max(0.0, float(graceful_timeout))
            for ref in refs:
                ref.wait(max(0.0, deadline - time.monotonic()))
            stopped = sum(1 for ref in refs if ref.has_exited())
            used_kill = False
            for ref in refs:
                if not ref.has_exited():
                    try:
                        ref.signal(signal.SIGKILL)
                        stopped += 1
                        used_kill = True
                    except (pidguard.PidguardError, ValueError):
                        pass
        finally:
            for ref in refs:
                ref.close()
        if used_kill:
            self.exit_code = 128 + signal.SIGKILL
        else:
            self.exit_code = 128 + signal.SIGTERM if stopped > 0 else 0
        self.status = self.StatusChoices.EXITED
        self.ended_at = m.timezone.now()
        self.save()
        return stopped

    kill_tree.__doc__ = "Kill this process and its children through pidfds (pidguard integration). " + (Process.kill_tree.__doc__ or "")
    kill_tree.__wrapped__ = Process.kill_tree  # type: ignore[attr-defined]
    Process.kill_tree = kill_tree


def _spawner_token(event: Any) -> Optional[str]:
    """The token the hook's spawner recorded: the abx-dl integration's ScopedProcess, else the
    hook's PID file (its token xattr, core's check)."""
    token = getattr(getattr(event, "subprocess", None), "start_token", None)
    if token:
        return token
    pid_file = getattr(event, "pid_file", None)
    if pid_file is None:
        return None
    try:
        return pidguard.check_pid_file(pid_file).token
    except (pidguard.PidguardError, OSError, ValueError, AttributeError):
        return None


def _wrap_service(s: Any) -> None:
    released_normalize = s.normalize_process_env
    cls = s.ProcessService
    released_started = cls.on_ProcessStartedEvent__save_to_db
    released_completed = cls._save_completed_process_to_db

    def normalize_process_env(env: dict) -> dict:
        out = released_normalize(env)
        token = _row_token.get()
        if token:
            out = {**out, TOKEN_KEY: token}
        return out

    normalize_process_env.__wrapped__ = released_normalize  # type: ignore[attr-defined]
    s.normalize_process_env = normalize_process_env

    async def on_ProcessStartedEvent__save_to_db(self: Any, event: Any) -> None:
        token = _spawner_token(event)
        if token and event.pid:
            _tokens[(event.pid, event.start_ts)] = token
        reset = _row_token.set(token)
        try:
            return await released_started(self, event)
        finally:
            _row_token.reset(reset)

    async def _save_completed_process_to_db(self: Any, event: Any) -> None:
        reset = _row_token.set(_tokens.pop((event.pid, event.start_ts), None))
        try:
            return await released_completed(self, event)
        finally:
            _row_token.reset(reset)

    on_ProcessStartedEvent__save_to_db.__wrapped__ = released_started  # type: ignore[attr-defined]
    _save_completed_process_to_db.__wrapped__ = released_completed  # type: ignore[attr-defined]
    cls.on_ProcessStartedEvent__save_to_db = on_ProcessStartedEvent__save_to_db
    cls._save_completed_process_to_db = _save_completed_process_to_db


def install_when_imported() -> None:
    """Wrap each module's names right after it is imported (the ``.pth`` route: no Django set-up
    needed here). A refusal is said on stderr and leaves that module as released."""
    global _version
    try:
        _version = check_range(DIST, SUPPORTED)
    except IntegrationRefused as e:
        _set_status("archivebox", f"refused: {e}")
        sys.stderr.write(f"pidguard.integrations.archivebox: not installed: {e}\n")
        return
    _set_status("archivebox", "pending")

    def hook_for(modname: str) -> Any:
        def hook(module: object) -> None:
            try:
                _install_part(modname, module)
            except IntegrationRefused as e:
                sys.stderr.write(f"pidguard.integrations.archivebox: not installed: {e}\n")

        return hook

    for modname in SITES:
        when_imported(modname, hook_for(modname))
