"""Helpers for testing frames: connect a provider to a host over :func:`memory_pair`.

::

    async with connect_frame(registry) as host:
        assert await host.call_tool("add", {"a": 1, "b": 2}) == 3

The pytest plugin (installed with the package) wraps this in fixtures; see
:mod:`assistant_frames.pytest_plugin`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from ._anyio import task_group
from .frames import AssistantFrameHost, AssistantFrameProvider
from .registry import ModelContextProvider
from .transports import memory_pair

__all__ = ["connect_frame"]


@asynccontextmanager
async def connect_frame(
    frame: AssistantFrameProvider | ModelContextProvider,
    *,
    timeout: float | None = 5.0,
    wait: bool = True,
    name: str | None = None,
) -> AsyncIterator[AssistantFrameHost]:
    """Serve ``frame`` over a fresh :func:`memory_pair` and yield a connected host.

    ``frame`` is an :class:`AssistantFrameProvider` or any provider (a registry...),
    which is then wrapped in one. With ``wait`` (the default) the host has received the
    frame's first context before this yields. ``timeout`` is the host's call timeout and
    bounds that wait. Everything is shut down on exit.
    """
    provider = frame if isinstance(frame, AssistantFrameProvider) else AssistantFrameProvider(frame)
    host_side, frame_side = memory_pair()
    async with task_group() as tasks:
        tasks.start_soon(provider.serve, frame_side)
        async with AssistantFrameHost(host_side, timeout=timeout, name=name) as host:
            if wait:
                await host.wait_for_context(timeout)
            yield host
        tasks.cancel_scope.cancel()
