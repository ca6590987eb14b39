"""The Python ``App`` (view side of MCP Apps) over ``memory_pair``.

Most tests drive a scripted host written with the protocol's own encoders, message by
message, so each sees exactly what the App sends and when; everything the App sends is
checked against ext-apps' ``schema.json`` where it has a definition. The last ones pair
the App with the Python ``AppBridge``.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.lowlevel
import mcp_types as mcp
import pytest
from test_apps_protocol import BROWSER, SCHEMA, _relax, validate

from assistant_frames import ModelContextRegistry
from assistant_frames.apps import (
    App,
    AppBridge,
    AppDisconnected,
    AppRequestError,
    AppTimeout,
    protocol,
)
from assistant_frames.errors import AssistantFramesError
from assistant_frames.transports import memory_pair
from assistant_frames.transports.memory import MemoryTransport

from helpers import installed, wait_until

pytestmark = pytest.mark.anyio

HOST_INFO = mcp.Implementation(name="scripted-host", version="0.1")
APP_INFO = mcp.Implementation(name="py-view", version="1.2.3")
LIMIT = 5.0


@pytest.fixture(scope="module")
def schema_defs() -> dict[str, Any]:
    if not installed(SCHEMA, BROWSER):
        if os.environ.get("CI"):
            pytest.fail("ext-apps schema.json is missing: run `npm ci` in tests/browser")
        pytest.skip("ext-apps schema.json is missing")
    defs: dict[str, Any] = json.loads(SCHEMA.read_text(encoding="utf-8"))["$defs"]
    _relax(defs)
    return defs


class Host:
    """A scripted host: the other end of the App's transport, plus what it received."""

    def __init__(self, end: MemoryTransport) -> None:
        self.end = end
        self.received: list[dict[str, Any]] = []

    async def recv(self) -> dict[str, Any]:
        with anyio.fail_after(LIMIT):
            message: dict[str, Any] = await self.end.receive()
        self.received.append(message)
        return message

    async def send(self, message: dict[str, Any]) -> None:
        await self.end.send(message)

    async def notify(self, method: str, params: Any = None) -> None:
        await self.send(protocol.encode_notification(method, params))

    async def handshake(self, **context: Any) -> dict[str, Any]:
        init = await self.recv()
        assert init["method"] == protocol.INITIALIZE
        result = protocol.InitializeResult(
            protocol_version=protocol.PROTOCOL_VERSION,
            host_info=HOST_INFO,
            host_capabilities=protocol.HostCapabilities(open_links=protocol.Empty()),
            host_context=protocol.HostContext.model_validate(
                context or {"theme": "dark", "displayMode": "inline", "locale": "en-GB"}
            ),
        )
        await self.send(protocol.encode_result(init["id"], result))
        initialized = await self.recv()
        assert initialized == {"jsonrpc": "2.0", "method": protocol.INITIALIZED}
        return init

    async def answer(self, method: str, result: Any) -> dict[str, Any]:
        """Receive the App's next message (a ``method`` request) and answer it."""
        request = await self.recv()
        assert request["method"] == method, request
        await self.send(protocol.encode_result(request["id"], result))
        return request

    async def ask(self, request_id: int, method: str, params: Any = None) -> dict[str, Any]:
        """Send a request to the App and return its answer."""
        await self.send(protocol.encode_request(request_id, method, params))
        while True:
            message = await self.recv()
            if message.get("id") == request_id and "method" not in message:
                return message


@asynccontextmanager
async def open_app(**options: Any) -> AsyncIterator[tuple[App, Host]]:
    view_end, host_end = memory_pair()
    host = Host(host_end)
    options.setdefault("app_info", APP_INFO)
    options.setdefault("timeout", LIMIT)
    handshaken = anyio.Event()

    async def handshake() -> None:
        await host.handshake()
        handshaken.set()

    async with anyio.create_task_group() as group:
        group.start_soon(handshake)
        async with App(view_end, **options) as app:
            with anyio.fail_after(LIMIT):
                await handshaken.wait()  # the host has seen initialized too
            yield app, host
        group.cancel_scope.cancel()


def check_schema(defs: dict[str, Any], messages: list[dict[str, Any]]) -> int:
    """Validate each message against its ext-apps definition; how many had one."""
    checked = 0
    for message in messages:
        mcp.jsonrpc_message_adapter.validate_python(message)
        spec = protocol.METHODS.get(message.get("method", ""))
        if spec is not None and spec.schema:
            validate(
                defs, spec.schema, {k: v for k, v in message.items() if k in ("method", "params")}
            )
            checked += 1
    return checked


# -- handshake -----------------------------------------------------------------------------------


async def test_handshake_stores_what_the_host_said(schema_defs: dict[str, Any]) -> None:
    async with open_app() as (app, host):
        init = host.received[0]
        assert init["params"] == {
            "protocolVersion": protocol.PROTOCOL_VERSION,
            "appInfo": {"name": "py-view", "version": "1.2.3"},
            "appCapabilities": {},
        }
        assert app.state == "initialized"
        assert app.host_info == HOST_INFO
        assert app.protocol_version == protocol.PROTOCOL_VERSION
        assert app.host_capabilities is not None
        assert app.host_capabilities.open_links is not None
        assert app.host_context.theme == "dark"
        assert app.host_context.locale == "en-GB"
    assert app.state == "closed"
    assert check_schema(schema_defs, host.received) == 2


async def test_a_registry_declares_the_tools_capability() -> None:
    async with open_app(registry=ModelContextRegistry()) as (_, host):
        assert host.received[0]["params"]["appCapabilities"] == {"tools": {"listChanged": True}}


async def test_no_answer_to_initialize_is_a_timeout_and_closes() -> None:
    view_end, host_end = memory_pair()
    with anyio.fail_after(LIMIT):
        with pytest.raises(AppTimeout) as caught:
            async with App(view_end, timeout=0.2):
                pytest.fail("entered without an answer")
    assert caught.value.method == protocol.INITIALIZE
    assert "MCP Apps host" in str(caught.value)
    assert isinstance(caught.value, TimeoutError)
    assert isinstance(caught.value, AssistantFramesError)
    first = await host_end.receive()
    assert first["method"] == protocol.INITIALIZE
    # The App cancelled its request on the way out, then closed the transport.
    assert (await host_end.receive())["method"] == "notifications/cancelled"
    with pytest.raises(anyio.EndOfStream):
        await host_end.receive()


async def test_an_initialize_refused_by_the_host_is_a_typed_error() -> None:
    view_end, host_end = memory_pair()

    async def refuse() -> None:
        init = await host_end.receive()
        await host_end.send(protocol.encode_error(init["id"], -32602, "no", {"why": "test"}))

    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as group:
            group.start_soon(refuse)
            with pytest.raises(AppRequestError) as caught:
                async with App(view_end):
                    pass
    error = caught.value
    assert (error.method, error.jsonrpc_code, error.message, error.data) == (
        protocol.INITIALIZE,
        -32602,
        "no",
        {"why": "test"},
    )


async def test_an_initialize_result_missing_a_field_is_refused_as_the_js_app_does() -> None:
    view_end, host_end = memory_pair()

    async def answer_badly() -> None:
        init = await host_end.receive()
        await host_end.send(
            protocol.encode_result(
                init["id"],
                {"protocolVersion": protocol.PROTOCOL_VERSION, "hostInfo": HOST_INFO.model_dump()},
            )
        )

    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as group:
            group.start_soon(answer_badly)
            with pytest.raises(protocol.InvalidParams, match="hostCapabilities"):
                async with App(view_end):
                    pass


async def test_a_host_that_goes_away_during_initialize_fails_it_at_once() -> None:
    view_end, host_end = memory_pair()

    async def vanish() -> None:
        await host_end.receive()
        await host_end.aclose()

    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as group:
            group.start_soon(vanish)
            with pytest.raises(AppDisconnected):
                async with App(view_end, timeout=60):
                    pass


# -- what the host sends -----------------------------------------------------------------------


async def test_tool_input_result_and_context_reach_callbacks_and_state() -> None:
    heard: list[tuple[str, Any]] = []

    async def on_result(result: mcp.CallToolResult) -> None:
        await anyio.lowlevel.checkpoint()
        heard.append(("result", result.structured_content))

    async with open_app(
        on_tool_input=lambda args: heard.append(("input", args)),
        on_tool_input_partial=lambda args: heard.append(("partial", args)),
        on_tool_result=on_result,
        on_host_context_changed=lambda ctx: heard.append(("context", ctx.theme)),
    ) as (app, host):
        await host.notify(protocol.TOOL_INPUT_PARTIAL, {"arguments": {"city": "Pa"}})
        await host.notify(protocol.TOOL_INPUT, {"arguments": {"city": "Paris"}})
        assert await app.wait_tool_input() == {"city": "Paris"}
        assert app.tool_input_partial == {"city": "Pa"}
        await host.notify(
            protocol.TOOL_RESULT,
            {"content": [{"type": "text", "text": "sunny"}], "structuredContent": {"t": 21}},
        )
        result = await app.wait_tool_result()
        assert result.structured_content == {"t": 21}
        await host.notify(protocol.HOST_CONTEXT_CHANGED, {"theme": "light"})
        await app.wait_until(lambda a: a.host_context.theme == "light")
        # Merged: the keys that did not change are kept.
        assert app.host_context.locale == "en-GB"
        assert app.host_context.display_mode == "inline"
        await host.notify(protocol.TOOL_CANCELLED, {"reason": "user"})
        await app.wait_until(lambda a: a.cancelled)
        assert app.tool_cancelled == "user"
        await app.wait_until(lambda _: len(heard) == 4)
    assert heard == [
        ("partial", {"city": "Pa"}),
        ("input", {"city": "Paris"}),
        ("result", {"t": 21}),
        ("context", "light"),
    ]


async def test_a_failing_callback_does_not_stop_the_app() -> None:
    def boom(args: Any) -> None:
        raise RuntimeError("callback bug")

    async with open_app(on_tool_input=boom) as (app, host):
        await host.notify(protocol.TOOL_INPUT, {"arguments": {}})
        await host.notify(protocol.TOOL_RESULT, {"content": []})
        await app.wait_tool_result()
        async with anyio.create_task_group() as group:
            group.start_soon(host.answer, protocol.OPEN_LINK, {})
            assert (await app.open_link("https://example.com/")).is_error is None


async def test_a_callback_may_make_requests() -> None:
    answers: list[str] = []
    app_ref: list[App] = []

    async def on_input(args: dict[str, Any]) -> None:
        answers.append(await app_ref[0].request_display_mode("fullscreen"))

    async with open_app(on_tool_input=on_input) as (app, host):
        app_ref.append(app)
        await host.notify(protocol.TOOL_INPUT, {"arguments": {}})
        request = await host.answer(protocol.REQUEST_DISPLAY_MODE, {"mode": "fullscreen"})
        assert request["params"] == {"mode": "fullscreen"}
        await app.wait_until(lambda _: answers == ["fullscreen"])


# -- the App's requests ------------------------------------------------------------------------


async def test_every_request_and_notification(schema_defs: dict[str, Any]) -> None:
    async with open_app() as (app, host):
        async with anyio.create_task_group() as group:
            results: dict[str, Any] = {}

            async def run(key: str, call: Any) -> None:
                results[key] = await call

            group.start_soon(run, "tool", app.call_server_tool("get_weather", {"city": "Oslo"}))
            request = await host.answer(
                "tools/call", {"content": [{"type": "text", "text": "rain"}], "isError": False}
            )
            assert request["params"] == {"name": "get_weather", "arguments": {"city": "Oslo"}}

            group.start_soon(run, "resource", app.read_server_resource("ui://weather/view"))
            request = await host.answer(
                "resources/read",
                {
                    "contents": [
                        {"uri": "ui://weather/view", "text": "<p>", "mimeType": "text/html"}
                    ]
                },
            )
            assert request["params"] == {"uri": "ui://weather/view"}

            group.start_soon(run, "message", app.send_message("hello"))
            request = await host.answer(protocol.MESSAGE, {})
            assert request["params"] == {
                "role": "user",
                "content": [{"type": "text", "text": "hello"}],
            }

            group.start_soon(
                run,
                "blocks",
                app.send_message([{"type": "text", "text": "a"}, mcp.TextContent(text="b")]),
            )
            request = await host.answer(protocol.MESSAGE, {"isError": True})
            assert [block["text"] for block in request["params"]["content"]] == ["a", "b"]

            group.start_soon(
                run, "context", app.update_model_context("shown: Oslo", {"city": "Oslo"})
            )
            request = await host.answer(protocol.UPDATE_MODEL_CONTEXT, {})
            assert request["params"] == {
                "content": [{"type": "text", "text": "shown: Oslo"}],
                "structuredContent": {"city": "Oslo"},
            }

            group.start_soon(run, "link", app.open_link("https://example.com/"))
            request = await host.answer(protocol.OPEN_LINK, {})
            assert request["params"] == {"url": "https://example.com/"}

            file = {
                "type": "resource",
                "resource": {"uri": "file:///a.txt", "text": "hi", "mimeType": "text/plain"},
            }
            group.start_soon(run, "download", app.download_file([file]))
            request = await host.answer(protocol.DOWNLOAD_FILE, {})
            assert request["params"] == {"contents": [file]}

            group.start_soon(run, "mode", app.request_display_mode("pip"))
            await host.answer(protocol.REQUEST_DISPLAY_MODE, {"mode": "inline"})

        await app.send_log("info", {"n": 1}, logger="view")
        assert (await host.recv())["params"] == {
            "level": "info",
            "data": {"n": 1},
            "logger": "view",
        }
        await app.send_size_changed(320, 200)
        assert (await host.recv())["params"] == {"width": 320, "height": 200}
        await app.request_teardown()
        assert (await host.recv()) == {"jsonrpc": "2.0", "method": protocol.REQUEST_TEARDOWN}

    assert results["tool"].content[0].text == "rain"
    assert results["resource"].contents[0].uri == "ui://weather/view"
    assert results["message"].is_error is None
    assert results["blocks"].is_error is True
    assert results["context"] is None
    assert results["mode"] == "inline"  # the host's answer, not the mode asked for
    assert check_schema(schema_defs, host.received) == 10


async def test_an_error_answer_is_a_typed_error_and_the_app_goes_on() -> None:
    async with open_app() as (app, host):

        async def refuse() -> None:
            request = await host.recv()
            await host.send(protocol.encode_error(request["id"], protocol.REFUSED, "not for apps"))

        async with anyio.create_task_group() as group:
            group.start_soon(refuse)
            with pytest.raises(AppRequestError) as caught:
                await app.call_server_tool("secret", {})
        error = caught.value
        assert (error.method, error.jsonrpc_code, error.message) == (
            "tools/call",
            protocol.REFUSED,
            "not for apps",
        )
        assert "tools/call" in str(error)
        assert "-32000" in str(error)
        # Still works.
        async with anyio.create_task_group() as group:
            group.start_soon(host.answer, protocol.OPEN_LINK, {})
            assert (await app.open_link("https://example.com/")).is_error is None


async def test_a_request_times_out_and_is_cancelled() -> None:
    async with open_app() as (app, host):
        with anyio.fail_after(LIMIT):
            with pytest.raises(AppTimeout) as caught:
                await app.request("tools/call", {"name": "slow"}, timeout=0.1)
        assert caught.value.method == "tools/call"
        request = await host.recv()
        cancel = await host.recv()
        assert cancel == {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request["id"], "reason": "Timed out"},
        }
        # A late answer to the abandoned request is ignored.
        await host.send(protocol.encode_result(request["id"], {"content": []}))
        async with anyio.create_task_group() as group:
            group.start_soon(host.answer, protocol.OPEN_LINK, {})
            await app.open_link("https://example.com/")


async def test_the_connection_ending_fails_pending_requests_at_once() -> None:
    async with open_app(timeout=60) as (app, host):
        failures: list[BaseException] = []

        async def call() -> None:
            try:
                await app.call_server_tool("x", {})
            except AppDisconnected as exc:
                failures.append(exc)

        with anyio.fail_after(LIMIT):
            async with anyio.create_task_group() as group:
                group.start_soon(call)
                group.start_soon(call)
                await host.recv()
                await host.recv()
                await host.end.aclose()
            assert len(failures) == 2
            await app.wait_disconnected()
        assert not app.connected
        with pytest.raises(AppDisconnected):
            await app.send_message("late")
        with pytest.raises(AppDisconnected):
            await app.wait_tool_input()


# -- the App's tools ---------------------------------------------------------------------------


def weather_registry() -> ModelContextRegistry:
    registry = ModelContextRegistry()

    @registry.tool(meta={"ui": {"visibility": ["app"]}})
    def forecast(city: str, days: int = 1) -> dict[str, Any]:
        """The forecast for a city."""
        return {"city": city, "days": days}

    @registry.tool
    def shapes(kind: str) -> Any:
        """Returns a value of each JSON shape."""
        return {"text": "plain", "none": None, "list": [1, 2], "set": {1}}[kind]

    registry.add_tool("scalar", lambda: 1, parameters={"type": "string"}, description="Bad.")

    @registry.tool
    def broken() -> None:
        """Always fails."""
        raise ValueError("it broke")

    return registry


async def test_the_host_lists_and_calls_the_registry_tools() -> None:
    registry = weather_registry()
    async with open_app(registry=registry) as (_app, host):
        listing = await host.ask(1, "tools/list", {})
        tools = mcp.ListToolsResult.model_validate(listing["result"]).tools
        # "scalar" has a schema MCP cannot carry: left out, the others listed.
        assert [tool.name for tool in tools] == ["forecast", "shapes", "broken"]
        forecast = tools[0]
        assert forecast.description == "The forecast for a city."
        assert forecast.meta == {"ui": {"visibility": ["app"]}}
        assert forecast.input_schema["required"] == ["city"]

        answer = await host.ask(
            2, "tools/call", {"name": "forecast", "arguments": {"city": "Oslo", "days": 3}}
        )
        result = mcp.CallToolResult.model_validate(answer["result"])
        assert result.structured_content == {"city": "Oslo", "days": 3}
        assert not result.is_error

        answer = await host.ask("s", "tools/call", {"name": "broken", "arguments": {}})
        result = mcp.CallToolResult.model_validate(answer["result"])
        assert result.is_error
        assert "it broke" in result.content[0].text

        shapes: dict[str, Any] = {}
        for n, kind in enumerate(("text", "none", "list")):
            answer = await host.ask(
                100 + n, "tools/call", {"name": "shapes", "arguments": {"kind": kind}}
            )
            shapes[kind] = answer["result"]
            assert shapes[kind]["isError"] is False
            assert "structuredContent" not in shapes[kind]
        assert shapes["text"]["content"] == [{"type": "text", "text": "plain"}]
        assert shapes["none"]["content"] == []
        assert shapes["list"]["content"] == [{"type": "text", "text": "[1,2]"}]
        answer = await host.ask(110, "tools/call", {"name": "shapes", "arguments": {"kind": "set"}})
        assert answer["result"]["content"] == [{"type": "text", "text": "[1]"}]

        answer = await host.ask(3, "tools/call", {"name": "nope", "arguments": {}})
        assert answer["error"]["code"] == protocol.INVALID_PARAMS
        assert "nope" in answer["error"]["message"]

        answer = await host.ask(4, "tools/call", {"name": "forecast", "arguments": {}})
        result = mcp.CallToolResult.model_validate(answer["result"])
        assert result.is_error  # missing required argument: an error the model can read


async def test_registry_changes_are_announced() -> None:
    registry = weather_registry()
    async with open_app(registry=registry) as (_app, host):
        handle = registry.add_tool("extra", lambda: "x", description="Extra.")
        assert await host.recv() == {
            "jsonrpc": "2.0",
            "method": "notifications/tools/list_changed",
        }
        listing = await host.ask(1, "tools/list", {})
        assert "extra" in [tool["name"] for tool in listing["result"]["tools"]]
        handle.remove()
        assert (await host.recv())["method"] == "notifications/tools/list_changed"


async def test_without_a_registry_tools_are_method_not_found() -> None:
    async with open_app() as (_, host):
        answer = await host.ask(1, "tools/list", {})
        assert answer["error"]["code"] == protocol.METHOD_NOT_FOUND


async def test_the_host_can_cancel_a_tool_call() -> None:
    registry = ModelContextRegistry()
    started = anyio.Event()

    @registry.tool
    async def wait_forever() -> None:
        """Never returns."""
        started.set()
        await anyio.sleep_forever()

    async with open_app(registry=registry) as (_app, host):
        await host.send(protocol.encode_request(7, "tools/call", {"name": "wait_forever"}))
        with anyio.fail_after(LIMIT):
            await started.wait()
        await host.notify("notifications/cancelled", {"requestId": 7})
        # No answer to a cancelled request; the next one is answered.
        answer = await host.ask(8, "ping")
        assert answer == {"jsonrpc": "2.0", "id": 8, "result": {}}


# -- teardown ----------------------------------------------------------------------------------


async def test_teardown_is_answered_after_the_callback(schema_defs: dict[str, Any]) -> None:
    order: list[str] = []

    async def on_teardown() -> None:
        await anyio.sleep(0.05)
        order.append("callback")

    async with open_app(on_teardown=on_teardown) as (app, host):
        answer = await host.ask(9, protocol.RESOURCE_TEARDOWN, {})
        order.append("answered")
        assert answer == {"jsonrpc": "2.0", "id": 9, "result": {}}
        await app.wait_torn_down()
    assert order == ["callback", "answered"]
    validate(schema_defs, "McpUiResourceTeardownResult", answer["result"])


async def test_a_teardown_callback_that_hangs_is_bounded() -> None:
    async with open_app(on_teardown=anyio.sleep_forever, timeout=0.2) as (app, host):
        answer = await host.ask(9, protocol.RESOURCE_TEARDOWN, {})
        assert answer["error"]["code"] == -32603
        assert not app.torn_down


# -- bad input ---------------------------------------------------------------------------------


async def test_bad_input_is_answered_and_never_kills_the_app() -> None:
    async with open_app() as (app, host):
        answer = await host.ask(1, "ui/no-such-method", {})
        assert answer["error"]["code"] == protocol.METHOD_NOT_FOUND
        answer = await host.ask(2, protocol.OPEN_LINK, {"url": "https://x.example/"})
        assert answer["error"]["code"] == protocol.METHOD_NOT_FOUND  # a host's method
        await host.send(
            {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"arguments": 5}}
        )
        assert (await host.recv())["error"]["code"] == protocol.INVALID_PARAMS
        for junk in (
            {"jsonrpc": "2.0", "method": protocol.TOOL_INPUT, "params": {"arguments": 3}},
            {"jsonrpc": "2.0", "method": protocol.HOST_CONTEXT_CHANGED, "params": {"theme": 1}},
            {"jsonrpc": "2.0", "id": 99, "result": {}},  # nobody asked
            {"jsonrpc": "2.0", "id": None, "error": {"code": -1, "message": "?"}},
            {"jsonrpc": "1.0", "method": "x"},
            {"type": "frame-message"},  # another channel's message: not ours
            "not even an object",
            ["a", "list"],
        ):
            await host.send(junk)  # type: ignore[arg-type]
        answer = await host.ask(4, "ping")
        assert answer["result"] == {}
        assert app.tool_input is None
        assert app.host_context.theme == "dark"
        assert app.rejected >= 4
        assert app.connected


async def test_every_method_with_bad_params_is_answered_or_dropped(
    schema_defs: dict[str, Any],
) -> None:
    junk_params: list[Any] = [{"x": [1]}, {"arguments": 5, "mode": 3, "name": 4, "uri": []}]
    async with open_app(registry=weather_registry()) as (app, host):
        next_id = 1000
        for method in sorted(protocol.METHODS):
            for params in junk_params:
                next_id += 1
                answer = await host.ask(next_id, method, params)
                assert ("result" in answer) != ("error" in answer), answer
                await host.notify(method, params)
            await host.send({"jsonrpc": "2.0", "id": "bad", "method": method, "params": [1]})
            assert (await host.recv())["error"]["code"] == protocol.INVALID_REQUEST
        answer = await host.ask(1, "ping")
        assert answer["result"] == {}
        assert app.connected
        assert app.host_context.theme == "dark"  # open keys merged, known ones kept
    # Every answer, error or not, is a valid JSON-RPC message (and the handshake's valid ui/*).
    assert check_schema(schema_defs, host.received) == 2


# -- against the Python AppBridge ----------------------------------------------------------------


@asynccontextmanager
async def paired(
    registry: ModelContextRegistry | None = None,
    app_options: dict[str, Any] | None = None,
    **bridge_options: Any,
) -> AsyncIterator[tuple[AppBridge, App]]:
    """The Python AppBridge and App over one memory_pair, both initialized."""
    view_end, host_end = memory_pair()
    bridge_options.setdefault("host_info", HOST_INFO)
    bridge_options.setdefault(
        "host_context", {"theme": "dark", "displayMode": "inline", "locale": "en-GB"}
    )
    bridge = AppBridge(
        host_end, name="weather-app", timeout=LIMIT, init_timeout=LIMIT, **bridge_options
    )
    async with (
        bridge,
        App(
            view_end, app_info=APP_INFO, registry=registry, timeout=LIMIT, **(app_options or {})
        ) as app,
    ):
        await bridge.wait_initialized()
        yield bridge, app


async def test_bridge_and_app_see_each_other() -> None:
    async with paired(registry=weather_registry()) as (bridge, app):
        assert bridge.state == "initialized"
        assert bridge.app_info == APP_INFO
        assert bridge.app_capabilities is not None
        assert bridge.app_capabilities.tools == protocol.ListChanged(list_changed=True)
        assert app.host_info == HOST_INFO
        assert app.protocol_version == protocol.PROTOCOL_VERSION
        assert app.host_context.theme == "dark"
        assert app.host_context.locale == "en-GB"


async def test_bridge_tool_call_reaches_the_app() -> None:
    heard: list[Any] = []
    async with paired(app_options={"on_tool_input": heard.append}) as (bridge, app):
        await bridge.send_tool_input_partial({"city": "Pa"})
        await bridge.send_tool_input({"city": "Paris"})
        assert await app.wait_tool_input() == {"city": "Paris"}
        assert app.tool_input_partial == {"city": "Pa"}
        await bridge.send_tool_result(
            mcp.CallToolResult(
                content=[mcp.TextContent(text="sunny")], structured_content={"t": 21}
            )
        )
        assert (await app.wait_tool_result()).structured_content == {"t": 21}
        await bridge.send_tool_cancelled("user")
        await app.wait_until(lambda a: a.cancelled)
        assert app.tool_cancelled == "user"
        await app.wait_until(lambda _: heard == [{"city": "Paris"}])


async def test_bridge_host_context_changes_are_merged_by_the_app() -> None:
    async with paired() as (bridge, app):
        await bridge.update_host_context(theme="light")
        await app.wait_until(lambda a: a.host_context.theme == "light")
        assert app.host_context.locale == "en-GB"
        assert app.host_context.display_mode == "inline"


async def test_bridge_lists_and_calls_the_app_tools_and_federates_them() -> None:
    registry = weather_registry()
    async with paired(registry=registry) as (bridge, _app):
        tools = await bridge.list_view_tools()
        assert [tool.name for tool in tools] == ["forecast", "shapes", "broken"]
        result = await bridge.call_view_tool("forecast", {"city": "Oslo", "days": 2})
        assert result.structured_content == {"city": "Oslo", "days": 2}
        failed = await bridge.call_view_tool("broken", {})
        assert failed.is_error

        parent = ModelContextRegistry()
        parent.add_provider(bridge)
        await wait_until(lambda: "forecast" in parent.get_model_context().tools, LIMIT)
        with anyio.fail_after(LIMIT):
            value = await parent.get_model_context().call_tool("forecast", {"city": "Rome"})
        assert value == {"city": "Rome", "days": 1}

        registry.add_tool("added", lambda: "here", description="Added later.")
        await wait_until(lambda: "added" in parent.get_model_context().tools, LIMIT)
        assert await parent.get_model_context().call_tool("added", {}) == "here"


async def test_bridge_answers_and_refuses_the_app_requests() -> None:
    messages: list[protocol.MessageParams] = []

    async def on_message(params: protocol.MessageParams) -> None:
        messages.append(params)

    async with paired(on_message=on_message) as (bridge, app):
        assert (await app.send_message("hi")).is_error in (None, False)
        assert [block.text for block in messages[0].content] == ["hi"]  # type: ignore[union-attr]

        with pytest.raises(AppRequestError) as caught:
            await app.open_link("https://example.com/")  # no handler on the bridge
        assert caught.value.jsonrpc_code == protocol.METHOD_NOT_FOUND
        assert caught.value.method == protocol.OPEN_LINK

        with pytest.raises(AppRequestError) as caught:
            await app.call_server_tool("anything", {})  # the bridge has no server
        assert caught.value.jsonrpc_code == protocol.METHOD_NOT_FOUND

        assert await app.request_display_mode("fullscreen") == "inline"  # the current mode

        await app.update_model_context("showing Oslo", {"city": "Oslo"})
        assert bridge.model_context is not None
        assert bridge.model_context.structured_content == {"city": "Oslo"}
        assert "showing Oslo" in (bridge.get_model_context().system or "")


async def test_bridge_teardown_runs_the_app_callback() -> None:
    ran: list[str] = []
    async with paired(app_options={"on_teardown": lambda: ran.append("teardown")}) as (
        bridge,
        app,
    ):
        assert await bridge.teardown(timeout=LIMIT) is True
        assert ran == ["teardown"]
        await app.wait_torn_down()


async def test_app_asks_for_teardown_and_the_host_tears_it_down() -> None:
    asked = anyio.Event()
    ran: list[str] = []
    async with paired(
        on_request_teardown=asked.set, app_options={"on_teardown": lambda: ran.append("app")}
    ) as (bridge, app):
        await app.request_teardown()
        with anyio.fail_after(LIMIT):
            await asked.wait()
        assert await bridge.teardown(timeout=LIMIT) is True
        await app.wait_torn_down()
        assert ran == ["app"]


async def test_a_bridge_that_tears_down_by_itself_leaves_its_caller_running() -> None:
    reached: list[str] = []
    async with paired() as (_, app):
        await app.request_teardown()  # no on_request_teardown: the bridge does it itself
        await app.wait_torn_down()
        await app.wait_disconnected()
        reached.append("after")
    assert reached == ["after"]


async def test_connect_app_pairs_a_bridge_and_an_app_in_one_line(connect_app: Any) -> None:
    parent = ModelContextRegistry()
    async with connect_app(weather_registry(), host_context={"theme": "dark"}) as (bridge, app):
        parent.add_provider(bridge, namespace="view")
        assert app.host_context.theme == "dark"
        assert bridge.app_capabilities is not None
        assert bridge.app_capabilities.tools is not None
        # every tool of the registry but "scalar", whose schema is not an object
        tools = set(parent.get_model_context().tools)
        assert tools == {"view_forecast", "view_shapes", "view_broken"}
        await bridge.send_tool_input({"city": "Paris"})
        assert await app.wait_tool_input() == {"city": "Paris"}
    assert bridge.state == "closed"
    assert not parent.get_model_context().tools
