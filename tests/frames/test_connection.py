"""One connection interface: AssistantFrameHost, MCPFrameHost and ReconnectingHost alike."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from mcp.server.mcpserver import MCPServer

from assistant_frames import (
    AssistantFrameHost,
    AssistantFrameProvider,
    FrameConnection,
    FrameDisconnected,
    ModelContextRegistry,
    ReconnectingHost,
    memory_pair,
)
from assistant_frames.mcp import MCPFrameHost
from assistant_frames.transports import MemoryTransport

from helpers import calculator

pytestmark = pytest.mark.anyio


def mcp_server() -> MCPServer:
    server = MCPServer("numbers")

    @server.tool()
    def double(n: int) -> int:
        """Twice n."""
        return 2 * n

    return server


async def test_every_connection_kind_is_a_frame_connection() -> None:
    host_end, _ = memory_pair()
    assert isinstance(AssistantFrameHost(host_end), FrameConnection)
    assert isinstance(MCPFrameHost(mcp_server()), FrameConnection)
    assert isinstance(ReconnectingHost(lambda: MCPFrameHost(mcp_server())), FrameConnection)
    assert not isinstance(host_end, FrameConnection)  # a transport is not a connection


async def _exercise(connection: FrameConnection, tool: str, args: Any, expected: Any) -> None:
    """The same steps, through the interface only, for every kind."""
    assert connection.state == "new"
    assert not connection.connected
    async with connection:
        context = await connection.wait_for_context(10)
        assert connection.state == "connected"
        assert connection.connected
        assert tool in context.tools
        assert connection.get_model_context() is context or tool in (
            connection.get_model_context().tools
        )
        assert await connection.call_tool(tool, args) == expected
    assert connection.state == "closed"
    assert not connection.connected
    with pytest.raises(FrameDisconnected):
        await connection.call_tool(tool, args)


async def test_a_frame_host_through_the_interface() -> None:
    frame = AssistantFrameProvider(calculator())
    host_end, frame_end = memory_pair()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(frame.serve, frame_end)
            await _exercise(AssistantFrameHost(host_end), "add", {"a": 2, "b": 3}, 5)


async def test_an_mcp_frame_through_the_interface() -> None:
    with anyio.fail_after(10):
        await _exercise(MCPFrameHost(mcp_server()), "double", {"n": 21}, {"result": 42})


async def test_reconnecting_wraps_a_connection_factory_not_only_transports() -> None:
    """ReconnectingHost over MCPFrameHost: the connector yields a connection, not a stream."""
    opened: list[MCPFrameHost] = []

    @asynccontextmanager
    async def connect() -> AsyncIterator[MCPFrameHost]:
        async with MCPFrameHost(mcp_server()) as frame:
            opened.append(frame)
            yield frame

    with anyio.fail_after(10):
        await _exercise(ReconnectingHost(connect), "double", {"n": 4}, {"result": 8})
    assert len(opened) == 1
    assert opened[0].state == "closed"


async def test_reconnecting_over_connections_comes_back_after_a_drop() -> None:
    registry = ModelContextRegistry()

    @registry.tool
    def ping() -> str:
        """Answers pong."""
        return "pong"

    frame = AssistantFrameProvider(registry)
    hosts: list[AssistantFrameHost] = []

    @asynccontextmanager
    async def connect() -> AsyncIterator[AssistantFrameHost]:
        host_end, frame_end = memory_pair()
        async with anyio.create_task_group() as tg:
            tg.start_soon(frame.serve, frame_end)
            async with AssistantFrameHost(host_end, name="pinger") as host:
                hosts.append(host)
                yield host
            tg.cancel_scope.cancel()

    with anyio.fail_after(10):
        async with ReconnectingHost(connect, initial_delay=0.01) as reconnecting:
            await reconnecting.wait_for_context()
            assert await reconnecting.call_tool("ping") == "pong"
            transport = hosts[0]._transport
            assert isinstance(transport, MemoryTransport)
            await transport.aclose()
            await hosts[0].wait_disconnected()
            await reconnecting.wait_for_context()  # waits for the next connection
            assert len(hosts) == 2
            assert await reconnecting.call_tool("ping") == "pong"
            assert reconnecting.connections == 2
        assert reconnecting.state == "closed"
