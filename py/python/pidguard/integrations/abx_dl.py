"""abx-dl's hooks in pidguard scopes, its kills through pidguard: wraps names of the released
``abx_dl.process_utils`` and ``abx_dl.services.process_service`` at import time.

Turn it on with ``pidguard.integrations.abx_dl.install()`` (or ``PIDGUARD_INTEGRATIONS=abx_dl``
with the ``.pth`` file of :mod:`pidguard.integrations`). Releases known: ``SUPPORTED`` (abx-dl
1.13.127, pinned by ArchiveBox 0.9.73, to 1.13.423, the newest when this was written; the range
runs to the next minor release). Outside it, or when a wrapped name is missing or has another
shape, :func:`install` raises :class:`~pidguard.integrations.IntegrationRefused` and changes
nothing.

No function body of abx-dl is replaced: its own code keeps every decision of *when* to start,
wait, stop or kill a hook (timeouts, Ctrl+C, the memory guard's thresholds); the integration
replaces only the primitives those decisions call, by name, in the modules' globals (``SITES``):

- ``asyncio`` of ``process_service``: a view of the real module whose ``create_subprocess_exec``
  starts the hook with :func:`pidguard.spawn` — a scope no descendant can leave (a cgroup v2
  leaf, else a subreaper supervisor), its PID file written with the hook's start token and
  scope — and returns a :class:`ScopedProcess` (an ``asyncio.subprocess.Process``). The spawn
  runs on the event loop's thread, like the fork of ``create_subprocess_exec``, and does not
  yield: the record exists before the coroutine returns, so abx-dl's own write of the PID file
  and its registration of the hook (``_active_hooks``) follow in the same loop turn, as 1.13.423
  wants ("a worker thread could publish the PID before returning, letting Ctrl+C miss the
  still-unregistered child"). Every other ``asyncio.X`` is the real one.
- ``_permanently_drop_child_privileges(uid, gid)``: returns a :class:`DropTo` — still a callable
  doing exactly what abx-dl's ``preexec_fn`` did (the fallback below uses it) — that the spawn
  above turns into ``pidguard.spawn(user=uid, group=gid, extra_groups=[gid])``: the hook runs
  as that identity inside its scope, and the caller (real uid 0) can still stop it.
- ``write_pid_file_with_mtime``: a no-op for the record :func:`pidguard.spawn` has just written
  for that pid (same path); any other record is written by :mod:`pidguard.abx_dl`'s function
  (with a start token).
- ``validate_pid_file``, ``graceful_kill_by_pid_file``: :mod:`pidguard.abx_dl`'s (the token
  decides; signals through pidfds; a record with a scope reaches the whole scope).
- ``graceful_kill_process``: a :class:`ScopedProcess` is stopped whole, TERM/grace/KILL, through
  its record (core's ``pin_pid_file`` and ``terminate``); any other process by
  :mod:`pidguard.abx_dl`'s function.
- ``_send_signal(pid, sig)`` (the memory guard's and the third Ctrl+C's SIGKILL): for a hook of a
  :class:`ScopedProcess`, the signal goes to its whole scope through its record; any other pid
  through :mod:`pidguard.abx_dl`'s pinned ``_send_signal``.
- ``os`` of ``execution`` (``iter_plugin_command``'s ``os.killpg(proc.pid, ...)``, sent in its
  ``finally`` even after ``proc.poll()`` has reaped the child): ``killpg`` pins the number as the
  caller's unreaped child (``ProcessRef.for_child``) and signals the group it leads through its
  pidfd; a reaped child's number raises ``ProcessLookupError`` (which the released code catches)
  and nothing is sent.
- ``psutil`` of ``process_service``: a view of the real module whose ``Process(pid)`` reads the
  process's start token when it is made (as psutil reads its create time), and whose
  ``kill()``/``terminate()``/``send_signal()`` — and those of the ``children()`` it lists — go
  through a pidfd opened for that token (``pidguard.ProcessRef(pid, token)``): a pid reused since
  the listing is never signalled (``psutil.NoSuchProcess`` is raised, as for a gone process).
  Reads (``memory_info``, ``status``, ``is_running``...) are psutil's.

Without the integration (or refused) abx-dl runs as released. When ``pidguard.spawn`` cannot
start the hook as asked (a stdout that is not abx-dl's ``<stem>.stdout.log`` file, a keyword it
does not know, or a pidguard without ``user=`` when abx-dl drops privileges), the hook is started
by the real ``create_subprocess_exec`` and recorded with a token (the ``fallbacks`` counter and a
warning on the ``pidguard.integrations.abx_dl`` log say so).
"""

import asyncio as _asyncio
import logging
import os
import signal
import sys
import threading
import types
from pathlib import Path
from typing import Any, Dict, Optional

import pidguard
from pidguard import abx_dl as _drop_in
from pidguard._process import ProcessRef

from . import IntegrationRefused, _set_status, check_range, when_imported

__all__ = ["SUPPORTED", "SITES", "install", "install_when_imported", "ScopedProcess", "DropTo", "stats"]

DIST = "abx-dl"
# Releases this integration knows: >= low, < high.
SUPPORTED = ((1, 13, 127), (1, 14))
# module -> names wrapped there (each must exist when install() runs; 'optional' ones may not).
SITES = {
    "abx_dl.process_utils": ["write_pid_file_with_mtime", "validate_pid_file", "graceful_kill_process", "graceful_kill_by_pid_file", "_send_signal", "is_process_alive"],
    # iter_plugin_command: os.killpg(proc.pid, ...) in its finally, also after proc.poll() reaped it
    "abx_dl.execution": ["os", "iter_plugin_command"],
    "abx_dl.services.process_service": [
        "asyncio",
        "psutil",
        "_permanently_drop_child_privileges",
        "write_pid_file_with_mtime",
        "validate_pid_file",
        "graceful_kill_process",
        "graceful_kill_by_pid_file",
        "_send_signal",
    ],
}

_log = logging.getLogger("pidguard.integrations.abx_dl")
_installed = False
_lock = threading.Lock()
# pid -> the ScopedProcess that pidguard.spawn started (until it is reaped).
_scoped: Dict[int, "ScopedProcess"] = {}
stats = {"scoped": 0, "fallbacks": 0}
_SPAWN_HAS_USER = "user" in (getattr(pidguard.spawn, "__text_signature__", "") or "")


def _signame(sig: int) -> str:
    return signal.Signals(sig).name[3:]


def _stop_record(pid_file: Path, schedule: str) -> bool:
    """Core's ``pin_pid_file`` on the hook's record, then ``terminate(schedule)`` on what it
    pins: the hook and its whole scope (or, when the hook is gone, what is left in its scope).
    True when something was signalled; False when the record allows nothing (logged)."""
    try:
        ref, report = ProcessRef.for_pid_file(pid_file, None)
    except (pidguard.PidguardError, OSError, ValueError, TypeError) as e:
        _log.warning("%s: not signalled: %s", pid_file, e)
        return False
    if ref is None:
        if report is not None and report.outcome != "stale":
            _log.warning("%s: not signalled: %s", pid_file, report.detail or report.outcome)
        return False
    with ref:
        try:
            return bool(ref.terminate(schedule).signals)
        except (pidguard.PidguardError, ValueError) as e:
            _log.warning("%s: not signalled: %s", pid_file, e)
            return False


class ScopedProcess(_asyncio.subprocess.Process):
    """A hook started by :func:`pidguard.spawn`, as the ``asyncio.subprocess.Process`` that
    abx-dl keeps: ``pid`` (the hook's), ``returncode``, ``await wait()``, ``send_signal``,
    ``terminate``, ``kill``; no pipes (abx-dl gives hooks files). ``pid_file`` is its record,
    ``start_token`` the hook's start token as recorded there, ``scope`` its kind.

    ``wait()`` returns once the hook has exited and whatever it left in its scope has been
    stopped (TERM, 2 s, KILL, through its record: a daemon the hook started ends with it), and
    its child — the scope's supervisor when there is one, else the hook — has been reaped (on a
    pidfd through the event loop). ``returncode``: the hook's status as ``os.waitpid`` gives it
    through the supervisor (an exit code, or ``128 + signal`` for a hook killed by a signal under
    a supervisor; ``-signal`` in a cgroup leaf)."""

    def __init__(self, spawned: Any, pid_file: Path) -> None:  # no transport: not super().__init__
        self.pid = spawned.pid
        self.pid_file = Path(pid_file)
        self.scope = spawned.scope
        self.stdin = self.stdout = self.stderr = None
        self._child = spawned.supervisor_pid or spawned.pid
        self._returncode: Optional[int] = None
        self._done: "Optional[_asyncio.Future[int]]" = None
        # Pinned now, in the spawn's loop turn: the hook (by its recorded token) and our child.
        self._hook = ProcessRef.for_pid_file(self.pid_file, None)[0]
        # The token the spawner recorded (for ArchiveBox's rows), as the record holds it.
        self.start_token: Optional[str] = pidguard.check_pid_file(self.pid_file).token
        self._child_ref = ProcessRef.for_child(self._child)

    def __repr__(self) -> str:
        return f"<ScopedProcess {self.pid} scope={self.scope}>"

    @property
    def returncode(self) -> Optional[int]:  # type: ignore[override]
        return self._returncode

    async def _reap(self) -> int:
        if self._hook is not None:
            await self._hook.wait_async()
            self._hook.close()
        if self._child != self.pid or self.scope == "cgroup":
            # What the hook left in its scope ends with it.
            await _asyncio.to_thread(_stop_record, self.pid_file, "TERM/2/KILL/2")
        await self._child_ref.wait_async()
        self._child_ref.close()
        _, status = os.waitpid(self._child, 0)
        self._returncode = os.waitstatus_to_exitcode(status)
        _scoped.pop(self.pid, None)
        return self._returncode

    async def wait(self) -> int:  # type: ignore[override]
        if self._returncode is not None:
            return self._returncode
        if self._done is None:
            self._done = _asyncio.ensure_future(self._reap())
        return await _asyncio.shield(self._done)

    def send_signal(self, sig: int) -> None:  # type: ignore[override]
        """Send ``sig`` to the hook's whole scope through its record (nothing when the record
        allows nothing: reaped, stale)."""
        if self._returncode is None:
            _stop_record(self.pid_file, f"{_signame(sig)}/0")

    def terminate(self) -> None:  # type: ignore[override]
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:  # type: ignore[override]
        self.send_signal(signal.SIGKILL)

    async def communicate(self, input: Any = None) -> Any:  # type: ignore[override]
        raise NotImplementedError("a ScopedProcess has no pipes: abx-dl gives hooks log files")


class DropTo:
    """What ``_permanently_drop_child_privileges(uid, gid)`` returns under the integration: the
    identity, for :func:`pidguard.spawn`'s ``user=``/``group=``/``extra_groups=``; called (as a
    ``preexec_fn`` of the fallback spawn) it runs abx-dl's own function."""

    def __init__(self, released: Any, uid: int, gid: int) -> None:
        self.uid, self.gid = uid, gid
        self._fn = released(uid, gid)

    def __call__(self) -> None:
        self._fn()


def _wrap_drop(released: Any) -> Any:
    def _permanently_drop_child_privileges(uid: int, gid: int) -> DropTo:
        return DropTo(released, uid, gid)

    _permanently_drop_child_privileges.__wrapped__ = released  # type: ignore[attr-defined]
    return _permanently_drop_child_privileges


_SPAWN_KEYS = {"cwd", "stdout", "stderr", "env", "start_new_session", "preexec_fn"}
_STDOUT_SUFFIX = ".stdout.log"


def _make_asyncio_view(real: types.ModuleType) -> types.ModuleType:
    view = types.ModuleType("asyncio", "pidguard.integrations.abx_dl: asyncio with a scoped create_subprocess_exec")

    async def create_subprocess_exec(*cmd: Any, **kw: Any) -> Any:
        why = _unscoped_reason(cmd, kw)
        if why is None:
            out, err, drop = kw["stdout"], kw["stderr"], kw.get("preexec_fn")
            pid_file = Path(out.name[: -len(_STDOUT_SUFFIX)] + ".pid")
            ids: Dict[str, Any] = {}
            if isinstance(drop, DropTo):
                ids = {"user": drop.uid, "group": drop.gid, "extra_groups": [drop.gid]}
            # On the loop's thread, without a yield: the record exists when this returns.
            spawned = pidguard.spawn(
                [os.fsdecode(c) for c in cmd],
                pid_file,
                cwd=kw.get("cwd"),
                stdout=out.name,
                stderr=err.name,
                env=kw.get("env"),
                **ids,
            )
            proc = ScopedProcess(spawned, pid_file)
            _scoped[proc.pid] = proc
            stats["scoped"] += 1
            return proc
        stats["fallbacks"] += 1
        _log.warning("hook %s started as released (no scope): %s", cmd[:1], why)
        return await real.create_subprocess_exec(*cmd, **kw)

    view.create_subprocess_exec = create_subprocess_exec  # type: ignore[attr-defined]
    view.__getattr__ = lambda name: getattr(real, name)  # type: ignore[attr-defined,method-assign]
    return view


def _unscoped_reason(cmd: Any, kw: Dict[str, Any]) -> Optional[str]:
    """Why this call cannot go to pidguard.spawn as asked, or None."""
    extra = set(kw) - _SPAWN_KEYS
    if extra:
        return f"keywords {sorted(extra)}"
    if not kw.get("start_new_session"):
        return "no start_new_session"
    for key in ("stdout", "stderr"):
        name = getattr(kw.get(key), "name", None)
        if not isinstance(name, str):
            return f"{key} is not a named file"
    if not kw["stdout"].name.endswith(_STDOUT_SUFFIX):
        return f"stdout {kw['stdout'].name!r} is not abx-dl's <stem>{_STDOUT_SUFFIX}"
    drop = kw.get("preexec_fn")
    if drop is not None and not isinstance(drop, DropTo):
        return "a preexec_fn that is not abx-dl's privilege drop"
    if isinstance(drop, DropTo) and not _SPAWN_HAS_USER:
        return "this pidguard.spawn has no user= (abx-dl drops privileges for its hooks)"
    return None


def _write_pid_file_with_mtime(pid_file: Any, pid: int, start_time: float) -> None:
    """abx-dl's ``write_pid_file_with_mtime``: nothing for the record pidguard.spawn wrote for
    this pid; else pidguard.abx_dl's (pid, mtime, start token)."""
    proc = _scoped.get(pid)
    if proc is not None and Path(pid_file) == proc.pid_file:
        return
    _drop_in.write_pid_file_with_mtime(pid_file, pid, start_time)


async def _graceful_kill_process(process: Any, *, grace_period: float = _drop_in.GRACEFUL_SHUTDOWN_TIMEOUT) -> None:
    """abx-dl's ``graceful_kill_process``: a ScopedProcess is stopped whole through its record
    (SIGTERM, ``grace_period`` s, SIGKILL, 2 s) and waited for (2 s more at most); any other
    process by pidguard.abx_dl's function."""
    if not isinstance(process, ScopedProcess):
        return await _drop_in.graceful_kill_process(process, grace_period=grace_period)
    if process.returncode is not None:
        return
    g = _drop_in._seconds(grace_period)
    await _asyncio.to_thread(_stop_record, process.pid_file, f"TERM/{g:.3f}/KILL/2")
    try:
        await _asyncio.wait_for(process.wait(), timeout=2.0)
    except _asyncio.TimeoutError:
        pass


def _send_signal(pid: int, sig: int) -> bool:
    """abx-dl's ``_send_signal``: a ScopedProcess's hook gets ``sig`` with its whole scope through
    its record; any other pid goes through pidguard.abx_dl's pinned ``_send_signal``."""
    proc = _scoped.get(pid)
    if proc is not None and proc.returncode is None:
        return _stop_record(proc.pid_file, f"{_signame(sig)}/0")
    return _drop_in._send_signal(pid, sig)


def _make_psutil_view(real: types.ModuleType) -> types.ModuleType:
    view = types.ModuleType("psutil", "pidguard.integrations.abx_dl: psutil whose signals go through pidfds")

    def _signal(pid: int, token: Optional[str], sig: int) -> None:
        proc = _scoped.get(pid)
        if proc is not None and proc.returncode is None:
            _stop_record(proc.pid_file, f"{_signame(sig)}/0")
            return
        if token is None:
            raise real.AccessDenied(pid, msg="pidguard: no start token was read at listing; not signalled")
        try:
            with ProcessRef(pid, token) as ref:
                ref.signal(sig)
        except pidguard.NoSuchProcessError:
            raise real.NoSuchProcess(pid) from None
        except (pidguard.PidguardError, ValueError) as e:
            # mismatch (the pid is another process's now), unverifiable, refused
            raise real.NoSuchProcess(pid, msg=f"pidguard: not signalled: {e}") from None

    class Process:
        """psutil.Process with its start token read at creation; signals through pidguard."""

        def __init__(self, pid: Optional[int] = None, _inner: Any = None) -> None:
            self._p = _inner if _inner is not None else real.Process(pid)
            try:
                self._token: Optional[str] = pidguard.start_token(self._p.pid)
            except (pidguard.PidguardError, ValueError):
                self._token = None

        def __getattr__(self, name: str) -> Any:
            return getattr(self._p, name)

        @property
        def pid(self) -> int:
            return self._p.pid

        def children(self, recursive: bool = False) -> list:
            return [Process(_inner=c) for c in self._p.children(recursive=recursive)]

        def send_signal(self, sig: int) -> None:
            _signal(self._p.pid, self._token, sig)

        def kill(self) -> None:
            _signal(self._p.pid, self._token, signal.SIGKILL)

        def terminate(self) -> None:
            _signal(self._p.pid, self._token, signal.SIGTERM)

    view.Process = Process  # type: ignore[attr-defined]
    view.__getattr__ = lambda name: getattr(real, name)  # type: ignore[attr-defined,method-assign]
    return view


def _make_os_view(real: types.ModuleType) -> types.ModuleType:
    view = types.ModuleType("os", "pidguard.integrations.abx_dl: os whose killpg reaches only an unreaped child's group")

    def killpg(pgid: int, sig: int) -> None:
        """``os.killpg`` for the group of the caller's own child ``pgid`` (``iter_plugin_command``'s
        ``proc.pid``): pinned as that unreaped child (``ProcessRef.for_child``), the group it leads
        is signalled through its pidfd; once the child was reaped (its ``poll()`` returned) the
        number may be another group's: ``ProcessLookupError``, nothing sent."""
        try:
            with ProcessRef.for_child(pgid) as ref:
                if ref.leads_group:
                    ref.signal_group(sig)
                else:
                    ref.signal(sig)
        except (pidguard.NoSuchProcessError, pidguard.InvalidArgumentError, ValueError):
            raise ProcessLookupError(3, "pidguard: not an unreaped child of this process; not signalled") from None

    view.killpg = killpg  # type: ignore[attr-defined]
    view.__getattr__ = lambda name: getattr(real, name)  # type: ignore[attr-defined,method-assign]
    return view


def _check_sites(mods: Dict[str, Any]) -> None:
    for modname, names in SITES.items():
        mod = mods[modname]
        for name in names:
            if not hasattr(mod, name):
                raise IntegrationRefused(f"{modname}.{name} is missing: this abx-dl release moved a name the integration wraps")


def _wrap_process_utils(pu: Any) -> None:
    pu.write_pid_file_with_mtime = _write_pid_file_with_mtime
    pu.validate_pid_file = _drop_in.validate_pid_file
    pu.graceful_kill_process = _graceful_kill_process
    pu.graceful_kill_by_pid_file = _drop_in.graceful_kill_by_pid_file
    pu._send_signal = _send_signal
    pu.is_process_alive = _drop_in.is_process_alive


def _wrap_process_service(ps: Any) -> None:
    ps.write_pid_file_with_mtime = _write_pid_file_with_mtime
    ps.validate_pid_file = _drop_in.validate_pid_file
    ps.graceful_kill_process = _graceful_kill_process
    ps.graceful_kill_by_pid_file = _drop_in.graceful_kill_by_pid_file
    ps._send_signal = _send_signal
    ps._permanently_drop_child_privileges = _wrap_drop(ps._permanently_drop_child_privileges)
    ps.asyncio = _make_asyncio_view(ps.asyncio)
    ps.psutil = _make_psutil_view(ps.psutil)


def _wrap_execution(ex: Any) -> None:
    ex.os = _make_os_view(ex.os)


_PARTS = {
    "abx_dl.process_utils": _wrap_process_utils,
    "abx_dl.execution": _wrap_execution,
    "abx_dl.services.process_service": _wrap_process_service,
}
_done: Dict[str, bool] = {}
_version = ""


def _install_part(modname: str, module: Any) -> None:
    """Wrap one module's names once, after checking that every one of them exists there (else
    nothing of that module changes: IntegrationRefused, recorded in ``status()``)."""
    with _lock:
        if _done.get(modname):
            return
        for name in SITES[modname]:
            if not hasattr(module, name):
                why = f"{modname}.{name} is missing: this abx-dl release moved a name the integration wraps"
                _set_status("abx_dl", f"refused: {why}")
                raise IntegrationRefused(why)
        _PARTS[modname](module)
        _done[modname] = True
        if all(_done.get(m) for m in SITES):
            _set_status("abx_dl", f"installed {_version}")


def install() -> str:
    """Wrap the names of ``SITES`` in abx-dl (importing its modules). Returns the abx-dl version.
    Idempotent. Raises IntegrationRefused when abx-dl is outside ``SUPPORTED`` or a name is
    missing; every name of a module is checked before any of that module is changed, and all
    modules are checked before any is changed."""
    global _installed, _version
    import importlib

    try:
        _version = check_range(DIST, SUPPORTED)
        mods = {m: importlib.import_module(m) for m in SITES}
        _check_sites(mods)
    except IntegrationRefused as e:
        _set_status("abx_dl", f"refused: {e}")
        raise
    for modname, module in mods.items():
        _install_part(modname, module)
    _installed = True
    return _version


def install_when_imported() -> None:
    """Wrap each module's names right after its own code has run (the ``.pth`` route: never
    imports abx-dl's modules itself, so it cannot change abx-dl's import order). A refusal is
    said on stderr and leaves that module as released."""
    global _version
    try:
        _version = check_range(DIST, SUPPORTED)
    except IntegrationRefused as e:
        _set_status("abx_dl", f"refused: {e}")
        sys.stderr.write(f"pidguard.integrations.abx_dl: not installed: {e}\n")
        return
    _set_status("abx_dl", "pending")

    def hook_for(modname: str) -> Any:
        def hook(module: object) -> None:
            try:
                _install_part(modname, module)
            except IntegrationRefused as e:
                sys.stderr.write(f"pidguard.integrations.abx_dl: not installed: {e}\n")

        return hook

    for modname in SITES:
        when_imported(modname, hook_for(modname))
