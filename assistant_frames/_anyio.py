"""Small helpers over anyio for hot paths."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio
from anyio.abc import TaskGroup

__all__ = ["event_class", "task_group"]


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
