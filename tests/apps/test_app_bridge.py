"""``AppBridge`` against a view that speaks raw JSON-RPC over a real ``memory_pair``.

The view side here is written by hand, message by message, so every test says exactly
what crosses the wire; the Python ``App`` and the real ext-apps ``App`` (in Chromium)
are tested against the bridge elsewhere. The server an app came from is a real ``mcp``
``MCPServer`` in this process, reached through an ``MCPFrameHost``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as mcp
import pytest
import test_apps_protocol as schema_checks
from anyio.streams.stapled import StapledObjectStream
from mcp.server.mcpserver import MCPServer

from assistant_frames import (
    ContextTimeout,
    FrameDisconnected,
    ModelContextRegistry,
    ToolCallError,
    ToolCallTimeout,
)
from assistant_frames.apps import AppBridge, AppRequestError, AppTimeout, protocol
from assistant_frames.mcp import MCPFrameHost
from assistant_frames.transports import memory_pair

from helpers import wait_until

pytestmark = pytest.mark.anyio

schema_defs = schema_checks.schema_defs  # the fixture: ext-apps' schema.json, relaxed as there
validate = schema_checks.validate

WAIT = 5.0
QUIET = 0.2  # how long negative checks watch for something that must not happen
APP_INFO = {"name": "test-view", "version": "1.0.0"}


class RawView:
    """The view end of the pair: sends and receives JSON-RPC dicts, nothing more."""

    def __init__(self, transport: Any) -> None:
        self.transport = transport
        self.next_id = 0
        self.received: list[dict[str, Any]] = []  # everything the bridge sent, in order
        self.sent: dict[Any, str] = {}  # request id -> method, to name the answers

    async def send(self, message: Any) -> None:
        if isinstance(message, dict) and isinstance(message.get("id"), int | str):
            self.sent[message["id"]] = message.get("method", "")
        await self.transport.send(message)

    async def receive(self) -> dict[str, Any]:
        with anyio.fail_after(WAIT):
            message: dict[str, Any] = await self.transport.receive()
        self.received.append(message)
        return message

    async def nothing_within(self, seconds: float = QUIET) -> None:
        with anyio.move_on_after(seconds):
            message = await self.transport.receive()
            raise AssertionError(f"unexpected message: {message}")

    async def request(self, method: str, params: Any = None) -> dict[str, Any]:
        """Send a request; return its answer (other messages before it fail the test)."""
        self.next_id += 1
        request_id = self.next_id
        await self.send(protocol.encode_request(request_id, method, params))
        answer = await self.receive()
        assert answer.get("id") == request_id, answer
        return answer

    async def initialize(self, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
        params = {
            "protocolVersion": protocol.PROTOCOL_VERSION,
            "appInfo": APP_INFO,
            "appCapabilities": capabilities or {},
        }
        answer = await self.request(protocol.INITIALIZE, params)
        await self.send(protocol.encode_notification(protocol.INITIALIZED))
        return answer


@asynccontextmanager
async def pair(**options: Any) -> AsyncIterator[tuple[AppBridge, RawView]]:
    host_side, view_side = memory_pair()
    async with AppBridge(host_side, name="view", **options) as bridge:
        yield bridge, RawView(view_side)


def app_server() -> MCPServer:
    server = MCPServer("app-server")
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
        await anyio.sleep(seconds)
        calls.append("slow finished")
        return "done"

    @server.resource("ui://weather/view.html", mime_type=protocol.APP_MIME_TYPE)
    def view_html() -> str:
        return "<html><body>weather</body></html>"

    server.calls = calls  # type: ignore[attr-defined]
    return server


# -- handshake and queueing ----------------------------------------------------------------------


async def test_initialize_is_answered_with_all_four_keys_and_the_view_is_known() -> None:
    context = {"theme": "dark", "displayMode": "inline", "locale": "fr-FR"}
    info = mcp.Implementation(name="my-host", version="2.0")
    async with pair(host_info=info, host_context=context) as (bridge, view):
        assert bridge.state == "new"
        answer = await view.initialize({"tools": {"listChanged": True}})
        result = answer["result"]
        assert set(result) == {"protocolVersion", "hostInfo", "hostCapabilities", "hostContext"}
        assert result["protocolVersion"] == protocol.PROTOCOL_VERSION
        assert result["hostInfo"] == {"name": "my-host", "version": "2.0"}
        assert result["hostContext"] == context
        await bridge.wait_initialized()
        assert bridge.state == "initialized"
        assert bridge.app_info is not None
        assert bridge.app_info.name == "test-view"
        assert bridge.app_capabilities is not None
        assert bridge.app_capabilities.tools is not None


async def test_an_unsupported_version_is_answered_with_the_latest() -> None:
    async with pair() as (_bridge, view):
        params = {"protocolVersion": "1999-01-01", "appInfo": APP_INFO, "appCapabilities": {}}
        answer = await view.request(protocol.INITIALIZE, params)
        assert answer["result"]["protocolVersion"] == protocol.PROTOCOL_VERSION


async def test_nothing_reaches_the_view_before_initialized_then_all_of_it_in_order() -> None:
    async with pair() as (bridge, view):
        await bridge.send_tool_input_partial({"city": "Pa"})
        await bridge.send_tool_input({"city": "Paris"})
        await bridge.send_tool_result({"content": [{"type": "text", "text": "Sunny"}]})
        await view.nothing_within()
        await view.initialize()
        methods = [(await view.receive())["method"] for _ in range(3)]
        assert methods == [protocol.TOOL_INPUT_PARTIAL, protocol.TOOL_INPUT, protocol.TOOL_RESULT]
        with pytest.raises(RuntimeError, match="partial tool input after the complete"):
            await bridge.send_tool_input_partial({"city": "P"})


async def test_host_context_changes_send_only_the_changed_keys() -> None:
    async with pair(host_context={"theme": "light", "locale": "en-US"}) as (bridge, view):
        await view.initialize()
        await bridge.wait_initialized()
        await bridge.update_host_context(theme="dark")
        note = await view.receive()
        assert note == {
            "jsonrpc": "2.0",
            "method": protocol.HOST_CONTEXT_CHANGED,
            "params": {"theme": "dark"},
        }
        await bridge.update_host_context(theme="dark")  # no change: nothing sent
        await view.nothing_within()
        assert bridge.host_context.locale == "en-US"


async def test_a_view_that_never_initializes_gets_a_clear_bounded_error() -> None:
    async with pair(init_timeout=0.2) as (bridge, _view):
        with pytest.raises(ContextTimeout, match=r"sent no ui/initialize within 0\.2 s"):
            await bridge.wait_initialized()
        assert bridge.state == "new"


async def test_wait_initialized_fails_at_once_when_the_view_goes() -> None:
    async with pair() as (bridge, view):
        await view.transport.aclose()
        with anyio.fail_after(WAIT), pytest.raises(FrameDisconnected):
            await bridge.wait_initialized()
        assert bridge.state == "disconnected"


# -- the view's requests -------------------------------------------------------------------------


async def test_handlers_answer_and_unset_ones_say_method_not_found() -> None:
    seen: list[Any] = []

    async def on_message(params: protocol.MessageParams) -> None:
        seen.append(params)

    async with pair(on_message=on_message) as (bridge, view):
        await view.initialize()
        content = [{"type": "text", "text": "Book the 9:40 train"}]
        answer = await view.request(protocol.MESSAGE, {"role": "user", "content": content})
        assert answer["result"] == {}
        assert seen[0].content[0].text == "Book the 9:40 train"
        answer = await view.request(protocol.OPEN_LINK, {"url": "https://example.com"})
        assert answer["error"]["code"] == protocol.METHOD_NOT_FOUND
        assert "ui/open-link" in answer["error"]["message"]
        assert (await view.request("ping"))["result"] == {}
        caps = bridge.host_capabilities
        assert caps.message is not None
        assert caps.open_links is None


async def test_a_slow_handler_holds_up_no_other_request() -> None:
    release = anyio.Event()

    async def on_message(params: Any) -> None:
        await release.wait()

    async with pair(on_message=on_message) as (_bridge, view):
        await view.initialize()
        text = [{"type": "text", "text": "hi"}]
        for round_ in range(3):  # the readers that served go back to reading, each round
            slow = [f"slow-{round_}-{i}" for i in range(5)]  # five stuck at once
            for request_id in slow:
                params = {"role": "user", "content": text}
                await view.send(protocol.encode_request(request_id, protocol.MESSAGE, params))
            for _ in range(3):
                assert (await view.request("ping"))["result"] == {}  # answered meanwhile
            release.set()
            answered = {(await view.receive())["id"] for _ in slow}
            assert answered == set(slow)
            release = anyio.Event()


async def test_a_failing_handler_answers_its_request_with_an_error_and_nothing_else() -> None:
    def on_open_link(params: protocol.OpenLinkParams) -> None:
        raise PermissionError(f"{params.url} is not allowed")

    async with pair(on_open_link=on_open_link) as (bridge, view):
        await view.initialize()
        answer = await view.request(protocol.OPEN_LINK, {"url": "https://evil.example"})
        assert answer["error"] == {"code": -32603, "message": "https://evil.example is not allowed"}
        assert (await view.request("ping"))["result"] == {}
        assert bridge.state == "initialized"


async def test_extensions_answer_their_own_methods_and_others_stay_not_found() -> None:
    seen: list[Any] = []

    async def modal(params: dict[str, Any]) -> dict[str, Any]:
        seen.append(params)
        return {"opened": params["title"]}

    def broken(params: dict[str, Any]) -> None:
        raise PermissionError("no uploads here")

    extensions = {"x-test/modal": modal, "x-test/upload": broken, "x-test/none": lambda p: None}
    async with pair(extensions=extensions) as (bridge, view):
        await view.initialize()
        answer = await view.request("x-test/modal", {"title": "Details"})
        assert answer["result"] == {"opened": "Details"}
        assert seen == [{"title": "Details"}]
        assert (await view.request("x-test/none"))["result"] == {}
        answer = await view.request("x-test/upload", {})
        assert answer["error"] == {"code": -32603, "message": "no uploads here"}
        answer = await view.request("x-test/other", {})
        assert answer["error"]["code"] == protocol.METHOD_NOT_FOUND
        # A notification by an extension's name is not a request: the machine drops it.
        await view.send({"jsonrpc": "2.0", "method": "x-test/modal", "params": {}})
        assert (await view.request("ping"))["result"] == {}
        assert len(seen) == 1
        assert bridge.state == "initialized"
    host_side, view_side = memory_pair()
    async with host_side, view_side:
        with pytest.raises(ValueError, match="ui/message"):
            AppBridge(host_side, extensions={protocol.MESSAGE: modal})


async def test_display_mode_defaults_to_the_current_one_and_a_change_is_announced() -> None:
    async with pair(host_context={"displayMode": "inline"}) as (bridge, view):
        await view.initialize()
        answer = await view.request(protocol.REQUEST_DISPLAY_MODE, {"mode": "fullscreen"})
        assert answer["result"] == {"mode": "inline"}
        bridge.on_request_display_mode = lambda params: params.mode
        await view.send(
            protocol.encode_request(99, protocol.REQUEST_DISPLAY_MODE, {"mode": "fullscreen"})
        )
        received = [await view.receive(), await view.receive()]
        assert {"jsonrpc": "2.0", "id": 99, "result": {"mode": "fullscreen"}} in received
        changed = protocol.encode_notification(
            protocol.HOST_CONTEXT_CHANGED, {"displayMode": "fullscreen"}
        )
        assert changed in received


async def test_update_model_context_becomes_the_bridge_system_text_in_a_parent() -> None:
    parent = ModelContextRegistry()
    async with pair() as (bridge, view):
        parent.add_provider(bridge)
        await view.initialize()
        params = {
            "content": [{"type": "text", "text": "The user picked Paris."}],
            "structuredContent": {"city": "Paris"},
        }
        assert (await view.request(protocol.UPDATE_MODEL_CONTEXT, params))["result"] == {}
        system = parent.get_model_context().system
        assert system == 'The user picked Paris.\n{"city": "Paris"}'
        update = {"content": [{"type": "text", "text": "Now Rome."}]}
        await view.request(protocol.UPDATE_MODEL_CONTEXT, update)
        assert parent.get_model_context().system == "Now Rome."  # replaced, not appended


# -- the view's own tools ----------------------------------------------------------------------


async def answer_tools_list(view: RawView, tools: list[dict[str, Any]]) -> None:
    request = await view.receive()
    assert request["method"] == "tools/list", request
    await view.send(protocol.encode_result(request["id"], {"tools": tools}))


TOOL = {
    "name": "pick_city",
    "description": "Select a city on the map",
    "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
}


async def test_the_view_tools_join_a_parent_registry_and_calls_go_to_the_view() -> None:
    parent = ModelContextRegistry()
    async with pair() as (bridge, view):
        parent.add_provider(bridge, namespace="map")
        await view.initialize({"tools": {"listChanged": True}})
        await answer_tools_list(view, [TOOL])
        await wait_until(lambda: "map_pick_city" in parent.get_model_context().tools)

        async def view_side() -> None:
            request = await view.receive()
            assert request["method"] == "tools/call"
            assert request["params"] == {"name": "pick_city", "arguments": {"city": "Oslo"}}
            result = {"content": [{"type": "text", "text": "Oslo picked"}]}
            await view.send(protocol.encode_result(request["id"], result))

        async with anyio.create_task_group() as group:
            group.start_soon(view_side)
            value = await parent.get_model_context().call_tool("map_pick_city", {"city": "Oslo"})
        assert value == "Oslo picked"

        # list changed: listed again, the tool goes away
        await view.send(protocol.encode_notification("notifications/tools/list_changed"))
        await answer_tools_list(view, [])
        await wait_until(lambda: not parent.get_model_context().tools)


async def test_a_view_tool_call_times_out_with_a_cancel_and_errors_are_typed() -> None:
    async with pair(timeout=0.2) as (bridge, view):
        await view.initialize()
        with pytest.raises(ToolCallTimeout):
            await bridge.call_tool("pick_city", {})
        assert (await view.receive())["method"] == "tools/call"
        cancelled = await view.receive()
        assert cancelled["method"] == "notifications/cancelled"

        async def refuse() -> None:
            request = await view.receive()
            await view.send(protocol.encode_error(request["id"], -32602, "Unknown tool"))

        async with anyio.create_task_group() as group:
            group.start_soon(refuse)
            with pytest.raises(ToolCallError, match="Unknown tool") as caught:
                await bridge.call_tool("nope", {})
        assert caught.value.frame == "view"


async def test_our_other_requests_fail_with_typed_app_errors() -> None:
    async with pair(timeout=0.2) as (bridge, view):
        await view.initialize()

        async def refuse() -> None:
            request = await view.receive()
            error = protocol.encode_error(request["id"], -32601, "No tools here")
            error["error"]["data"] = {"why": "none"}
            await view.send(error)

        async with anyio.create_task_group() as group:
            group.start_soon(refuse)
            with pytest.raises(AppRequestError) as refused:
                await bridge.list_view_tools()
        assert (refused.value.method, refused.value.jsonrpc_code) == ("tools/list", -32601)
        assert (refused.value.message, refused.value.data) == ("No tools here", {"why": "none"})

        with pytest.raises(AppTimeout) as silent:  # a TimeoutError, and the view is told
            await bridge.list_view_tools()
        assert isinstance(silent.value, TimeoutError)
        assert silent.value.method == "tools/list"
        request = await view.receive()
        cancelled = await view.receive()
        assert cancelled["method"] == "notifications/cancelled"
        assert cancelled["params"]["requestId"] == request["id"]


async def fill(bridge: AppBridge, messages: int) -> None:
    for _ in range(messages):
        await bridge.send_tool_list_changed()


async def test_a_view_tool_call_that_cannot_even_be_queued_times_out_as_a_tool_call() -> None:
    # A transport whose send waits until the view reads (no buffer), and a view that
    # stops reading after the handshake: the bridge's queue fills, then a call waits.
    to_view, view_reads = anyio.create_memory_object_stream[Any](0)
    view_writes, to_host = anyio.create_memory_object_stream[Any](0)
    host_side = StapledObjectStream(to_view, to_host)
    view = RawView(StapledObjectStream(view_writes, view_reads))
    async with AppBridge(host_side, name="view", timeout=0.2) as bridge:
        await view.initialize()
        await bridge.wait_initialized(timeout=WAIT)
        with pytest.raises(TimeoutError):  # the queue is full within 300 messages
            await fill(bridge, 300)
        with anyio.fail_after(WAIT), pytest.raises(ToolCallTimeout) as caught:
            await bridge.call_view_tool("pick_city", {})
        assert caught.value.tool_name == "pick_city"
        assert bridge.state == "initialized"  # the connection itself is fine


async def test_a_pending_view_tool_call_fails_at_once_when_the_view_goes() -> None:
    async with pair(timeout=30) as (bridge, view):
        await view.initialize()

        async def leave() -> None:
            await view.receive()  # the call
            await view.transport.aclose()

        async with anyio.create_task_group() as group:
            group.start_soon(leave)
            with anyio.fail_after(WAIT), pytest.raises(FrameDisconnected):
                await bridge.call_tool("pick_city", {})


# -- forwarding to the app's server ------------------------------------------------------------


@asynccontextmanager
async def with_server(**options: Any) -> AsyncIterator[tuple[AppBridge, RawView, MCPServer]]:
    server = app_server()
    async with (
        MCPFrameHost(server, name="weather") as frame,
        pair(server=frame, **options) as (
            bridge,
            view,
        ),
    ):
        yield bridge, view, server


async def test_a_view_may_call_app_visible_tools_of_its_server() -> None:
    async with with_server() as (_bridge, view, server):
        await view.initialize()
        params = {"name": "forecast", "arguments": {"city": "Paris"}}
        answer = await view.request("tools/call", params)
        assert answer["result"]["content"][0]["text"] == "Sunny in Paris"
        answer = await view.request(
            "tools/call", {"name": "refresh", "arguments": {"city": "Oslo"}}
        )
        assert answer["result"]["structuredContent"] == {"city": "Oslo", "temperature": 21}
        assert server.calls == ["forecast Paris", "refresh Oslo"]  # type: ignore[attr-defined]


async def test_a_model_only_tool_is_refused_and_never_reaches_the_server() -> None:
    async with with_server() as (bridge, view, server):
        await view.initialize()
        answer = await view.request("tools/call", {"name": "delete_everything", "arguments": {}})
        assert answer["error"]["code"] == protocol.REFUSED
        assert "not visible to apps" in answer["error"]["message"]
        answer = await view.request("tools/call", {"name": "no_such_tool", "arguments": {}})
        assert answer["error"]["code"] == protocol.REFUSED
        assert server.calls == []  # type: ignore[attr-defined]
        listed = (await view.request("tools/list"))["result"]["tools"]
        assert sorted(tool["name"] for tool in listed) == ["forecast", "refresh", "slow"]
        assert bridge.state == "initialized"


async def test_resources_are_forwarded_to_the_server() -> None:
    async with with_server() as (_bridge, view, _server):
        await view.initialize()
        listed = (await view.request("resources/list"))["result"]["resources"]
        assert [r["uri"] for r in listed] == ["ui://weather/view.html"]
        read = await view.request("resources/read", {"uri": "ui://weather/view.html"})
        assert read["result"]["contents"][0]["text"] == "<html><body>weather</body></html>"
        missing = await view.request("resources/read", {"uri": "ui://nothing/here"})
        assert "error" in missing


async def test_without_a_server_forwarded_methods_are_not_found() -> None:
    async with pair() as (_bridge, view):
        await view.initialize()
        answer = await view.request("tools/call", {"name": "forecast", "arguments": {}})
        assert answer["error"]["code"] == protocol.METHOD_NOT_FOUND


async def test_the_view_cancelling_its_call_cancels_the_server_call() -> None:
    async with with_server() as (_bridge, view, server):
        await view.initialize()
        request = protocol.encode_request(
            7, "tools/call", {"name": "slow", "arguments": {"seconds": 30}}
        )
        await view.send(request)
        calls = server.calls  # type: ignore[attr-defined]
        await wait_until(lambda: "slow started" in calls)
        await view.send(protocol.encode_notification("notifications/cancelled", {"requestId": 7}))
        await view.nothing_within()  # a cancelled request is not answered
        assert (await view.request("ping"))["result"] == {}
        assert "slow finished" not in calls


# -- teardown ------------------------------------------------------------------------------------


async def test_teardown_is_awaited_and_method_not_found_counts_as_done() -> None:
    async with pair() as (bridge, view):
        await view.initialize()

        async def answer_with(error: bool) -> None:
            request = await view.receive()
            assert request["method"] == protocol.RESOURCE_TEARDOWN
            if error:
                message = protocol.encode_error(request["id"], -32601, "Method not found")
            else:
                message = protocol.encode_result(request["id"], {})
            await view.send(message)

        for error in (False, True):
            async with anyio.create_task_group() as group:
                group.start_soon(answer_with, error)
                assert await bridge.teardown(timeout=WAIT) is True


async def test_teardown_of_a_silent_view_is_bounded() -> None:
    async with pair() as (bridge, view):
        await view.initialize()
        assert await bridge.teardown(timeout=0.2) is False


async def test_the_view_asking_for_teardown_is_torn_down_and_closed() -> None:
    async with pair() as (bridge, view):
        await view.initialize()
        await view.send(protocol.encode_notification(protocol.REQUEST_TEARDOWN))
        request = await view.receive()
        assert request["method"] == protocol.RESOURCE_TEARDOWN
        await view.send(protocol.encode_result(request["id"], {}))
        with anyio.fail_after(WAIT):
            await bridge.wait_disconnected()
        assert bridge.state == "closed"


# -- everything the bridge sends validates against the shipped SDK's schema ----------------------


async def test_every_message_the_bridge_sends_validates_against_the_sdk_schema(
    schema_defs: dict[str, Any],
) -> None:
    async with with_server(
        host_context={"theme": "dark", "displayMode": "inline", "locale": "en-US"},
        on_message=lambda params: None,
        on_request_display_mode=lambda params: params.mode,
        sandbox=protocol.SandboxCapability.model_validate(
            {"csp": {"connectDomains": ["https://a.example"]}, "permissions": {"camera": {}}}
        ),
    ) as (bridge, view, _server):
        await bridge.send_tool_input_partial({"city": "Par"})
        await bridge.send_tool_input({"city": "Paris"})
        await bridge.send_tool_result({"content": [{"type": "text", "text": "Sunny"}]})
        await bridge.send_tool_cancelled("the user left")
        await view.initialize({"tools": {}})
        for _ in range(4):  # what was queued, then the bridge asks for the view's tools
            await view.receive()
        await answer_tools_list(view, [TOOL])
        await bridge.update_host_context(theme="light")
        await view.receive()
        await bridge.send_tool_list_changed()
        await bridge.send_resource_list_changed()
        await bridge.send_prompt_list_changed()
        for _ in range(3):
            await view.receive()
        text = [{"type": "text", "text": "hi"}]
        await view.request(protocol.MESSAGE, {"role": "user", "content": text})
        await view.request(protocol.UPDATE_MODEL_CONTEXT, {"content": text})
        await view.send(protocol.encode_request(50, protocol.REQUEST_DISPLAY_MODE, {"mode": "pip"}))
        await view.receive()
        await view.receive()
        await view.request("tools/call", {"name": "forecast", "arguments": {"city": "Rome"}})
        await view.request("tools/call", {"name": "delete_everything", "arguments": {}})
        await view.request("resources/read", {"uri": "ui://weather/view.html"})
        await view.request(protocol.OPEN_LINK, {"url": "https://example.com"})

        async def view_answers() -> None:
            call = await view.receive()
            await view.send(protocol.encode_result(call["id"], {"content": text}))
            teardown = await view.receive()
            await view.send(protocol.encode_result(teardown["id"], {}))

        async with anyio.create_task_group() as group:
            group.start_soon(view_answers)
            await bridge.call_view_tool("pick_city", {"city": "Oslo"})
            assert await bridge.teardown(timeout=WAIT)

    kinds: set[str] = set()
    for message in view.received:
        mcp.jsonrpc_message_adapter.validate_python(message)  # the JSON-RPC framing
        if "method" in message:
            kinds.add(message["method"])
            name = protocol.METHODS[message["method"]].schema
            if name is not None:
                body = {k: v for k, v in message.items() if k in ("method", "params")}
                validate(schema_defs, name, body)
            continue
        method = view.sent[message["id"]]
        kinds.add(f"{method} {'error' if 'error' in message else 'result'}")
        result_schema = protocol.METHODS[method].result_schema
        if result_schema is not None and "result" in message:
            validate(schema_defs, result_schema, message["result"])
        elif "result" in message and method in ("tools/call", "resources/read"):
            spec = protocol.METHODS[method]
            assert spec.result is not None
            spec.result.model_validate(message["result"])
    expected = {
        protocol.TOOL_INPUT_PARTIAL,
        protocol.TOOL_INPUT,
        protocol.TOOL_RESULT,
        protocol.TOOL_CANCELLED,
        protocol.HOST_CONTEXT_CHANGED,
        protocol.RESOURCE_TEARDOWN,
        "tools/list",
        "tools/call",
        "notifications/tools/list_changed",
        "notifications/resources/list_changed",
        "notifications/prompts/list_changed",
        f"{protocol.INITIALIZE} result",
        f"{protocol.MESSAGE} result",
        f"{protocol.UPDATE_MODEL_CONTEXT} result",
        f"{protocol.REQUEST_DISPLAY_MODE} result",
        "tools/call result",
        "tools/call error",
        "resources/read result",
        f"{protocol.OPEN_LINK} error",
    }
    assert expected <= kinds, expected - kinds
