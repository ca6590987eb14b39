"""MCP Apps: AppBridge and App over memory and over a WebSocket, AppView and AppPage.
The app's MCP server runs on stdio in a subprocess under this runner."""

from __future__ import annotations

import anyio
from common import CLOCK_HTML, http, launched, report

from assistant_frames import ModelContextRegistry, connect, memory_pair
from assistant_frames.apps import App, AppBridge, AppView, LinkPolicy, protocol
from assistant_frames.apps.page import AppPage
from assistant_frames.mcp import MCPFrameHost
from assistant_frames.testing import connect_app
from assistant_frames.transports import connect_websocket, websocket_server


async def main() -> None:
    await bridge_and_app()
    async with connect(launched("mcp_server.py", None, "clock"), mcp=True, name="clock") as frame:
        assert isinstance(frame, MCPFrameHost)
        await bridge_over_websocket(frame)
        await app_view(frame)
        await app_page(frame)
    report("done", True)


async def bridge_and_app() -> None:
    view_tools = ModelContextRegistry()

    @view_tools.tool
    def pick_city(city: str) -> str:
        """Select a city on the view's map."""
        return f"{city} selected"

    parent = ModelContextRegistry()
    async with connect_app(view_tools, host_context={"theme": "dark"}) as (bridge, app):
        parent.add_provider(bridge, namespace="map")
        await bridge.send_tool_input({"city": "Paris"})
        tool_input = await app.wait_tool_input(timeout=5)
        answer = await parent.get_model_context().call_tool("map_pick_city", {"city": "Oslo"})
        await app.update_model_context("The user is looking at Oslo.")
        report(
            "connect_app",
            [app.host_context.theme, tool_input, answer, parent.get_model_context().system],
        )


async def bridge_over_websocket(frame: MCPFrameHost) -> None:
    """A view's WebSocket, each connection wrapped in an AppBridge (as docs/apps.md)."""
    result = await frame.call_tool_result("clock", {"city": "Oslo"})
    bridged: list[str] = []
    ended = anyio.Event()

    async def handler(transport: object) -> None:
        async with AppBridge(transport, server=frame, host_context={"theme": "dark"}) as bridge:  # type: ignore[arg-type]
            await bridge.wait_initialized(timeout=5)
            await bridge.send_tool_input({"city": "Oslo"})
            await bridge.send_tool_result(result)
            await bridge.wait_disconnected()
            bridged.append(bridge.state)
            ended.set()

    async with (
        websocket_server(handler, token="view") as server,
        connect_websocket(server.url, token="view") as transport,
        App(transport) as app,
    ):
        got = await app.wait_tool_result(timeout=5)
        refreshed = await app.call_server_tool("refresh", {"city": "Oslo"})
        report(
            "bridge over websocket",
            [
                app.host_context.theme,
                await app.wait_tool_input(timeout=5),
                got.structured_content,
                refreshed.structured_content,
            ],
        )
    with anyio.fail_after(5):
        await ended.wait()
    report("bridge over websocket ended", bridged)


async def app_view(frame: MCPFrameHost) -> None:
    opened: list[str] = []
    view = AppView(
        title="Clock in Oslo",
        app_id="clock-oslo",
        server=frame,
        resource_uri="ui://clock/view",
        tool_name="clock",
        tool_call_id="call-1",
        fallback_text="Noon in Oslo.",
        display_mode="fullscreen",
        link_policy=LinkPolicy(allow=["https://time.example"]),
        on_open_link=lambda view, url: opened.append(url),
    )
    resource = await view.resolve()
    report(
        "view resolved",
        [
            view.state,
            resource.html == CLOCK_HTML,
            "connect-src https://time.example" in resource.csp_header,
        ],
    )
    await view.send_tool_input({"city": "Oslo"})
    await view.send_tool_result(await frame.call_tool_result("clock", {"city": "Oslo"}))
    host_end, view_end = memory_pair()
    capabilities = protocol.AppCapabilities(available_display_modes=["inline", "fullscreen"])
    async with anyio.create_task_group() as group:
        group.start_soon(view.serve, host_end)
        async with App(view_end, capabilities=capabilities) as app:
            await view.wait_state("ready", timeout=5)
            text = (await app.wait_tool_result(timeout=5)).content[0].text  # type: ignore[union-attr]
            await view.update_host_context(theme="dark")
            await app.wait_until(lambda app: app.host_context.theme == "dark", timeout=5)
            allowed = not (await app.open_link("https://time.example/oslo")).is_error
            refused = (await app.open_link("javascript:alert(1)")).is_error
            await view.close()
            report("view", [app.host_context.display_mode, text, allowed, refused, app.torn_down])
    report("view closed", [view.state, opened])


async def app_page(frame: MCPFrameHost) -> None:
    async with AppPage(frame, title="Clock") as page:
        status, body = await http(page.origin + "/")
        report("page html", [status, "<html" in body.lower()])
        view = await page.call_tool("clock", {"city": "Oslo"})
        url = page.origin.replace("http://", "ws://") + f"/view/{view.app_id}"
        async with connect_websocket(url, token=page.token) as transport, App(transport) as app:
            result = await app.wait_tool_result(timeout=5)
            await page.set_theme("dark")
            await app.wait_until(lambda app: app.host_context.theme == "dark", timeout=5)
            await view.close()
            report("page view", [result.structured_content, app.torn_down])
    report("page closed", [view.state, [t.message.get("method") for t in page.traffic][:1]])
