"""A real @assistant-ui/core frame in Chromium feeds tools to a FastAPI application.

The application runs under uvicorn on 127.0.0.1, as a user runs it. Its lifespan holds
a :class:`~assistant_frames.Federation` (with a Python member of its own); it mounts
the shipped relays (``relay_app``) at ``/assistant-frames`` and its pages
(``files_app``) at ``/pages``, and routes ``/frames/{name}`` to a ``frame_endpoint``
whose handler hosts each browser frame that dials in, in the federation's registry.
The page ``/pages/parent.html`` runs the mounted parent relay, which embeds
``/pages/frame.html`` (the bundled ``frame-page.js``: a JS ``ModelContextRegistry``
given to ``AssistantFrameProvider``). HTTP routes of the application call the
federation's tools, so a request to FastAPI runs a tool in the browser.

The last test mounts the app page (``app_page_app``) under a prefix of a FastAPI
application and shows a view of ``examples/weather_app.py`` through it.

uvicorn runs on asyncio only, so this module does.
"""

from __future__ import annotations

import json
import runpy
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastapi import FastAPI, HTTPException

from assistant_frames import AssistantFrameHost, Federation, ModelContextRegistry, ToolCallError
from assistant_frames.asgi import (
    ASGIAttribute,
    app_page_app,
    files_app,
    frame_endpoint,
    relay_app,
)

from browser_support import BrowserPage
from helpers import wait_until
from uvicorn_support import fetch, serve_asgi

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "asgi-browser-token"
WAIT = 10.0
HTML = "text/html; charset=utf-8"
JS = "text/javascript; charset=utf-8"
#: The JS frame's test hooks, seen from the parent page.
FRAME = "window.relay.iframe.contentWindow.frameTest"

FRAME_HTML = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>JS frame</title></head>
<body><script src="frame-page.js"></script></body></html>
"""

# Every URL is the application's: the mounted relay, its WebSocket route, its pages.
PARENT_HTML = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>parent relay</title></head>
<body>
<div id="slot"></div>
<script src="/assistant-frames/parent-relay.js"></script>
<script>
  const token = new URLSearchParams(location.hash.slice(1)).get("token");
  window.relay = AssistantFramesRelay.parent({
    url: `ws://${location.host}/frames/js`,
    token,
    src: "/pages/frame.html",
    container: "#slot",
    initialDelay: 100,
  });
</script>
</body></html>
"""


@pytest.fixture
def anyio_backend() -> str:
    """uvicorn runs on asyncio only: there is no uvicorn to run this on under trio."""
    return "asyncio"


def build_app(frame_bundle: bytes) -> FastAPI:
    """The application: a Federation in its lifespan, the relay, the pages, the routes."""
    python_tools = ModelContextRegistry()

    @python_tools.tool
    def double(x: int) -> int:
        """Double a number."""
        return 2 * x

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with Federation(timeout=WAIT) as federation:
            await federation.add("py", python_tools)
            app.state.federation = federation
            yield

    app = FastAPI(lifespan=lifespan)

    async def host_browser_frame(transport: Any) -> None:
        """Host one browser frame while it is connected: its tools join the federation."""
        scope = transport.extra(ASGIAttribute.scope)
        name = scope["path_params"]["name"]
        federation: Federation = scope["app"].state.federation
        async with AssistantFrameHost(transport, name=name, timeout=WAIT) as host:
            handle = federation.registry.add_provider(host, namespace=name)
            try:
                await host.wait_disconnected()
            finally:
                handle.remove()

    endpoint = frame_endpoint(host_browser_frame, token=TOKEN, same_origin=True)
    app.router.add_websocket_route("/frames/{name}", endpoint)
    app.mount("/assistant-frames", relay_app())
    app.mount(
        "/pages",
        files_app(
            {
                "/parent.html": (PARENT_HTML, HTML),
                "/frame.html": (FRAME_HTML, HTML),
                "/frame-page.js": (frame_bundle, JS),
            }
        ),
    )

    @app.get("/tools")
    async def tools() -> dict[str, Any]:
        context = app.state.federation.get_model_context()
        return {
            "system": context.system,
            "tools": {name: tool.description for name, tool in context.tools.items()},
        }

    @app.post("/call/{tool}")
    async def call(tool: str, arguments: dict[str, Any]) -> Any:
        try:
            return await app.state.federation.call_tool(tool, arguments)
        except ToolCallError as exc:
            raise HTTPException(status_code=502, detail=str(exc)) from None

    return app


async def post(url: str, body: Any) -> tuple[int, Any]:
    status, _, data = await fetch(
        url, method="POST", headers={"Content-Type": "application/json"}, body=json.dumps(body)
    )
    return status, json.loads(data)


async def test_a_js_frame_feeds_a_fastapi_federation_through_the_mounted_relay(
    page: BrowserPage, bundles: dict[str, bytes]
) -> None:
    app = build_app(bundles["/frame-page.js"])
    async with serve_asgi(app, lifespan="on") as running:
        federation: Federation = app.state.federation
        assert list(federation.get_model_context().tools) == ["py_double"]

        await page.goto(f"{running.http}/pages/parent.html#token={TOKEN}")
        await wait_until(lambda: "js_add" in federation.get_model_context().tools, WAIT)

        # The JS frame's context, zod schemas included, reached the Python parent.
        context = federation.get_model_context()
        assert sorted(context.tools) == ["js_add", "js_fail", "js_slow", "py_double"]
        assert context.system == "You can add numbers with the add tool."
        add = context.tools["js_add"]
        assert add.description == "Add two numbers."
        assert add.parameters["properties"] == {"a": {"type": "number"}, "b": {"type": "number"}}
        status, listed = await fetch_json(f"{running.http}/tools")
        assert status == 200
        assert listed["tools"]["js_add"] == "Add two numbers."

        # A request to FastAPI calls the tool; it runs in the browser.
        assert await post(f"{running.http}/call/js_add", {"a": 2, "b": 3}) == (200, 5)
        assert await post(f"{running.http}/call/py_double", {"x": 21}) == (200, 42)
        status, failed = await post(f"{running.http}/call/js_fail", {})
        assert status == 502
        assert "boom from iframe" in failed["detail"]

        # Live: a tool the frame adds later is callable through the application.
        await page.evaluate(f"() => {FRAME}.addTool('triple', 'Times ten, really.')")
        await wait_until(lambda: "js_triple" in federation.get_model_context().tools, WAIT)
        assert await post(f"{running.http}/call/js_triple", {"x": 4}) == (200, 40)

        # The page goes away: so do its tools; the Python member stays.
        await page.goto("about:blank")
        await wait_until(lambda: list(federation.get_model_context().tools) == ["py_double"], WAIT)


async def test_the_mounted_relay_is_refused_without_the_token(
    page: BrowserPage, bundles: dict[str, bytes]
) -> None:
    app = build_app(bundles["/frame-page.js"])
    async with serve_asgi(app, lifespan="on") as running:
        await page.goto(f"{running.http}/pages/parent.html#token=wrong")
        with anyio.fail_after(WAIT + 5):
            status = await page.wait_for(
                "() => ['failed', 'retrying'].includes(window.relay.status) && window.relay.status",
                timeout=WAIT,
            )
        assert status in ("failed", "retrying")
        assert list(app.state.federation.get_model_context().tools) == ["py_double"]
        assert await page.evaluate("() => document.querySelector('iframe') === null")


async def fetch_json(url: str) -> tuple[int, Any]:
    status, _, data = await fetch(url)
    return status, json.loads(data)


async def test_the_apps_page_mounted_under_a_prefix_shows_a_view(page: BrowserPage) -> None:
    pytest.importorskip("mcp")
    from assistant_frames.apps.page import AppPage
    from assistant_frames.mcp import MCPFrameHost

    example = runpy.run_path(str(ROOT / "examples" / "weather_app.py"))
    server = example["server"]
    frame = MCPFrameHost(server.server, timeout=WAIT)
    app_page = AppPage(frame, port=None, timeout=WAIT, init_timeout=WAIT)
    mounted = app_page_app(app_page)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with server.running(), frame, app_page:
            yield

    app = FastAPI(lifespan=lifespan)
    app.mount("/tools/apps", mounted)
    async with serve_asgi(app, lifespan="on") as running:
        # The page's script, style, relay and sockets are all found below the prefix.
        await page.goto(mounted.url(f"{running.http}/tools/apps"))
        await page.wait_for(
            "appPage.state().status === 'connected' && appPage.state().tools.length"
        )
        assert await page.evaluate("appPage.state().tools") == ["forecast"]

        view = await app_page.call_tool("forecast", {"city": "Paris"})
        shown = await page.wait_for(
            "(() => { const v = appPage.state().views['view-1'];"
            " return v && v.state === 'ready' && v.relay === 'iframe' && v; })()"
        )
        assert shown["src"].startswith(f"{app_page.views_origin}/view/view-1/")
        assert not shown["src"].startswith(running.http)  # the view: another origin
        assert view.state == "ready"
        methods = [t.message.get("method") for t in app_page.traffic if t.direction == "in"]
        assert methods[:2] == ["ui/initialize", "ui/notifications/initialized"]

        def city(_context: Any) -> Any:
            for child in page._page.frames:
                if child.url.startswith(app_page.views_origin):
                    return child.evaluate("document.getElementById('city').textContent")
            return None

        with anyio.fail_after(WAIT):  # the view rendered the result, in the browser
            text = await page.browser.call(city)
            while text != "Weather in Paris":
                await anyio.sleep(0.05)
                text = await page.browser.call(city)
