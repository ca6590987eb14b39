"""``connect(target)``: every kind of target, for real, and the error for a peer that is
not a frame.

Targets: a registry in this process, a frame served by ``websocket_server`` on
127.0.0.1, the demo worker started as a list and as a string, an MCP server started as
a command (``serve --mcp-stdio``) and one served over Streamable HTTP. Every wait is
bounded.
"""

from __future__ import annotations

import os
import shlex
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest

from assistant_frames import (
    AssistantFrameHost,
    AssistantFrameProvider,
    ConnectError,
    ContextTimeout,
    FrameConnection,
    HandshakeRejected,
    ModelContextRegistry,
    ToolCallError,
    connect,
)
from assistant_frames.federation.targets import FrameTarget, no_context
from assistant_frames.transports import WebSocketTransport, websocket_server

from helpers import calculator

pytestmark = pytest.mark.anyio

WAIT = 20.0  # bound of every block that should succeed (subprocesses start slowly)
WORKER = [sys.executable, "-m", "assistant_frames._demo_worker"]
MCP_SERVER = [
    *(sys.executable, "-m", "assistant_frames", "serve"),
    *("--mcp-stdio", "assistant_frames._demo_worker:registry"),
]
NOT_A_FRAME = [sys.executable, "-c", "print('hello'); print('x'); import time; time.sleep(30)"]


async def test_a_registry_in_this_process() -> None:
    with anyio.fail_after(WAIT):
        async with connect(calculator(), name="calc") as connection:
            assert isinstance(connection, FrameConnection)
            assert isinstance(connection, AssistantFrameHost)
            assert connection.name == "calc"
            # It holds the first context already: nothing to wait for.
            assert list(connection.get_model_context().tools) == ["add"]
            assert await connection.call_tool("add", {"a": 2, "b": 3}) == 5
        assert connection.state == "closed"


async def test_a_frame_provider_and_a_parent_registry() -> None:
    parent = ModelContextRegistry()
    with anyio.fail_after(WAIT):
        async with connect(AssistantFrameProvider(calculator())) as connection:
            parent.add_provider(connection, namespace="calc")
            assert await parent.get_model_context().call_tool("calc_add", {"a": 1, "b": 1}) == 2
    assert parent.get_model_context().tools == {}


async def test_a_websocket_url() -> None:
    frame = AssistantFrameProvider(calculator())
    with anyio.fail_after(WAIT):
        async with websocket_server(frame.serve, "127.0.0.1", 0, token="t0k") as server:
            assert server.url.startswith("ws://127.0.0.1:")
            async with connect(server.url, token="t0k") as connection:
                assert connection.name == server.url
                assert await connection.call_tool("add", {"a": 6, "b": 7}) == 13
            # A wrong token: the server's refusal, not a timeout.
            with pytest.raises(ConnectError, match="401"):
                async with connect(server.url, token="wrong"):
                    pass


def shown(command: list[str]) -> str:
    """A command as frame names show it: the program without its directory."""
    return shlex.join([os.path.basename(command[0]), *command[1:]])


@pytest.mark.parametrize("form", ["list", "string"])
async def test_a_worker_command(form: str) -> None:
    command: Any = WORKER if form == "list" else shlex.join(WORKER)
    with anyio.fail_after(WAIT):
        async with connect(command) as connection:
            assert connection.name == f"worker `{shown(WORKER)}`"
            context = connection.get_model_context()
            assert set(context.tools) == {"fibonacci", "slow_report"}
            assert context.system == "Heavy computation runs in a separate worker process."
            assert await connection.call_tool("fibonacci", {"n": 10}) == 55
            with pytest.raises(ToolCallError, match="between 0 and 10000"):
                await connection.call_tool("fibonacci", {"n": -1})


async def test_a_python_script_runs_with_this_interpreter(tmp_path: Path) -> None:
    script = tmp_path / "worker.py"
    script.write_text(
        "from assistant_frames import ModelContextRegistry\n"
        "from assistant_frames.frames import serve_stdio\n"
        "import anyio\n"
        "registry = ModelContextRegistry()\n"
        "registry.add_tool('which', lambda: __import__('sys').executable)\n"
        "anyio.run(serve_stdio, registry)\n"
    )
    with anyio.fail_after(WAIT):
        async with connect(f"{script} --flag") as connection:  # as FastMCP's Client("x.py")
            assert connection.name == f"worker `{shown([sys.executable, str(script)])} --flag`"
            assert await connection.call_tool("which") == sys.executable


async def test_an_mcp_server_command() -> None:
    from assistant_frames.mcp import MCPFrameHost

    with anyio.fail_after(WAIT):
        async with connect(shlex.join(MCP_SERVER), mcp=True) as connection:
            assert isinstance(connection, MCPFrameHost)
            assert set(connection.get_model_context().tools) == {"fibonacci", "slow_report"}
            assert await connection.call_tool("fibonacci", {"n": 12}) == 144


@asynccontextmanager
async def http_served(registry: ModelContextRegistry, **options: Any) -> AsyncIterator[str]:
    """An MCP server for ``registry`` over Streamable HTTP on 127.0.0.1; yield its URL."""
    from assistant_frames.mcp import MCPContextServer

    urls: list[str] = []
    listening = anyio.Event()

    def ready(url: str) -> None:
        urls.append(url)
        listening.set()

    server = MCPContextServer(registry)
    async with anyio.create_task_group() as group:
        group.start_soon(partial(server.run_http, "127.0.0.1", 0, ready=ready, **options))
        with anyio.fail_after(WAIT):
            await listening.wait()
        yield urls[0]
        group.cancel_scope.cancel()


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # run_http is uvicorn's: asyncio
async def test_an_mcp_server_url() -> None:
    from assistant_frames.mcp import MCPFrameHost

    async with http_served(calculator()) as url:
        with anyio.fail_after(WAIT):
            # The rule: an http(s):// URL is an MCP server, no flag needed.
            async with connect(url) as connection:
                assert isinstance(connection, MCPFrameHost)
                assert await connection.call_tool("add", {"a": 20, "b": 22}) == 42


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # run_http is uvicorn's: asyncio
async def test_an_mcp_server_url_with_a_token() -> None:
    async with http_served(calculator(), token="s3cret") as url:
        with anyio.fail_after(WAIT):
            async with connect(url, token="s3cret") as connection:
                assert await connection.call_tool("add", {"a": 1, "b": 2}) == 3
            with pytest.raises(HandshakeRejected) as refused:
                async with connect(url, token="wrong"):
                    pass
            assert refused.value.status == 401


# -- not a frame -------------------------------------------------------------------------------


async def test_a_process_that_is_not_a_frame_times_out_saying_what_it_wrote() -> None:
    started = time.monotonic()
    with anyio.fail_after(WAIT), pytest.raises(ContextTimeout) as caught:
        async with connect(NOT_A_FRAME, connect_timeout=1.0):
            pytest.fail("connected to a process that is not a frame")
    assert time.monotonic() - started < 1.0 + 1.5  # the process is stopped at once
    error = caught.value
    assert isinstance(error, TimeoutError)
    assert error.frame == f"worker `{shown(NOT_A_FRAME)}`"
    assert error.message == str(error)
    assert str(error) == (
        f"worker `{shown(NOT_A_FRAME)}` sent no model context within 1 s (it wrote 2 "
        "lines that are not JSON, the first: 'hello'): is it an assistant-frames frame?"
    )


async def test_a_silent_process_received_nothing() -> None:
    silent = [sys.executable, "-c", "import time; time.sleep(30)"]
    with anyio.fail_after(WAIT), pytest.raises(ContextTimeout, match=r"\(received nothing\)"):
        async with connect(silent, connect_timeout=0.5):
            pass


def test_an_mcp_target_that_sent_no_context_asks_whether_it_is_an_mcp_server() -> None:
    silent = [sys.executable, "-c", "import time; time.sleep(30)"]
    asked = {True: "is it an MCP server?", None: "is it an assistant-frames frame?"}
    for mcp, question in asked.items():
        error = no_context(FrameTarget(silent, mcp=mcp), None, 0.5)
        assert isinstance(error, ContextTimeout)
        assert str(error).endswith(f"within 0.5 s (received nothing): {question}")


async def test_a_process_that_exits_first() -> None:
    exits = [sys.executable, "-c", "print('hello')"]
    with anyio.fail_after(WAIT), pytest.raises(ConnectError) as caught:
        async with connect(exits, connect_timeout=5.0):
            pass
    assert str(caught.value).startswith(f"worker `{shown(exits)}` sent no model context (")
    assert "the first: 'hello'; is it an assistant-frames frame?)" in str(caught.value)
    assert str(caught.value).endswith("exited with code 0")


async def test_a_websocket_peer_on_another_channel() -> None:
    async def chatter(transport: WebSocketTransport) -> None:
        await transport.send({"jsonrpc": "2.0", "method": "hello"})
        await transport.send({"jsonrpc": "2.0", "method": "again"})
        # Then it reads (and ignores) what comes, as a live peer does, so it answers the
        # client's closing handshake: a peer that never reads makes that close wait out
        # its bound (2 s), which this test is not about.
        with suppress(Exception):
            while True:
                await transport.receive()

    with anyio.fail_after(WAIT):
        async with websocket_server(chatter, "127.0.0.1", 0) as server:
            with pytest.raises(ContextTimeout) as caught:
                async with connect(server.url, connect_timeout=1.0):
                    pass
    assert str(caught.value) == (
        f"{server.url} sent no model context within 1 s (it sent 2 messages that are not "
        "frame messages, the first: {'jsonrpc': '2.0', 'method': 'hello'}): is it an "
        "assistant-frames frame?"
    )


async def test_a_command_that_cannot_start(tmp_path: Any) -> None:
    missing = str(tmp_path / "no-such-program")
    with anyio.fail_after(WAIT), pytest.raises(ConnectError, match="cannot start the worker"):
        async with connect([missing]):
            pass


@pytest.mark.parametrize(
    ("target", "options", "error", "message"),
    [
        ("http://127.0.0.1:9/mcp", {"mcp": False}, ValueError, "reached over ws://"),
        ("ws://127.0.0.1:9", {"mcp": True}, ValueError, "http\\(s\\):// URL or a command"),
        ("ftp://example.com", {}, ValueError, "use ws://, wss://, http://, https:// or nats://"),
        ([], {}, ValueError, "command is empty"),
        (42, {}, TypeError, "not 42"),
    ],
)
async def test_targets_of_no_known_kind(
    target: Any, options: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        async with connect(target, **options):
            pass
