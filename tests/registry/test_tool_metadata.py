"""Tools that carry metadata: annotations, ``_meta`` and an output schema; and ``thread=False``.

The metadata is declared on a registry, derived where it can be (an output schema from a
return annotation), and must survive every boundary: the frame wire between a real
``AssistantFrameProvider`` and ``AssistantFrameHost``, ``MCPContextServer`` read by the
``mcp`` SDK's own client (on both protocol eras), and ``MCPFrameHost`` into a parent registry.
No mocks: every peer is the real class, every client the SDK's.
"""

from __future__ import annotations

import threading
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypedDict

from assistant_frames import (
    AssistantFrameHost,
    AssistantFrameProvider,
    ModelContext,
    ModelContextRegistry,
    Tool,
    ToolAnnotations,
    memory_pair,
    to_anthropic_tools,
    to_mcp_tools,
    to_openai_chat_tools,
    to_openai_responses_tools,
)
from assistant_frames.frames import protocol
from assistant_frames.mcp import MCPContextServer, MCPFrameHost

from helpers import envelope, next_message, raw_frame, serve_frame

pytestmark = pytest.mark.anyio

WAIT = 10.0
MODES = pytest.mark.parametrize("mode", ["legacy", "auto"])
HINTS = {"title": "Weather report", "readOnlyHint": True, "openWorldHint": True}
META = {"com.example/ui": {"widget": "weather-card", "size": [2, 1]}, "cost": 0.5}


class Temperature(BaseModel):
    value: float
    unit: str = "C"


class Weather(BaseModel):
    """A forecast."""

    city: str
    temperature: Temperature  # a nested model: its $ref must be inlined
    tags: list[str] = Field(default_factory=list)


WEATHER_SCHEMA = {
    "type": "object",
    "description": "A forecast.",
    "properties": {
        "city": {"type": "string"},
        "temperature": {
            "type": "object",
            "title": "Temperature",
            "properties": {
                "value": {"type": "number"},
                "unit": {"type": "string", "default": "C"},
            },
            "required": ["value"],
        },
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["city", "temperature"],
}


class Count(TypedDict):
    name: str
    count: int


def weather_registry() -> ModelContextRegistry:
    """A registry with one tool of every kind of metadata, and one plain tool."""
    registry = ModelContextRegistry()

    @registry.tool(annotations=HINTS, meta=META)
    def weather(city: str) -> Weather:
        """Today's weather in a city."""
        return Weather(city=city, temperature=Temperature(value=21.5), tags=["sunny"])

    @registry.tool(annotations=ToolAnnotations(destructive_hint=False, idempotent_hint=True))
    async def count(name: str) -> Count:
        """Count the letters of a name."""
        return {"name": name, "count": len(name)}

    @registry.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return registry


# -- declaring and deriving ------------------------------------------------------------------


def test_a_pydantic_model_return_gives_an_inlined_output_schema() -> None:
    tool = weather_registry().get_model_context().tools["weather"]
    assert tool.output_schema == WEATHER_SCHEMA
    assert tool.annotations == ToolAnnotations(
        title="Weather report", read_only_hint=True, open_world_hint=True
    )
    assert tool.annotations.to_wire() == HINTS
    assert tool.meta == META


def test_a_typed_dict_return_gives_an_output_schema() -> None:
    tool = weather_registry().get_model_context().tools["count"]
    assert tool.output_schema == {
        "type": "object",
        "properties": {"name": {"type": "string"}, "count": {"type": "integer"}},
        "required": ["name", "count"],
    }
    assert tool.annotations is not None
    assert tool.annotations.to_wire() == {"destructiveHint": False, "idempotentHint": True}
    assert tool.meta is None


def test_other_return_types_give_no_output_schema() -> None:
    def untyped(x: int):  # type: ignore[no-untyped-def]
        return x

    def listed() -> list[Weather]:
        return []

    def optional() -> Weather | None:
        return None

    def mapping() -> dict[str, Any]:
        return {}

    for function in (untyped, listed, optional, mapping):
        assert Tool("t", function).output_schema is None, function.__name__
    assert weather_registry().get_model_context().tools["add"].output_schema is None
    assert Tool("nothing").output_schema is None


class Opaque:
    """A type with no JSON Schema."""


class Holder(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    thing: Opaque


def test_a_return_model_with_no_json_schema_warns_and_gives_none(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def hold() -> Holder:
        return Holder(thing=Opaque())

    with caplog.at_level("WARNING", logger="assistant_frames.registry"):
        tool = Tool("hold", hold)
    assert tool.output_schema is None
    assert "No output schema for" in caplog.text
    assert "hold" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="assistant_frames.registry"):
        assert Tool("quiet", lambda: None, output_schema=False).output_schema is None
        assert Tool("hold", hold, output_schema=False).output_schema is None
    assert caplog.text == ""


def test_an_explicit_output_schema_wins() -> None:
    def forecast() -> Weather:
        raise NotImplementedError

    given = {"type": "object", "properties": {"summary": {"type": "string"}}}
    assert Tool("a", forecast, output_schema=given).output_schema == given
    assert Tool("b", forecast, output_schema=Temperature).output_schema == {
        "type": "object",
        "properties": {
            "value": {"type": "number"},
            "unit": {"type": "string", "default": "C"},
        },
        "required": ["value"],
    }
    assert Tool("c", forecast, output_schema=False).output_schema is None
    # a dict's $refs are inlined like the parameters'
    referring = {"$ref": "#/$defs/T", "$defs": {"T": {"type": "object"}}}
    assert Tool("d", forecast, output_schema=referring).output_schema == {"type": "object"}
    with pytest.raises(TypeError, match="output_schema of tool 'e'"):
        Tool("e", forecast, output_schema=42)  # type: ignore[arg-type]


def test_annotations_accept_either_spelling_and_refuse_wrong_types() -> None:
    camel = Tool("a", annotations={"readOnlyHint": True, "futureHint": "kept"})
    snake = Tool("b", annotations={"read_only_hint": True})
    assert camel.annotations is not None
    assert snake.annotations is not None
    assert camel.annotations.read_only_hint is snake.annotations.read_only_hint is True
    assert camel.annotations.to_wire() == {"readOnlyHint": True, "futureHint": "kept"}
    with pytest.raises(ValueError, match="tool 'c' are invalid: readOnlyHint: Input should be"):
        Tool("c", annotations={"readOnlyHint": "yes"})
    with pytest.raises(TypeError, match="Tool 'd': annotations must be"):
        Tool("d", annotations=["readOnlyHint"])  # type: ignore[arg-type]
    hints = ToolAnnotations(title="T")
    with pytest.raises(ValueError, match="frozen"):
        hints.title = "changed"  # type: ignore[misc]  # frozen


def test_meta_is_copied_and_must_be_json() -> None:
    meta: dict[str, Any] = {"a": 1}
    tool = Tool("t", meta=meta)
    meta["a"] = 2
    assert tool.meta == {"a": 1}
    with pytest.raises(TypeError, match="meta of tool 't' must be JSON-compatible"):
        Tool("t", meta={"a": object()})
    with pytest.raises(TypeError, match="meta of tool 't' must be a dict"):
        Tool("t", meta=[1])  # type: ignore[arg-type]


def test_copies_keep_and_change_the_metadata() -> None:
    registry = weather_registry()
    tool = registry.get_model_context().tools["weather"]
    renamed = tool.replace(name="forecast")
    assert (renamed.annotations, renamed.output_schema, renamed.meta) == (
        tool.annotations,
        tool.output_schema,
        tool.meta,
    )
    assert tool.replace(output_schema=None).output_schema is None
    assert tool.replace(meta=None).meta is None
    changed = tool.replace(annotations={"readOnlyHint": False})
    assert changed.annotations == ToolAnnotations(read_only_hint=False)

    def other(city: str) -> Temperature:
        return Temperature(value=1)

    # A new function: a derived schema is derived again, the rest is kept.
    rebuilt = tool.replace(execute=other)
    assert rebuilt.output_schema is not None
    assert set(rebuilt.output_schema["properties"]) == {"value", "unit"}
    assert rebuilt.meta == META
    # A removed schema stays removed when the tool is rebuilt.
    assert tool.replace(output_schema=None).replace(execute=other).output_schema is None

    # Namespacing a provider keeps it all.
    parent = ModelContextRegistry()
    parent.add_provider(registry, namespace="wx")
    namespaced = parent.get_model_context().tools["wx_weather"]
    assert namespaced.annotations == tool.annotations
    assert namespaced.meta == META


def test_one_list_of_descriptive_fields() -> None:
    from assistant_frames.registry import ToolOptions
    from assistant_frames.registry.tool import _CHECKS

    assert set(_CHECKS) == set(ToolOptions.__optional_keys__)
    assert all(hasattr(Tool("t"), field) for field in _CHECKS)


def test_a_title_given_or_taken_from_the_annotations() -> None:
    derived = Tool("t", lambda: None, annotations={"title": "T", "readOnlyHint": True})
    assert derived.title == "T"  # MCP's display order: title, then annotations.title
    assert derived.replace(annotations={"title": "U"}).title == "U"  # follows them
    assert derived.replace(annotations=None).title is None
    assert derived.replace(execute=lambda: 1, annotations={"title": "V"}).title == "V"
    given = Tool("t", lambda: None, title="Mine", annotations={"title": "T"})
    assert (given.title, given.annotations) == ("Mine", ToolAnnotations(title="T"))
    assert given.replace(annotations={"title": "U"}).title == "Mine"  # stays as given
    assert given.replace(execute=lambda: 1).title == "Mine"
    assert given.replace(title=None).title == "T"  # None: take it from them again
    assert Tool("t", title="Only").annotations is None  # nothing copied the other way

    async def invoke(args: Any, context: Any) -> Any:
        return None

    # Built from parts (a remote or MCP tool): exactly as given, nothing taken over.
    remote = Tool.from_parts("r", invoke, annotations=ToolAnnotations(title="T"))
    assert remote.title is None
    assert remote.replace(name="ns_r").title is None
    assert remote.replace(description="d").title is None


def test_icons_are_checked_and_copied() -> None:
    icons = [{"src": "https://example.com/a.png", "sizes": ["48x48"]}]
    tool = Tool("t", icons=icons)
    assert tool.icons == icons
    icons.append({"src": "https://example.com/b.png"})
    assert tool.icons is not None
    assert len(tool.icons) == 1
    assert tool.replace(icons=None).icons is None
    for bad in (
        {"src": "x"},
        "x",
        [{"sizes": ["any"]}],
        [{"src": 1}],
        [{"src": "x", "n": object()}],
    ):
        with pytest.raises(TypeError, match="icon"):
            Tool("t", icons=bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="title of tool 't' must be a str"):
        Tool("t", title=7)  # type: ignore[arg-type]


def test_removing_an_output_schema_while_rebuilding_removes_it() -> None:
    def forecast() -> Weather:
        raise NotImplementedError

    tool = Tool("t", forecast)
    assert tool.output_schema is not None
    assert tool.replace(execute=forecast, output_schema=None).output_schema is None
    assert tool.replace(execute=forecast).output_schema == tool.output_schema


def test_handles_and_add_tool_take_the_new_options() -> None:
    registry = ModelContextRegistry()
    handle = registry.add_tool("t", lambda: None, meta={"v": 1}, annotations={"title": "T"})
    handle.update(meta={"v": 2})
    assert handle.tool is not None
    assert handle.tool.meta == {"v": 2}
    assert handle.tool.annotations == ToolAnnotations(title="T")
    with pytest.raises(TypeError, match="takes no further options"):
        registry.add_tool(Tool("u"), annotations={"title": "U"})
    with pytest.raises(TypeError, match="takes no further options"):
        registry.add_tool(Tool("u"), thread=False)
    registry.add_tool(Tool("u"), description=None, disabled=False)  # defaults are fine


# -- the frame wire -------------------------------------------------------------------------


def test_plain_tools_look_as_before_on_the_wire() -> None:
    tools = protocol.serialize_tools(weather_registry().get_model_context().tools)
    assert set(tools["add"]) == {"description", "parameters"}
    assert tools["weather"]["annotations"] == HINTS
    assert tools["weather"]["outputSchema"] == WEATHER_SCHEMA
    assert tools["weather"]["_meta"] == META
    assert "_meta" not in tools["count"]


async def test_metadata_crosses_the_frame_wire() -> None:
    registry = weather_registry()
    sent = registry.get_model_context().tools
    with anyio.fail_after(WAIT):
        async with serve_frame(AssistantFrameProvider(registry)) as host:
            received = host.get_model_context().tools
            for name in ("weather", "count", "add"):
                assert received[name].annotations == sent[name].annotations, name
                assert received[name].output_schema == sent[name].output_schema, name
                assert received[name].meta == sent[name].meta, name
            assert received["weather"].description == "Today's weather in a city."
            # A structured result arrives as its JSON, matching the output schema.
            assert await host.call_tool("weather", {"city": "Oslo"}) == {
                "city": "Oslo",
                "temperature": {"value": 21.5, "unit": "C"},
                "tags": ["sunny"],
            }
            assert await host.call_tool("count", {"name": "Ada"}) == {"name": "Ada", "count": 3}


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("annotations", "read-only", "tools.t.annotations must be an object"),
        ("outputSchema", ["object"], "tools.t.outputSchema must be an object"),
        ("_meta", 1, "tools.t._meta must be an object"),
        ("annotations", {"readOnlyHint": "yes"}, "tools.t.annotations.readOnlyHint must be bool"),
        ("annotations", {"title": 7}, "tools.t.annotations.title must be str"),
        ("title", 7, "tools.t.title must be str"),
        ("icons", {"src": "x"}, "tools.t.icons must be an array"),
        ("icons", [{"sizes": ["any"]}], "tools.t.icons must be objects with a str src"),
        ("icons", ["x"], "tools.t.icons must be objects with a str src"),
    ],
)
def test_check_tool_names_a_mistyped_field(field: str, value: Any, message: str) -> None:
    spec = {"parameters": {"type": "object"}, field: value}
    with pytest.raises(ValueError, match=message):
        protocol.check_tool("t", spec)


def test_check_tool_accepts_missing_null_and_unknown_metadata() -> None:
    spec = {
        "annotations": {"readOnlyHint": None, "someFutureHint": [1]},
        "outputSchema": None,
        "_meta": None,
        "someFutureField": 1,
    }
    assert protocol.check_tool("t", spec) is spec
    options = protocol.tool_options(protocol.check_tool("t", spec))
    assert options["annotations"] == ToolAnnotations.model_validate({"someFutureHint": [1]})
    assert "output_schema" not in options
    assert "meta" not in options


async def test_a_host_keeps_its_context_when_a_frame_sends_mistyped_metadata(
    caplog: pytest.LogCaptureFixture,
) -> None:
    good = {"tools": {"t": {"parameters": {"type": "object"}, "annotations": {"title": "T"}}}}
    with anyio.fail_after(WAIT):
        async with raw_frame(good) as (host, frame_end):
            tool = host.get_model_context().tools["t"]
            assert tool.annotations == ToolAnnotations(title="T")
            bad = {"tools": {"t": {"annotations": {"destructiveHint": "no"}}}}
            await frame_end.send(envelope({"type": "model-context-update", "context": bad}))
            # A message sent after the bad update is handled after it: a round trip tells.
            call = anyio.Event()

            async def call_it() -> None:
                await host.call_tool("t", {})
                call.set()

            async with anyio.create_task_group() as tg:
                tg.start_soon(call_it)
                message = await next_message(frame_end, "tool-call")
                await frame_end.send(
                    envelope({"type": "tool-result", "id": message["id"], "result": None})
                )
            assert host.get_model_context().tools["t"] is tool
    assert "annotations.destructiveHint must be bool" in caplog.text


# -- MCP -----------------------------------------------------------------------------------


@MODES
async def test_metadata_reaches_an_mcp_client_through_a_frame_host(mode: str) -> None:
    """The acceptance chain: registry -> frame wire -> host -> MCPContextServer -> mcp.Client."""
    host_end, frame_end = memory_pair()
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(AssistantFrameProvider(weather_registry()).serve, frame_end)
            async with AssistantFrameHost(host_end, timeout=WAIT) as host:
                await host.wait_for_context(timeout=WAIT)
                server = MCPContextServer(host)
                async with server.running(), Client(server.server, mode=mode) as client:
                    listed = {tool.name: tool for tool in (await client.list_tools()).tools}
                    weather = listed["weather"]
                    assert weather.title == "Weather report"
                    assert weather.annotations == types.ToolAnnotations(
                        title="Weather report", read_only_hint=True, open_world_hint=True
                    )
                    assert weather.output_schema == WEATHER_SCHEMA
                    assert weather.meta == META
                    count = listed["count"]
                    assert count.annotations == types.ToolAnnotations(
                        destructive_hint=False, idempotent_hint=True
                    )
                    assert count.title is None
                    assert count.meta is None
                    assert count.output_schema is not None
                    plain = listed["add"]
                    assert (plain.annotations, plain.output_schema, plain.meta) == (None,) * 3

                    # The SDK checks structured content against the listed output schema.
                    result = await client.call_tool("weather", {"city": "Oslo"})
                    assert not result.is_error
                    assert result.structured_content == {
                        "city": "Oslo",
                        "temperature": {"value": 21.5, "unit": "C"},
                        "tags": ["sunny"],
                    }
                    text = result.content[0]
                    assert isinstance(text, types.TextContent)
                    assert '"city":"Oslo"' in text.text  # the JSON, for older clients
            tg.cancel_scope.cancel()


def sdk_server() -> MCPServer:
    """The SDK's own server, declaring metadata its own way."""
    server = MCPServer("sdk")

    @server.tool(
        title="Forecast",
        annotations=types.ToolAnnotations(read_only_hint=True, idempotent_hint=True),
        meta={"com.example/cache": "1h"},
    )
    def forecast(city: str) -> Weather:
        """Tomorrow's weather."""
        return Weather(city=city, temperature=Temperature(value=3.0, unit="F"))

    @server.tool(annotations=types.ToolAnnotations(title="Only here", destructive_hint=True))
    def wipe() -> str:
        return "wiped"

    return server


@MODES
async def test_mcp_frame_keeps_the_servers_metadata_in_a_parent_registry(mode: str) -> None:
    parent = ModelContextRegistry()
    with anyio.fail_after(WAIT):
        async with MCPFrameHost(sdk_server(), mode=mode) as frame:
            parent.add_provider(frame, namespace="sdk")
            forecast = parent.get_model_context().tools["sdk_forecast"]
            # Each title stays where the server declared it: nothing is copied over.
            assert forecast.title == "Forecast"
            assert forecast.annotations == ToolAnnotations(
                read_only_hint=True, idempotent_hint=True
            )
            assert forecast.meta == {"com.example/cache": "1h"}
            assert forecast.output_schema is not None
            assert set(forecast.output_schema["properties"]) == {"city", "temperature", "tags"}
            wipe = parent.get_model_context().tools["sdk_wipe"]
            assert wipe.title is None
            assert wipe.annotations == ToolAnnotations(title="Only here", destructive_hint=True)
            # The SDK wraps a plain return type in an object schema of its own; kept too.
            assert wipe.output_schema is not None
            assert wipe.output_schema["properties"] == {
                "result": {"title": "Result", "type": "string"}
            }
            assert await wipe.invoke({}) == {"result": "wiped"}
            # A structured result is the structured value, not its text.
            assert await forecast.invoke({"city": "Rome"}) == {
                "city": "Rome",
                "temperature": {"value": 3.0, "unit": "F"},
                "tags": [],
            }


@MODES
async def test_metadata_survives_mcp_both_ways(mode: str) -> None:
    """MCPContextServer -> MCPFrameHost: what a registry declared comes back unchanged."""
    registry = weather_registry()
    server = MCPContextServer(registry)
    with anyio.fail_after(WAIT):
        async with server.running(), MCPFrameHost(server.server, mode=mode) as frame:
            sent = registry.get_model_context().tools
            received = frame.get_model_context().tools
            for name in sent:
                assert received[name].annotations == sent[name].annotations, name
                assert received[name].output_schema == sent[name].output_schema, name
                assert received[name].meta == sent[name].meta, name
            assert await received["count"].invoke({"name": "Bo"}) == {"name": "Bo", "count": 2}


async def test_mcp_frame_notices_a_change_of_metadata_only() -> None:
    registry = ModelContextRegistry()
    handle = registry.add_tool("t", lambda: "ok", annotations={"readOnlyHint": True})
    server = MCPContextServer(registry)
    with anyio.fail_after(WAIT):
        async with server.running(), MCPFrameHost(server.server) as frame:
            changed = anyio.Event()
            frame.subscribe(changed.set)
            handle.update(annotations={"readOnlyHint": False})
            await changed.wait()
            tool = frame.get_model_context().tools["t"]
            assert tool.annotations == ToolAnnotations(read_only_hint=False)


# -- vendor formats -------------------------------------------------------------------------


def test_exports_fill_what_each_format_has_a_place_for() -> None:
    context = weather_registry().get_model_context()
    mcp_tools = {tool["name"]: tool for tool in to_mcp_tools(context)}
    weather = mcp_tools["weather"]
    assert weather["title"] == "Weather report"
    assert weather["annotations"] == HINTS
    assert weather["outputSchema"] == WEATHER_SCHEMA
    assert weather["_meta"] == META
    assert types.Tool.model_validate(weather).meta == META  # the SDK reads it as MCP
    assert set(mcp_tools["add"]) == {"name", "description", "inputSchema"}
    # The export is a copy: changing it changes nothing in the tool.
    weather["outputSchema"]["properties"].clear()
    weather["_meta"]["cost"] = 0
    assert context.tools["weather"].output_schema == WEATHER_SCHEMA
    assert context.tools["weather"].meta == META

    responses = {tool["name"]: tool for tool in to_openai_responses_tools(context)}
    assert responses["weather"]["output_schema"] == WEATHER_SCHEMA
    assert "output_schema" not in responses["add"]
    # No place for metadata in these two: exactly the keys they had before.
    for chat in to_openai_chat_tools(context):
        assert set(chat["function"]) == {"name", "description", "parameters"}
    for anthropic in to_anthropic_tools(context):
        assert set(anthropic) == {"name", "description", "input_schema"}


def test_mcp_leaves_out_an_output_schema_that_is_not_an_object() -> None:
    tool = Tool("numbers", lambda: [1], output_schema=list[int])
    assert tool.output_schema == {"type": "array", "items": {"type": "integer"}}
    (exported,) = to_mcp_tools(ModelContext(tools={"numbers": tool}))
    assert "outputSchema" not in exported


# -- running sync tools on the event loop ---------------------------------------------------


async def test_thread_false_runs_a_sync_tool_on_the_event_loop_thread() -> None:
    loop_thread = threading.get_ident()
    seen: dict[str, int] = {}
    registry = ModelContextRegistry()

    @registry.tool(thread=False)
    def on_loop() -> str:
        seen["on_loop"] = threading.get_ident()
        return "loop"

    @registry.tool
    def in_thread() -> str:
        seen["in_thread"] = threading.get_ident()
        return "thread"

    async def later() -> str:
        return "awaited"

    registry.add_tool("returns_coroutine", lambda: later(), thread=False)

    with anyio.fail_after(WAIT):
        async with serve_frame(AssistantFrameProvider(registry)) as host:
            assert await host.call_tool("on_loop", {}) == "loop"
            assert await host.call_tool("in_thread", {}) == "thread"
            assert await host.call_tool("returns_coroutine", {}) == "awaited"
    assert seen["on_loop"] == loop_thread
    assert seen["in_thread"] != loop_thread  # threads stay the default


async def test_thread_survives_copies_and_applies_to_every_parameter_style() -> None:
    loop_thread = threading.get_ident()
    threads: list[int] = []

    def record(*args: Any) -> None:
        threads.append(threading.get_ident())

    tools = [
        Tool("schema", record, parameters={"type": "object"}, thread=False),
        Tool("typed", record, parameters=Temperature, thread=False),
        Tool("signature", lambda: record(), thread=False).replace(description="renamed"),
        Tool("rebuilt", lambda: record(), thread=False).replace(parameters=None),
    ]
    for tool in tools:
        await tool.invoke({"value": 1.0} if tool.name == "typed" else {})
    assert threads == [loop_thread] * len(tools)
    await Tool("back", lambda: record(), thread=False).replace(thread=True).invoke({})
    assert threads[-1] != loop_thread
