"""``MCPContextServer``: a live model context served over MCP to the ``mcp`` SDK's own client.

The protocol logic is tested in-process (``Client(server.server)``) on both protocol eras:
``mode="legacy"`` (the initialize handshake, 2025-11-25: list changes arrive as
``notifications/tools/list_changed``) and ``mode="auto"`` (2026-07-28: list changes arrive
as events on ``client.listen()``). Then for real: the command line in subprocesses over
stdio and Streamable HTTP, alone and federating a worker frame and an MCP server, and
``run_http`` on 127.0.0.1. Every wait is bounded; subprocesses are stopped on the way out.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from anyio.abc import Process, TaskStatus
from mcp import Client, StdioServerParameters
from mcp.client.subscriptions import ToolsListChanged
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolResult, TextContent, ToolListChangedNotification

from assistant_frames import (
    AssistantFrameHost,
    AssistantFrameProvider,
    ModelContextRegistry,
    ToolCallError,
    memory_pair,
)
from assistant_frames.formats import tools as tool_formats
from assistant_frames.mcp import MCPContextServer

from helpers import wait_until

pytestmark = pytest.mark.anyio

MODES = pytest.mark.parametrize("mode", ["legacy", "auto"])
VERSIONS = {"legacy": "2025-11-25", "auto": "2026-07-28"}
ASYNCIO_ONLY = pytest.mark.parametrize("anyio_backend", ["asyncio"])  # uvicorn: run_http
# Subprocess tests take a second each: both eras and both backends, in two runs.
ERA_PER_BACKEND = pytest.mark.parametrize(
    ("anyio_backend", "mode"), [("asyncio", "legacy"), ("trio", "auto")]
)
WAIT = 5.0  # for anything that should happen at once
QUIET = 0.3  # a bounded negative check: nothing arrives in this long
TIMEOUT = 30.0  # for a whole subprocess test
NOT_SENDABLE = "Tool result could not be sent across the frame boundary"
SERVE = [sys.executable, "-m", "assistant_frames", "serve"]


# -- clients that follow the tool list ------------------------------------------------------


class ToolChanges:
    """The tool-list changes one client has been told of, on its era's channel."""

    def __init__(self) -> None:
        self.count = 0
        self._seen = 0
        self._arrived = anyio.Event()

    def _record(self) -> None:
        self.count += 1
        self._arrived.set()
        self._arrived = anyio.Event()

    async def on_message(self, message: Any) -> None:  # the client's message_handler
        if isinstance(message, ToolListChangedNotification):
            self._record()

    async def follow(self, client: Client, *, task_status: TaskStatus[None]) -> None:
        async with client.listen(tools_list_changed=True) as events:
            task_status.started()
            async for event in events:
                if isinstance(event, ToolsListChanged):
                    self._record()

    async def next(self) -> None:
        """Wait (bounded) for a change that no earlier ``next()`` has consumed."""
        with anyio.fail_after(WAIT):
            while self.count == self._seen:
                await self._arrived.wait()
        self._seen = self.count

    async def assert_quiet(self) -> None:
        await anyio.sleep(QUIET)
        assert self.count == self._seen, "an unexpected tool-list change was announced"


@asynccontextmanager
async def connect(target: Any, mode: str) -> AsyncIterator[tuple[Client, ToolChanges]]:
    """A client of ``target`` in ``mode``, following the tool list on its era's channel."""
    changes = ToolChanges()
    # On 2026-07-28 the SDK also hands listen events to message_handler: count them once.
    handler = changes.on_message if mode == "legacy" else None
    async with Client(target, mode=mode, message_handler=handler) as client:
        assert client.protocol_version == VERSIONS[mode]
        # As real clients do, list first: a handshake-era session is followed from its
        # "initialized" notification on, which the server handles after the handshake.
        await client.list_tools()
        if mode == "legacy":
            yield client, changes
            return
        async with anyio.create_task_group() as group:
            await group.start(changes.follow, client)
            yield client, changes
            group.cancel_scope.cancel()


@asynccontextmanager
async def served(
    provider: Any, mode: str, **options: Any
) -> AsyncIterator[tuple[Client, ToolChanges]]:
    """``provider`` served by a running MCPContextServer, and a client connected in-process."""
    server = MCPContextServer(provider, **options)
    async with server.running(), connect(server.server, mode) as connection:
        yield connection


async def tool_names(client: Client) -> list[str]:
    return [tool.name for tool in (await client.list_tools()).tools]


def text_of(result: CallToolResult) -> list[str]:
    assert all(isinstance(block, TextContent) for block in result.content), result
    return [block.text for block in result.content]  # type: ignore[union-attr]


# -- a registry with one tool per kind of result --------------------------------------------


def toolbox() -> ModelContextRegistry:
    registry = ModelContextRegistry()
    registry.add_instruction("Use the toolbox.")

    @registry.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @registry.tool
    async def greet(name: str) -> str:
        """Greet someone."""
        await anyio.lowlevel.checkpoint()
        return f"Hello, {name}!"

    @registry.tool
    def point(x: int, y: int = 0) -> dict[str, int]:
        """A point."""
        return {"x": x, "y": y}

    @registry.tool
    def fail() -> None:
        """Always fails."""
        raise ValueError("the tool broke")

    @registry.tool
    def refuse() -> None:
        """Refuses, as a frame would."""
        raise ToolCallError("refused: not today", tool_name="refuse")

    registry.add_tool("numbers", lambda: [1, 2, 3])
    registry.add_tool("nothing", lambda: None, description="Returns nothing.")
    registry.add_tool("opaque", object, description="Returns something that is not JSON.")
    registry.add_tool("hidden", lambda: "never", description="Disabled.", disabled=True)
    return registry


ENABLED = ["add", "greet", "point", "fail", "refuse", "numbers", "nothing", "opaque"]


# -- 1. listing, instructions, results and errors (both eras, in-process) -------------------


@MODES
async def test_listing(mode: str) -> None:
    registry = toolbox()
    async with served(registry, mode) as (client, _):
        assert client.server_capabilities.tools is not None
        assert client.server_capabilities.tools.list_changed is True
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert list(tools) == ENABLED  # the context's order, the disabled tool left out
        context = registry.get_model_context()
        for name, tool in tools.items():
            assert tool.input_schema == context.tools[name].parameters
            assert tool.description == context.tools[name].description
        assert tools["add"].description == "Add two integers."
        assert tools["add"].input_schema["required"] == ["a", "b"]
        assert tools["numbers"].description is None


@MODES
@pytest.mark.parametrize("override", [None, "Fixed instructions."])
async def test_instructions_follow_the_context_unless_overridden(
    mode: str, override: str | None
) -> None:
    registry = ModelContextRegistry()
    instruction = registry.add_instruction("First.")
    server = MCPContextServer(registry, instructions=override)
    async with server.running():
        async with connect(server.server, mode) as (client, _):
            assert client.instructions == (override or "First.")
        instruction.update("Second.")  # a client connecting now gets the new text
        async with connect(server.server, mode) as (client, _):
            assert client.instructions == (override or "Second.")
        instruction.remove()
        async with connect(server.server, mode) as (client, _):
            assert client.instructions == override


# tool, arguments, text blocks, structuredContent on legacy, on 2026-07-28
RESULTS = [
    pytest.param("add", {"a": 2, "b": 3}, ["5"], None, 5, id="sync-number"),
    pytest.param("greet", {"name": "Ada"}, ["Hello, Ada!"], None, None, id="async-string"),
    pytest.param(
        "point", {"x": 1}, ['{"x":1,"y":0}'], {"x": 1, "y": 0}, {"x": 1, "y": 0}, id="dict"
    ),
    pytest.param("numbers", {}, ["[1,2,3]"], None, [1, 2, 3], id="list"),
    pytest.param("nothing", {}, [], None, None, id="none"),
]


@MODES
@pytest.mark.parametrize(("tool", "args", "texts", "legacy", "modern"), RESULTS)
async def test_results(
    mode: str, tool: str, args: dict[str, Any], texts: list[str], legacy: Any, modern: Any
) -> None:
    structured = legacy if mode == "legacy" else modern
    async with served(toolbox(), mode) as (client, _):
        result = await client.call_tool(tool, args)
    assert not result.is_error
    assert text_of(result) == texts
    assert result.structured_content == structured


ERRORS = [
    pytest.param("fail", {}, "the tool broke", id="raises"),
    pytest.param("refuse", {}, "refused: not today", id="tool-call-error"),
    pytest.param("add", {"a": "two"}, 'Invalid arguments for tool "add": a: ', id="bad-args"),
    pytest.param("opaque", {}, NOT_SENDABLE, id="not-json"),
]


@MODES
@pytest.mark.parametrize(("tool", "args", "message"), ERRORS)
async def test_tool_errors_are_results(
    mode: str, tool: str, args: dict[str, Any], message: str
) -> None:
    async with served(toolbox(), mode) as (client, _):
        result = await client.call_tool(tool, args)
        assert (await client.call_tool("add", {"a": 1, "b": 1})).content  # still serving
    assert result.is_error
    assert result.structured_content is None
    (text,) = text_of(result)
    assert text.startswith(message)
    assert "Traceback" not in text


@MODES
@pytest.mark.parametrize("tool", ["missing", "hidden"])
async def test_unknown_and_disabled_tools_are_protocol_errors(mode: str, tool: str) -> None:
    async with served(toolbox(), mode) as (client, _):
        with pytest.raises(MCPError) as caught:
            await client.call_tool(tool, {})
    assert caught.value.code == INVALID_PARAMS
    assert caught.value.message == f'Tool "{tool}" not found'


# -- 2. list-changed notifications ----------------------------------------------------------


@MODES
async def test_tool_list_changes_are_announced(mode: str) -> None:
    registry = toolbox()
    async with served(registry, mode) as (client, changes):
        handle = registry.add_tool("mul", lambda a, b: a * b, description="Multiply.")
        await changes.next()
        assert await tool_names(client) == [*ENABLED, "mul"]

        handle.update(description="Multiply two numbers.")
        await changes.next()
        (mul,) = [tool for tool in (await client.list_tools()).tools if tool.name == "mul"]
        assert mul.description == "Multiply two numbers."

        handle.update(disabled=True)
        await changes.next()
        assert await tool_names(client) == ENABLED
        with pytest.raises(MCPError, match='Tool "mul" not found'):
            await client.call_tool("mul", {"a": 2, "b": 3})

        handle.update(disabled=False)
        await changes.next()
        assert text_of(await client.call_tool("mul", {"a": 2, "b": 3})) == ["6"]

        handle.remove()
        await changes.next()
        assert await tool_names(client) == ENABLED


@MODES
async def test_instruction_change_is_not_a_tool_change(mode: str) -> None:
    registry = toolbox()
    async with served(registry, mode) as (client, changes):
        registry.add_instruction("One more thing.")
        await changes.assert_quiet()
        registry.add_tool("control", lambda: "ok")  # positive control: this one is announced
        await changes.next()
        assert "control" in await tool_names(client)


@MODES
async def test_a_burst_of_changes_is_announced_a_few_times(mode: str) -> None:
    registry = ModelContextRegistry()
    async with served(registry, mode) as (client, changes):
        for i in range(200):
            registry.add_tool(f"tool_{i}", lambda: None)
        await changes.next()
        await anyio.sleep(QUIET)
        assert 1 <= changes.count <= 3
        assert await tool_names(client) == [f"tool_{i}" for i in range(200)]


@pytest.mark.parametrize("modes", [("legacy", "legacy"), ("auto", "auto"), ("legacy", "auto")])
async def test_every_client_is_told(modes: tuple[str, str]) -> None:
    registry = toolbox()
    server = MCPContextServer(registry)
    async with (
        server.running(),
        connect(server.server, modes[0]) as (first, first_changes),
        connect(server.server, modes[1]) as (second, second_changes),
    ):
        registry.add_tool("shared", lambda: "both")
        await first_changes.next()
        await second_changes.next()
        assert "shared" in await tool_names(first)
        assert "shared" in await tool_names(second)


async def test_closed_legacy_sessions_are_forgotten() -> None:
    registry = toolbox()
    server = MCPContextServer(registry)
    async with server.running():
        for _ in range(2):
            async with connect(server.server, "legacy"):
                await wait_until(lambda: len(server._sessions) == 1, WAIT)
            await wait_until(lambda: not server._sessions, WAIT)
        registry.add_tool("after", lambda: "ok")  # announced to nobody, without trouble
        async with connect(server.server, "legacy") as (client, changes):
            registry.add_tool("later", lambda: "ok")
            await changes.next()
            assert await tool_names(client) == [*ENABLED, "after", "later"]


@MODES
async def test_an_unexportable_tool_does_not_freeze_the_list(
    mode: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # MCP needs an object schema at the root: such a tool is left out (and logged once),
    # the others are still listed and announced.
    monkeypatch.setattr(tool_formats, "_reported", set())  # what earlier tests logged
    registry = toolbox()
    async with served(registry, mode) as (client, changes):
        registry.add_tool("echo", lambda text: text, parameters={"type": "string"})
        registry.add_tool("later", lambda: "ok", description="Added after echo.")
        names = await tool_names(client)
        assert "later" in names
        assert "echo" not in names
        await changes.next()
    warnings = [r for r in caplog.records if "'echo' out of the MCP tools" in r.message]
    assert len(warnings) == 1


# -- 3. a federated frame (AssistantFrameHost over memory_pair) -----------------------------


@MODES
async def test_federated_frame(mode: str) -> None:
    calculator = ModelContextRegistry()
    calculator.add_instruction("Use the calculator.")

    @calculator.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @calculator.tool
    def broken() -> None:
        """Fails in the frame."""
        raise ValueError("the frame's tool broke")

    parent = ModelContextRegistry()
    parent.add_instruction("You are helpful.")
    host_end, frame_end = memory_pair()
    frame_scope = anyio.CancelScope()

    async def serve_frame() -> None:
        with frame_scope:
            await AssistantFrameProvider(calculator).serve(frame_end)

    async with anyio.create_task_group() as group:
        group.start_soon(serve_frame)
        async with AssistantFrameHost(host_end, name="calculator") as host:
            await host.wait_for_context(timeout=WAIT)
            parent.add_provider(host, namespace="calc")
            async with served(parent, mode) as (client, changes):
                assert client.instructions == "You are helpful.\n\nUse the calculator."
                assert await tool_names(client) == ["calc_add", "calc_broken"]
                assert text_of(await client.call_tool("calc_add", {"a": 2, "b": 3})) == ["5"]
                result = await client.call_tool("calc_broken", {})
                assert result.is_error
                assert text_of(result) == ["the frame's tool broke"]

                calculator.add_tool("mul", lambda a, b: a * b, description="Multiply.")
                await changes.next()
                assert await tool_names(client) == ["calc_add", "calc_broken", "calc_mul"]
                result = await client.call_tool("calc_mul", {"a": 4, "b": 5})
                assert text_of(result) == ["20"]

                frame_scope.cancel()  # the frame's end of the connection closes
                await changes.next()
                assert await tool_names(client) == []
                assert host.state == "disconnected"
                with pytest.raises(MCPError, match='Tool "calc_add" not found'):
                    await client.call_tool("calc_add", {"a": 1, "b": 1})


# -- 4. the command line over stdio ----------------------------------------------------------

CALC = '''
"""A calculator frame for the CLI tests; grow() adds a tool at run time."""
import os

from assistant_frames import ModelContextRegistry

registry = ModelContextRegistry()
registry.add_instruction("Use the calculator.")


@registry.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@registry.tool
def grow(name: str) -> str:
    """Add a tool called name."""
    registry.add_tool(name, lambda: f"{name} here", description="Grown at run time.")
    return f"added {name}"


@registry.tool
def whereami() -> dict:
    """Which module answers, in which process."""
    return {"module": __name__, "pid": os.getpid(), "parent": os.getppid()}
'''

NOTES = '''
"""A second frame, served as an MCP server in the federation test."""
import os

from assistant_frames import ModelContextRegistry

registry = ModelContextRegistry()


@registry.tool
def whereami() -> dict:
    """Which module answers, in which process."""
    return {"module": __name__, "pid": os.getpid(), "parent": os.getppid()}


@registry.tool
def fail() -> None:
    """Always fails."""
    raise RuntimeError("notes failed")
'''


@pytest.fixture
def frame_dir(tmp_path: Path) -> Path:
    (tmp_path / "calc.py").write_text(textwrap.dedent(CALC), encoding="utf-8")
    (tmp_path / "notes.py").write_text(textwrap.dedent(NOTES), encoding="utf-8")
    return tmp_path


def cli(*args: str, cwd: Path) -> StdioServerParameters:
    """``python -m assistant_frames serve *args``, started (and stopped) by the SDK's client."""
    return StdioServerParameters(command=SERVE[0], args=[*SERVE[1:], *args], cwd=str(cwd))


@ERA_PER_BACKEND
async def test_cli_mcp_stdio(mode: str, frame_dir: Path) -> None:
    params = cli("--mcp-stdio", "calc:registry", cwd=frame_dir)
    with anyio.fail_after(TIMEOUT):
        async with connect(params, mode) as (client, changes):
            assert client.instructions == "Use the calculator."
            assert await tool_names(client) == ["add", "grow", "whereami"]
            assert text_of(await client.call_tool("add", {"a": 2, "b": 3})) == ["5"]
            place = (await client.call_tool("whereami", {})).structured_content
            assert place is not None
            assert place["pid"] != os.getpid()  # run in the server's process

            assert text_of(await client.call_tool("grow", {"name": "extra"})) == ["added extra"]
            await changes.next()
            assert await tool_names(client) == ["add", "grow", "whereami", "extra"]
            assert text_of(await client.call_tool("extra", {})) == ["extra here"]


@ERA_PER_BACKEND
async def test_cli_mcp_stdio_federation(mode: str, frame_dir: Path) -> None:
    worker_command = shlex.join([*SERVE, "--stdio", "calc:registry"])
    server_command = shlex.join([*SERVE, "--mcp-stdio", "notes:registry"])
    params = cli(
        "--mcp-stdio",
        "--frame",
        f"w={worker_command}",
        "--mcp",
        f"m={server_command}",
        cwd=frame_dir,
    )
    with anyio.fail_after(TIMEOUT):
        async with connect(params, mode) as (client, changes):
            names = ["w_add", "w_grow", "w_whereami", "m_whereami", "m_fail"]
            assert await tool_names(client) == names
            worker = (await client.call_tool("w_whereami", {})).structured_content
            server = (await client.call_tool("m_whereami", {})).structured_content
            assert worker is not None
            assert server is not None
            assert (worker["module"], server["module"]) == ("calc", "notes")
            # Two different processes, both children of the one federating server.
            assert worker["pid"] != server["pid"]
            assert worker["parent"] == server["parent"] != os.getpid()

            assert text_of(await client.call_tool("w_add", {"a": 2, "b": 3})) == ["5"]
            result = await client.call_tool("m_fail", {})
            assert result.is_error
            assert text_of(result) == ["notes failed"]

            await client.call_tool("w_grow", {"name": "extra"})  # the worker adds a tool
            await changes.next()
            assert await tool_names(client) == [*names[:3], "w_extra", *names[3:]]


RENDEZVOUS = """
import pathlib
import sys
import time

import anyio

from assistant_frames import ModelContextRegistry
from assistant_frames.frames import serve_stdio

me, other = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
me.touch()
deadline = time.monotonic() + 20.0
while not other.exists():  # this worker serves only once the other one has started too
    if time.monotonic() > deadline:
        sys.exit(f"{other.name} never started")
    time.sleep(0.05)

registry = ModelContextRegistry()


@registry.tool
def whoami() -> str:
    \"\"\"Which worker answers.\"\"\"
    return me.name


anyio.run(serve_stdio, registry)
"""


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # subprocesses: one run is enough
async def test_cli_federation_members_start_side_by_side(frame_dir: Path) -> None:
    # Each worker waits for the other to start: members started one after the other
    # would never join (the first would wait out the 10 s connect timeout).
    (frame_dir / "rendezvous.py").write_text(RENDEZVOUS, encoding="utf-8")

    def worker(me: str, other: str) -> str:
        return shlex.join([sys.executable, "rendezvous.py", me, other])

    params = cli(
        "--mcp-stdio",
        "--frame",
        f"a={worker('a.started', 'b.started')}",
        "--frame",
        f"b={worker('b.started', 'a.started')}",
        cwd=frame_dir,
    )
    with anyio.fail_after(TIMEOUT):
        async with connect(params, "legacy") as (client, _):
            assert await tool_names(client) == ["a_whoami", "b_whoami"]  # in the order given
            assert text_of(await client.call_tool("b_whoami", {})) == ["b.started"]


# -- 5. Streamable HTTP -------------------------------------------------------------------------


@asynccontextmanager
async def http_served(server: MCPContextServer) -> AsyncIterator[str]:
    """``server.run_http`` on a free port of 127.0.0.1 in a task group; yield its URL."""
    urls: list[str] = []
    listening = anyio.Event()

    def ready(url: str) -> None:
        urls.append(url)
        listening.set()

    async with anyio.create_task_group() as group:
        group.start_soon(partial(server.run_http, "127.0.0.1", 0, ready=ready))
        with anyio.fail_after(WAIT):
            await listening.wait()
        yield urls[0]
        group.cancel_scope.cancel()


def port_of(url: str) -> int:
    match = re.fullmatch(r"http://127\.0\.0\.1:(\d+)/mcp", url)
    assert match, url
    return int(match.group(1))


@ASYNCIO_ONLY
@MODES
async def test_http_in_process(mode: str) -> None:
    registry = toolbox()
    server = MCPContextServer(registry)
    async with http_served(server) as url:
        port = port_of(url)
        async with connect(url, mode) as (client, changes):
            assert client.instructions == "Use the toolbox."
            assert await tool_names(client) == ENABLED
            assert text_of(await client.call_tool("greet", {"name": "Ada"})) == ["Hello, Ada!"]
            registry.add_tool("mul", lambda a, b: a * b, description="Multiply.")
            await changes.next()
            assert await tool_names(client) == [*ENABLED, "mul"]
            assert text_of(await client.call_tool("mul", {"a": 4, "b": 5})) == ["20"]
        await wait_until(lambda: not server._sessions, WAIT)  # the session was closed
    # The task group was cancelled: nothing listens any more.
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=WAIT).close()


@ASYNCIO_ONLY
async def test_http_port_in_use() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        with anyio.fail_after(WAIT), pytest.raises(OSError, match="in use"):
            await MCPContextServer(toolbox()).run_http("127.0.0.1", busy.getsockname()[1])


@asynccontextmanager
async def cli_http(frame_dir: Path) -> AsyncIterator[tuple[Process, str, bytearray]]:
    """``serve --mcp-http 127.0.0.1:0 calc:registry``; yield it, its URL and its stderr."""
    process = await anyio.open_process(
        [*SERVE, "--mcp-http", "127.0.0.1:0", "calc:registry"],
        cwd=frame_dir,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    stderr = bytearray()
    try:
        assert process.stderr is not None
        with anyio.fail_after(TIMEOUT):
            while not (found := re.search(rb"over MCP at (http://\S+/mcp)", stderr)):
                try:
                    stderr += await process.stderr.receive()
                except anyio.EndOfStream:
                    raise AssertionError(f"the server printed no URL: {stderr!r}") from None
        yield process, found.group(1).decode(), stderr
    finally:
        with anyio.CancelScope(shield=True), anyio.move_on_after(10):
            if process.returncode is None:
                process.kill()
            await process.aclose()


async def stop(process: Process, stderr: bytearray) -> int:
    """SIGTERM; the exit status, which must come within WAIT seconds; stderr read to its end."""
    process.send_signal(signal.SIGTERM)
    with anyio.fail_after(WAIT):
        assert process.stderr is not None
        async for chunk in process.stderr:
            stderr += chunk
        return await process.wait()


@ERA_PER_BACKEND
async def test_cli_mcp_http(mode: str, frame_dir: Path) -> None:
    async with cli_http(frame_dir) as (process, url, stderr):
        port_of(url)
        with anyio.fail_after(TIMEOUT):
            async with connect(url, mode) as (client, changes):
                assert await tool_names(client) == ["add", "grow", "whereami"]
                assert text_of(await client.call_tool("add", {"a": 2, "b": 3})) == ["5"]
                await client.call_tool("grow", {"name": "extra"})
                await changes.next()
                assert text_of(await client.call_tool("extra", {})) == ["extra here"]
        assert await stop(process, stderr) == 0, stderr.decode()
    assert b"SIGTERM: stopping" in stderr
    assert b"Traceback" not in stderr, stderr.decode()


def test_cli_mcp_http_port_in_use(frame_dir: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run(
            [*SERVE, "--mcp-http", f"127.0.0.1:{port}", "calc:registry"],
            cwd=frame_dir,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,  # killed if it outlives this
        )
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if "error:" in line]
    assert errors == [result.stderr.strip().splitlines()[-1]], result.stderr
    assert errors[0].startswith("assistant-frames: error: ")
    assert "in use" in errors[0]
