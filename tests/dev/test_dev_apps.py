"""The dev page's MCP Apps views (``DevViews``), through real WebSockets on 127.0.0.1.

A federation holds a registry with a tool whose UI is a ``ui://`` resource. Calling it
from the page's socket gives, beside the result, a view description whose ``src`` is on
the views' origin (another port than the page's), served with its CSP; a client playing
the view's relay on ``/view/<id>`` initializes and receives the tool's input and result,
and the page is sent that traffic; the view calls its member's app-only tool by the
member's own name for it. Its page going away tears the view down. The
``ContextServer`` adapter is checked on its own too. Every wait is bounded by ``WAIT``.
"""

from __future__ import annotations

import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

import anyio
import pytest
from dev_socket import WAIT, page_socket

from assistant_frames import Federation, ModelContextRegistry, ToolResult, ToolUI
from assistant_frames.apps.page import AppPage
from assistant_frames.apps.protocol import ProtocolError
from assistant_frames.dev import DevPage
from assistant_frames.dev.apps import ContextServer, ui_of

pytestmark = pytest.mark.anyio


def app_page(page: DevPage) -> AppPage:
    """The app page inside ``page`` (there is one: the mcp extra is installed)."""
    assert page.views is not None
    return page.views.app_page


URI = "ui://sky/view"
VIEW = "<!doctype html><html><body><p id='sky'>waiting</p></body></html>"


def sky_registry() -> ModelContextRegistry:
    registry = ModelContextRegistry()
    registry.add_ui_resource(URI, html=VIEW, title="Sky", prefers_border=True)

    @registry.tool(ui=URI)
    def sky(city: str) -> ToolResult:
        """The sky over a city, with a view."""
        return ToolResult(content=f"Clear over {city}.", structured_content={"city": city})

    @registry.tool(ui=ToolUI(URI, visibility=["app"]))
    def refresh(city: str) -> str:
        """For the view only."""
        return city

    @registry.tool
    def plain(text: str) -> str:
        """No view."""
        return text

    return registry


@asynccontextmanager
async def sky_page() -> AsyncIterator[DevPage]:
    async with Federation() as federation, DevPage(federation) as page:
        await page.add("weather", sky_registry())
        yield page


async def test_the_context_server_serves_the_merged_context() -> None:
    async with Federation() as federation:
        await federation.add("weather", sky_registry())
        context = federation.get_model_context()
        assert ui_of(context, "weather_sky") == URI
        assert ui_of(context, "weather_refresh") is None  # app-only: not the model's
        assert ui_of(context, "weather_plain") is None
        server = ContextServer(federation)
        read = await server.read_resource(URI)
        (content,) = read.contents
        assert content.mime_type == "text/html;profile=mcp-app"
        assert getattr(content, "text", None) == VIEW
        assert [str(r.uri) for r in await server.list_resources()] == [URI]
        result = await server.call_tool_result("weather_sky", {"city": "Oslo"})
        assert result.structured_content == {"city": "Oslo"}
        failed = await server.call_tool_result("weather_sky", {})
        assert failed.is_error
        with pytest.raises(ProtocolError):
            await server.read_resource("ui://nothing/here")


async def test_a_ui_tool_call_shows_its_view_from_another_origin() -> None:
    async with sky_page() as page, page_socket(page, "/socket") as socket:
        await socket.until(lambda m: m["type"] == "state" and len(m["tools"]) == 3)
        await socket.transport.send(
            {"type": "call", "call": "c1", "tool": "weather_sky", "arguments": {"city": "Oslo"}}
        )
        view = await socket.until(lambda m: m["type"] == "view" and "src" in m)
        assert view["call"] == "c1"
        assert view["title"] == "weather_sky"
        src = urlsplit(view["src"])
        assert f"{src.scheme}://{src.netloc}" == page.views_origin != page.origin
        assert view["socket"] == f"/view/{view['id']}"
        result = await socket.until(lambda m: m["type"] == "result")
        assert result["call"] == "c1"

        def fetch() -> tuple[str, bytes]:
            with urllib.request.urlopen(view["src"], timeout=WAIT) as answer:
                return answer.headers["Content-Security-Policy"], bytes(answer.read())

        csp, html = await anyio.to_thread.run_sync(fetch)
        assert "default-src 'none'" in csp
        assert html == VIEW.encode()

        # The view's relay: it initializes, then gets the input and the result.
        async with page_socket(page, view["socket"]) as relay:
            await relay.transport.send(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "ui/initialize",
                    "params": {
                        "protocolVersion": "2026-01-26",
                        "appInfo": {"name": "sky-view", "version": "1.0.0"},
                        "appCapabilities": {},
                    },
                }
            )
            await relay.until(lambda m: m.get("id") == 1 and "result" in m)
            await relay.transport.send({"jsonrpc": "2.0", "method": "ui/notifications/initialized"})
            tool_input = await relay.until(
                lambda m: m.get("method") == "ui/notifications/tool-input"
            )
            assert tool_input["params"]["arguments"] == {"city": "Oslo"}
            tool_result = await relay.until(
                lambda m: m.get("method") == "ui/notifications/tool-result"
            )
            assert tool_result["params"]["structuredContent"] == {"city": "Oslo"}
            # The view calls its member's app-only tool by the name it knows there.
            await relay.transport.send(
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "tools/call",
                    "params": {"name": "refresh", "arguments": {"city": "Bergen"}},
                }
            )
            answer = await relay.until(lambda m: m.get("id") == 2 and "method" not in m)
            assert answer["result"]["content"][0]["text"] == "Bergen"
            # The page is told the traffic, both ways, by view.
            await socket.until(
                lambda m: (
                    m["type"] == "view-log"
                    and m["direction"] == "out"
                    and m["message"].get("method") == "ui/notifications/tool-result"
                )
            )
            logged = [m for m in socket.received if m["type"] == "view-log"]
            assert {m["id"] for m in logged} == {view["id"]}
            assert {m["call"] for m in logged} == {"c1"}
            assert any(m["message"].get("method") == "ui/initialize" for m in logged)
            await socket.seen(lambda m: m["type"] == "view" and m["state"] == "ready")

            # The display mode and the close button go to the app page.
            await socket.transport.send({"type": "view-close", "id": view["id"]})
            teardown = await relay.until(lambda m: m.get("method") == "ui/resource-teardown")
            await relay.transport.send({"jsonrpc": "2.0", "id": teardown["id"], "result": {}})
            await socket.until(lambda m: m["type"] == "view" and m["state"] == "closed")
        assert app_page(page).views == {}


async def test_a_plain_tool_shows_no_view_and_a_gone_page_tears_its_views_down() -> None:
    async with sky_page() as page:
        async with page_socket(page, "/socket") as socket:
            await socket.until(lambda m: m["type"] == "state" and len(m["tools"]) == 3)
            await socket.transport.send(
                {"type": "call", "call": "p", "tool": "weather_plain", "arguments": {"text": "x"}}
            )
            await socket.until(lambda m: m["type"] == "result")
            assert not [m for m in socket.received if m["type"] == "view"]
            await socket.transport.send(
                {"type": "call", "call": "s", "tool": "weather_sky", "arguments": {"city": "A"}}
            )
            await socket.until(lambda m: m["type"] == "result")
            assert len(app_page(page).views) == 1
            # Another page cannot close it.
            async with page_socket(page, "/socket") as other:
                await other.until(lambda m: m["type"] == "state")
                ((app_id, shown),) = app_page(page).views.items()
                await other.transport.send({"type": "view-close", "id": app_id})
                await anyio.sleep(0.2)
                assert app_id in app_page(page).views
        await shown.wait_state("closed", timeout=WAIT)
        assert app_page(page).views == {}


async def test_a_program_calls_view_is_told_to_later_pages_until_it_closes() -> None:
    async with sky_page() as page:
        await page.federation.wait_for_tools("weather_sky", timeout=WAIT)
        result = await page.call_tool("weather_sky", {"city": "Oslo"})
        assert result.structured_content == {"city": "Oslo"}
        async with page_socket(page) as first:
            view = await first.until(lambda m: m["type"] == "view" and "src" in m)
            assert view["call"] == "p1"
            await first.send({"type": "view-close", "id": view["id"]})  # any page may
            await first.until(lambda m: m["type"] == "view" and m["state"] == "closed")
        # A page opened after the view closed is told the call and the view, to its end.
        async with page_socket(page) as later:
            closed = await later.until(lambda m: m["type"] == "view" and m["state"] == "closed")
            assert (closed["id"], closed["call"]) == (view["id"], "p1")
            told = [(m["type"], m.get("call")) for m in later.received]
            assert told.index(("started", "p1")) < told.index(("result", "p1"))
