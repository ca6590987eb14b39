"""Helpers for testing frames and apps: both ends over one :func:`memory_pair`.

::

    async with connect_frame(registry) as host:
        assert await host.call_tool("add", {"a": 1, "b": 2}) == 3

The pytest plugin (installed with the package) wraps this in fixtures; see
:mod:`assistant_frames.pytest_plugin`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from ._anyio import task_group
from .frames import AssistantFrameHost, AssistantFrameProvider
from .registry import ModelContextProvider
from .transports import memory_pair

if TYPE_CHECKING:
    from mcp import Client

    from .apps import App, AppBridge, AppServer

__all__ = ["connect_app", "connect_frame"]


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


@asynccontextmanager
async def connect_app(
    registry: ModelContextProvider | None = None,
    *,
    server: AppServer | Client | None = None,
    timeout: float = 5.0,
    name: str | None = None,
    **bridge_options: Any,
) -> AsyncIterator[tuple[AppBridge, App]]:
    """An :class:`~assistant_frames.apps.AppBridge` and a Python
    :class:`~assistant_frames.apps.App` over a fresh :func:`memory_pair`, both initialized.

    ::

        async with connect_app(view_registry, server=frame) as (bridge, app):
            await bridge.send_tool_input({"city": "Paris"})
            assert await app.wait_tool_input() == {"city": "Paris"}

    ``registry`` holds the view's own tools (listed into the bridge's context before
    this yields); ``server`` is the app's MCP server (an entered ``MCPFrameHost`` or
    ``mcp.Client``).
    ``timeout`` bounds the handshake and every request either side sends; other
    keywords go to the bridge (``host_context``, handlers...). Needs the ``mcp`` extra.
    """
    from .apps import App, AppBridge  # the mcp extra, only when used

    host_side, view_side = memory_pair()
    bridge = AppBridge(
        host_side,
        server=server,
        name=name or "app",
        timeout=timeout,
        init_timeout=timeout,
        **bridge_options,
    )
    async with bridge, App(view_side, registry=registry, timeout=timeout) as app:
        await bridge.wait_initialized()
        if registry is not None:
            await bridge.refresh_view_tools()
        yield bridge, app
