"""The lifecycle every class that owns tasks for its ``async with`` block shares.

A driver (a frame host, an apps bridge or view, a widget host) is entered once; entering
opens a task group held until exit (:class:`~assistant_frames._anyio.HeldTaskGroup`)
for the tasks that serve the connection: the reader, the timer, the writer. Exiting, or
:meth:`Lifecycle.aclose`, first does what closing means for that class
(:meth:`Lifecycle._stop`: fail what waits, say goodbye, close the transport; idempotent),
then leaves the task group, handing it the block's exception so that a cancellation or
a ``KeyboardInterrupt`` is never swallowed, and last tells what only the end of its tasks
settles (:meth:`Lifecycle._stopped`). :class:`Lifecycle` is that much, for what holds
no one connection (a federation, a multiplexer, an app page and its views);
:class:`Driver` adds :meth:`Driver.wait_disconnected`, which waits for the connection's
end, whoever ended it.
"""

from __future__ import annotations

from types import TracebackType
from typing import ClassVar

import anyio

from ._anyio import HeldTaskGroup

__all__ = ["Driver", "Lifecycle"]


class Lifecycle:
    """Base of the classes that own tasks for as long as their ``async with`` block runs.

    A subclass calls :meth:`_init_lifecycle` in ``__init__``, opens ``self._tasks`` in
    its ``__aenter__`` (if it has tasks) and implements :meth:`_stop`.
    """

    _tasks: HeldTaskGroup

    def _init_lifecycle(self) -> None:
        self._tasks = HeldTaskGroup()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            await self._stop()
        finally:  # the tasks end also when stopping failed, or stopped from within before
            try:
                await self._tasks.close(exc_type, exc, tb)
            finally:
                await self._stopped()

    async def aclose(self) -> None:
        """Close, as leaving the ``async with`` block does (idempotent)."""
        await self.__aexit__(None, None, None)

    async def _stop(self) -> None:
        """What closing does before the task group is left: fail what waits on the
        connection, tell the peer, close the transport. Idempotent."""
        raise NotImplementedError

    async def _stopped(self) -> None:
        """What closing does once the tasks have ended, whatever they raised: release what
        they used (a client, subscriptions), tell who waits. Nothing, unless overridden."""


class Driver(Lifecycle):
    """Base of the classes that drive one connection (see the module).

    As :class:`Lifecycle`; the subclass also creates ``self._ended`` on entry and sets
    it when the connection ends. ``_noun`` names it in error messages.
    """

    _noun: ClassVar[str] = "connection"
    _ended: anyio.Event | None = None  # made on entry: events belong to the running backend

    async def wait_disconnected(self) -> None:
        """Wait until the connection has ended: the transport broke, the peer went, or it
        was closed."""
        if self._ended is None:
            raise RuntimeError(f"Enter the {self._noun} (async with) before waiting on it")
        await self._ended.wait()
