"""Serving MCP Apps from registries: tool UIs, ``ui://`` resources, three-tier results.

Checked against code no one here wrote: the ``mcp`` SDK's own ``mcp.server.apps`` serves
the same app from an ``MCPServer`` on one side, ``MCPContextServer`` serves it from a
registry on the other, and both are listed by the SDK's ``mcp.Client`` and by ``MCPFrameHost``;
what we emit validates against the ext-apps JSON Schema (``schema.json`` of the npm
package). Frames carry the UI across ``memory_pair()``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from jsonschema import Draft202012Validator
from mcp import Client
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID, Apps, ResourceCsp, ResourcePermissions
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, ResourceListChangedNotification

from assistant_frames import (
    AssistantFrameHost,
    AssistantFrameProvider,
    ModelContextRegistry,
    Tool,
    ToolResult,
    ToolUI,
    memory_pair,
    run_tool_calls,
    to_openai_chat_tools,
)
from assistant_frames.frames import protocol
from assistant_frames.mcp import MCPContextServer, MCPFrameHost

from helpers import installed, wait_until

pytestmark = pytest.mark.anyio

BROWSER = Path(__file__).resolve().parents[1] / "browser"
SCHEMA = BROWSER / "node_modules/@modelcontextprotocol/ext-apps/dist/src/generated/schema.json"
MODES = pytest.mark.parametrize("mode", ["legacy", "auto"])
WAIT = 5.0
VIEW = "<!doctype html><p id=out>weather</p>"
URI = "ui://weather/view"
CSP = ResourceCsp(connect_domains=["https://api.weather.example"], resource_domains=[])
PERMISSIONS = ResourcePermissions(geolocation={}, clipboard_write={})
RESOURCE_UI = {
    "csp": {"connectDomains": ["https://api.weather.example"], "resourceDomains": []},
    "permissions": {"geolocation": {}, "clipboardWrite": {}},
    "domain": "weather.example",
    "prefersBorder": False,
}


# -- the same app, twice ---------------------------------------------------------------------


def forecast(city: str) -> ToolResult:
    """The forecast for a city."""
    return ToolResult(
        content=f"Sunny in {city}",
        structured_content={"city": city, "sky": "sunny"},
        meta={"viewState": {"unit": "C"}},
    )


def refresh(city: str) -> dict[str, Any]:
    """Refresh the view's data (for the view only)."""
    return {"city": city, "refreshed": True}


def registry_app() -> ModelContextRegistry:
    registry = ModelContextRegistry()
    registry.add_tool("forecast", forecast, ui=URI)
    registry.add_tool("refresh", refresh, ui=ToolUI(URI, visibility=["app"]))
    registry.add_ui_resource(
        URI,
        html=VIEW,
        csp=CSP,
        permissions=PERMISSIONS,
        domain="weather.example",
        prefers_border=False,
    )
    return registry


def sdk_app() -> MCPServer:
    apps = Apps()
    # The SDK stamps visibility only when given: give it, as ours always does.
    apps.tool(
        resource_uri=URI, visibility=["model", "app"], description="The forecast for a city."
    )(forecast)
    apps.tool(resource_uri=URI, visibility=["app"], description=refresh.__doc__)(refresh)
    apps.add_html_resource(
        URI, VIEW, csp=CSP, permissions=PERMISSIONS, domain="weather.example", prefers_border=False
    )
    return MCPServer("weather", extensions=[apps])


def wire(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def listings(client: Client) -> dict[str, Any]:
    """What a host sees of an app server: capabilities, tools, resources, a read."""
    tools = {t.name: wire(t) for t in (await client.list_tools()).tools}
    resources = [wire(r) for r in (await client.list_resources()).resources]
    read = [wire(c) for c in (await client.read_resource(URI)).contents]
    return {
        "extensions": client.server_capabilities.extensions,
        "tools": {
            name: {"description": t.get("description"), "_meta": t.get("_meta")}
            for name, t in tools.items()
        },
        "resources": resources,
        "read": read,
    }


@MODES
async def test_the_sdk_and_our_server_give_the_same_listings(mode: str) -> None:
    # The MCP Apps dialect alone: ChatGPT's (test_chatgpt_metadata.py) is not the SDK's.
    ours = MCPContextServer(registry_app(), app_dialects=["mcp-apps"])
    with anyio.fail_after(WAIT):
        async with ours.running(), Client(ours.server, mode=mode) as client:
            our_view = await listings(client)
        async with Client(sdk_app(), mode=mode) as client:
            sdk_view = await listings(client)
    # The one difference: the legacy flat key, which hosts still read and the SDK omits.
    for name, tool in our_view["tools"].items():
        assert tool["_meta"].pop("ui/resourceUri") == URI, name
    assert our_view == sdk_view
    # Capabilities carry extensions from 2026-07-28 on; neither server's show before.
    assert our_view["extensions"] == ({EXTENSION_ID: {}} if mode == "auto" else None)
    assert our_view["tools"]["refresh"]["_meta"]["ui"] == {
        "resourceUri": URI,
        "visibility": ["app"],
    }
    assert our_view["resources"] == [
        {"name": URI, "uri": URI, "mimeType": APP_MIME_TYPE, "_meta": {"ui": RESOURCE_UI}}
    ]
    assert our_view["read"][0]["text"] == VIEW


async def test_mcp_frames_keep_the_same_ui_of_either_server() -> None:
    ours = MCPContextServer(registry_app())
    with anyio.fail_after(WAIT):
        async with ours.running(), MCPFrameHost(ours.server) as frame:
            our_context = await frame.wait_for_context(WAIT)
        async with MCPFrameHost(sdk_app()) as frame:
            sdk_context = await frame.wait_for_context(WAIT)
    assert our_context.ui_resources == sdk_context.ui_resources
    resource = our_context.ui_resources[URI]
    assert (resource.html, resource.domain, resource.prefers_border) == (
        VIEW,
        "weather.example",
        False,
    )
    assert resource.csp == RESOURCE_UI["csp"]
    assert resource.permissions == RESOURCE_UI["permissions"]
    for context in (our_context, sdk_context):
        assert context.tools["forecast"].ui == ToolUI(URI)
        assert context.tools["refresh"].ui == ToolUI(URI, visibility=("app",))
        assert list(context.model_tools()) == ["forecast"]  # app-only: never for a model


async def test_ui_resource_changes_are_announced_and_followed() -> None:
    registry = registry_app()
    ours = MCPContextServer(registry)
    announced = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, ResourceListChangedNotification):
            announced.set()

    with anyio.fail_after(WAIT):
        async with (
            ours.running(),
            Client(ours.server, mode="legacy", message_handler=on_message) as client,
            MCPFrameHost(ours.server) as frame,  # 2026-07-28: follows subscriptions/listen
        ):
            await client.list_resources()  # the session is followed once initialized
            await frame.wait_for_context(WAIT)
            handle = registry.add_ui_resource("ui://weather/other", html="<p>other</p>")
            await announced.wait()
            await wait_until(lambda: len(frame.get_model_context().ui_resources) == 2)
            assert frame.get_model_context().ui_resources["ui://weather/other"].html == (
                "<p>other</p>"
            )
            handle.remove()
            await wait_until(lambda: list(frame.get_model_context().ui_resources) == [URI])


# -- the ext-apps schema ---------------------------------------------------------------------


@pytest.fixture
def schema_defs() -> dict[str, Any]:
    if not installed(SCHEMA, BROWSER):
        reason = "ext-apps schema.json is missing: run `npm ci` in tests/browser"
        if os.environ.get("CI") or os.environ.get("ASSISTANT_FRAMES_REQUIRE_BROWSER") == "1":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    defs: dict[str, Any] = json.loads(SCHEMA.read_text(encoding="utf-8"))["$defs"]
    return defs


def validate(defs: dict[str, Any], name: str, instance: Any) -> None:
    errors = [
        f"{list(e.absolute_path)}: {e.message}"
        for e in Draft202012Validator(defs[name]).iter_errors(instance)
    ]
    assert not errors, f"{name}: {errors}"


@MODES
async def test_what_we_emit_validates_against_the_ext_apps_schema(
    schema_defs: dict[str, Any], mode: str
) -> None:
    ours = MCPContextServer(registry_app())  # ChatGPT's keys too: they must not get in the way
    with anyio.fail_after(WAIT):
        async with ours.running(), Client(ours.server, mode=mode) as client:
            tools = (await client.list_tools()).tools
            listed = (await client.list_resources()).resources
            contents = (await client.read_resource(URI)).contents
    resources = [r for r in listed if r.mime_type == APP_MIME_TYPE]
    assert len(tools) == 2
    assert len(resources) == 1
    assert len(listed) == 2  # and its text/html+skybridge variant
    assert len(contents) == 1
    for tool in tools:
        assert tool.meta is not None
        validate(schema_defs, "McpUiToolMeta", tool.meta["ui"])
    for item in [*resources, *contents]:
        assert item.meta is not None
        assert item.mime_type == APP_MIME_TYPE
        validate(schema_defs, "McpUiResourceMeta", item.meta["ui"])
    # The check can fail: McpUiToolMeta allows no extra keys under _meta.ui.
    with pytest.raises(AssertionError, match="Additional properties"):
        validate(schema_defs, "McpUiToolMeta", {**ToolUI(URI).to_meta(), "csp": None, "x": 1})


# -- three tiers -----------------------------------------------------------------------------


@MODES
async def test_the_view_gets_meta_and_the_model_does_not(mode: str) -> None:
    registry = registry_app()
    ours = MCPContextServer(registry)
    with anyio.fail_after(WAIT):
        async with ours.running(), Client(ours.server, mode=mode) as client:
            result = await client.call_tool("forecast", {"city": "Paris"})
            refreshed = await client.call_tool("refresh", {"city": "Paris"})  # app-only
        async with ours.running(), MCPFrameHost(ours.server) as frame:
            through_frame = await frame.call_tool("forecast", {"city": "Oslo"})
    # What a view receives (the host passes the whole result on): all three tiers.
    assert [block.text for block in result.content] == ["Sunny in Paris"]  # type: ignore[union-attr]
    assert result.structured_content == {"city": "Paris", "sky": "sunny"}
    assert result.meta is not None
    assert result.meta["viewState"] == {"unit": "C"}
    assert refreshed.structured_content == {"city": "Paris", "refreshed": True}
    # An MCP frame keeps the view's tier...
    assert isinstance(through_frame, ToolResult)
    assert through_frame.meta == {"viewState": {"unit": "C"}}
    assert through_frame.structured_content == {"city": "Oslo", "sky": "sunny"}
    # ...and a model never sees it, nor an app-only tool.
    call = {"id": "c1", "type": "function"}
    call["function"] = {"name": "forecast", "arguments": '{"city": "Rome"}'}
    replies = await run_tool_calls(registry, {"tool_calls": [call]}, format="openai_chat")
    assert json.loads(replies[0]["content"]) == {"city": "Rome", "sky": "sunny"}
    assert "viewState" not in replies[0]["content"]
    assert [t["function"]["name"] for t in to_openai_chat_tools(registry)] == ["forecast"]
    # A model naming the app-only tool anyway is refused, not answered with its result.
    call = {"id": "c2", "type": "function"}
    call["function"] = {"name": "refresh", "arguments": '{"city": "Rome"}'}
    replies = await run_tool_calls(registry, {"tool_calls": [call]}, format="openai_chat")
    assert replies[0]["content"].startswith('Error: Tool "refresh" is not available to the model')


def test_the_restated_sdk_names_agree() -> None:
    from typing import get_args

    from mcp.server import apps

    from assistant_frames.registry import ui

    assert ui._APP_MIME_TYPE == apps.APP_MIME_TYPE
    assert get_args(ui.Visibility) == get_args(apps.Visibility)


def test_a_plain_return_and_the_model_value() -> None:
    assert ToolResult(content="hi").model_value() == "hi"
    assert ToolResult(structured_content=[1, 2], meta={"m": 1}).model_value() == [1, 2]
    assert ToolResult(structured_content={"a": 1}).content_blocks() == [
        {"type": "text", "text": '{"a":1}'}
    ]
    blocks = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    assert ToolResult(content=blocks, meta={"m": 1}).model_value() == blocks


# -- across a frame boundary -----------------------------------------------------------------


async def test_a_frame_carries_tool_uis_resources_and_view_meta_to_its_host() -> None:
    frame = AssistantFrameProvider(registry_app())
    parent = ModelContextRegistry()
    with anyio.fail_after(WAIT):
        host_end, frame_end = memory_pair()
        async with anyio.create_task_group() as group:
            group.start_soon(frame.serve, frame_end)
            async with AssistantFrameHost(host_end, timeout=WAIT) as host:
                await host.wait_for_context(timeout=WAIT)
                parent.add_provider(host, namespace="weather")
                context = parent.get_model_context()
                assert set(context.tools) == {"weather_forecast", "weather_refresh"}
                # Namespaced tools keep their resource; the resource crossed whole.
                assert context.tools["weather_refresh"].ui == ToolUI(URI, visibility=("app",))
                assert context.ui_resources == registry_app().get_model_context().ui_resources
                result = await context.call_tool("weather_forecast", {"city": "Lima"})
                assert result == forecast("Lima")
                # The parent serves it over MCP, as MCP Apps, like the frame's own server.
                server = MCPContextServer(parent)
                async with server.running(), Client(server.server) as client:
                    tools = {t.name: t for t in (await client.list_tools()).tools}
                    assert tools["weather_forecast"].meta is not None
                    assert tools["weather_forecast"].meta["ui"]["resourceUri"] == URI
                    read = await client.read_resource(URI)
                    assert read.contents[0].text == VIEW  # type: ignore[union-attr]
                    called = await client.call_tool("weather_forecast", {"city": "Lima"})
                    assert called.meta is not None
                    assert called.meta["viewState"] == {"unit": "C"}
            group.cancel_scope.cancel()
    # What a JS host reads of the result is the model's value; the tiers are extra fields.
    message = protocol.encode_tool_result("1", forecast("Lima"))["message"]
    assert message["result"] == {"city": "Lima", "sky": "sunny"}
    assert message["_meta"] == {"viewState": {"unit": "C"}}


def test_the_context_wire_carries_ui_resources_only_when_there_are_some() -> None:
    wire_form = protocol.serialize_context(registry_app().get_model_context())
    assert [r["uri"] for r in wire_form["uiResources"] or []] == [URI]
    assert "uiResources" not in protocol.serialize_context(
        ModelContextRegistry().get_model_context()
    )
    resources = protocol.decode_ui_resources(wire_form["uiResources"])
    assert resources == registry_app().get_model_context().ui_resources
    with pytest.raises(ValueError, match="ui:// URI"):
        protocol.decode_ui_resources([{"uri": "https://x", "text": "<p>"}])


# -- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize("uri", ["https://weather/view", "weather/view", "ui://", "", None])
def test_a_ui_that_is_not_ui_scheme_is_refused_at_declaration(uri: Any) -> None:
    registry = ModelContextRegistry()
    with pytest.raises(ValueError, match=r"must be a ui:// URI"):
        registry.add_tool("t", lambda: None, ui=ToolUI(uri))
    if uri is not None:  # ui=None is no UI
        with pytest.raises(ValueError, match=r"must be a ui:// URI"):
            registry.add_tool("t", lambda: None, ui=uri)
    with pytest.raises(ValueError, match=r"must be a ui:// URI"):
        registry.add_ui_resource(uri, html="<p>")
    assert not registry.get_model_context().tools


@pytest.mark.parametrize("visibility", [["user"], [], ["app", "app"], "app", ["model", None]])
def test_wrong_visibility_values_are_refused(visibility: Any) -> None:
    with pytest.raises(ValueError, match="visibility must"):
        ToolUI(URI, visibility=visibility)


def test_resources_are_checked_when_added() -> None:
    registry = registry_app()
    with pytest.raises(ValueError, match="already has a UI resource"):
        registry.add_ui_resource(URI, html="<p>")
    with pytest.raises(ValueError, match="unknown keys"):
        registry.add_ui_resource("ui://x", html="<p>", csp={"scriptDomains": ["x"]})
    # A domain that is no host source is refused when declared, not when first served.
    for domains in (["https://a.example\n"], ["*"], "https://a.example"):
        with pytest.raises(ValueError, match="connectDomains"):
            registry.add_ui_resource("ui://x", html="<p>", csp={"connectDomains": domains})
    with pytest.raises(TypeError, match="needs html="):
        registry.add_ui_resource("ui://x")


def test_ui_and_meta_live_together_on_a_tool() -> None:
    tool = Tool("t", lambda: None, meta={"other": 1}, ui=URI)
    assert tool.meta == {"other": 1, "ui": {"resourceUri": URI, "visibility": ["model", "app"]}}
    assert tool.replace(description="d").ui == ToolUI(URI)
    assert tool.replace(ui=ToolUI(URI, ["app"])).ui == ToolUI(URI, ("app",))
    assert tool.replace(meta={"other": 2}).ui is None  # a new meta replaces the old whole
    assert tool.replace(execute=lambda: 1).ui == ToolUI(URI)


@MODES
async def test_an_unknown_resource_is_an_invalid_params_error(mode: str) -> None:
    ours = MCPContextServer(registry_app())
    with anyio.fail_after(WAIT):
        async with ours.running(), Client(ours.server, mode=mode) as client:
            with pytest.raises(MCPError, match="Unknown resource: ui://weather/nope") as info:
                await client.read_resource("ui://weather/nope")
    assert info.value.error.code == INVALID_PARAMS


async def test_an_mcp_frame_leaves_out_a_resource_that_is_not_an_app(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = MCPServer("odd")
    apps = Apps()
    apps.tool(resource_uri=URI)(refresh)
    apps.add_html_resource(URI, VIEW)
    server = MCPServer("odd", extensions=[apps])

    @server.resource("ui://weather/plain", mime_type=APP_MIME_TYPE)
    def plain() -> bytes:
        return b"\xff\xfe not utf-8"

    with anyio.fail_after(WAIT):
        async with MCPFrameHost(server) as frame:
            context = await frame.wait_for_context(WAIT)
    assert list(context.ui_resources) == [URI]
    assert "ui://weather/plain left out" in caplog.text


# -- the example -----------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "weather_app.py"


async def test_the_example_serves_its_app_over_stdio() -> None:
    with anyio.fail_after(30):
        # The example imports this checkout (a script's own directory is its sys.path[0]).
        env = {"PYTHONPATH": str(ROOT)}
        async with MCPFrameHost([sys.executable, str(EXAMPLE)], env=env, timeout=WAIT) as frame:
            context = await frame.wait_for_context(WAIT)
            assert context.tools["forecast"].ui == ToolUI("ui://weather/view")
            assert context.tools["refresh"].ui == ToolUI("ui://weather/view", ["app"])
            view = context.ui_resources["ui://weather/view"]
            assert "ui/initialize" in view.html
            assert view.prefers_border is True
            assert view.csp == {"connectDomains": []}
            result = await frame.call_tool("forecast", {"city": "Oslo"})
            assert result == ToolResult(
                content=[{"type": "text", "text": "The sky over Oslo is snow."}],
                structured_content={"city": "Oslo", "sky": "snow"},
                meta={"unit": "C"},
            )
            assert await frame.call_tool("refresh", {"city": "Lima"}) == ToolResult(
                content=[{"type": "text", "text": "The sky over Lima is overcast."}],
                structured_content={"city": "Lima", "sky": "overcast"},
                meta={"unit": "C"},
            )
