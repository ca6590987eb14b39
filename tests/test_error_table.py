"""The one error table, seen through real peers: each kind of failure reaches a caller
typed, whichever wire carried it (the frame wire's strings, MCP's ``isError`` results,
JSON-RPC error codes)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from assistant_frames import (
    AssistantFrameHost,
    ErrorCode,
    ModelContextRegistry,
    ToolArgumentsError,
    ToolCallError,
    ToolNotFoundError,
)
from assistant_frames.errors import ERROR_KINDS
from assistant_frames.mcp import MCPContextServer, MCPFrameHost
from assistant_frames.testing import connect_frame

pytestmark = pytest.mark.anyio


def inner_registry() -> ModelContextRegistry:
    registry = ModelContextRegistry()

    @registry.tool
    def fail(reason: str) -> None:
        """Always fails."""
        raise ToolCallError(reason)

    @registry.tool
    def double(n: int) -> int:
        """Twice n."""
        return 2 * n

    return registry


@asynccontextmanager
async def federated() -> AsyncIterator[tuple[MCPContextServer, AssistantFrameHost]]:
    """A frame behind a host in a parent registry, served over MCP: three wires deep.

    The parent also offers ``ghost``, which asks the frame for a tool it does not have.
    """
    async with connect_frame(inner_registry(), name="inner") as host:
        parent = ModelContextRegistry()
        parent.add_provider(host)

        @parent.tool
        async def ghost() -> Any:
            """Calls a tool the frame does not have."""
            return await host.call_tool("ghost")

        server = MCPContextServer(parent)
        async with server.running():
            yield server, host


async def test_the_frame_wire_strings_come_back_typed() -> None:
    with anyio.fail_after(10):
        async with federated() as (_, host):
            with pytest.raises(ToolNotFoundError) as missing:
                await host.call_tool("ghost")
            assert missing.value.code is ErrorCode.TOOL_NOT_FOUND
            with pytest.raises(ToolArgumentsError) as invalid:
                await host.call_tool("double", {"n": "many"})
            assert invalid.value.code is ErrorCode.INVALID_ARGUMENTS
            with pytest.raises(ToolCallError) as failed:
                await host.call_tool("fail", {"reason": "no"})
            assert type(failed.value) is ToolCallError
            assert failed.value.code is ErrorCode.TOOL_FAILED
            assert failed.value.message == "no"


async def test_mcp_says_each_kind_as_the_table_says() -> None:
    """A missing tool is a JSON-RPC error, a failed call or bad arguments an isError
    result, even three wires away from where the failure happened."""
    with anyio.fail_after(10):
        async with federated() as (server, _), Client(server.server) as client:
            with pytest.raises(MCPError) as missing:
                await client.call_tool("ghost", {})
            assert missing.value.code == ERROR_KINDS[ErrorCode.TOOL_NOT_FOUND].jsonrpc_code
            assert missing.value.message == 'Tool "ghost" not found'

            assert ERROR_KINDS[ErrorCode.INVALID_ARGUMENTS].mcp_is_error
            invalid = await client.call_tool("double", {"n": "many"})
            assert invalid.is_error
            assert invalid.content[0].text.startswith('Invalid arguments for tool "double"')  # type: ignore[union-attr]

            assert ERROR_KINDS[ErrorCode.TOOL_FAILED].mcp_is_error
            failed = await client.call_tool("fail", {"reason": "no"})
            assert failed.is_error
            assert failed.content[0].text == "no"  # type: ignore[union-attr]


async def test_an_mcp_frame_reads_them_back_typed() -> None:
    """MCPFrameHost on our own MCP server: JSON-RPC codes and isError results become the same
    typed errors the frame wire gives."""
    with anyio.fail_after(10):
        async with federated() as (server, _), MCPFrameHost(server.server) as frame:
            with pytest.raises(ToolNotFoundError) as missing:
                await frame.call_tool("ghost")
            assert missing.value.code is ErrorCode.TOOL_NOT_FOUND
            with pytest.raises(ToolCallError) as failed:
                await frame.call_tool("fail", {"reason": "no"})
            assert failed.value.code is ErrorCode.TOOL_FAILED
            assert failed.value.message == "no"
            with pytest.raises(ToolArgumentsError) as invalid:  # an isError result
                await frame.call_tool("double", {"n": "many"})
            assert invalid.value.code is ErrorCode.INVALID_ARGUMENTS
