"""Hosting a view in Chromium behind the shipped parent relay, for the browser tests.

The page (``/parent.html`` on ``http://127.0.0.1:<port>``) runs the parent relay in app
mode; the view is served by the same server reached as ``http://localhost:<port>``:
another origin, as MCP Apps ask of web hosts. The page cannot script the view (other
origin), so the tests reach its frame through Playwright. ``kept_state_host`` serves a
widget behind the relay with its state kept by a ``WidgetStateKeeper``.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as mcp
from anyio.abc import ObjectReceiveStream
from mcp.server.mcpserver import MCPServer

from assistant_frames.apps import AppBridge
from assistant_frames.browser import relay_files
from assistant_frames.mcp import MCPFrameHost
from assistant_frames.transports import WebSocketServer, websocket_server
from assistant_frames.widgets import WidgetState, WidgetStateKeeper, WidgetStateStore

from browser_support import BrowserPage

TOKEN = "app-view-token"
WAIT = 10.0
HTML = "text/html; charset=utf-8"
JS = "text/javascript; charset=utf-8"

# The relay page. Its URL fragment says where the view is (`src`) and what it may use.
PARENT_HTML = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>app host page</title></head>
<body>
<script src="/assistant-frames/parent-relay.js"></script>
<script>
  const config = new URLSearchParams(location.hash.slice(1));
  window.relayLog = [];
  window.seen = [];  // every JSON-RPC message this page gets, and from where
  window.addEventListener("message", (event) => {
    if (event.data && event.data.jsonrpc === "2.0")
      seen.push({ id: event.data.id ?? null, method: event.data.method ?? null,
                  origin: event.origin,
                  bridged: !!relay.iframe && event.source === relay.iframe.contentWindow });
  });
  window.relay = AssistantFramesRelay.parent({
    url: `ws://${location.host}/apps/view`,
    token: config.get("token"),
    app: true,
    src: config.get("src"),
    permissions: JSON.parse(config.get("permissions") || "{}"),
    initialDelay: 100,
    onStatus: (status, info) => relayLog.push({ status, reason: info.reason ?? null }),
  });
</script>
</body></html>
"""

_LOADS = itertools.count()
HOST_INFO = mcp.Implementation(name="relay-test-host", version="1.2.3")


def page_url(server: WebSocketServer, src: str, **options: str) -> str:
    fragment = "&".join(f"{k}={v}" for k, v in {"token": TOKEN, "src": src, **options}.items())
    # A fresh query each time: a new document, not a fragment change of the last one.
    return f"http://127.0.0.1:{server.port}/parent.html?{next(_LOADS)}#{fragment}"


def view_base(server: WebSocketServer) -> str:
    """The view's origin: the same server, reached as ``localhost`` (another origin)."""
    return f"http://localhost:{server.port}"


def _view_frame(page: BrowserPage, origin: str) -> Any:
    for frame in page._page.frames:
        if frame.url.startswith(origin + "/view.html"):
            return frame
    raise LookupError(f"no view frame from {origin}: {[f.url for f in page._page.frames]}")


async def view_eval(page: BrowserPage, origin: str, expression: str, arg: Any = None) -> Any:
    """Evaluate ``expression`` in the view's frame."""
    return await page.browser.call(lambda _c: _view_frame(page, origin).evaluate(expression, arg))


async def view_wait(page: BrowserPage, origin: str, expression: str, timeout: float = WAIT) -> Any:
    """Wait (bounded) until ``expression`` is truthy in the view's frame; return its value."""

    def wait(_context: Any) -> Any:
        # The view's frame appears once the relay's socket is open.
        for _ in range(int(timeout / 0.05)):
            try:
                frame = _view_frame(page, origin)
                break
            except LookupError:
                page._page.wait_for_timeout(50)
        frame = _view_frame(page, origin)
        return frame.wait_for_function(expression, timeout=timeout * 1000).json_value()

    with anyio.fail_after(2 * timeout + 5):
        return await page.browser.call(wait)


@dataclass
class Weather:
    """A real MCP server (the ``mcp`` SDK's ``MCPServer``) in an entered ``MCPFrameHost``."""

    frame: MCPFrameHost
    calls: list[str]


@asynccontextmanager
async def weather_server() -> AsyncIterator[Weather]:
    server = MCPServer("weather", subscriptions=False)
    calls: list[str] = []

    @server.tool(meta={"ui": {"visibility": ["app", "model"]}})
    def forecast(city: str) -> str:
        """The forecast for a city (the view may call it)."""
        calls.append(f"forecast {city}")
        return f"Sunny in {city}"

    @server.tool(meta={"ui": {"visibility": ["model"]}})
    def secret() -> str:
        """For the model only: a view must never reach it."""
        calls.append("secret")
        return "classified"

    async with MCPFrameHost(server, timeout=WAIT) as frame:
        yield Weather(frame, calls)


@dataclass
class KeptStateHost:
    """A host whose every relay connection is an ``AppBridge`` keeping widget state.

    Each connection (the first render, and each re-render after :meth:`drop`) gets a new
    ``WidgetStateKeeper`` on the same store and widget id, and a new bridge told the kept
    state as the host-context key ``widgetState``, as a host renders a widget again.
    """

    server: WebSocketServer
    weather: Weather
    bridges: ObjectReceiveStream[AppBridge]
    #: Every state the keepers saved, in order (their ``on_widget_state``).
    states: list[WidgetState] = field(default_factory=list)
    transports: list[Any] = field(default_factory=list)

    async def next_bridge(self) -> AppBridge:
        """The bridge of the next connection, once its view has initialized."""
        with anyio.fail_after(WAIT):
            return await self.bridges.receive()

    async def drop(self) -> None:
        """Close the newest connection: the relay reconnects and reloads the view."""
        await self.transports[-1].aclose()


@asynccontextmanager
async def kept_state_host(
    files: dict[str, tuple[bytes, str]],
    store: WidgetStateStore,
    widget_id: str,
    *,
    host_context: dict[str, Any],
    extensions: dict[str, Any] | None = None,
    max_state_bytes: int = 256_000,
    **bridge_options: Any,
) -> AsyncIterator[KeptStateHost]:
    """Serve ``files`` and, behind the relay, the weather server through kept-state bridges.

    ``bridge_options`` (handlers...) go to each ``AppBridge``; ``extensions`` join the
    keeper's ``x-assistant-frames/widget-state``; ``max_state_bytes`` goes to the keeper.
    """
    send, receive = anyio.create_memory_object_stream[AppBridge](10)
    done = anyio.Event()
    host: KeptStateHost

    async def accept(transport: Any) -> None:
        host.transports.append(transport)
        keeper = WidgetStateKeeper(
            store, widget_id, on_widget_state=host.states.append, max_state_bytes=max_state_bytes
        )
        bridge = AppBridge(
            transport,
            server=weather.frame,
            host_info=HOST_INFO,
            host_context={**host_context, "widgetState": await keeper.load()},
            timeout=WAIT,
            init_timeout=WAIT,
            extensions={**(extensions or {}), **keeper.extensions},
            **bridge_options,
        )
        async with bridge, anyio.create_task_group() as group:
            await bridge.wait_initialized()
            await send.send(bridge)

            async def until_done() -> None:
                await done.wait()
                group.cancel_scope.cancel()

            group.start_soon(until_done)
            await bridge.wait_disconnected()  # dropped: this connection's part is over
            group.cancel_scope.cancel()

    async with (
        weather_server() as weather,
        send,
        receive,
        websocket_server(accept, token=TOKEN, http_files=files) as server,
    ):
        host = KeptStateHost(server, weather, receive)
        try:
            yield host
        finally:
            done.set()


# Loaded by the test widgets after the runtime: a call's outcome as data, so Playwright
# can return it: {result} or {error: {code, message, method}, ms}.
WIDGET_PROBE = b"""
  async function settle(promise) {
    const started = performance.now();
    try {
      const result = await promise;
      return { result: result === undefined ? null : result };
    } catch (e) {
      const error = { code: e.code ?? null, message: String(e.message), method: e.method ?? null };
      return { error, ms: performance.now() - started };
    }
  }
"""


def widget_files() -> dict[str, tuple[bytes, str]]:
    """The relay files (with ``widget-runtime.js``) and the widgets' test probe."""
    return {**relay_files(), "/widget-probe.js": (WIDGET_PROBE, JS)}
