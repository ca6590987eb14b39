"""``MCPFrameHost`` against real MCP servers, on both protocol eras and both anyio backends.

The servers: ``MCPContextServer`` serving the registry of ``SERVED`` in this process, and
the same module written into ``tmp_path`` as ``mod.py`` and served by ``python -m
assistant_frames serve mod:registry`` over stdio and over Streamable HTTP; the SDK's own
``MCPServer`` and low-level ``Server`` in this process; and a bare ``MCPServer`` over HTTP
(``PLAIN``). ``mode="legacy"`` is the initialize handshake, ``mode="auto"`` negotiates
2026-07-28. Every wait is bounded; sleeps only bound negative checks.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import mcp_types as types
import pytest
from anyio.streams.text import TextReceiveStream
from mcp import StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from assistant_frames import (
    ConnectError,
    FrameDisconnected,
    ModelContextRegistry,
    ToolCallError,
    ToolCallTimeout,
)
from assistant_frames.mcp import MCPContextServer, MCPFrameHost

from helpers import free_port, wait_until

pytestmark = pytest.mark.anyio

WAIT = 10.0  # bound of every wait that should succeed
GONE_WITHIN = 2.0  # a dead server is noticed, and its pending calls fail, within this
QUIET = 0.3  # how long negative checks watch for something that must not happen
INSTRUCTIONS = "Served for the MCPFrameHost tests."
ENV = {"MCPFRAME_TEST": "from the frame"}  # given to the served subprocesses
MODES = pytest.mark.parametrize("mode", ["legacy", "auto"])

SERVED = f'''
import os
import signal

import anyio

from assistant_frames import ModelContextRegistry

registry = ModelContextRegistry()
registry.add_instruction({INSTRUCTIONS!r})
events = []  # what the tools went through, for in-process tests to read
added = {{}}


@registry.tool
def echo(text: str) -> str:
    """Echo a text."""
    return text


@registry.tool
def point(x: int, y: int) -> dict:
    """A point as an object."""
    return {{"x": x, "y": y}}


@registry.tool
def items() -> list:
    """A list."""
    return [1, "two", None]


@registry.tool
def nothing() -> None:
    """Return nothing."""


@registry.tool
def fail(message: str) -> None:
    """Raise."""
    raise RuntimeError(message)


@registry.tool
async def sleep(seconds: float) -> str:
    """Sleep, noting the start and a cancellation."""
    events.append("started")
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        events.append("cancelled")
        raise
    return "slept"


@registry.tool
def whoami() -> str:
    """This process's id and the MCPFRAME_TEST environment variable."""
    return f"{{os.getpid()}} {{os.environ.get('MCPFRAME_TEST')}}"


@registry.tool
def die() -> None:
    """SIGKILL this process, in the middle of this call."""
    os.kill(os.getpid(), signal.SIGKILL)


@registry.tool
def grow(name: str) -> None:
    """Add a tool called name."""
    added[name] = registry.add_tool(name, lambda: name, description="Added at run time.")


@registry.tool
def shrink(name: str) -> None:
    """Remove the tool called name."""
    added.pop(name).remove()
'''
SERVED_TOOLS = {"echo", "point", "items", "nothing", "fail", "sleep", "whoami", "die", "grow"}
SERVED_TOOLS.add("shrink")

# A bare SDK server over HTTP: no tools.listChanged on either era.
PLAIN = """
import socket
import sys

import uvicorn
from mcp.server.mcpserver import MCPServer

server = MCPServer("plain", subscriptions=False)


@server.tool()
def echo(text: str) -> str:
    return text


sock = socket.socket()
sock.bind(("127.0.0.1", 0))
sock.listen()
print(f"plain at http://127.0.0.1:{sock.getsockname()[1]}/mcp; ready", file=sys.stderr, flush=True)
uvicorn.Server(uvicorn.Config(server.streamable_http_app(), log_level="warning")).run([sock])
"""


# -- helpers ------------------------------------------------------------------------------


class Notified:
    """Counts a provider's change notifications."""

    def __init__(self, provider: Any) -> None:
        self.count = 0
        self._changed = anyio.Event()
        provider.subscribe(self._on_change)

    def _on_change(self) -> None:
        self.count += 1
        self._changed.set()
        self._changed = anyio.Event()

    async def reach(self, count: int) -> None:
        with anyio.fail_after(WAIT):
            while self.count < count:
                await self._changed.wait()


def alive(pid: int) -> bool:
    """Whether ``pid`` exists (a zombie counts: it has not been reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def served() -> ModuleType:
    """A fresh copy of the ``SERVED`` module, for in-process servers."""
    module = ModuleType("mod")
    exec(compile(SERVED, "mod.py", "exec"), module.__dict__)
    return module


@pytest.fixture
def mod_dir(tmp_path: Path) -> Path:
    (tmp_path / "mod.py").write_text(SERVED, encoding="utf-8")
    return tmp_path


@asynccontextmanager
async def in_process(module: ModuleType, **options: Any) -> AsyncIterator[MCPFrameHost]:
    """An ``MCPFrameHost`` on an in-process ``MCPContextServer`` serving ``module.registry``."""
    server = MCPContextServer(module.registry, name="served")
    async with server.running(), MCPFrameHost(server.server, **options) as frame:
        yield frame


def serve_command(*transport: str) -> list[str]:
    return [sys.executable, "-m", "assistant_frames", "serve", "mod:registry", *transport]


@asynccontextmanager
async def http_server(command: list[str], cwd: Path) -> AsyncIterator[tuple[str, int]]:
    """Run an MCP server subprocess; yield the URL it prints to stderr and its pid."""
    process = await anyio.open_process(
        command,
        cwd=cwd,
        env={**os.environ, **ENV},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stderr is not None
        seen = ""
        with anyio.fail_after(WAIT):
            async for chunk in TextReceiveStream(process.stderr):
                seen += chunk
                if match := re.search(r" at (http://\S+?);", seen):
                    break
        assert match, f"the server printed no URL: {seen!r}"
        yield match.group(1), process.pid
    finally:
        with suppress(ProcessLookupError):
            process.kill()
        with anyio.fail_after(WAIT):
            await process.wait()
        await process.aclose()


@asynccontextmanager
async def over_the_wire(
    kind: str, cwd: Path, **options: Any
) -> AsyncIterator[tuple[MCPFrameHost, int]]:
    """An ``MCPFrameHost`` on ``SERVED`` served in a subprocess over ``kind``; and its pid."""
    if kind == "stdio":
        async with MCPFrameHost(serve_command("--mcp-stdio"), cwd=cwd, env=ENV, **options) as frame:
            pid = int((await frame.call_tool("whoami")).split()[0])
            yield frame, pid
        return
    async with (
        http_server(serve_command("--mcp-http", "127.0.0.1:0"), cwd) as (url, pid),
        MCPFrameHost(url, **options) as frame,
    ):
        yield frame, pid


async def assert_gone(frame: MCPFrameHost, *notified: Notified) -> None:
    """The frame has noticed its server went away, and behaves so."""
    with anyio.fail_after(GONE_WITHIN):
        await frame.wait_disconnected()
    assert frame.state == "disconnected"
    assert not frame.connected
    assert dict(frame.get_model_context().tools) == {}
    for counter in notified:
        await counter.reach(1)
    with pytest.raises(FrameDisconnected):
        await frame.call_tool("echo", {"text": "again"})


# -- constructing ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("server", "options", "error"),
    [
        ("x", {"timeout": 0}, ValueError),
        ("x", {"timeout": -1.0}, ValueError),
        ("x", {"connect_timeout": 0}, ValueError),
        ("x", {"poll_interval": 0}, ValueError),
        ("x", {"keepalive": -5}, ValueError),
        ("x", {"mode": "sometimes"}, ValueError),
        ("x", {"mode": "2025-06-18"}, ValueError),  # a handshake-era version: use "legacy"
        ([], {}, ValueError),
        ("", {}, ValueError),
        (42, {}, TypeError),
        (None, {}, TypeError),
    ],
)
def test_invalid_arguments(server: Any, options: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        MCPFrameHost(server, **options)


def test_a_new_frame_is_not_connected() -> None:
    frame = MCPFrameHost(["some-server", "--flag"], timeout=None, keepalive=None)
    assert frame.state == "new"
    assert not frame.connected
    assert dict(frame.get_model_context().tools) == {}
    assert "some-server" in frame.name
    assert MCPFrameHost("http://127.0.0.1:1/mcp", name="named").name == "named"


# -- in-process: context, results, errors --------------------------------------------------


@MODES
async def test_context_and_federation(mode: str, served: ModuleType) -> None:
    async with in_process(served, mode=mode) as frame:
        assert frame.state == "connected"
        assert frame.connected
        assert (frame.protocol_version in MODERN_PROTOCOL_VERSIONS) == (mode == "auto")
        assert frame.server_info is not None
        assert frame.server_info.name == "served"
        context = frame.get_model_context()
        assert context.system == INSTRUCTIONS
        listed = {tool.name: tool for tool in (await frame.client.list_tools()).tools}
        assert set(context.tools) == set(listed) == SERVED_TOOLS
        for name, tool in context.tools.items():
            assert tool.description == listed[name].description
            assert tool.parameters == listed[name].input_schema
        assert context.tools["echo"].description == "Echo a text."
        assert context.tools["echo"].parameters["required"] == ["text"]

        parent = ModelContextRegistry()
        parent.add_instruction("The parent.")
        parent.add_provider(frame, namespace="x")
        merged = parent.get_model_context()
        assert set(merged.tools) == {f"x_{name}" for name in SERVED_TOOLS}
        assert merged.tools["x_point"].parameters == context.tools["point"].parameters
        assert merged.system is not None
        assert "The parent." in merged.system
        assert INSTRUCTIONS in merged.system
        assert await merged.tools["x_echo"].invoke({"text": "via invoke"}) == "via invoke"
        assert await merged.call_tool("x_point", {"x": 1, "y": 2}) == {"x": 1, "y": 2}


@MODES
@pytest.mark.parametrize(
    ("tool", "args", "legacy", "modern"),
    [
        ("echo", {"text": "hi"}, "hi", "hi"),  # a lone text block: its string
        ("point", {"x": 1, "y": 2}, {"x": 1, "y": 2}, {"x": 1, "y": 2}),  # structuredContent
        # A list is structuredContent only on 2026-07-28; before, its JSON text.
        ("items", {}, '[1,"two",null]', [1, "two", None]),
        ("nothing", {}, None, None),  # no content
        ("nothing", None, None, None),
    ],
)
async def test_results(
    mode: str, tool: str, args: Any, legacy: Any, modern: Any, served: ModuleType
) -> None:
    async with in_process(served, mode=mode) as frame:
        assert await frame.call_tool(tool, args) == (modern if mode == "auto" else legacy)


@MODES
@pytest.mark.parametrize(
    ("tool", "args", "message"),
    [
        ("fail", {"message": "boom"}, "boom"),  # isError: the text
        ("echo", {"text": 3}, 'Invalid arguments for tool "echo"'),  # isError
        ("echo", {}, 'Invalid arguments for tool "echo"'),
        ("nope", {}, 'Tool "nope" not found'),  # an MCP error: its message
        ("echo", ["hi"], "must be a JSON object"),  # refused before it is sent
    ],
)
async def test_errors(mode: str, tool: str, args: Any, message: str, served: ModuleType) -> None:
    async with in_process(served, mode=mode) as frame:
        with pytest.raises(ToolCallError) as caught:
            await frame.call_tool(tool, args)
        assert message in caught.value.message
        assert caught.value.tool_name == tool
        assert "Traceback" not in caught.value.message
        assert frame.connected
        assert await frame.call_tool("echo", {"text": "still here"}) == "still here"


IMAGE = types.ImageContent(type="image", data="aGk=", mime_type="image/png")
RESULTS = {
    "structured": types.CallToolResult(
        content=[types.TextContent(type="text", text="not this")], structured_content={"a": 1}
    ),
    "text": types.CallToolResult(content=[types.TextContent(type="text", text="just text")]),
    "empty": types.CallToolResult(content=[]),
    "blocks": types.CallToolResult(
        content=[types.TextContent(type="text", text="one"), IMAGE],
    ),
    "image": types.CallToolResult(content=[IMAGE]),
    "error": types.CallToolResult(
        content=[types.TextContent(type="text", text="bad"), IMAGE], is_error=True
    ),
    "bare-error": types.CallToolResult(content=[], is_error=True),
}


def lowlevel_server() -> Server[Any]:
    """A low-level SDK server answering each tool with ``RESULTS[name]``; two tools a page."""
    names = sorted(RESULTS)

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        start = int(params.cursor) if params is not None and params.cursor else 0
        tools = [
            types.Tool(name=name, description=f"Gives {name}.", input_schema={"type": "object"})
            for name in names[start : start + 2]
        ]
        more = start + 2 < len(names)
        return types.ListToolsResult(tools=tools, next_cursor=str(start + 2) if more else None)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return RESULTS[params.name]

    return Server("lowlevel", on_list_tools=list_tools, on_call_tool=call_tool)


@MODES
async def test_result_mapping_and_paged_tool_list(mode: str) -> None:
    image = {"type": "image", "data": "aGk=", "mimeType": "image/png"}
    async with MCPFrameHost(lowlevel_server(), mode=mode) as frame:
        assert set(frame.get_model_context().tools) == set(RESULTS)  # all four pages
        assert frame.get_model_context().system is None
        outcomes: dict[str, Any] = {}
        for name in RESULTS:
            try:
                outcomes[name] = await frame.call_tool(name, {})
            except ToolCallError as exc:
                outcomes[name] = ("ToolCallError", exc.message)
    assert outcomes == {
        "structured": {"a": 1},  # structuredContent wins over the text
        "text": "just text",  # a lone text block: its string
        "empty": None,
        "blocks": [{"type": "text", "text": "one"}, image],  # otherwise the blocks
        "image": [image],
        "error": ("ToolCallError", "bad"),  # isError: the texts of its content
        "bare-error": ("ToolCallError", 'Tool "bare-error" failed'),
    }


# -- in-process: timeouts, cancellation, closing -------------------------------------------


@MODES
async def test_timeout_cancels_the_call_and_the_frame_stays_usable(
    mode: str, served: ModuleType
) -> None:
    async with in_process(served, mode=mode, timeout=0.1) as frame:
        started = time.monotonic()
        with pytest.raises(ToolCallTimeout) as caught:
            await frame.call_tool("sleep", {"seconds": 30})  # the frame's timeout
        assert time.monotonic() - started < GONE_WITHIN
        assert (caught.value.tool_name, caught.value.timeout) == ("sleep", 0.1)
        await wait_until(lambda: served.events == ["started", "cancelled"])

        # A call's own timeout, longer than the frame's.
        assert await frame.call_tool("sleep", {"seconds": 0.2}, timeout=WAIT) == "slept"
        with pytest.raises(ToolCallTimeout) as caught:
            await frame.call_tool("sleep", {"seconds": 30}, timeout=0.2)
        assert caught.value.timeout == 0.2
        assert frame.connected
        # Its own bound: the frame's 0.1 s is for the calls above, not a loaded machine.
        assert await frame.call_tool("echo", {"text": "after"}, timeout=WAIT) == "after"


@MODES
async def test_a_cancelled_caller_cancels_the_call(mode: str, served: ModuleType) -> None:
    async with in_process(served, mode=mode) as frame:
        outcome: list[str] = []

        async def caller() -> None:
            outcome.append(await frame.call_tool("sleep", {"seconds": 30}))

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as group:
                group.start_soon(caller)
                await wait_until(lambda: served.events == ["started"])
                group.cancel_scope.cancel()
        assert outcome == []
        await wait_until(lambda: served.events == ["started", "cancelled"])
        assert frame.connected
        assert await frame.call_tool("echo", {"text": "after"}) == "after"


@MODES
async def test_closing_fails_pending_calls_at_once(mode: str, served: ModuleType) -> None:
    server = MCPContextServer(served.registry)
    outcome: list[Any] = []
    async with server.running():
        frame = MCPFrameHost(server.server, mode=mode)

        async def caller() -> None:
            try:
                outcome.append(await frame.call_tool("sleep", {"seconds": 5}))
            except FrameDisconnected as exc:
                outcome.append(exc)

        with anyio.fail_after(1.0):
            async with anyio.create_task_group() as group:
                async with frame:
                    changes = Notified(frame)
                    group.start_soon(caller)
                    await wait_until(lambda: served.events == ["started"])
                assert frame.state == "closed"
    assert len(outcome) == 1
    assert isinstance(outcome[0], FrameDisconnected)
    assert dict(frame.get_model_context().tools) == {}
    assert changes.count == 1
    with anyio.fail_after(WAIT):
        await frame.wait_disconnected()
    with pytest.raises(FrameDisconnected):
        await frame.call_tool("echo", {"text": "closed"})


async def test_a_frame_is_entered_once(served: ModuleType) -> None:
    server = MCPContextServer(served.registry)
    async with server.running():
        frame = MCPFrameHost(server.server)
        async with frame:
            with pytest.raises(RuntimeError):
                await frame.__aenter__()
            assert frame.connected
        assert frame.state == "closed"
        await frame.aclose()  # idempotent
        with pytest.raises(RuntimeError):
            await frame.__aenter__()
        with pytest.raises(FrameDisconnected):
            await frame.call_tool("echo", {"text": "closed"})


# -- following the tool list ----------------------------------------------------------------


@MODES
async def test_follows_the_tool_list(mode: str, served: ModuleType) -> None:
    async with in_process(served, mode=mode) as frame:
        parent = ModelContextRegistry()
        parent.add_provider(frame, namespace="x")
        changes, parent_changes = Notified(frame), Notified(parent)
        # A call first: a change right after entering can be missed on 2026-07-28
        # (test_a_change_right_after_the_first_listing_is_not_lost).
        assert await parent.get_model_context().call_tool("x_echo", {"text": "hi"}) == "hi"

        handle = served.registry.add_tool("newt", lambda: "newt", description="A newt.")
        await changes.reach(1)
        assert frame.get_model_context().tools["newt"].description == "A newt."
        assert await parent.get_model_context().call_tool("x_newt", {}) == "newt"
        await parent_changes.reach(1)

        handle.update(description="A changed newt.")
        await changes.reach(2)
        assert frame.get_model_context().tools["newt"].description == "A changed newt."

        served.registry.add_instruction("Not about tools: no list change.")
        await frame.call_tool("echo", {"text": "neither is a call"})
        handle.remove()
        await changes.reach(3)
        assert set(frame.get_model_context().tools) == SERVED_TOOLS
        assert "x_newt" not in parent.get_model_context().tools
        await anyio.sleep(QUIET)
        assert changes.count == 3


async def test_a_change_right_after_the_first_listing_is_not_lost() -> None:
    bus = InMemorySubscriptionBus()
    names = ["first"]

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        listed = list(names)
        if names == ["first"]:  # the list changes just after the first listing
            names.append("second")
            await bus.publish(ToolsListChanged())
        return types.ListToolsResult(
            tools=[types.Tool(name=name, input_schema={"type": "object"}) for name in listed]
        )

    server = Server("racy", on_list_tools=list_tools, on_subscriptions_listen=ListenHandler(bus))
    async with MCPFrameHost(server, mode="auto") as frame:
        assert frame.client.server_capabilities.tools == types.ToolsCapability(list_changed=True)
        with suppress(TimeoutError):
            await wait_until(lambda: "second" in frame.get_model_context().tools, timeout=1.0)
        assert set(frame.get_model_context().tools) == {"first", "second"}


@MODES
@pytest.mark.parametrize("listen", [True, False], ids=["listen-served", "no-listen"])
async def test_poll_interval_follows_a_server_that_does_not_announce(
    mode: str, listen: bool
) -> None:
    # MCPServer announces no change made outside a request: only polling sees it.
    server = MCPServer(
        "sdk", instructions="The SDK's server.", subscriptions=None if listen else False
    )

    @server.tool()
    def count_words(text: str) -> int:
        """Count the words in a text."""
        return len(text.split())

    async with (
        MCPFrameHost(server, mode=mode, poll_interval=0.05) as polling,
        MCPFrameHost(server, mode=mode) as still,
    ):
        assert polling.get_model_context().system == "The SDK's server."
        tool = polling.get_model_context().tools["count_words"]
        assert tool.description == "Count the words in a text."
        assert tool.parameters["properties"]["text"]["type"] == "string"
        # The SDK gives an int result as structuredContent {"result": ...}.
        assert await polling.call_tool("count_words", {"text": "a b c"}) == {"result": 3}

        changes, unchanged = Notified(polling), Notified(still)
        server.add_tool(lambda text: text[::-1], name="reverse", description="Reverse.")
        await changes.reach(1)
        assert "reverse" in polling.get_model_context().tools
        assert await polling.call_tool("reverse", {"text": "abc"}) == "cba"
        await anyio.sleep(QUIET)  # several polls that find nothing new
        assert changes.count == 1
        assert "reverse" not in still.get_model_context().tools
        assert unchanged.count == 0

        server.remove_tool("reverse")
        await changes.reach(2)
        assert set(polling.get_model_context().tools) == {"count_words"}


# -- over stdio and Streamable HTTP ---------------------------------------------------------

WIRES = pytest.mark.parametrize("kind", ["stdio", "http"])


@WIRES
@MODES
async def test_over_the_wire_until_killed_mid_call(kind: str, mode: str, mod_dir: Path) -> None:
    async with over_the_wire(kind, mod_dir, mode=mode) as (frame, pid):
        assert (frame.protocol_version in MODERN_PROTOCOL_VERSIONS) == (mode == "auto")
        context = frame.get_model_context()
        assert set(context.tools) == SERVED_TOOLS
        assert context.system == INSTRUCTIONS
        assert await frame.call_tool("whoami") == f"{pid} {ENV['MCPFRAME_TEST']}"  # env=
        assert await frame.call_tool("point", {"x": 3, "y": 4}) == {"x": 3, "y": 4}
        with pytest.raises(ToolCallError, match="boom"):
            await frame.call_tool("fail", {"message": "boom"})
        with pytest.raises(ToolCallTimeout):
            await frame.call_tool("sleep", {"seconds": 30}, timeout=0.2)

        parent = ModelContextRegistry()
        parent.add_provider(frame, namespace="x")
        changes, parent_changes = Notified(frame), Notified(parent)
        await frame.call_tool("grow", {"name": "newt"})  # the server changes its own list
        await changes.reach(1)
        assert await parent.get_model_context().call_tool("x_newt", {}) == "newt"
        await frame.call_tool("shrink", {"name": "newt"})
        await changes.reach(2)
        assert set(frame.get_model_context().tools) == SERVED_TOOLS

        started = time.monotonic()
        with pytest.raises(FrameDisconnected):
            await frame.call_tool("die")  # SIGKILLs the server while the call is pending
        assert time.monotonic() - started < GONE_WITHIN
        await assert_gone(frame, changes, parent_changes)
        assert dict(parent.get_model_context().tools) == {}
        await anyio.sleep(QUIET)
        assert changes.count == 3
    assert frame.state == "closed"
    assert not alive(pid)  # reaped


@MODES
async def test_http_server_killed_between_calls(mode: str, mod_dir: Path) -> None:
    # 2026-07-28: the change stream breaks; handshake era: the keep-alive ping fails.
    wire = over_the_wire("http", mod_dir, mode=mode, keepalive=0.2)
    async with wire as (frame, pid):
        changes = Notified(frame)
        os.kill(pid, signal.SIGKILL)
        await assert_gone(frame, changes)


async def test_leaving_after_the_http_server_died(mod_dir: Path) -> None:
    async with http_server(serve_command("--mcp-http", "127.0.0.1:0"), mod_dir) as (url, _):
        async with MCPFrameHost(url) as frame:
            with pytest.raises(FrameDisconnected):
                await frame.call_tool("die")
        assert frame.state == "closed"


@MODES
async def test_modern_http_server_without_list_changed_stays_connected(
    mode: str, tmp_path: Path
) -> None:
    (tmp_path / "plain.py").write_text(PLAIN, encoding="utf-8")
    async with (
        http_server([sys.executable, "plain.py"], tmp_path) as (url, _),
        # Each probe must answer within the interval: 1 s, for a loaded machine.
        MCPFrameHost(url, mode=mode, keepalive=1.0) as frame,
    ):
        assert frame.client.server_capabilities.tools == types.ToolsCapability(list_changed=False)
        with anyio.move_on_after(3 * 1.0):  # three probes
            await frame.wait_disconnected()
        assert frame.state == "connected"
        assert await frame.call_tool("echo", {"text": "alive"}) == {"result": "alive"}


@pytest.mark.parametrize("form", ["StdioServerParameters", "transport"])
async def test_leaving_stops_the_subprocess(form: str, mod_dir: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=serve_command("--mcp-stdio")[1:], cwd=mod_dir
    )
    if form == "transport":  # left by the end of the block
        async with MCPFrameHost(stdio_client(params)) as frame:
            pid = int((await frame.call_tool("whoami")).split()[0])
            assert alive(pid)
    else:  # left by aclose()
        frame = MCPFrameHost(params)
        await frame.__aenter__()
        try:
            pid = int((await frame.call_tool("whoami")).split()[0])
            assert alive(pid)
        finally:
            await frame.aclose()
    assert frame.state == "closed"
    assert not alive(pid)  # stopped and reaped
    with pytest.raises(FrameDisconnected):
        await frame.call_tool("whoami")


# -- connect errors --------------------------------------------------------------------------


async def test_nonexistent_command(tmp_path: Path) -> None:
    with anyio.fail_after(WAIT), pytest.raises(ConnectError):
        async with MCPFrameHost([str(tmp_path / "no-such-server")]):
            pytest.fail("entered")


async def test_refused_port() -> None:
    with anyio.fail_after(WAIT), pytest.raises(ConnectError):
        async with MCPFrameHost(f"http://127.0.0.1:{free_port()}/mcp"):
            pytest.fail("entered")


async def test_command_that_exits_at_once() -> None:
    with anyio.fail_after(WAIT), pytest.raises(ConnectError):
        async with MCPFrameHost([sys.executable, "-c", "pass"]):
            pytest.fail("entered")


async def test_connect_timeout_stops_a_server_that_never_answers(tmp_path: Path) -> None:
    # It never answers, and leaves when its stdin closes.
    code = "import os, sys; open('pid', 'w').write(str(os.getpid())); sys.stdin.read()"
    command = f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}"  # a shell-style string
    started = time.monotonic()
    with anyio.fail_after(WAIT), pytest.raises(ConnectError, match="no answer within 1 s"):
        async with MCPFrameHost(command, cwd=tmp_path, connect_timeout=1):
            pytest.fail("entered")
    assert time.monotonic() - started < 1 + GONE_WITHIN
    assert not alive(int((tmp_path / "pid").read_text()))


@MODES
async def test_a_server_that_cannot_list_its_tools(mode: str) -> None:
    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        raise RuntimeError("the tool catalogue is down")

    server = Server("broken", on_list_tools=list_tools)
    frame = MCPFrameHost(server, mode=mode)
    with anyio.fail_after(WAIT), pytest.raises(ConnectError, match="Cannot list the tools"):
        async with frame:
            pytest.fail("entered")
    assert frame.state == "closed"


@MODES
async def test_a_result_that_breaks_its_output_schema(mode: str) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}

    async def list_tools(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        tool = types.Tool(name="count", input_schema={"type": "object"}, output_schema=schema)
        return types.ListToolsResult(tools=[tool])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[], structured_content={"n": "many"})

    server = Server("liar", on_list_tools=list_tools, on_call_tool=call_tool)
    async with MCPFrameHost(server, mode=mode) as frame:
        with pytest.raises(ToolCallError, match='invalid result for tool "count"'):
            await frame.call_tool("count", {})
        assert frame.connected
