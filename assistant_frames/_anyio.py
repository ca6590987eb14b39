"""Small helpers over anyio for hot paths."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio
import sniffio
from anyio.abc import TaskGroup

__all__ = ["Deadlines", "cancelled_here", "event_class", "running_asyncio", "task_group"]


def running_asyncio() -> bool:
    """True when the running event loop is asyncio's."""
    try:
        return sniffio.current_async_library() == "asyncio"
    except sniffio.AsyncLibraryNotFoundError:  # pragma: no cover
        return False


def cancelled_here() -> bool:
    """Whether the cancellation exception being handled was meant for this task.

    On asyncio, a ``CancelledError`` may come from awaiting a task that someone else
    cancelled; then this task has no cancellation request of its own. trio (and anyio's
    cancel scopes on it) have no such case.
    """
    if running_asyncio():
        task = asyncio.current_task()
        return task is None or task.cancelling() > 0
    return True


def event_class() -> Callable[[], anyio.Event]:
    """The running backend's ``Event`` class, to construct events without a lookup.

    ``anyio.Event()`` finds the running backend on every call, which costs more than
    the event itself; hot paths create one per message. Call this inside the event loop.
    """
    return type(anyio.Event())


@asynccontextmanager
async def task_group() -> AsyncIterator[TaskGroup]:
    """An anyio task group whose lone error comes out as itself.

    Context managers that keep background tasks while their caller's block runs
    (connections, servers, workers) would otherwise hand every error from that block
    back wrapped in an ``ExceptionGroup``, so ``except ToolCallError`` around them
    would never match. Several errors still come out as a group.
    """
    try:
        async with anyio.create_task_group() as group:
            yield group
    except BaseExceptionGroup as errors:
        if len(errors.exceptions) == 1:
            raise errors.exceptions[0] from None
        raise


class Deadlines:
    """Times out many waits with one task, for deadlines that mostly come in order.

    A cancel scope with a deadline costs a timer per wait, a large share of a fast call.
    Waits that share one timeout get ascending deadlines, so an insertion-ordered dict
    and one task (:meth:`run`, in the owner's task group) expire them all. :meth:`add`
    refuses a deadline earlier than the last one; the caller then uses its own scope.
    """

    __slots__ = ("_entries", "_last", "_wake")

    def __init__(self) -> None:
        self._entries: dict[object, tuple[float, Callable[[], None]]] = {}
        self._last = -math.inf
        self._wake: anyio.Event | None = None

    def add(self, key: object, limit: float, expire: Callable[[], None]) -> bool:
        """Call ``expire()`` in ``limit`` seconds unless ``key`` is discarded first.

        Returns False, tracking nothing, when that would be out of order.
        """
        deadline = anyio.current_time() + limit
        if deadline < self._last:
            return False
        self._last = deadline
        self._entries[key] = (deadline, expire)
        wake, self._wake = self._wake, None
        if wake is not None:
            wake.set()
        return True

    def discard(self, key: object) -> None:
        """Forget ``key`` (its wait ended in time); nothing if it is not tracked."""
        self._entries.pop(key, None)

    async def run(self) -> None:
        """Expire the waits as their deadlines pass; runs until cancelled."""
        entries = self._entries
        while True:
            if not entries:
                wake = self._wake = anyio.Event()
                await wake.wait()
                continue
            key, (deadline, expire) = next(iter(entries.items()))
            if deadline > anyio.current_time():
                await anyio.sleep_until(deadline)
                continue
            del entries[key]
            expire()
