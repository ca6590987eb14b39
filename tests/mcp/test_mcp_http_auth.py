"""``MCPContextServer`` over HTTP with a bearer token or an auth hook, on 127.0.0.1.

Clients: raw HTTP (``httpx2``, which the ``mcp`` SDK uses), the official ``mcp.Client``
with headers, and ``MCPFrameHost(url, token=/headers=)``. The in-process server runs on uvicorn
(asyncio only); ``serve --mcp-http --token`` in a subprocess serves clients on both
backends, and the CLI's ``inspect --mcp URL --token`` is one of them. Every wait is bounded.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import httpx2
import pytest
from anyio.streams.text import TextReceiveStream
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from starlette.requests import HTTPConnection

from assistant_frames import HandshakeRejected, ModelContextRegistry
from assistant_frames.frames import ReconnectingHost
from assistant_frames.mcp import MCPContextServer, MCPFrameHost

pytestmark = pytest.mark.anyio
ASYNCIO = pytest.mark.parametrize("anyio_backend", ["asyncio"])  # uvicorn in this process

WAIT = 15.0
TOKEN = "s3cret-token"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}

MODULE = '''
from assistant_frames import ModelContextRegistry

registry = ModelContextRegistry()


@registry.tool
def echo(text: str) -> str:
    """Echo a text."""
    return text
'''


def registry() -> ModelContextRegistry:
    served = ModelContextRegistry()

    @served.tool
    def echo(text: str) -> str:
        """Echo a text."""
        return text

    return served


@asynccontextmanager
async def served(**auth: Any) -> AsyncIterator[str]:
    """``MCPContextServer.run_http`` on a free port with ``auth``; yields its URL."""
    server = MCPContextServer(registry())
    urls: list[str] = []
    listening = anyio.Event()

    def ready(url: str) -> None:
        urls.append(url)
        listening.set()

    async with anyio.create_task_group() as group:
        group.start_soon(lambda: server.run_http(port=0, ready=ready, **auth))
        with anyio.fail_after(WAIT):
            await listening.wait()
        try:
            yield urls[0]
        finally:
            group.cancel_scope.cancel()


async def post_initialize(url: str, headers: dict[str, str]) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=WAIT) as http:
        return await http.post(url, json=INITIALIZE, headers={**ACCEPT, **headers})


@asynccontextmanager
async def official_client(url: str, headers: dict[str, str]) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers=headers, timeout=WAIT) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
    ):
        yield client


# -- a bearer token ---------------------------------------------------------------------------


@ASYNCIO
async def test_a_token_refuses_raw_requests_without_it() -> None:
    async with served(token=TOKEN) as url:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
            refused = await post_initialize(url, headers)
            assert refused.status_code == 401, headers
            assert refused.headers["WWW-Authenticate"] == "Bearer"
            assert refused.json()["error"]["message"] == "Unauthorized (HTTP 401)"
        served_ok = await post_initialize(url, {"Authorization": f"Bearer {TOKEN}"})
        assert served_ok.status_code == 200


@ASYNCIO
async def test_a_token_with_the_official_client() -> None:
    async with served(token=TOKEN) as url:
        with anyio.fail_after(WAIT), pytest.raises(ExceptionGroup) as refused:
            async with official_client(url, {"Authorization": "Bearer wrong"}):
                pytest.fail("entered")
        # The SDK's client raises out of its task groups.
        assert refused.group_contains(MCPError, match=r"^Unauthorized \(HTTP 401\)$", depth=None)
        with anyio.fail_after(WAIT):
            async with official_client(url, {"Authorization": f"Bearer {TOKEN}"}) as client:
                tools = await client.list_tools()
                assert [tool.name for tool in tools.tools] == ["echo"]
                result = await client.call_tool("echo", {"text": "in"})
                assert result.content[0].text == "in"  # type: ignore[union-attr]


@ASYNCIO
async def test_a_token_with_mcp_frame() -> None:
    async with served(token=TOKEN) as url:
        for options in ({}, {"token": "wrong"}):
            frame = MCPFrameHost(url, **options)
            with anyio.fail_after(WAIT), pytest.raises(HandshakeRejected) as refused:
                async with frame:
                    pytest.fail("entered")
            assert refused.value.status == 401
            assert str(refused.value) == (
                f"Cannot connect to the MCP server {url}: it refused the connection with "
                "HTTP 401 (a missing or wrong token?)"
            )
            assert frame.state == "closed"
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        for options in ({"token": TOKEN}, {"headers": bearer}):
            with anyio.fail_after(WAIT):
                async with MCPFrameHost(url, **options) as frame:
                    assert set(frame.get_model_context().tools) == {"echo"}
                    assert await frame.call_tool("echo", {"text": "through"}) == "through"


@ASYNCIO
async def test_a_refused_token_stops_reconnecting() -> None:
    async with served(token=TOKEN) as url:
        host = ReconnectingHost(lambda: MCPFrameHost(url, token="wrong"), initial_delay=0.01)
        async with host:
            with anyio.fail_after(WAIT):
                await host.wait_disconnected()
            assert host.state == "failed"  # 401: retrying cannot help


def test_token_and_headers_are_for_urls() -> None:
    with pytest.raises(ValueError, match="for an http"):
        MCPFrameHost([sys.executable, "-c", "pass"], token="t")


# -- an auth hook -----------------------------------------------------------------------------


@ASYNCIO
@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_an_auth_hook(kind: str) -> None:
    seen: list[str | None] = []

    def check(request: HTTPConnection) -> bool:
        seen.append(request.client.host if request.client else None)
        return request.headers.get("x-api-key") == "k-123"

    async def check_async(request: HTTPConnection) -> bool:
        await anyio.lowlevel.checkpoint()
        return check(request)

    async with served(auth=check if kind == "sync" else check_async) as url:
        assert (await post_initialize(url, {"X-Api-Key": "nope"})).status_code == 401
        assert seen == ["127.0.0.1"]  # the hook saw the request
        with anyio.fail_after(WAIT), pytest.raises(HandshakeRejected):
            async with MCPFrameHost(url):
                pytest.fail("entered")
        with anyio.fail_after(WAIT):
            async with MCPFrameHost(url, headers={"X-Api-Key": "k-123"}) as frame:
                assert await frame.call_tool("echo", {"text": "hooked"}) == "hooked"
            async with official_client(url, {"X-Api-Key": "k-123"}) as client:
                assert [tool.name for tool in (await client.list_tools()).tools] == ["echo"]


@ASYNCIO
async def test_a_hook_that_raises_refuses() -> None:
    def broken(request: HTTPConnection) -> bool:
        raise RuntimeError("the key store is down")

    async with served(auth=broken) as url:
        assert (await post_initialize(url, {})).status_code == 401


@ASYNCIO
async def test_token_and_hook_must_both_pass() -> None:
    async with served(token=TOKEN, auth=lambda request: "x-ok" in request.headers) as url:
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        assert (await post_initialize(url, bearer)).status_code == 401
        assert (await post_initialize(url, {"X-Ok": "1"})).status_code == 401
        assert (await post_initialize(url, {**bearer, "X-Ok": "1"})).status_code == 200


# -- serve --mcp-http --token, on both backends -------------------------------------------------


@asynccontextmanager
async def cli_server(tmp_path: Path, *options: str) -> AsyncIterator[tuple[str, str]]:
    """``serve --mcp-http 127.0.0.1:0`` in a subprocess; its URL and what it said."""
    (tmp_path / "mod.py").write_text(MODULE, encoding="utf-8")
    command = [sys.executable, "-m", "assistant_frames", "serve", "--mcp-http", "127.0.0.1:0"]
    env = {k: v for k, v in os.environ.items() if k != "ASSISTANT_FRAMES_TOKEN"}
    process = await anyio.open_process(
        [*command, *options, "mod:registry"],
        cwd=tmp_path,
        env=env,
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
        assert match, seen
        yield match.group(1), seen
    finally:
        with suppress(ProcessLookupError):
            process.kill()
        with anyio.fail_after(WAIT):
            await process.wait()
        await process.aclose()


async def test_serve_mcp_http_with_a_token(tmp_path: Path) -> None:
    async with cli_server(tmp_path, "--token", TOKEN) as (url, said):
        assert "a bearer token is required" in said
        with anyio.fail_after(WAIT), pytest.raises(HandshakeRejected):
            async with MCPFrameHost(url):
                pytest.fail("entered")
        with anyio.fail_after(WAIT):
            async with MCPFrameHost(url, token=TOKEN) as frame:
                assert await frame.call_tool("echo", {"text": "cli"}) == "cli"

        def inspect(*options: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "assistant_frames", "inspect", "--mcp", url, *options],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
                env={k: v for k, v in os.environ.items() if k != "ASSISTANT_FRAMES_TOKEN"},
            )

        refused = await anyio.to_thread.run_sync(inspect)
        assert refused.returncode == 1
        assert "refused the connection with HTTP 401" in refused.stderr
        inspected = await anyio.to_thread.run_sync(inspect, "--token", TOKEN)
        assert inspected.returncode == 0, inspected.stderr
        assert "echo" in inspected.stdout
