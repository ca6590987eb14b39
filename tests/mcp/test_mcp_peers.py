"""MCP interop with peers we did not write, each a real subprocess.

- ``mcp-server-time`` (PyPI, pinned in the ``test`` extra): consumed by ``MCPFrameHost``.
- ``@modelcontextprotocol/server-everything`` (npm, pinned in ``tests/mcp_peers``):
  consumed by ``MCPFrameHost`` over stdio and Streamable HTTP.
- The MCP Inspector CLI (npm, same place): a client we did not write, against
  ``python -m assistant_frames serve --mcp-stdio`` and ``--mcp-http``.
- The official ``mcp.Client``, against a ``serve --mcp`` federation of the two servers.

A missing peer (node, ``tests/mcp_peers/node_modules`` when ``npm ci`` cannot install it,
or ``mcp-server-time``) skips the tests that need it, unless ``CI`` or
``ASSISTANT_FRAMES_REQUIRE_PEERS=1`` is set: then they fail, as the browser tests do.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import anyio
import pytest
from npm_peers import PEERS_DIR, node_with, peers_required, unavailable

from assistant_frames import (
    FrameDisconnected,
    ModelContextRegistry,
    ToolCallError,
    ToolEvent,
    ToolLog,
    ToolProgress,
)

from helpers import free_port, wait_until

try:
    import mcp_types
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.shared.exceptions import MCPError

    from assistant_frames.mcp import MCPFrameHost
except ImportError as exc:  # pragma: no cover - depends on the environment
    if peers_required():
        raise
    pytest.skip(f"MCP peer tests skipped: {exc}", allow_module_level=True)

pytestmark = pytest.mark.anyio

NODE_MODULES = PEERS_DIR / "node_modules" / "@modelcontextprotocol"
EVERYTHING_JS = NODE_MODULES / "server-everything" / "dist" / "index.js"
INSPECTOR_JS = NODE_MODULES / "inspector" / "clients" / "launcher" / "build" / "index.js"
TIME_SCRIPT = Path(sys.executable).parent / "mcp-server-time"
TIMEOUT = 15.0  # every bounded wait; the peers need well under 3 s
MARKER_VAR = "ASSISTANT_FRAMES_PEER_MARKER"
MODES = ["auto", "legacy"]  # of MCPFrameHost and mcp.Client; auto negotiates 2026-07-28 if it can


# -- the peers ---------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def time_server() -> list[str]:
    """The ``mcp-server-time`` command, with a fixed local timezone."""
    if not TIME_SCRIPT.exists():
        unavailable(f"{TIME_SCRIPT} is missing (pip install -e '.[test]')")
    return [str(TIME_SCRIPT), "--local-timezone", "UTC"]


@pytest.fixture(scope="session")
def node() -> str:
    """Node, with the pinned npm peers installed (``npm ci`` first when they are missing)."""
    return node_with((EVERYTHING_JS, INSPECTOR_JS))


@pytest.fixture(scope="session")
def everything(node: str) -> list[str]:
    """server-everything over stdio."""
    return [node, str(EVERYTHING_JS), "stdio"]


def marked(command: list[str], marker: str) -> list[str]:
    """``command`` run through ``env`` with ``marker``, so that its process can be found."""
    return [shutil.which("env") or "/usr/bin/env", f"{MARKER_VAR}={marker}", *command]


def peer_pids(marker: str) -> list[int]:
    """The live processes whose environment holds ``marker`` (Linux ``/proc``)."""
    if not Path("/proc/self/environ").exists():
        pytest.skip("finding a peer's process needs Linux /proc")
    entry = f"{MARKER_VAR}={marker}".encode()
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                environ = (proc / "environ").read_bytes()
            except OSError:
                continue
            if entry in environ.split(b"\0"):
                pids.append(int(proc.name))
    return pids


def kill_peer(marker: str) -> None:
    (pid,) = peer_pids(marker)
    os.kill(pid, signal.SIGKILL)


# -- A. mcp-server-time as a frame -------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_time_server_as_a_frame(time_server: list[str], mode: str) -> None:
    marker = uuid.uuid4().hex
    frame = MCPFrameHost(
        time_server, name="time", mode=mode, timeout=TIMEOUT, env={MARKER_VAR: marker}
    )
    parent = ModelContextRegistry()
    async with frame:
        assert frame.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
        context = frame.get_model_context()
        assert context.system is None  # the server gives no instructions
        assert sorted(context.tools) == ["convert_time", "get_current_time"]
        schema = context.tools["get_current_time"].parameters
        assert schema["required"] == ["timezone"]
        assert schema["properties"]["timezone"]["type"] == "string"
        assert context.tools["convert_time"].parameters["required"] == [
            "source_timezone",
            "time",
            "target_timezone",
        ]

        parent.add_provider(frame, namespace="time")
        merged = parent.get_model_context()
        assert sorted(merged.tools) == ["time_convert_time", "time_get_current_time"]
        now = await merged.call_tool("time_get_current_time", {"timezone": "UTC"})
        assert set(now) == {"timezone", "datetime", "day_of_week", "is_dst"}
        assert now["timezone"] == "UTC"
        assert now["datetime"].endswith("+00:00")
        converted = await merged.call_tool(
            "time_convert_time",
            {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
        )
        assert converted["target"]["datetime"].endswith("T21:00:00+09:00")

        with pytest.raises(ToolCallError) as bad_zone:
            await merged.call_tool("time_get_current_time", {"timezone": "Mars/Olympus_Mons"})
        assert bad_zone.value.message.startswith(
            "Error executing tool get_current_time: Invalid timezone:"
        )
        assert bad_zone.value.tool_name == "get_current_time"  # the server's own name
        with pytest.raises(ToolCallError, match="Unknown tool: nope"):
            await frame.call_tool("nope", {})
        assert peer_pids(marker)
    assert frame.state == "closed"
    assert parent.get_model_context().tools == {}
    await wait_until(lambda: not peer_pids(marker), TIMEOUT)  # the server was stopped


async def test_time_server_killed_mid_session(time_server: list[str]) -> None:
    marker = uuid.uuid4().hex
    frame = MCPFrameHost(time_server, name="time", timeout=TIMEOUT, env={MARKER_VAR: marker})
    parent = ModelContextRegistry()
    parent.add_provider(frame, namespace="time")
    seen: list[list[str]] = []
    parent.subscribe(lambda: seen.append(sorted(parent.get_model_context().tools)))
    async with frame:
        before = parent.get_model_context()
        assert "time_get_current_time" in before.tools
        kill_peer(marker)
        await wait_until(lambda: frame.state == "disconnected", TIMEOUT)
        assert parent.get_model_context().tools == {}
        assert seen[-1] == []  # subscribers were told that the tools left
        with anyio.fail_after(TIMEOUT), pytest.raises(FrameDisconnected, match="went away"):
            await before.call_tool("time_get_current_time", {"timezone": "UTC"})
        with anyio.fail_after(TIMEOUT), pytest.raises(FrameDisconnected, match="went away"):
            await frame.call_tool("get_current_time", {"timezone": "UTC"})


# -- B. server-everything as a frame -----------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_everything_server_over_stdio(everything: list[str], mode: str) -> None:
    frame = MCPFrameHost(everything, name="every", mode=mode, timeout=TIMEOUT)
    # The server registers simulate-research-query when the client's
    # notifications/initialized arrives, and sends notifications/tools/list_changed. It
    # registers it at once, so the frame's first listing already has it; hiding it from that
    # listing replays the race in which the listing comes first, which the frame must
    # recover from by following the server's (real) notification.
    list_tools = frame.client.list_tools
    listings = 0

    async def first_listing_without_the_late_tool(*args: Any, **kwargs: Any) -> Any:
        nonlocal listings
        page = await list_tools(*args, **kwargs)
        listings += 1
        if listings == 1:
            early = [tool for tool in page.tools if tool.name != "simulate-research-query"]
            page = page.model_copy(update={"tools": early})
        return page

    frame.client.list_tools = first_listing_without_the_late_tool  # type: ignore[method-assign]
    seen: list[set[str]] = []
    frame.subscribe(lambda: seen.append(set(frame.get_model_context().tools)))
    async with frame:
        assert frame.protocol_version == "2025-11-25"  # the only version this server speaks
        assert str(frame.get_model_context().system).startswith("# Everything Server")
        await wait_until(
            lambda: "simulate-research-query" in frame.get_model_context().tools, TIMEOUT
        )
        assert listings >= 2  # listed again because the server said so (nothing polls)
        assert "echo" in seen[0]
        assert "simulate-research-query" not in seen[0]
        assert "simulate-research-query" in seen[-1]  # subscribers were told

        assert await frame.call_tool("echo", {"message": "hello"}) == "Echo: hello"
        with pytest.raises(ToolCallError, match="Invalid arguments for tool echo"):
            await frame.call_tool("echo", {"message": 5})
        with pytest.raises(ToolCallError, match="Tool nope not found"):
            await frame.call_tool("nope", {})


async def test_everything_server_over_http(node: str, tmp_path: Path) -> None:
    # Only list and call: over HTTP this server's list_changed notification is lost.
    port = free_port()
    log = tmp_path / "everything.log"
    # It listens on all interfaces (it has no host option); the test reaches it on 127.0.0.1.
    with log.open("wb") as stderr:
        process = await anyio.open_process(
            [node, str(EVERYTHING_JS), "streamableHttp"],
            env={**os.environ, "PORT": str(port)},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        ready = f"MCP Streamable HTTP Server listening on port {port}"
        await wait_until(lambda: ready in log.read_text() or process.returncode is not None)
        assert process.returncode is None, log.read_text()
        async with MCPFrameHost(f"http://127.0.0.1:{port}/mcp", timeout=TIMEOUT) as frame:
            assert "echo" in frame.get_model_context().tools
            assert await frame.call_tool("echo", {"message": "over http"}) == "Echo: over http"
            with pytest.raises(ToolCallError, match="Tool nope not found"):
                await frame.call_tool("nope", {})
    finally:
        process.terminate()
        with anyio.move_on_after(TIMEOUT):
            await process.wait()
        if process.returncode is None:
            process.kill()
        await process.aclose()


@pytest.mark.parametrize("mode", MODES)
async def test_everything_servers_progress_reaches_the_caller(
    everything: list[str], mode: str
) -> None:
    """trigger-long-running-operation's notifications/progress, through MCPFrameHost and a
    parent registry, arrive as ToolProgress; its simulated logs reach subscribers."""
    frame = MCPFrameHost(everything, name="every", mode=mode, timeout=TIMEOUT)
    parent = ModelContextRegistry()
    parent.add_provider(frame, namespace="every")
    events: list[ToolEvent] = []
    server_logs: list[ToolEvent] = []
    async with frame:
        frame.subscribe_tool_events(server_logs.append)
        with anyio.fail_after(TIMEOUT):
            result = await parent.get_model_context().call_tool(
                "every_trigger-long-running-operation",
                {"duration": 0.3, "steps": 3},
                on_event=events.append,
            )
        assert "Long running operation completed" in str(result)
        assert [(e.progress, e.total) for e in events if isinstance(e, ToolProgress)] == [
            (1, 3),
            (2, 3),
            (3, 3),
        ]
        assert {e.tool_name for e in events} == {"every_trigger-long-running-operation"}
        # The connection's subscribers saw the same progress, under the frame's name.
        assert [e.progress for e in server_logs if isinstance(e, ToolProgress)] == [1, 2, 3]
        # Logs name no call in MCP: they go to the connection's subscribers.
        with anyio.fail_after(TIMEOUT):
            await frame.call_tool("toggle-simulated-logging", {})
            await wait_until(lambda: any(isinstance(e, ToolLog) for e in server_logs), TIMEOUT)
        log = next(e for e in server_logs if isinstance(e, ToolLog))
        assert log.tool_call_id is None
        assert log.level.capitalize() in str(log.message)  # e.g. "Info-level message"


# -- C. our server, consumed by the MCP Inspector CLI (no event loop here: run once) -----------

SERVED_MODULE = '''
from assistant_frames import ModelContextRegistry

registry = ModelContextRegistry()


@registry.tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@registry.tool
def explode() -> None:
    """Always fails."""
    raise RuntimeError("the fuse was lit")
'''
ADD_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
}
SERVE = [sys.executable, "-m", "assistant_frames", "serve", "peer_tools:registry"]


@pytest.fixture
def served_dir(tmp_path: Path) -> Path:
    (tmp_path / "peer_tools.py").write_text(SERVED_MODULE)
    (tmp_path / "home").mkdir()
    return tmp_path


class Run(NamedTuple):
    """One Inspector CLI run: its exit status, its JSON ``result`` and ``error`` (or None)."""

    code: int
    result: Any
    error: Any
    stderr: str


def json_line(text: str, key: str) -> Any:
    """``key`` of the last line of ``text`` that is a JSON object holding it, or None."""
    for line in reversed(text.splitlines()):
        with contextlib.suppress(ValueError):
            value = json.loads(line)
            if isinstance(value, dict) and key in value:
                return value[key]
    return None


def inspector(node: str, cwd: Path, *args: str) -> Run:
    """Run the Inspector CLI (``--format json -q``) with ``args``."""
    done = subprocess.run(
        [node, str(INSPECTOR_JS), "--cli", "--format", "json", "-q", *args],
        cwd=cwd,
        env={**os.environ, "HOME": str(cwd / "home")},  # its catalog and storage stay in tmp
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return Run(
        done.returncode,
        json_line(done.stdout, "result"),
        json_line(done.stderr, "error"),
        done.stderr,
    )


def stdio_inspector(node: str, cwd: Path, *args: str) -> Run:
    return inspector(node, cwd, "--cwd", str(cwd), *args, "--", *SERVE, "--mcp-stdio")


def test_inspector_lists_our_stdio_server(node: str, served_dir: Path) -> None:
    run = stdio_inspector(node, served_dir, "--method", "tools/list")
    assert run.code == 0, run.stderr
    tools = {tool["name"]: tool for tool in run.result["tools"]}
    assert sorted(tools) == ["add", "explode"]
    assert tools["add"]["inputSchema"] == ADD_SCHEMA
    assert tools["add"]["description"] == "Add two numbers."


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_inspector_calls_our_stdio_server(node: str, served_dir: Path, era: str) -> None:
    run = stdio_inspector(
        node,
        served_dir,
        *("--protocol-era", era, "--method", "tools/call", "--tool-name", "add"),
        *("--tool-arg", "a=2", "b=3"),
    )
    assert run.code == 0, run.stderr
    assert run.result["content"] == [{"type": "text", "text": "5"}]
    if era == "modern":  # 2026-07-28 carries any JSON value as structured content
        assert run.result["structuredContent"] == 5
    assert not run.result.get("isError")


def test_inspector_sees_our_tool_errors(node: str, served_dir: Path) -> None:
    run = stdio_inspector(node, served_dir, "--method", "tools/call", "--tool-name", "explode")
    assert run.code == 5, run.stderr
    assert run.result == {
        "content": [{"type": "text", "text": "the fuse was lit"}],
        "isError": True,
    }
    assert run.error["code"] == "tool_is_error"

    run = stdio_inspector(node, served_dir, "--method", "tools/call", "--tool-name", "nope")
    assert run.code == 5, run.stderr
    assert run.error["code"] == "tool_not_found"


class Served:
    """``serve ... --mcp-http 127.0.0.1:0`` in the background, its stderr in a file."""

    def __init__(self, cwd: Path) -> None:
        self.log = cwd / "serve.log"
        with self.log.open("wb") as stderr:
            self.process = subprocess.Popen(
                [*SERVE, "--mcp-http", "127.0.0.1:0"],
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )

    def url(self) -> str:
        """The URL that serve printed once listening."""
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline and self.process.poll() is None:
            match = re.search(r"over MCP at (http://\S+?);", self.log.read_text())
            if match:
                return match.group(1)
            time.sleep(0.05)
        raise AssertionError(f"serve printed no URL: {self.log.read_text()!r}")

    def stop(self) -> int:
        """SIGTERM, then the exit status (killed if it does not exit in time)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=TIMEOUT)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait(timeout=5)


@pytest.fixture
def served_http(served_dir: Path) -> Iterator[Served]:
    served = Served(served_dir)
    try:
        yield served
    finally:
        served.stop()


def test_inspector_against_our_http_server(
    node: str, served_dir: Path, served_http: Served
) -> None:
    url = served_http.url()
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/mcp", url)
    over_http = ("--server-url", url, "--transport", "http")
    run = inspector(node, served_dir, *over_http, "--method", "tools/list")
    assert run.code == 0, run.stderr
    assert {tool["name"]: tool["inputSchema"] for tool in run.result["tools"]} == {
        "add": ADD_SCHEMA,
        "explode": {"type": "object", "properties": {}},
    }
    run = inspector(
        node,
        served_dir,
        *over_http,
        *("--method", "tools/call", "--tool-name", "add", "--tool-args-json", '{"a":2,"b":3}'),
    )
    assert run.code == 0, run.stderr
    assert run.result["content"] == [{"type": "text", "text": "5"}]


# -- D. a federation of both servers, consumed by the official mcp.Client ----------------------


@pytest.mark.parametrize("mode", MODES)
async def test_federation_consumed_by_the_mcp_client(
    time_server: list[str], everything: list[str], mode: str, tmp_path: Path
) -> None:
    marker = uuid.uuid4().hex
    serve = StdioServerParameters(
        command=sys.executable,
        args=[
            *("-m", "assistant_frames", "serve", "--mcp-stdio"),
            *("--mcp", f"time={shlex.join(time_server)}"),
            *("--mcp", f"every={shlex.join(marked(everything, marker))}"),
        ],
        cwd=tmp_path,
    )
    told = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, mcp_types.ToolListChangedNotification):
            told.set()

    async def tool_names(client: Client) -> set[str]:
        return {tool.name for tool in (await client.list_tools()).tools}

    with anyio.fail_after(4 * TIMEOUT):
        async with Client(stdio_client(serve), mode=mode, message_handler=on_message) as client:
            assert client.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
            for _ in range(int(TIMEOUT / 0.05)):  # the server registers this tool late
                names = await tool_names(client)
                if "every_simulate-research-query" in names:
                    break
                await anyio.sleep(0.05)
            assert "every_simulate-research-query" in names
            assert {"time_get_current_time", "time_convert_time", "every_echo"} <= names
            assert all(name.startswith(("time_", "every_")) for name in names)

            now = await client.call_tool("time_get_current_time", {"timezone": "UTC"})
            assert not now.is_error
            assert now.structured_content is not None
            assert now.structured_content["timezone"] == "UTC"
            echoed = await client.call_tool("every_echo", {"message": "hi"})
            assert echoed.content == [mcp_types.TextContent(type="text", text="Echo: hi")]

            # simulate-research-query is in the federation from the start (the frame lists
            # the server's tools after it registered the tool), so no change reaches the
            # client for it. A change it must hear of: the everything server dies.
            told = anyio.Event()
            if mode == "auto":  # 2026-07-28: the change comes on the listen stream
                async with client.listen(tools_list_changed=True) as changes:
                    kill_peer(marker)
                    with anyio.fail_after(TIMEOUT):
                        await changes.__anext__()
            else:  # handshake era: notifications/tools/list_changed
                kill_peer(marker)
                with anyio.fail_after(TIMEOUT):
                    await told.wait()
            assert await tool_names(client) == {"time_get_current_time", "time_convert_time"}
            with pytest.raises(MCPError, match='Tool "every_echo" not found'):
                await client.call_tool("every_echo", {"message": "hi"})
            still = await client.call_tool("time_get_current_time", {"timezone": "UTC"})
            assert still.structured_content is not None
            assert still.structured_content["timezone"] == "UTC"
