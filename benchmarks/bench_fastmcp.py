"""FastMCP (``fastmcp``, the ``bench`` extra), in-process: the ``fastmcp.Client`` target
that row (c') shares with (a) to (c), and the mount rows (w) and (x): a call through a
``FastMCP`` server that mounts another, against the same call made directly."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import sniffio
from bench_common import (
    Call,
    CallResult,
    Config,
    check_add,
    measure_rotating,
    measure_sequential,
    package_version,
)

MOUNT_NAMESPACE = "child"  # the mounted server's tools are "child_<name>" in the parent


def fastmcp_version() -> str | None:
    return package_version("fastmcp")


def fastmcp_skipped() -> str | None:
    """Why the FastMCP rows cannot run here, or None."""
    if fastmcp_version() is None:
        return "fastmcp is not installed (pip install -e '.[bench]')"
    backend = sniffio.current_async_library()
    if backend != "asyncio":
        return f"fastmcp's Client runs on asyncio only, not {backend}"
    return None


def fastmcp_server(name: str = "bench") -> Any:
    """A ``FastMCP`` server offering ``add``, defaults everywhere."""
    from fastmcp import FastMCP

    server = FastMCP(name)

    @server.tool
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return server


@asynccontextmanager
async def fastmcp_client_target(server: Any, tool: str = "add") -> AsyncIterator[Call]:
    """``fastmcp.Client(server)`` (its in-memory transport) calling ``tool``."""
    import fastmcp

    async with fastmcp.Client(server) as client:
        call_tool = client.call_tool

        async def call() -> object:
            return (await call_tool(tool, {"a": 1, "b": 2})).data

        yield call


@asynccontextmanager
async def fastmcp_target() -> AsyncIterator[Call]:
    """(c'): FastMCP, client and server in the same process."""
    async with fastmcp_client_target(fastmcp_server()) as call:
        yield call


async def bench_fastmcp_mount(config: Config, log: Callable[[str], None]) -> dict[str, CallResult]:
    """(w) ``fastmcp.Client`` on a ``FastMCP`` server, (x) on a parent ``FastMCP`` that
    mounts that same server, in blocks of 50 calls taken in turn (the order rotating per
    repeat)."""
    version = fastmcp_version()
    results = {
        "fastmcp_direct": CallResult(
            "fastmcp_direct", f"(w) fastmcp {version or ''} Client -> FastMCP".replace("  ", " ")
        ),
        "fastmcp_mounted": CallResult("fastmcp_mounted", "(x) Client -> parent mounting (w)"),
    }
    skipped = fastmcp_skipped()
    if skipped:
        for result in results.values():
            result.skipped = skipped
        return results
    from fastmcp import FastMCP

    child = fastmcp_server("child")
    parent = FastMCP("parent")
    parent.mount(child, namespace=MOUNT_NAMESPACE)
    async with AsyncExitStack() as stack:
        calls = {
            "fastmcp_direct": await stack.enter_async_context(fastmcp_client_target(child)),
            "fastmcp_mounted": await stack.enter_async_context(
                fastmcp_client_target(parent, f"{MOUNT_NAMESPACE}_add")
            ),
        }
        for key, call in calls.items():
            await check_add(results[key].label, call)
            await measure_sequential(call, config.warmup_calls)
        keys = list(calls)
        for repeat in range(config.repeats):
            log(f"fastmcp mount: repeat {repeat + 1}/{config.repeats}")
            shift = repeat % len(keys)
            gc.collect()
            order = {key: calls[key] for key in keys[shift:] + keys[:shift]}
            for key, samples in (await measure_rotating(order, config.fastmcp_calls)).items():
                results[key].latency_samples_ns += samples
    return results
