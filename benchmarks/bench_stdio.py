"""Pipe and stdio targets: (f) the bare pipe echo, (f') the same from an event loop,
(g) assistant-frames' ``spawn_worker``, (h) ``mcp`` over stdio."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from anyio.abc import Process
from bench_children import ECHO_CHILD, STDIO_WORKER, Children, child_process
from bench_common import (
    TIMEOUT_SECONDS,
    TOOL_CALL_MESSAGE,
    Probe,
    add_call,
    local_probe,
    measure_sequential,
)

from assistant_frames import AssistantFrameHost
from assistant_frames.transports import spawn_worker


class PipeEcho:
    """(f), parent side: one JSON line to the echo child's stdin, one back from its stdout."""

    def __init__(self, process: Process) -> None:
        if process.stdin is None or process.stdout is None:
            raise RuntimeError("the echo child needs pipes")
        self._send = process.stdin.send
        self._receive = process.stdout.receive

    async def call(self) -> object:
        await self._send(json.dumps(TOOL_CALL_MESSAGE).encode() + b"\n")
        data = await self._receive()
        while not data.endswith(b"\n"):  # one message in flight: the reply ends the read
            data += await self._receive()
        return json.loads(data)


@asynccontextmanager
async def pipe_echo_target(kids: Children, *, on_loop: bool = False) -> AsyncIterator[Probe]:
    """(f): a Python child echoing lines through its stdin/stdout pipes. ``on_loop``:
    (f'), the child echoing from the event loop our worker runs on, the floor for any
    worker that has one."""
    command = [sys.executable, str(ECHO_CHILD), *([kids.backend] if on_loop else [])]
    async with child_process(command, kids.env) as process:
        echo = PipeEcho(process)
        yield Probe(
            echo.call, functools.partial(measure_sequential, echo.call), expected=TOOL_CALL_MESSAGE
        )


@asynccontextmanager
async def stdio_target(kids: Children) -> AsyncIterator[Probe]:
    """(g): ``AssistantFrameHost`` over ``spawn_worker`` -> ``serve_stdio`` in a child."""
    async with (
        spawn_worker(kids.script(STDIO_WORKER), env=kids.env) as transport,
        AssistantFrameHost(transport, name="worker") as host,
    ):
        await host.wait_for_context(timeout=TIMEOUT_SECONDS)
        yield local_probe(add_call(host))


@asynccontextmanager
async def mcp_stdio_target(kids: Children) -> AsyncIterator[Probe]:
    """(h): ``mcp.Client`` over stdio to an ``MCPServer`` run in a child."""
    import mcp

    async with mcp.Client(kids.mcp_parameters()) as client:
        call_tool = client.call_tool

        async def call() -> object:
            result = await call_tool("add", {"a": 1, "b": 2})
            structured = result.structured_content
            return structured.get("result") if structured else None

        yield local_probe(call)
