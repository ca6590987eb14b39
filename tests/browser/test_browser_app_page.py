"""The app page (``AppPage``) in Chromium: views rendered through the shipped page.

The page is served on ``http://127.0.0.1:<port>``; the views on another port, so another
origin, each with its CSP as an HTTP header. Two apps render through it:

- ``examples/weather_app.py`` (ours, its view in inline JavaScript), called from the
  page's form, the theme switched from the page's select;
- a view built on the real ext-apps ``App`` (``app-view-page.js``, inlined in the
  resource's HTML): display modes from the page and from the view, the CSP blocking a
  fetch to an undeclared origin, links refused or offered, a message, teardown on close.

Nothing is ever reloaded: each test marks the view's document and finds the mark again.
Screenshots are decoded (a small PNG reader below) and checked not to be blank; with
``ASSISTANT_FRAMES_SCREENSHOTS=DIR`` they are also written there (docs/images has one).
"""

from __future__ import annotations

import json
import os
import runpy
import struct
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from mcp.server.mcpserver import MCPServer

from assistant_frames.apps import DEFAULT_CSP, LinkPolicy, protocol
from assistant_frames.apps.page import AppPage
from assistant_frames.mcp import MCPContextServer, MCPFrameHost
from assistant_frames.transports import HttpRequest, HttpResponse, websocket_server

from browser_support import BrowserPage, ink

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "weather_app.py"
WAIT = 10.0
VIEWPORT = {"width": 1200, "height": 640}
SCREENSHOTS = os.environ.get("ASSISTANT_FRAMES_SCREENSHOTS")


def test_ink_tells_a_blank_image_from_a_drawn_one() -> None:
    def png(rows: list[bytes], width: int) -> bytes:
        def chunk(kind: bytes, body: bytes) -> bytes:
            crc = zlib.crc32(kind + body)
            return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

        raw = b"".join(
            b"\x01" + bytes([row[0], row[1], row[2]]) + bytes(3 * (width - 1)) for row in rows
        )
        header = struct.pack(">IIBBBBB", width, len(rows), 8, 2, 0, 0, 0)
        return (
            b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(raw))
            + chunk(b"IEND", b"")
        )

    assert ink(png([b"\xff\xff\xff"] * 4, 4)) == 0  # sub filter: every pixel as the first
    assert ink(png([b"\xff\xff\xff", b"\x00\x00\x00"] * 2, 4)) == 0.5


def save(name: str, data: bytes) -> None:
    if SCREENSHOTS:
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        (Path(SCREENSHOTS) / name).write_bytes(data)


# -- driving the page ----------------------------------------------------------------------


def _view_frame(page: BrowserPage, app: AppPage, app_id: str) -> Any:
    """The view's frame, on ``app``'s views origin."""
    prefix = f"{app.views_origin}/view/{app_id}/"
    for frame in page._page.frames:
        if frame.url.startswith(prefix):
            return frame
    raise LookupError(f"no frame for {app_id}: {[f.url for f in page._page.frames]}")


async def view_wait(page: BrowserPage, app: AppPage, app_id: str, expression: str) -> Any:
    """Wait (bounded) until ``expression`` is truthy in the view's frame; its value."""
    return await page.wait_in_frame(f"{app.views_origin}/view/{app_id}/", expression, WAIT)


async def view_eval(page: BrowserPage, app: AppPage, app_id: str, expression: str) -> Any:
    return await page.browser.call(lambda _c: _view_frame(page, app, app_id).evaluate(expression))


async def screenshot(page: BrowserPage, selector: str | None = None) -> bytes:
    def take(_context: Any) -> bytes:
        if selector is None:
            return bytes(page._page.screenshot())
        return bytes(page._page.locator(selector).screenshot())

    result: bytes = await page.browser.call(take)
    return result


async def open_page(page: BrowserPage, app: AppPage) -> None:
    await page.browser.call(lambda _c: page._page.set_viewport_size(VIEWPORT))
    await page.goto(app.url)
    await page.wait_for("appPage.state().status === 'connected' && appPage.state().tools.length")


async def call_from_page(page: BrowserPage, tool: str, arguments: dict[str, Any]) -> None:
    """What a person does: pick the tool, type the arguments, press Call."""
    await page.evaluate(
        """([tool, args]) => {
             document.getElementById("tool").value = tool;
             document.getElementById("arguments").value = args;
             document.getElementById("call").click();
           }""",
        [tool, json.dumps(arguments)],
    )


async def page_view(page: BrowserPage, app_id: str, condition: str = "true") -> dict[str, Any]:
    """The page's report on one view, once ``condition`` (on ``v``) holds."""
    view = f"appPage.state().views[{app_id!r}]"
    expression = f"(() => {{ const v = {view}; return v && ({condition}) && v; }})()"
    result: dict[str, Any] = await page.wait_for(expression)
    return result


def traffic(app: AppPage, direction: str) -> list[Any]:
    return [t.message for t in app.traffic if t.direction == direction]


# -- the weather example through the page ---------------------------------------------------


@asynccontextmanager
async def weather_page() -> AsyncIterator[AppPage]:
    example = runpy.run_path(str(EXAMPLE))  # not __main__: nothing is served on stdio
    server: MCPContextServer = example["server"]
    async with (
        server.running(),
        MCPFrameHost(server.server, timeout=WAIT) as frame,
        AppPage(frame, title="weather", timeout=WAIT, init_timeout=WAIT) as app,
    ):
        yield app


async def test_the_example_renders_through_the_page_and_follows_the_theme(
    page: BrowserPage,
) -> None:
    async with weather_page() as app:
        await open_page(page, app)
        assert (await page.evaluate("appPage.state().tools")) == ["forecast"]
        await call_from_page(page, "forecast", {"city": "Paris"})
        await view_wait(
            page,
            app,
            "view-1",
            "document.getElementById('city').textContent === 'Weather in Paris'",
        )
        assert (
            await view_eval(page, app, "view-1", "document.getElementById('sky').textContent")
            == "sunny"
        )
        shown = await page_view(page, "view-1", "v.state === 'ready'")
        assert shown["src"].startswith(f"{app.views_origin}/view/view-1/")
        assert shown["sandbox"] == "allow-scripts allow-same-origin"
        assert shown["relay"] == "iframe"
        assert shown["rect"]["width"] > 300  # rendered
        assert shown["rect"]["height"] >= 200
        assert shown["loads"] == 1
        # The log pane shows the view's traffic, which Python holds too.
        assert await page.wait_for("appPage.state().logCount >= 4")
        assert [m.get("method") for m in traffic(app, "in")][:2] == [
            "ui/initialize",
            "ui/notifications/initialized",
        ]

        view_png = await screenshot(page, '[data-view-id="view-1"] iframe')
        assert ink(view_png) > 0.01  # text on the view's background, not a blank frame

        # Theme from the page: Python tells the view (host-context-changed); no reload.
        await view_eval(page, app, "view-1", "window.mark = 'same document'")
        await page.evaluate(
            """() => { const s = document.getElementById("theme"); s.value = "dark";
                       s.dispatchEvent(new Event("change")); }"""
        )
        await view_wait(page, app, "view-1", "document.body.classList.contains('dark')")
        await page.wait_for("document.body.dataset.theme === 'dark'")  # the page, as told
        assert await view_eval(page, app, "view-1", "window.mark") == "same document"
        assert (await page_view(page, "view-1"))["loads"] == 1
        assert app.theme == "dark"
        changed = [
            m for m in traffic(app, "out") if m.get("method") == protocol.HOST_CONTEXT_CHANGED
        ]
        assert [m["params"] for m in changed] == [{"theme": "dark"}]
        save("app-page.png", await screenshot(page))


# -- a view on the real ext-apps App --------------------------------------------------------


def probe_server(bundle: bytes) -> MCPServer:
    server = MCPServer("probe")
    html = "<!doctype html><html><head><meta charset='utf-8'></head><body><h1>probe</h1>"
    html += f"<p>A view on ext-apps' App.</p><script>{bundle.decode()}</script></body></html>"

    @server.tool(meta={"ui": {"resourceUri": "ui://probe/view.html"}})
    def probe(topic: str) -> str:
        """Show the probe view."""
        return f"probing {topic}"

    meta = {"ui": {"permissions": {"clipboardWrite": {}}}}  # and no csp: the default policy

    @server.resource("ui://probe/view.html", mime_type=protocol.APP_MIME_TYPE, meta=meta)
    def view_html() -> str:
        return html

    return server


@asynccontextmanager
async def undeclared_origin() -> AsyncIterator[tuple[str, list[str]]]:
    """An HTTP origin no view declares, and the paths it was asked for."""
    asked: list[str] = []

    async def answer(request: HttpRequest) -> HttpResponse:
        asked.append(request.path)
        return HttpResponse(200, b"reached", headers={"Access-Control-Allow-Origin": "*"})

    async def no_socket(transport: Any) -> None:
        pass

    async with websocket_server(no_socket, http_handler=answer) as server:
        yield f"http://127.0.0.1:{server.port}", asked


async def test_a_real_app_view_modes_csp_links_and_teardown(
    page: BrowserPage, bundles: dict[str, bytes]
) -> None:
    links = LinkPolicy(allow=["https://docs.example.com/"])
    async with (
        MCPFrameHost(
            probe_server(bundles["/app-view-page.js"]), name="probe", timeout=WAIT
        ) as frame,
        AppPage(frame, link_policy=links, timeout=WAIT, init_timeout=WAIT) as app,
        undeclared_origin() as (elsewhere, asked),
    ):
        await open_page(page, app)
        await call_from_page(page, "probe", {"topic": "modes"})
        state = await view_wait(
            page, app, "view-1", "viewTest.state().toolResult.length && viewTest.state()"
        )
        assert state["toolInput"] == [{"arguments": {"topic": "modes"}}]
        assert state["hostContext"]["displayMode"] == "inline"
        assert state["hostContext"]["availableDisplayModes"] == ["inline", "fullscreen"]
        shown = await page_view(page, "view-1", "v.state === 'ready'")
        assert shown["allow"] == "clipboard-write"  # the resource's permissions
        document = state["documentId"]

        # Fullscreen from the page: the panel opens, the view is told, nothing reloads.
        buttons = '[data-view-id="view-1"] button'
        await page.evaluate(
            f"""document.querySelector('{buttons}[data-mode="fullscreen"]').click()"""
        )
        await view_wait(
            page,
            app,
            "view-1",
            "viewTest.state().contextChanges.some(c => c.displayMode === 'fullscreen')",
        )
        panel = await page_view(
            page, "view-1", "v.displayMode === 'fullscreen' && v.rect.width > 1000"
        )
        assert "fullscreen" in panel["boxClass"]
        assert panel["rect"]["width"] == VIEWPORT["width"]
        assert panel["rect"]["height"] > VIEWPORT["height"] * 0.8
        full = await screenshot(page)
        assert ink(await screenshot(page, '[data-view-id="view-1"] iframe')) > 0.001  # text
        save("app-page-fullscreen.png", full)
        # pip is not the view's (it declared inline and fullscreen): the button is off.
        pip = '[data-view-id="view-1"] button[data-mode="pip"]'
        assert await page.evaluate(f"document.querySelector('{pip}').disabled") is True

        # The view asks for inline itself; the page follows what Python decided.
        answer = await view_eval(page, app, "view-1", "viewTest.requestDisplayMode('inline')")
        assert answer == {"result": {"mode": "inline"}}
        await page_view(
            page, "view-1", "v.displayMode === 'inline' && !v.boxClass.includes('fullscreen')"
        )
        answer = await view_eval(page, app, "view-1", "viewTest.requestDisplayMode('pip')")
        assert answer == {"result": {"mode": "inline"}}  # undeclared: the mode in force

        # The CSP header (no csp declared: the spec's default) blocks the fetch.
        fetched = await view_eval(page, app, "view-1", f"viewTest.fetchUrl('{elsewhere}/probe')")
        assert "error" in fetched, fetched
        violations = await view_wait(
            page,
            app,
            "view-1",
            "viewTest.state().cspViolations.some(v => v.directive === 'connect-src')"
            " && viewTest.state().cspViolations",
        )
        assert any(v["blockedURI"].startswith(elsewhere) for v in violations), violations
        assert asked == []  # never reached
        assert app.views["view-1"].resource.csp_header == DEFAULT_CSP  # type: ignore[union-attr]

        # Links: on the allowlist, offered in the page; anything else refused.
        opened = await view_eval(
            page, app, "view-1", "viewTest.openLink('https://docs.example.com/guide')"
        )
        assert opened == {"result": {}}
        for url in ("https://evil.example/", "javascript:alert(1)", "data:text/html,hi"):
            refused = await view_eval(page, app, "view-1", f"viewTest.openLink({url!r})")
            assert refused == {"result": {"isError": True}}, url
        assert await page.wait_for("appPage.state().links.map(l => l.url)") == [
            "https://docs.example.com/guide"
        ]

        # A message from the view joins the conversation.
        await view_eval(page, app, "view-1", "viewTest.sendMessage('hello from the view')")
        await page.wait_for("appPage.state().messages.includes('hello from the view')")

        assert await view_eval(page, app, "view-1", "viewTest.state().documentId") == document
        assert (await page_view(page, "view-1"))["loads"] == 1

        # Close: the view is torn down (and answers) before it goes from the page.
        await page.evaluate(
            """document.querySelector('[data-view-id="view-1"] button.close').click()"""
        )
        await page.wait_for("Object.keys(appPage.state().views).length === 0")
        [teardown] = [
            m for m in traffic(app, "out") if m.get("method") == protocol.RESOURCE_TEARDOWN
        ]
        assert {"jsonrpc": "2.0", "id": teardown["id"], "result": {}} in traffic(app, "in")
        assert app.views == {}


# -- the corner tile ---------------------------------------------------------------------------

TILE_VIEW = """<!doctype html><html><head><meta charset="utf-8"></head><body>
<p>Shown in <b id="mode">?</b></p><script>
  // The MCP Apps handshake by hand; it records each display mode it is told.
  window.modes = [];
  const send = (m) => parent.postMessage({ jsonrpc: "2.0", ...m }, "*");
  const show = (mode) => { modes.push(mode); document.getElementById("mode").textContent = mode; };
  addEventListener("message", (event) => {
    const m = event.data;
    if (event.source !== parent || !m || m.jsonrpc !== "2.0") return;
    if (m.id === 1 && m.result) {
      show(m.result.hostContext.displayMode);
      send({ method: "ui/notifications/initialized" });
    } else if (m.method === "ui/notifications/host-context-changed" && m.params.displayMode) {
      show(m.params.displayMode);
    } else if (m.method === "ui/resource-teardown") {
      send({ id: m.id, result: {} });
    }
  });
  send({ id: 1, method: "ui/initialize", params: { protocolVersion: "2026-01-26",
    appInfo: { name: "tile", version: "1" },
    appCapabilities: { availableDisplayModes: ["inline", "pip"] } } });
</script></body></html>"""


async def test_pip_is_the_corner_tile(page: BrowserPage) -> None:
    server = MCPServer("tile")

    @server.tool(meta={"ui": {"resourceUri": "ui://tile/view.html"}})
    def tile() -> str:
        """Show the tile."""
        return "tile"

    @server.resource("ui://tile/view.html", mime_type=protocol.APP_MIME_TYPE)
    def view_html() -> str:
        return TILE_VIEW

    async with (
        MCPFrameHost(server, name="tile", timeout=WAIT) as frame,
        AppPage(frame, timeout=WAIT, init_timeout=WAIT) as app,
    ):
        await open_page(page, app)
        await page.evaluate("document.getElementById('call-mode').value = 'pip'")
        await call_from_page(page, "tile", {})
        assert await view_wait(page, app, "view-1", "window.modes.length && window.modes") == [
            "pip"
        ]
        tile = await page_view(page, "view-1", "v.state === 'ready' && v.displayMode === 'pip'")
        assert "pip" in tile["boxClass"]
        rect = tile["rect"]  # the iframe, in the bottom right corner, small
        assert rect["width"] < VIEWPORT["width"] / 3
        assert VIEWPORT["width"] - 40 < rect["x"] + rect["width"] <= VIEWPORT["width"]
        assert VIEWPORT["height"] - 40 < rect["y"] + rect["height"] <= VIEWPORT["height"]
        assert await page.evaluate("document.querySelector('.item').classList.contains('away')")
        assert ink(await screenshot(page, '[data-view-id="view-1"] iframe')) > 0.005

        buttons = '[data-view-id="view-1"] button'
        await page.evaluate(f"""document.querySelector('{buttons}[data-mode="inline"]').click()""")
        shown = "window.modes.length === 2 && window.modes"
        assert await view_wait(page, app, "view-1", shown) == ["pip", "inline"]
        inline = await page_view(page, "view-1", "!v.boxClass.includes('pip')")
        assert inline["loads"] == 1
        assert await page.evaluate(
            f"document.querySelector('{buttons}[data-mode=fullscreen]').disabled"
        )


async def test_a_view_that_cannot_be_shown_says_why_beside_the_tool_result(
    page: BrowserPage,
) -> None:
    """Before: after the timeout the page showed only the fallback text, never why."""
    server = MCPServer("broken")

    @server.tool(meta={"ui": {"resourceUri": "ui://broken/silent.html"}})
    def silent() -> str:
        """A view that never initializes."""
        return "silent's result"

    @server.tool(meta={"ui": {"resourceUri": "ui://broken/wide-open.html"}})
    def wide_open() -> str:
        """A view whose CSP asks for every origin."""
        return "wide-open's result"

    @server.resource("ui://broken/silent.html", mime_type=protocol.APP_MIME_TYPE)
    def silent_html() -> str:
        return "<!doctype html><p>I never say ui/initialize</p>"

    @server.resource(
        "ui://broken/wide-open.html",
        mime_type=protocol.APP_MIME_TYPE,
        meta={"ui": {"csp": {"connectDomains": ["*"]}}},
    )
    def wide_open_html() -> str:
        return "<!doctype html><p>never served</p>"

    async with (
        MCPFrameHost(server, name="broken", timeout=WAIT) as frame,
        AppPage(frame, timeout=WAIT, init_timeout=1.0) as app,
    ):
        await open_page(page, app)
        await call_from_page(page, "silent", {})
        shown = await page_view(page, "view-1", "v.state === 'error' && v.reason && v.fallback")
        assert "initialize" in shown["reason"], shown
        assert "1 s" in shown["reason"], shown
        assert shown["fallback"] == "silent's result"
        assert app.views["view-1"].error in shown["reason"]

        await call_from_page(page, "wide_open", {})
        shown = await page_view(page, "view-2", "v.state === 'error' && v.reason && v.fallback")
        assert "not a host source" in shown["reason"], shown
        assert shown["fallback"] == "wide-open's result"
