"""MCP interop, in-process: (i) ``mcp.Client`` on a plain ``MCPServer``, (i') the same
with each call in a cancel scope, (j) on ``MCPContextServer``, (k) through an
``MCPFrameHost``; and the ``MCPServer`` and ``mcp.Client`` targets that row (c) and the
MCP Apps rows share."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from bench_common import (
    Call,
    CallResult,
    Config,
    add_registry,
    check_add,
    mcp_version,
    measure_rotating,
    measure_sequential,
)

from assistant_frames import ModelContextRegistry


def _mcp_server() -> Any:
    """The official SDK's ``MCPServer`` offering ``add``, as (c) and (i) use it."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench", log_level="WARNING")

    @server.tool()
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return server


def structured_result(result: Any) -> object:
    structured = result.structured_content
    return structured.get("result") if isinstance(structured, dict) else structured


@asynccontextmanager
async def mcp_client_target(server: Any) -> AsyncIterator[Call]:
    """``mcp.Client`` in-process on ``server``, calling ``add``."""
    import mcp

    async with mcp.Client(server) as client:
        call_tool = client.call_tool

        async def call() -> object:
            return structured_result(await call_tool("add", {"a": 1, "b": 2}))

        yield call


@asynccontextmanager
async def mcp_target() -> AsyncIterator[Call]:
    """(c): the official MCP SDK, client and server in the same process."""
    async with mcp_client_target(_mcp_server()) as call:
        yield call


@asynccontextmanager
async def mcp_scoped_target() -> AsyncIterator[Call]:
    """(i'): (i) with each call in a cancel scope of its own, as any caller that can
    stop a call (at a deadline, or when its connection closes) needs one: an in-process
    server runs the call in the caller's task, where nothing else can stop it."""
    import anyio

    async with mcp_target() as plain:
        new_scope = type(anyio.CancelScope())  # the backend's class, as MCPFrameHost has it

        async def call() -> object:
            with new_scope():
                return await plain()

        yield call


@asynccontextmanager
async def mcp_context_server_target() -> AsyncIterator[Call]:
    """(j): ``mcp.Client`` in-process on ``MCPContextServer`` serving a registry."""
    from assistant_frames.mcp import MCPContextServer

    server = MCPContextServer(add_registry())
    async with server.running(), mcp_client_target(server.server) as call:
        yield call


@asynccontextmanager
async def mcp_frame_target() -> AsyncIterator[Call]:
    """(k): ``add`` of an ``MCPServer`` through an ``MCPFrameHost`` in a parent registry."""
    from assistant_frames.mcp import MCPFrameHost

    parent = ModelContextRegistry()
    async with MCPFrameHost(_mcp_server()) as frame:
        parent.add_provider(frame, namespace="m")
        context = parent.get_model_context()

        async def call() -> object:
            result = await context.call_tool("m_add", {"a": 1, "b": 2})
            return result.get("result") if isinstance(result, dict) else result

        yield call


async def bench_mcp_interop(config: Config, log: Callable[[str], None]) -> dict[str, CallResult]:
    """(i) ``mcp.Client`` on a plain ``MCPServer``, (i') in a cancel scope, (j) on
    ``MCPContextServer``, and (k) through an ``MCPFrameHost``: all in-process, in blocks
    of calls taken in turn."""
    results = {
        "mcp_plain": CallResult("mcp_plain", "(i) mcp.Client -> MCPServer"),
        "mcp_scoped": CallResult("mcp_scoped", "(i') ... each call in a cancel scope"),
        "mcp_served": CallResult("mcp_served", "(j) mcp.Client -> MCPContextServer"),
        "mcp_frame": CallResult("mcp_frame", "(k) MCPFrameHost -> MCPServer"),
    }
    if mcp_version() is None:
        for result in results.values():
            result.skipped = "mcp is not installed"
        return results
    async with AsyncExitStack() as stack:
        targets = {
            "mcp_plain": await stack.enter_async_context(mcp_target()),
            "mcp_scoped": await stack.enter_async_context(mcp_scoped_target()),
            "mcp_served": await stack.enter_async_context(mcp_context_server_target()),
            "mcp_frame": await stack.enter_async_context(mcp_frame_target()),
        }
        for key, call in targets.items():
            await check_add(results[key].label, call)
            await measure_sequential(call, config.warmup_calls)
        for repeat in range(config.repeats):
            log(f"mcp interop: repeat {repeat + 1}/{config.repeats}")
            gc.collect()
            # In blocks taken in turn: (k)/(i) is a ratio of two close figures, which the
            # drift of a shared machine between long runs of each would swamp.
            samples = await measure_rotating(targets, config.sequential_calls // 2)
            for key, taken in samples.items():
                results[key].latency_samples_ns += taken
    return results
