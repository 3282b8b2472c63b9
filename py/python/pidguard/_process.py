"""``pidguard.ProcessRef``: the native pinned handle plus an asyncio wait."""

import asyncio
import os
from typing import Any, Optional, Tuple

from . import _pidguard


class ProcessRef(_pidguard.ProcessRef):
    """A process pinned by a pidfd (see the native class for opening, signals, states and
    errors), with :meth:`wait_async` for asyncio code."""

    @classmethod
    def for_child(cls, pid: int) -> "ProcessRef":
        """Pin the caller's own child ``pid`` (a ``subprocess.Popen``, an
        ``asyncio.subprocess.Process`` not yet reaped) without a token: until the caller reaps
        it nobody else can, so its pid and the process group it leads are still its own. A
        child that has exited but is not reaped yet is pinned too, so the live members of its
        group can still be reached. Raises ValueError (InvalidArgumentError) when ``pid`` is not
        a child of this process, NoSuchProcessError once it was reaped, RefusedError for pid 1
        or our own pid."""
        return cls(pid, child=True)

    @classmethod
    def for_pid_file(
        cls, pid_file: Any, cmd_file: Any = None, tolerance: Optional[float] = 5.0
    ) -> Tuple[Optional["ProcessRef"], Optional[_pidguard.StopReport]]:
        """Judge an abx-dl pidfile and pin what it names (core's ``pin_pid_file``, see
        :func:`pidguard._pidguard.pin_pid_file`): ``(handle, None)`` when the process may be
        signalled — the handle carries core's uid restriction for a record another user owns —
        or ``(None, report)`` saying why not (a stale record is retired by core). Raises as
        ``pin_pid_file`` does."""
        pin, report = _pidguard.pin_pid_file(pid_file, cmd_file, tolerance)
        if pin is None:
            return None, report
        return cls(pin.pid, pin=pin), None

    async def wait_async(self, timeout: Optional[float] = None) -> bool:
        """Wait until the process exits or ``timeout`` seconds pass (None: no limit), without
        blocking the event loop: the pidfd is registered with ``loop.add_reader`` (a duplicate
        of it, so several waiters and other users of :meth:`fileno` do not disturb each other).
        Returns whether it exited. An unpinned handle (no pidfd on this system) waits in the
        loop's default executor instead. Raises ValueError when the handle is closed.
        """
        loop = asyncio.get_running_loop()
        try:
            fd = os.dup(self.fileno())
        except ValueError:
            if self.closed:
                raise
            return await loop.run_in_executor(None, self.wait, timeout)
        try:
            if self.has_exited():
                return True
            ready: "asyncio.Future[None]" = loop.create_future()

            def on_ready() -> None:
                if not ready.done():
                    ready.set_result(None)

            loop.add_reader(fd, on_ready)
            try:
                done, _ = await asyncio.wait({ready}, timeout=timeout)
            finally:
                loop.remove_reader(fd)
            return bool(done) or self.has_exited()
        finally:
            os.close(fd)
