"""``AppPage`` without a browser: its HTTP answers and WebSockets, driven by a Python view.

The app is ``examples/weather_app.py`` (served by ``MCPContextServer``, consumed by an
``MCPFrameHost``). The page's control WebSocket is driven as the page's script drives it, and
the view's side is a Python :class:`~assistant_frames.apps.App` on the view's WebSocket:
real sockets on 127.0.0.1, asyncio and trio.
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

from mcp.server.mcpserver import MCPServer

from assistant_frames import HandshakeRejected
from assistant_frames.apps import App, LinkPolicy, build_csp, protocol
from assistant_frames.apps.page import AppPage
from assistant_frames.browser import app_page_files, relay_source
from assistant_frames.mcp import MCPContextServer, MCPFrameHost
from assistant_frames.transports import WebSocketTransport, connect_websocket

from helpers import http_get

pytestmark = pytest.mark.anyio

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "weather_app.py"
WAIT = 10.0


@asynccontextmanager
async def weather_page(**options: Any) -> AsyncIterator[AppPage]:
    example = runpy.run_path(str(EXAMPLE))  # not __main__: nothing is served on stdio
    server: MCPContextServer = example["server"]
    async with (
        server.running(),
        MCPFrameHost(server.server, timeout=WAIT) as frame,
        AppPage(frame, timeout=WAIT, init_timeout=WAIT, **options) as page,
    ):
        yield page


def ws_url(page: AppPage, path: str) -> str:
    return page.origin.replace("http://", "ws://") + path


SEEN: dict[int, list[dict[str, Any]]] = {}  # every control message, by connection


async def next_of(control: WebSocketTransport, kind: str, **fields: Any) -> dict[str, Any]:
    """The next control message of type ``kind`` (with these fields), skipping the others
    (kept in ``SEEN``)."""
    seen = SEEN.setdefault(id(control), [])
    with anyio.fail_after(WAIT):
        while True:
            message = await control.receive()
            seen.append(message)
            if message["type"] == kind and all(message.get(k) == v for k, v in fields.items()):
                return dict(message)


async def get(origin: str, path: str) -> tuple[int, dict[str, str], bytes]:
    host, port = origin.removeprefix("http://").rsplit(":", 1)

    class Server:  # what http_get needs of a server
        pass

    server: Any = Server()
    server.host, server.port = host, int(port)
    return await http_get(server, path)


async def test_the_page_and_its_files_need_no_token_its_sockets_do() -> None:
    async with weather_page() as page:
        assert page.url == f"{page.origin}/#token={page.token}"
        assert page.views_origin != page.origin  # another port: another origin
        status, headers, body = await get(page.origin, "/")
        assert status == 200
        assert headers["content-type"].startswith("text/html")
        assert b"/assistant-frames/app-page.js" in body
        for name in ("app-page.js", "app-page.css", "parent-relay.js"):
            status, _, body = await get(page.origin, f"/assistant-frames/{name}")
            assert (status, body) == (200, relay_source(name)), name
        for path, (content, content_type) in app_page_files().items():  # the same files
            # Not the frames' child relay, nor the runtime widgets load on their own origin.
            if not path.startswith(("/assistant-frames/child-relay", "/assistant-frames/widget-")):
                status, headers, body = await get(page.origin, path)
                assert (status, body, headers["content-type"]) == (200, content, content_type)
        for path in ("/page", "/view/view-1"):
            with pytest.raises(HandshakeRejected) as refused:
                async with connect_websocket(ws_url(page, path), token="wrong"):
                    pass
            assert refused.value.status == 401
        # A browser page on another origin is turned away, token or not.
        async with connect_websocket(
            ws_url(page, "/page"), token=page.token, origin="http://evil.example"
        ) as control:
            with anyio.fail_after(WAIT), pytest.raises(anyio.EndOfStream):
                await control.receive()


async def test_a_tool_call_shows_its_view_served_under_its_csp_and_python_drives_it() -> None:
    async with (
        weather_page() as page,
        connect_websocket(ws_url(page, "/page"), token=page.token) as control,
    ):
        hello = await next_of(control, "hello")
        assert [tool["name"] for tool in hello["tools"]] == ["forecast"]  # not app-only refresh
        assert hello["theme"] == "light"

        await control.send({"type": "call", "tool": "forecast", "arguments": {"city": "Oslo"}})
        shown = await next_of(control, "view", id="view-1")
        assert shown["displayMode"] == "inline"
        assert shown["src"].startswith(f"{page.views_origin}/view/view-1/")
        assert shown["socket"] == "/view/view-1"
        assert shown["allow"] == ""  # the example asks for no permission

        # The view's HTML: on the views' origin only, at its secret URL, under its CSP.
        path = shown["src"].removeprefix(page.views_origin)
        status, headers, body = await get(page.views_origin, path)
        assert status == 200
        assert body.decode() == page.views["view-1"].resource.html  # type: ignore[union-attr]
        csp = headers["content-security-policy"]
        assert csp == build_csp(protocol.ResourceCsp(connect_domains=[]))
        assert "connect-src 'none'" in csp
        assert headers["referrer-policy"] == "no-referrer"
        wrong = path[:-1] + ("y" if path.endswith("x") else "x")  # another secret, always
        assert (await get(page.views_origin, wrong))[0] == 404
        assert (await get(page.origin, path))[0] == 404

        capabilities = protocol.AppCapabilities(available_display_modes=["inline", "fullscreen"])
        async with (
            connect_websocket(ws_url(page, "/view/view-1"), token=page.token) as transport,
            App(transport, capabilities=capabilities, timeout=WAIT) as app,
        ):
            assert (await app.wait_tool_input()) == {"city": "Oslo"}
            result = await app.wait_tool_result()
            assert result.structured_content == {"city": "Oslo", "sky": "snow"}
            await next_of(control, "view", id="view-1", state="ready")
            # A second page (another tab) cannot take the view over: refused at once.
            async with connect_websocket(ws_url(page, "/view/view-1"), token=page.token) as other:
                with anyio.fail_after(WAIT), pytest.raises(anyio.EndOfStream):
                    await other.receive()
            # Every message is in the log, both ways.
            logged = [m for m in SEEN[id(control)] if m["type"] == "log"]
            assert logged[0]["direction"] == "in"
            assert logged[0]["message"]["method"] == "ui/initialize"
            methods = [(t.direction, t.message.get("method")) for t in page.traffic]
            assert ("out", "ui/notifications/tool-result") in methods

            await control.send({"type": "theme", "theme": "dark"})
            await app.wait_until(lambda app: app.host_context.theme == "dark")
            assert (await next_of(control, "theme"))["theme"] == "dark"

            await control.send({"type": "display-mode", "id": "view-1", "mode": "pip"})
            refused = await next_of(control, "view", id="view-1")  # pip: not declared
            assert refused["displayMode"] == "inline"
            assert refused["displayModes"] == ["inline", "fullscreen"]
            await control.send({"type": "display-mode", "id": "view-1", "mode": "fullscreen"})
            await app.wait_until(lambda app: app.host_context.display_mode == "fullscreen")
            await next_of(control, "view", id="view-1", displayMode="fullscreen")

            answer = await app.open_link("https://weather.example/oslo")
            assert answer.is_error  # the page's policy allows no link
            await app.send_message("Plan a walk in Oslo")
            assert (await next_of(control, "message"))["text"] == "Plan a walk in Oslo"

            await control.send({"type": "close", "id": "view-1"})
            await next_of(control, "view", id="view-1", state="closed")
            assert app.torn_down  # before the connection closed
        assert page.views == {}
        assert ("out", "ui/resource-teardown") in [
            (t.direction, t.message.get("method")) for t in page.traffic
        ]


async def test_allowed_links_reach_the_page_as_links() -> None:
    policy = LinkPolicy(allow=["https://weather.example/"])
    async with (
        weather_page(link_policy=policy) as page,
        connect_websocket(ws_url(page, "/page"), token=page.token) as control,
    ):
        view = await page.call_tool("forecast", {"city": "Lima"})
        assert view.app_id == "view-1"
        assert view.fallback_text == "The sky over Lima is overcast."
        async with (
            connect_websocket(ws_url(page, "/view/view-1"), token=page.token) as transport,
            App(transport, timeout=WAIT) as app,
        ):
            assert not (await app.open_link("https://weather.example/lima")).is_error
            assert (await next_of(control, "link"))["url"] == "https://weather.example/lima"
            assert (await app.open_link("javascript:alert(1)")).is_error


async def test_the_log_keeps_large_messages_shortened_with_their_size() -> None:
    """Before: every message was kept whole (2,000 of up to 4 MiB: 8 GB for the pane)."""
    async with (
        weather_page() as page,
        connect_websocket(ws_url(page, "/page"), token=page.token) as control,
    ):
        await page.call_tool("forecast", {"city": "Lima"})
        async with (
            connect_websocket(ws_url(page, "/view/view-1"), token=page.token) as transport,
            App(transport, timeout=WAIT) as app,
        ):
            await app.send_message("x" * 1_000_000)  # a 1 MB ui/message
            shown = (await next_of(control, "message"))["text"]
            assert shown.endswith("... (1,000,000 characters)")
            assert len(shown) < 70_000
            big = [t for t in page.traffic if t.size > 1_000_000]
            assert len(big) == 1
            assert big[0].truncated
            assert big[0].message["method"] == "ui/message"
            assert len(str(big[0].message)) < 10_000
            assert "bytes)" in big[0].message["truncated"]
            small = [t for t in page.traffic if t.direction == "in" and not t.truncated]
            assert small
            assert all(t.size < 8 * 1024 for t in small)
            logged = [m for m in SEEN[id(control)] if m["type"] == "log"]
            assert max(len(str(m["message"])) for m in logged) < 10_000


async def test_bad_calls_are_notices_in_the_page() -> None:
    async with (
        weather_page() as page,
        connect_websocket(ws_url(page, "/page"), token=page.token) as control,
    ):
        await next_of(control, "hello")
        for call, why in (
            ({"tool": "refresh", "arguments": {"city": "Oslo"}}, "no tool 'refresh'"),  # app-only
            ({"tool": "nope", "arguments": {}}, "no tool 'nope'"),
            ({"tool": "forecast", "arguments": [1]}, "must be a JSON object"),
            ({"tool": "forecast", "arguments": {}, "displayMode": "huge"}, "No display mode"),
        ):
            await control.send({"type": "call", **call})
            notice = await next_of(control, "notice")
            assert why in notice["text"], notice
        assert page.views == {}


async def test_a_view_that_cannot_be_shown_shows_the_tool_result_text() -> None:
    server = MCPServer("notes")

    @server.tool(meta={"ui": {"resourceUri": "ui://notes/view.html"}})
    def save_note(text: str) -> str:
        """Save a note."""
        return f"Saved: {text}"

    @server.resource("ui://notes/view.html", mime_type="text/html")  # not an app's MIME
    def notes_html() -> str:
        return "<p>notes</p>"

    async with (
        MCPFrameHost(server, name="notes", timeout=WAIT) as frame,
        AppPage(frame, timeout=WAIT) as page,
        connect_websocket(ws_url(page, "/page"), token=page.token) as control,
    ):
        await next_of(control, "hello")
        await control.send({"type": "call", "tool": "save_note", "arguments": {"text": "hi"}})
        failed = await next_of(control, "view", state="error", fallback="Saved: hi")
        assert "MIME" in failed["error"]
        assert "src" not in failed  # nothing to render
