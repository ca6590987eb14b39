"""A real ext-apps ``AppBridge`` in Chromium hosting a Python ``App``, in headless Chromium.

The page runs ``@modelcontextprotocol/ext-apps`` 2.0.4's ``AppBridge`` with a
``PostMessageTransport`` to an iframe; the iframe is the shipped child relay, which
bridges the JSON-RPC traffic over a real WebSocket to a Python :class:`App` served by
``websocket_server``. Both sides see each other's info, host context changes reach
Python, the JS host lists and calls the Python app's registry tools, the Python app's
requests reach the JS handlers, and teardown is awaited on both sides.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as mcp
import pytest

from assistant_frames import ModelContextRegistry
from assistant_frames.apps import App
from assistant_frames.browser import relay_files
from assistant_frames.transports import WebSocketServer, websocket_server

from browser_support import BrowserPage

pytestmark = pytest.mark.anyio

TOKEN = "app-host-test-token"
WAIT = 10.0
HTML = "text/html; charset=utf-8"
JS = "text/javascript; charset=utf-8"

PAGE_HTML = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>ext-apps AppBridge</title></head>
<body><script src="/app-host-page.js"></script></body></html>
"""
READY = "window.appHostTest && appHostTest.log.initialized > 0"


@dataclass
class PythonAppSide:
    server: WebSocketServer
    apps: anyio.abc.ObjectReceiveStream[App]
    registry: ModelContextRegistry
    torn_down: list[str] = field(default_factory=list)

    def url(self) -> str:
        return f"http://{self.server.host}:{self.server.port}/app-host.html#access_token={TOKEN}"

    async def next_app(self) -> App:
        with anyio.fail_after(WAIT):
            return await self.apps.receive()


@asynccontextmanager
async def python_app(bundles: dict[str, bytes]) -> AsyncIterator[PythonAppSide]:
    """Serves a Python App to every relay that dials in."""
    registry = ModelContextRegistry()

    @registry.tool
    def multiply(a: float, b: float) -> dict[str, float]:
        """Multiply two numbers."""
        return {"product": a * b}

    @registry.tool(meta={"ui": {"visibility": ["app"]}})
    def fail(reason: str) -> None:
        """Always fails."""
        raise ValueError(reason)

    files = {
        **relay_files(),
        "/app-host-page.js": (bundles["/app-host-page.js"], JS),
        "/app-host.html": (PAGE_HTML, HTML),
    }
    send, receive = anyio.create_memory_object_stream[App](10)
    side: PythonAppSide

    async def accept(transport: Any) -> None:
        async def on_teardown() -> None:
            await anyio.sleep(0.05)  # the JS host must wait for this
            side.torn_down.append("python")

        async with App(
            transport,
            app_info=mcp.Implementation(name="py-view", version="0.9.1"),
            registry=registry,
            timeout=WAIT,
            on_teardown=on_teardown,
        ) as app:
            await send.send(app)
            await app.wait_disconnected()

    async with send, receive, websocket_server(accept, token=TOKEN, http_files=files) as server:
        side = PythonAppSide(server, receive, registry)
        yield side


async def test_handshake_and_host_context(page: BrowserPage, bundles: dict[str, bytes]) -> None:
    async with python_app(bundles) as side:
        await page.goto(side.url())
        app = await side.next_app()
        await page.wait_for(READY)
        assert await page.evaluate("appHostTest.connected()") is True
        # Python sees the JS host...
        assert app.host_info is not None
        assert (app.host_info.name, app.host_info.version) == ("js-app-host", "2.0.4-test")
        assert app.host_capabilities is not None
        assert app.host_capabilities.open_links is not None
        assert app.host_capabilities.server_tools is not None
        assert app.protocol_version == "2026-01-26"
        assert app.host_context.theme == "dark"
        assert app.host_context.locale == "fr-FR"
        # ...and the JS host sees the Python app.
        assert await page.evaluate("appHostTest.appInfo()") == {
            "name": "py-view",
            "version": "0.9.1",
        }
        assert await page.evaluate("appHostTest.appCapabilities()") == {
            "tools": {"listChanged": True}
        }
        assert await page.evaluate("appHostTest.log.initialized") == 1

        # A context change reaches Python, merged into what it had.
        await page.evaluate(
            """appHostTest.setHostContext({ theme: "light", displayMode: "inline",
                locale: "fr-FR", platform: "web", containerDimensions: { maxHeight: 600 } })"""
        )
        await app.wait_until(lambda a: a.host_context.theme == "light", timeout=WAIT)
        context = app.host_context
        assert context.locale == "fr-FR"
        assert context.platform == "web"
        assert context.container_dimensions is not None
        assert context.container_dimensions.max_height == 600
        assert await page.evaluate("appHostTest.log.errors") == []


async def test_the_js_host_lists_and_calls_the_python_tools(
    page: BrowserPage, bundles: dict[str, bytes]
) -> None:
    async with python_app(bundles) as side:
        await page.goto(side.url())
        await side.next_app()
        await page.wait_for(READY)
        listing = await page.evaluate("appHostTest.listTools()")
        tools = {tool["name"]: tool for tool in listing["tools"]}
        assert sorted(tools) == ["fail", "multiply"]
        assert tools["multiply"]["description"] == "Multiply two numbers."
        assert tools["multiply"]["inputSchema"]["required"] == ["a", "b"]
        assert tools["fail"]["_meta"] == {"ui": {"visibility": ["app"]}}

        result = await page.evaluate("appHostTest.callTool('multiply', { a: 6, b: 7 })")
        assert result["structuredContent"] == {"product": 42}
        assert not result.get("isError")
        failed = await page.evaluate("appHostTest.callTool('fail', { reason: 'on purpose' })")
        assert failed["isError"] is True
        assert "on purpose" in failed["content"][0]["text"]
        # A change of the Python registry: the JS host hears list_changed and sees it.
        side.registry.add_tool("added", lambda: "here", description="Added later.")
        await page.wait_for("appHostTest.log.toolListChanges >= 1")
        listing = await page.evaluate("appHostTest.listTools()")
        assert "added" in [tool["name"] for tool in listing["tools"]]
        assert await page.evaluate("appHostTest.callTool('added', {})") == {
            "content": [{"type": "text", "text": "here"}],
            "isError": False,
        }
        # An unknown tool: the JS call rejects with the JSON-RPC error.
        message = await page.evaluate(
            "appHostTest.callTool('nope', {}).then(() => 'resolved', (e) => String(e.message))"
        )
        assert "nope" in message


async def test_python_requests_reach_the_js_handlers(
    page: BrowserPage, bundles: dict[str, bytes]
) -> None:
    async with python_app(bundles) as side:
        await page.goto(side.url())
        app = await side.next_app()
        await page.wait_for(READY)
        with anyio.fail_after(WAIT):
            answer = await app.send_message("hello from python")
            assert answer.is_error is None
            server = await app.call_server_tool("lookup", {"q": "x"})
            await app.send_size_changed(640, 480)
            await app.send_log("warning", {"n": 1}, logger="py-view")
            await app.request_teardown()
        assert server.content[0].text == "server ran lookup"  # type: ignore[union-attr]
        await page.wait_for("appHostTest.log.teardownRequests === 1")
        log = await page.evaluate("appHostTest.log")
        assert log["messages"] == [
            {"role": "user", "content": [{"type": "text", "text": "hello from python"}]}
        ]
        assert log["serverCalls"] == [{"name": "lookup", "arguments": {"q": "x"}}]
        assert log["sizes"] == [{"width": 640, "height": 480}]
        assert log["logs"] == [{"level": "warning", "data": {"n": 1}, "logger": "py-view"}]
        assert log["errors"] == []


async def test_teardown_waits_for_the_python_app(
    page: BrowserPage, bundles: dict[str, bytes]
) -> None:
    async with python_app(bundles) as side:
        await page.goto(side.url())
        app = await side.next_app()
        await page.wait_for(READY)
        result = await page.evaluate("appHostTest.teardown()")
        # The JS promise resolved only after the Python callback had run.
        assert result == {}
        assert side.torn_down == ["python"]
        await app.wait_torn_down(timeout=WAIT)
