"""``AppBridge(server=client)``: a view's requests forwarded to a bare ``mcp.Client``.

The app's server is a real ``mcp`` ``MCPServer`` in this process, reached through a real
``mcp.Client`` the test enters itself, in both of the SDK's modes (``legacy``: the
initialize handshake over JSON-RPC streams; ``auto``: 2026-07-28, dispatched directly).
The view is the Python ``App`` over a ``memory_pair`` (``connect_app``), or raw JSON-RPC
where the ``App`` does not show what crosses the wire (progress).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as mcp
import pytest
from mcp import Client
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError

from assistant_frames.apps import (
    App,
    AppBridge,
    AppRequestError,
    AppTimeout,
    ClientServer,
    protocol,
)
from assistant_frames.testing import connect_app
from assistant_frames.transports import memory_pair

from helpers import wait_until

pytestmark = pytest.mark.anyio

MODES = pytest.mark.parametrize("mode", ["legacy", "auto"])
WAIT = 5.0
FAILED = -32042  # a server's own JSON-RPC error code, passed on as it is


def app_server() -> MCPServer:
    server = MCPServer("weather-server", instructions="Weather, with a view.")
    calls: list[str] = []

    @server.tool(meta={"ui": {"resourceUri": "ui://weather/view.html"}})
    def forecast(city: str) -> str:
        """Both the model and the view may call it (the default)."""
        calls.append(f"forecast {city}")
        return f"Sunny in {city}"

    @server.tool(meta={"ui": {"visibility": ["app"]}})
    def refresh(city: str) -> dict[str, Any]:
        """Only the view may call it."""
        calls.append(f"refresh {city}")
        return {"city": city, "temperature": 21}

    @server.tool(meta={"ui": {"visibility": ["model"]}})
    def delete_everything() -> str:
        """Only the model may call it: a view asking is refused."""
        calls.append("delete_everything")
        return "deleted"

    @server.tool()
    async def slow(seconds: float) -> str:
        calls.append("slow started")
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            calls.append("slow cancelled")
            raise
        calls.append("slow finished")
        return "done"

    @server.tool()
    async def steps(count: int, ctx: Context) -> str:
        for step in range(1, count + 1):
            await ctx.report_progress(step, count, f"step {step}")
        return "all done"

    @server.tool()
    def broken() -> str:
        raise MCPError(code=FAILED, message="the forecast service is down")

    @server.resource("ui://weather/view.html", mime_type=protocol.APP_MIME_TYPE)
    def view_html() -> str:
        return "<html><body>weather</body></html>"

    @server.resource("weather://{city}/today")
    def today(city: str) -> str:
        return f"Today in {city}: sunny"

    @server.prompt()
    def weather_report(city: str) -> str:
        """Write a weather report."""
        return f"Write the weather report for {city}."

    server.calls = calls  # type: ignore[attr-defined]
    return server


@asynccontextmanager
async def served(mode: str) -> AsyncIterator[tuple[AppBridge, App, list[str]]]:
    """A bridge whose server is an entered ``Client``, and a Python view on it."""
    server = app_server()
    async with (
        Client(server, mode=mode) as client,
        connect_app(server=client, timeout=WAIT) as (bridge, app),
    ):
        yield bridge, app, server.calls  # type: ignore[attr-defined]


def names(tools: list[mcp.Tool]) -> list[str]:
    return sorted(tool.name for tool in tools)


@MODES
async def test_a_view_calls_the_app_visible_tools_through_the_client(mode: str) -> None:
    async with served(mode) as (bridge, app, calls):
        assert isinstance(bridge.server, ClientServer)
        assert bridge.server.name == "weather-server"
        result = await app.call_server_tool("forecast", {"city": "Paris"})
        assert isinstance(result.content[0], mcp.TextContent)
        assert result.content[0].text == "Sunny in Paris"
        result = await app.call_server_tool("refresh", {"city": "Oslo"})
        assert result.structured_content == {"city": "Oslo", "temperature": 21}
        assert calls == ["forecast Paris", "refresh Oslo"]
        listed: mcp.ListToolsResult = await app.request("tools/list")
        # Model-only tools are not listed to the view.
        assert names(listed.tools) == ["broken", "forecast", "refresh", "slow", "steps"]


@MODES
async def test_model_only_and_unknown_tools_are_refused_and_never_reach_the_server(
    mode: str,
) -> None:
    async with served(mode) as (bridge, app, calls):
        with pytest.raises(AppRequestError) as refused:
            await app.call_server_tool("delete_everything")
        assert refused.value.jsonrpc_code == protocol.REFUSED
        assert "not visible to apps" in refused.value.message
        with pytest.raises(AppRequestError) as unknown:
            await app.call_server_tool("no_such_tool")
        assert unknown.value.jsonrpc_code == protocol.REFUSED
        assert "not a tool of the app's server" in unknown.value.message
        assert calls == []
        assert bridge.state == "initialized"


@MODES
async def test_tool_changes_on_the_server_count_at_the_next_call(mode: str) -> None:
    # MCPServer.add_tool announces nothing: only listing again can see the change.
    server = app_server()
    calls: list[str] = server.calls  # type: ignore[attr-defined]
    async with (
        Client(server, mode=mode) as client,
        connect_app(server=client, timeout=WAIT) as (_bridge, app),
    ):
        with pytest.raises(AppRequestError):
            await app.call_server_tool("shout", {"text": "hi"})  # not there yet

        server.add_tool(lambda text: text.upper(), name="shout", description="Shout.")
        result = await app.call_server_tool("shout", {"text": "hi"})
        assert isinstance(result.content[0], mcp.TextContent)
        assert result.content[0].text == "HI"
        listed: mcp.ListToolsResult = await app.request("tools/list")
        assert "shout" in names(listed.tools)

        # "refresh" turns model-only: the view may no longer call it, and is not shown it.
        await app.call_server_tool("refresh", {"city": "Oslo"})
        server.remove_tool("refresh")

        def model_only_refresh(city: str) -> str:
            calls.append(f"refresh {city}")
            return "ok"

        server.add_tool(model_only_refresh, name="refresh", meta={"ui": {"visibility": ["model"]}})
        with pytest.raises(AppRequestError) as refused:
            await app.call_server_tool("refresh", {"city": "Rome"})
        assert refused.value.jsonrpc_code == protocol.REFUSED
        assert calls == ["refresh Oslo"]
        listed = await app.request("tools/list")
        assert "refresh" not in names(listed.tools)

        server.remove_tool("shout")
        with pytest.raises(AppRequestError) as gone:
            await app.call_server_tool("shout", {"text": "hi"})
        assert gone.value.jsonrpc_code == protocol.REFUSED


@MODES
async def test_the_server_progress_reaches_the_view(mode: str) -> None:
    server = app_server()
    host_side, view_side = memory_pair()
    async with Client(server, mode=mode) as client, AppBridge(host_side, server=client):
        await raw_initialize(view_side)
        params = {"name": "steps", "arguments": {"count": 3}, "_meta": {"progressToken": "p1"}}
        await view_side.send(protocol.encode_request(1, "tools/call", params))
        progress = []
        while True:
            with anyio.fail_after(WAIT):
                message = await view_side.receive()
            if message.get("id") == 1:
                break
            assert message["method"] == "notifications/progress", message
            progress.append(message["params"])
        assert message["result"]["content"][0]["text"] == "all done"
        assert progress == [
            {"progressToken": "p1", "progress": step, "total": 3, "message": f"step {step}"}
            for step in (1, 2, 3)
        ]


@MODES
async def test_the_view_cancelling_its_call_cancels_the_tool_on_the_server(mode: str) -> None:
    async with served(mode) as (_bridge, app, calls):
        # Timing out, the App tells the host with notifications/cancelled.
        with pytest.raises(AppTimeout):
            await app.call_server_tool("slow", {"seconds": 30}, timeout=0.5)
        await wait_until(lambda: "slow cancelled" in calls, WAIT)
        assert "slow finished" not in calls
        result = await app.call_server_tool("forecast", {"city": "Lima"})  # still serving
        assert not result.is_error


@MODES
async def test_a_server_error_reaches_the_view_with_its_code(mode: str) -> None:
    async with served(mode) as (_bridge, app, _calls):
        with pytest.raises(AppRequestError) as failed:
            await app.call_server_tool("broken")
        assert failed.value.jsonrpc_code == FAILED
        assert failed.value.message == "the forecast service is down"
        with pytest.raises(AppRequestError) as missing:
            await app.read_server_resource("ui://nothing/here")
        assert missing.value.jsonrpc_code == mcp.INVALID_PARAMS
        assert "Unknown resource" in missing.value.message


@MODES
async def test_resources_templates_and_prompts_are_forwarded(mode: str) -> None:
    async with served(mode) as (_bridge, app, _calls):
        read = await app.read_server_resource("ui://weather/view.html")
        assert isinstance(read.contents[0], mcp.TextResourceContents)
        assert read.contents[0].text == "<html><body>weather</body></html>"
        filled = await app.read_server_resource("weather://Paris/today")
        assert isinstance(filled.contents[0], mcp.TextResourceContents)
        assert filled.contents[0].text == "Today in Paris: sunny"
        resources: mcp.ListResourcesResult = await app.request("resources/list")
        assert [r.uri for r in resources.resources] == ["ui://weather/view.html"]
        templates: mcp.ListResourceTemplatesResult = await app.request("resources/templates/list")
        assert [t.uri_template for t in templates.resource_templates] == ["weather://{city}/today"]
        prompts: mcp.ListPromptsResult = await app.request("prompts/list")
        assert [p.name for p in prompts.prompts] == ["weather_report"]


@MODES
async def test_a_closed_client_is_refused_and_the_bridge_goes_on(mode: str) -> None:
    server = app_server()
    client = Client(server, mode=mode)
    async with connect_app(server=client, timeout=WAIT) as (bridge, app):
        async with client:
            assert not (await app.call_server_tool("forecast", {"city": "Oslo"})).is_error
        for method, params in [
            ("tools/call", {"name": "forecast", "arguments": {"city": "Oslo"}}),
            ("tools/list", None),
            ("resources/read", {"uri": "ui://weather/view.html"}),
            ("resources/list", None),
            ("prompts/list", None),
        ]:
            with pytest.raises(AppRequestError) as refused:
                await app.request(method, params)
            assert refused.value.jsonrpc_code == protocol.REFUSED, method
            assert "mcp.Client of the app's MCP server is closed" in refused.value.message
        # The rest of the bridge serves on.
        await app.request("ping")  # answered, no error
        await app.update_model_context("still here")
        assert bridge.model_context is not None
        assert bridge.state == "initialized"


@MODES
async def test_a_client_closed_under_a_call_answers_the_view(mode: str) -> None:
    server = app_server()
    calls: list[str] = server.calls  # type: ignore[attr-defined]
    client = Client(server, mode=mode)
    answers: list[mcp.CallToolResult] = []

    async def call(app: App) -> None:
        answers.append(await app.call_server_tool("slow", {"seconds": 30}))

    async with (
        connect_app(server=ClientServer(client, timeout=2.0), timeout=WAIT) as (_bridge, app),
        anyio.create_task_group() as group,
    ):
        async with client:
            group.start_soon(call, app)
            await wait_until(lambda: "slow started" in calls, WAIT)
        closed = anyio.current_time()
        await wait_until(lambda: bool(answers), WAIT)
        took = anyio.current_time() - closed
        answer = answers[0]
        assert answer.is_error, answer
        assert isinstance(answer.content[0], mcp.TextContent)
        text = answer.content[0].text
        if mode == "legacy":  # the client's streams end: said at once, as a gone MCPFrameHost's
            assert "The app's MCP server went away" in text
            assert took < 1.0
        else:
            # The SDK's in-process 2026-07-28 dispatch runs the server's handler in the
            # caller's task and does not end it on close: the ClientServer's timeout does.
            assert text == 'Tool call "slow" timed out after 2 s'
            assert 1.5 < took < 3.5
        assert "slow finished" not in calls
        await app.request("ping")  # answered, no error


@MODES
async def test_a_client_server_tells_the_view_of_changes_it_is_told(mode: str) -> None:
    server = app_server()
    host_side, view_side = memory_pair()
    async with Client(server, mode=mode) as client:
        wrapped = ClientServer(client, name="weather")
        async with AppBridge(host_side, server=wrapped):
            await raw_initialize(view_side)
            wrapped.tools_changed()
            wrapped.prompts_changed()
            with anyio.fail_after(WAIT):
                first, second = await view_side.receive(), await view_side.receive()
            assert first["method"] == "notifications/tools/list_changed"
            assert second["method"] == "notifications/prompts/list_changed"


async def raw_initialize(view: Any) -> None:
    """The view's side of the handshake, by hand."""
    params = {
        "protocolVersion": protocol.PROTOCOL_VERSION,
        "appInfo": {"name": "raw-view", "version": "1"},
        "appCapabilities": {},
    }
    await view.send(protocol.encode_request(0, protocol.INITIALIZE, params))
    with anyio.fail_after(WAIT):
        answer = await view.receive()
    assert "result" in answer, answer
    await view.send(protocol.encode_notification(protocol.INITIALIZED))
