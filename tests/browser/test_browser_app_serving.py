"""The author-side example (``examples/weather_app.py``) rendered in Chromium.

Its registry is served by ``MCPContextServer``; an ``MCPFrameHost`` consumes it, so the view's
HTML is what the server's ``resources/read`` gave. A Python ``AppBridge`` hosts the view
behind the shipped parent relay (the view on another origin, as in the bridge tests):
the view initializes, shows the model's call result, calls the app-only ``refresh`` tool
through the bridge to our server, and follows a theme change.
"""

from __future__ import annotations

import runpy
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from assistant_frames.apps.protocol import HostContext
from assistant_frames.browser import relay_files
from assistant_frames.mcp import MCPContextServer, MCPFrameHost
from assistant_frames.transports import websocket_server

from browser_support import BrowserPage
from view_support import (
    HOST_INFO,
    HTML,
    PARENT_HTML,
    TOKEN,
    WAIT,
    page_url,
    view_base,
    view_eval,
    view_wait,
)

pytestmark = pytest.mark.anyio

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "weather_app.py"
URI = "ui://weather/view"


@asynccontextmanager
async def served_example() -> AsyncIterator[MCPFrameHost]:
    """The example's server, consumed by an MCPFrameHost."""
    example = runpy.run_path(str(EXAMPLE))  # not __main__: nothing is served on stdio
    server: MCPContextServer = example["server"]
    async with server.running(), MCPFrameHost(server.server, timeout=WAIT) as frame:
        yield frame


async def test_the_example_view_renders_calls_its_app_only_tool_and_follows_the_theme(
    page: BrowserPage,
) -> None:
    from assistant_frames.apps import AppBridge

    send, receive = anyio.create_memory_object_stream[Any](1)
    done = anyio.Event()
    async with served_example() as frame:
        context = await frame.wait_for_context(WAIT)
        view = context.ui_resources[URI].html.encode()
        files = {**relay_files(), "/parent.html": (PARENT_HTML, HTML), "/view.html": (view, HTML)}

        async def accept(transport: Any) -> None:
            bridge = AppBridge(
                transport,
                server=frame,
                host_info=HOST_INFO,
                host_context=HostContext(theme="light", display_mode="inline"),
                name="weather",
                timeout=WAIT,
                init_timeout=WAIT,
            )
            async with bridge:
                await bridge.wait_initialized()
                await send.send(bridge)
                await done.wait()

        async with send, receive, websocket_server(accept, token=TOKEN, http_files=files) as ws:
            try:
                origin = view_base(ws)
                await page.goto(page_url(ws, f"{origin}/view.html"))
                with anyio.fail_after(WAIT):
                    bridge = await receive.receive()
                assert bridge.app_info.name == "weather-view"
                # The model called forecast; the host shows the view its whole result.
                result = await frame.call_tool_result("forecast", {"city": "Paris"})
                assert result.meta is not None
                await bridge.send_tool_result(result)
                shown = "document.getElementById('city').textContent"
                await view_wait(page, origin, f"{shown} === 'Weather in Paris'")
                sky = "document.getElementById('sky')"
                assert await view_eval(page, origin, f"{sky}.textContent") == "sunny"
                assert await view_eval(page, origin, f"{sky}.title") == "unit: C"  # _meta
                # The view's button calls the app-only tool through the bridge to our server.
                await view_eval(page, origin, "document.getElementById('refresh').click()")
                await view_wait(page, origin, "document.body.dataset.shown === '2'")
                assert await view_eval(page, origin, f"{sky}.textContent") == "sunny"
                await bridge.update_host_context(theme="dark")
                await view_wait(page, origin, "document.body.classList.contains('dark')")
            finally:
                done.set()
