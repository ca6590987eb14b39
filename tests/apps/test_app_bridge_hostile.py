"""``AppBridge`` against hostile views and failing servers.

Each case gets a clear JSON-RPC error (or a typed exception on the host side), and after
each the bridge still answers ``ping`` and a parent registry it was added to still works.
The view is a raw JSON-RPC peer on a real ``memory_pair``; the dying server is a real
``mcp`` server in a subprocess, killed with SIGKILL. Every loop and wait is bounded.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.server.mcpserver import MCPServer
from test_app_bridge import TOOL, RawView, answer_tools_list, pair, with_server

from assistant_frames import (
    FrameDisconnected,
    ModelContextRegistry,
    ToolCallError,
    ToolCallTimeout,
    to_openai_chat_tools,
)
from assistant_frames.apps import AppBridge, protocol
from assistant_frames.mcp import MCPFrameHost
from assistant_frames.transports import memory_pair

from helpers import wait_until

pytestmark = pytest.mark.anyio

WAIT = 10.0
FLOOD = 2000  # messages a flooding view sends


@asynccontextmanager
async def hosted(
    buffer: float = float("inf"), **options: Any
) -> AsyncIterator[tuple[AppBridge, RawView, ModelContextRegistry]]:
    """A bridge (added to a parent registry that also has a tool of its own) and its view."""
    parent = ModelContextRegistry()

    @parent.tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    host_side, view_side = memory_pair(buffer)
    async with AppBridge(host_side, name="view", **options) as bridge:
        parent.add_provider(bridge)
        yield bridge, RawView(view_side), parent


async def still_alive(bridge: AppBridge, view: RawView, parent: ModelContextRegistry) -> None:
    """The bridge answers ``ping`` and the parent registry still calls tools."""
    assert (await view.request("ping"))["result"] == {}
    with anyio.fail_after(WAIT):
        assert await parent.get_model_context().call_tool("add", {"a": 2, "b": 3}) == 5
    assert bridge.state in ("new", "initializing", "initialized")


# -- malformed JSON-RPC --------------------------------------------------------------------------

# Messages the bridge cannot even answer (no usable id): dropped, counted, never fatal.
UNANSWERABLE = [
    "not an object",
    42,
    None,
    [{"jsonrpc": "2.0", "id": 1, "method": "ping"}],  # a batch: not supported
    {"jsonrpc": "1.0", "id": 1, "method": "ping"},
    {"id": 1, "method": "ping"},
    {"jsonrpc": "2.0", "id": True, "method": "ping"},
    {"jsonrpc": "2.0", "id": 1.5, "method": "ping"},
    {"jsonrpc": "2.0", "id": None, "method": "ping"},
    {"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"},
    {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "x"}},
    {"jsonrpc": "2.0", "result": {}},
    {"jsonrpc": "2.0", "id": 1, "error": {"code": "bad", "message": 3}},
    {"jsonrpc": "2.0", "id": 1, "result": "not an object"},
    {"jsonrpc": "2.0", "id": 1, "error": "not an object"},
    {"jsonrpc": "2.0"},
]


@pytest.mark.parametrize("raw", UNANSWERABLE, ids=repr)
async def test_an_unanswerable_message_is_dropped_and_counted(raw: Any) -> None:
    async with hosted() as (bridge, view, parent):
        await view.initialize()
        await view.send(raw)
        await still_alive(bridge, view, parent)  # the first answer is the ping's
        assert bridge.malformed_count == 1


# (message, JSON-RPC code of the answer)
ANSWERED = [
    ({"jsonrpc": "2.0", "id": 7, "method": "ping", "params": [1, 2]}, protocol.INVALID_REQUEST),
    ({"jsonrpc": "2.0", "id": 7, "method": "ping", "params": "x"}, protocol.INVALID_REQUEST),
    ({"jsonrpc": "2.0", "id": 7, "method": 12}, protocol.INVALID_REQUEST),
    ({"jsonrpc": "2.0", "id": 7, "method": "no/such/method"}, protocol.METHOD_NOT_FOUND),
    ({"jsonrpc": "2.0", "id": "s", "method": "ui/notifications/initialized"}, -32601),
    ({"jsonrpc": "2.0", "id": 7, "method": "ui/open-link", "params": {"url": 5}}, -32602),
    ({"jsonrpc": "2.0", "id": 7, "method": "ui/open-link", "params": {}}, -32602),
    ({"jsonrpc": "2.0", "id": 7, "method": "ui/message", "params": {"role": 1}}, -32602),
    ({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {}}, -32602),
    # host-only requests, sent by the view
    ({"jsonrpc": "2.0", "id": 7, "method": "ui/resource-teardown", "params": {}}, -32601),
]


@pytest.mark.parametrize(("raw", "code"), ANSWERED, ids=repr)
async def test_a_bad_request_gets_a_clear_jsonrpc_error(raw: dict[str, Any], code: int) -> None:
    async with hosted(on_open_link=lambda p: None, on_message=lambda p: None) as (b, view, p):
        await view.initialize()
        await view.send(raw)
        answer = await view.receive()
        assert answer["jsonrpc"] == "2.0"
        assert answer["id"] == raw["id"]
        assert answer["error"]["code"] == code
        assert isinstance(answer["error"]["message"], str)
        assert answer["error"]["message"]
        await still_alive(b, view, p)


async def test_ignored_messages_are_not_answered() -> None:
    async with hosted() as (bridge, view, parent):
        await view.initialize()
        host_only = protocol.encode_notification(protocol.TOOL_INPUT, {"arguments": {}})
        unknown_response = protocol.encode_result("host-nobody-1", {})
        unknown_int_response = protocol.encode_result(12345, {})
        unknown_error = protocol.encode_error(99, -32000, "for no one")
        unknown_notification = {"jsonrpc": "2.0", "method": "no/such/notification"}
        before = bridge._machine.ignored
        for raw in (host_only, unknown_response, unknown_int_response, unknown_error):
            await view.send(raw)
        await view.send(unknown_notification)
        await still_alive(bridge, view, parent)  # nothing came before the ping's answer
        assert bridge._machine.ignored == before + 4
        assert bridge.malformed_count == 1  # the unknown notification


async def test_initialized_before_initialize_is_ignored_and_the_handshake_still_works() -> None:
    async with hosted() as (bridge, view, parent):
        await view.send(protocol.encode_notification(protocol.INITIALIZED))
        assert (await view.request("ping"))["result"] == {}
        assert bridge.state == "new"
        assert bridge._machine.ignored == 1
        await view.initialize()
        with anyio.fail_after(WAIT):
            await bridge.wait_initialized()
        await still_alive(bridge, view, parent)


async def test_a_second_initialize_is_tolerated_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level("INFO", logger="assistant_frames.apps")
    async with hosted() as (bridge, view, parent):
        await view.initialize()
        await bridge.wait_initialized()
        params = {
            "protocolVersion": protocol.PROTOCOL_VERSION,
            "appInfo": {"name": "again", "version": "2"},
            "appCapabilities": {},
        }
        answer = await view.request(protocol.INITIALIZE, params)
        assert set(answer["result"]) == {
            "protocolVersion",
            "hostInfo",
            "hostCapabilities",
            "hostContext",
        }
        assert bridge.state == "initialized"
        assert bridge.app_info is not None
        assert bridge.app_info.name == "again"
        assert "sent ui/initialize again" in caplog.text
        await still_alive(bridge, view, parent)


async def test_a_bad_answer_to_a_host_request_is_a_typed_error() -> None:
    async with hosted(timeout=WAIT) as (bridge, view, parent):
        await view.initialize({"tools": {"listChanged": True}})
        request = await view.receive()  # the bridge lists the view's tools
        assert request["method"] == "tools/list"
        await view.send(protocol.encode_result(request["id"], {"tools": "none"}))

        async def answer_badly() -> None:
            call = await view.receive()
            await view.send(protocol.encode_result(call["id"], {"content": "nope"}))

        async with anyio.create_task_group() as group:
            group.start_soon(answer_badly)
            with anyio.fail_after(WAIT), pytest.raises(ToolCallError, match="answered tool"):
                await bridge.call_view_tool("x", {})
        assert set(parent.get_model_context().tools) == {"add"}
        await still_alive(bridge, view, parent)


# -- floods --------------------------------------------------------------------------------------


async def test_a_flood_of_requests_is_answered_and_nothing_piles_up() -> None:
    async with hosted() as (bridge, view, parent):
        await view.initialize()
        with anyio.fail_after(WAIT):
            for number in range(FLOOD):
                await view.send(protocol.encode_request(number, "ping"))
                await view.send(protocol.encode_notification("notifications/message", _log()))
            answered: list[int] = []
            refused = 0
            for _ in range(FLOOD):
                answer = await view.receive()
                answered.append(answer["id"])
                if "error" in answer:  # more than max_requests in flight at once
                    assert answer["error"]["code"] == protocol.REFUSED
                    refused += 1
                else:
                    assert answer["result"] == {}
        assert sorted(answered) == list(range(FLOOD))  # each answered exactly once
        assert refused < FLOOD
        assert len(bridge._connection.in_flight) == 0
        assert len(bridge._machine.calls) == 0
        await still_alive(bridge, view, parent)


async def test_requests_beyond_max_in_flight_are_refused_while_earlier_ones_complete() -> None:
    release = anyio.Event()
    seen: list[Any] = []

    async def on_message(params: Any) -> None:
        seen.append(params)
        await release.wait()

    async with hosted(max_requests=8, on_message=on_message) as (bridge, view, parent):
        await view.initialize()
        message = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
        with anyio.fail_after(WAIT):
            for number in range(8):
                await view.send(protocol.encode_request(number, protocol.MESSAGE, message))
            await wait_until(lambda: len(seen) == 8)
            for number in range(8, 8 + FLOOD):
                await view.send(protocol.encode_request(number, protocol.MESSAGE, message))
            for number in range(8, 8 + FLOOD):
                answer = await view.receive()
                assert answer["id"] == number
                assert answer["error"]["code"] == protocol.REFUSED
                assert "at most 8" in answer["error"]["message"]
            assert len(bridge._connection.in_flight) == 8
            release.set()
            done = {(await view.receive())["id"] for _ in range(8)}
        assert done == set(range(8))
        assert len(seen) == 8  # the refused ones never reached the handler
        assert len(bridge._connection.in_flight) == 0
        await still_alive(bridge, view, parent)


async def test_a_view_flooding_without_reading_holds_a_bounded_amount() -> None:
    """A view that sends and never reads: the bridge stops reading it (backpressure)
    instead of holding a task or a queued answer per request."""
    async with hosted(buffer=16, max_requests=8) as (bridge, view, parent):
        await view.initialize()
        sent = 0
        with anyio.move_on_after(1.0):  # the view's sends block once the bridge stops reading
            for number in range(FLOOD):
                await view.send(protocol.encode_request(number, "ping"))
                sent += 1
        assert sent < FLOOD  # backpressure reached the view
        assert len(bridge._connection.in_flight) <= 8
        assert bridge._connection.writer.waiting <= 256
        # tasks waiting to send an answer: at most the requests in flight
        with anyio.fail_after(WAIT):
            for _ in range(sent):
                answer = await view.receive()
                assert "id" in answer
        await still_alive(bridge, view, parent)


async def test_a_flood_of_list_changed_lists_the_tools_a_bounded_number_of_times() -> None:
    async with hosted() as (bridge, view, parent):
        await view.initialize({"tools": {"listChanged": True}})
        await answer_tools_list(view, [TOOL])
        await wait_until(lambda: "pick_city" in parent.get_model_context().tools)
        note = protocol.encode_notification("notifications/tools/list_changed")
        with anyio.fail_after(WAIT):
            for _ in range(FLOOD):
                await view.send(note)
            await wait_until(lambda: len(bridge._machine.calls) >= 1)
            assert len(bridge._machine.calls) <= 1  # one listing at a time, not one each
            await answer_tools_list(view, [])
            # at most one more listing follows, for the changes during the first
            await wait_until(lambda: "pick_city" not in parent.get_model_context().tools)
            if len(bridge._machine.calls):
                await answer_tools_list(view, [])
        assert len(bridge._machine.calls) == 0
        await still_alive(bridge, view, parent)


async def test_a_flood_of_teardown_requests_tears_down_once() -> None:
    async with hosted() as (bridge, view, _parent):
        await view.initialize()
        note = protocol.encode_notification(protocol.REQUEST_TEARDOWN)
        with anyio.fail_after(WAIT):
            for _ in range(200):
                await view.send(note)
            request = await view.receive()
            assert request["method"] == protocol.RESOURCE_TEARDOWN
            assert len(bridge._machine.calls) <= 1
            await view.send(protocol.encode_result(request["id"], {}))
            await bridge.wait_disconnected()
        assert bridge.state == "closed"


def _log() -> dict[str, Any]:
    return {"level": "info", "data": "chatty"}


# -- visibility ----------------------------------------------------------------------------------


async def test_a_view_calling_a_tool_it_may_not_is_refused_and_the_server_never_called() -> None:
    async with with_server() as (bridge, view, server):
        await view.initialize()
        calls = server.calls  # type: ignore[attr-defined]
        for name in ("delete_everything", "no_such_tool", "", "forecast\x00"):
            answer = await view.request("tools/call", {"name": name, "arguments": {}})
            assert answer["error"]["code"] == protocol.REFUSED
            assert name in answer["error"]["message"]
        assert calls == []
        assert (await view.request("ping"))["result"] == {}
        answer = await view.request("tools/call", {"name": "forecast", "arguments": {"city": "X"}})
        assert answer["result"]["content"][0]["text"] == "Sunny in X"
        assert bridge.state == "initialized"


async def test_a_view_that_reads_nothing_is_disconnected_saying_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Before: answers waiting longer than the bridge's timeout were dropped without a
    word (64 of them), and the view's calls hung. Now the view is disconnected, the log
    says why and how many of its requests end unanswered, and the bridge's own request
    fails with that reason."""
    host_side, view_side = memory_pair(max_buffer_size=8)  # backpressure, as a WebSocket
    view = RawView(view_side)
    async with AppBridge(host_side, name="slow", timeout=0.5, max_requests=4) as bridge:
        await view.initialize({"tools": {}})
        await answer_tools_list(view, [])
        sent = 0
        with anyio.move_on_after(1.5), suppress(anyio.BrokenResourceError):
            while True:  # pings, reading nothing, for three times the timeout
                await view.send(protocol.encode_request(f"p{sent}", "ping"))
                sent += 1
        with anyio.fail_after(WAIT):
            await bridge.wait_disconnected()
        assert bridge.state == "disconnected"
        with pytest.raises(FrameDisconnected, match=r"read nothing for 0\.5 s"):
            await bridge.list_view_tools()
        answered = []  # what was queued before the end still arrives, then the end
        with anyio.fail_after(WAIT), suppress(anyio.EndOfStream):
            while True:
                answered.append((await view_side.receive())["id"])
        assert answered == [f"p{i}" for i in range(len(answered))]  # in order, no gap
    told = [r.getMessage() for r in caplog.records if "read nothing" in r.getMessage()]
    assert len(told) == 1
    assert "requests end unanswered" in told[0]


async def test_a_slow_view_within_the_timeout_loses_nothing() -> None:
    host_side, view_side = memory_pair(max_buffer_size=8)
    view = RawView(view_side)
    async with AppBridge(host_side, name="slow", timeout=2, max_requests=4):
        await view.initialize()
        for number in range(40):
            await view.send(protocol.encode_request(number, "ping"))
            if number % 10 == 9:
                await anyio.sleep(0.3)  # a throttled tab: slow, but within the timeout
        answered = [(await view.receive())["id"] for _ in range(40)]
        assert answered == list(range(40))


async def test_a_view_offers_only_well_named_tools_up_to_its_cap(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A view is untrusted: its tools get MCP's name rule and a cap; a bad one is left
    out alone (logged), and the parent's export to a model still works."""
    parent = ModelContextRegistry()
    parent.add_tool("weather", lambda city: "sunny")
    names = ["pick", "a b", "", "x" * 129, "../x", "pick", "ok.dotted", "third", "fourth", "fifth"]
    async with pair(max_view_tools=3) as (bridge, view):
        parent.add_provider(bridge, namespace="view")
        with caplog.at_level(logging.WARNING, logger="assistant_frames.apps"):
            await view.initialize({"tools": {}})
            await answer_tools_list(view, [{**TOOL, "name": name} for name in names])
            await wait_until(lambda: "view_third" in parent.get_model_context().tools)
        assert list(bridge.get_model_context().tools) == ["pick", "ok.dotted", "third"]
        exported = [tool["function"]["name"] for tool in to_openai_chat_tools(parent)]
        assert exported == ["weather", "view_pick", "view_third"]  # the dot: OpenAI refuses
    told = "\n".join(record.getMessage() for record in caplog.records)
    for name in ["a b", "", "../x", "x" * 60]:  # a long name is shortened in the log
        assert repr(name)[:-1] in told
    assert "lists that name twice" in told
    assert "the 2 after the first 3 (max_view_tools)" in told


def test_max_view_tools_is_checked() -> None:
    with pytest.raises(ValueError, match="max_view_tools"):
        AppBridge(memory_pair()[0], max_view_tools=-1)


async def test_a_malformed_visibility_keeps_the_tool_from_every_view() -> None:
    """``visibility: "model"`` (a string, not a list) fails closed: model-only."""
    server = MCPServer("misdeclared")
    ran: list[str] = []

    @server.tool(meta={"ui": {"visibility": "model"}})
    def delete_everything() -> str:
        ran.append("delete_everything")
        return "deleted"

    async with MCPFrameHost(server, name="s") as frame, pair(server=frame) as (_bridge, view):
        await view.initialize()
        listed = await view.request("tools/list")
        assert [tool["name"] for tool in listed["result"]["tools"]] == []
        answer = await view.request("tools/call", {"name": "delete_everything", "arguments": {}})
        assert answer["error"]["code"] == protocol.REFUSED
        assert ran == []
        # The model still may: the tool is model-only, not gone.
        assert "delete_everything" in frame.get_model_context().tools


# -- the app's server dies -----------------------------------------------------------------------

SERVER = """
import os
import time

from mcp.server.mcpserver import MCPServer

server = MCPServer("mortal")


@server.tool()
def pid() -> int:
    return os.getpid()


@server.tool()
def sleep(seconds: float) -> str:
    open("started", "w").close()
    time.sleep(seconds)
    return "slept"


server.run("stdio")
"""


async def test_the_server_killed_mid_call_answers_the_view_promptly(tmp_path: Path) -> None:
    (tmp_path / "server.py").write_text(SERVER, encoding="utf-8")
    command = [sys.executable, str(tmp_path / "server.py")]
    parent = ModelContextRegistry()
    host_side, view_side = memory_pair()
    view = RawView(view_side)
    async with (
        MCPFrameHost(command, name="mortal", cwd=tmp_path, timeout=WAIT) as frame,
        AppBridge(host_side, name="view", server=frame) as bridge,
    ):
        parent.add_provider(bridge)
        await view.initialize()
        answer = await view.request("tools/call", {"name": "pid", "arguments": {}})
        pid = answer["result"]["structuredContent"]["result"]
        await view.send(
            protocol.encode_request(
                50, "tools/call", {"name": "sleep", "arguments": {"seconds": 60}}
            )
        )
        await wait_until(lambda: (tmp_path / "started").exists(), WAIT)
        killed = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        answer = await view.receive()
        for _ in range(10):  # the server's tools going is announced, too
            if "id" in answer:
                break
            assert answer["method"].endswith("/list_changed"), answer
            answer = await view.receive()
        assert time.monotonic() - killed < 3.0
        assert answer["id"] == 50
        # Said as our MCP server says a dead frame: an isError result naming the cause.
        assert answer["result"]["isError"] is True
        text = answer["result"]["content"][0]["text"]
        assert "The MCP server mortal went away" in text
        assert "killed by SIGKILL" in text
        # the bridge goes on: ping, and a later forwarded call fails at once, clearly
        assert (await ask(view, "ping"))["result"] == {}
        later = await ask(view, "tools/call", {"name": "pid", "arguments": {}})
        assert later["error"]["code"] == protocol.REFUSED  # its tools are gone with it
        read = await ask(view, "resources/list")
        assert read["error"]["code"] == protocol.REFUSED
        assert bridge.state == "initialized"


async def ask(view: RawView, method: str, params: Any = None) -> dict[str, Any]:
    """A request's answer, skipping the notifications that come before it."""
    view.next_id += 1
    await view.send(protocol.encode_request(view.next_id, method, params))
    for _ in range(100):
        answer = await view.receive()
        if answer.get("id") == view.next_id:
            return answer
        assert "method" in answer, answer
    raise AssertionError(f"no answer to {method}")


# -- a handler that hangs ------------------------------------------------------------------------


async def test_a_hanging_handler_holds_only_its_own_request_until_cancelled() -> None:
    entered = anyio.Event()
    cancelled = anyio.Event()

    async def on_open_link(params: Any) -> None:
        entered.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()

    async with hosted(on_open_link=on_open_link) as (bridge, view, parent):
        await view.initialize()
        await view.send(protocol.encode_request("hang", protocol.OPEN_LINK, {"url": "https://a"}))
        with anyio.fail_after(WAIT):
            await entered.wait()
        for _ in range(20):  # others are served meanwhile
            assert (await view.request("ping"))["result"] == {}
        assert "hang" in bridge._connection.in_flight
        note = protocol.encode_notification("notifications/cancelled", {"requestId": "hang"})
        await view.send(note)
        with anyio.fail_after(WAIT):
            await cancelled.wait()
        await wait_until(lambda: "hang" not in bridge._connection.in_flight)
        await still_alive(bridge, view, parent)  # and no answer to the cancelled request


# -- a view that stops reading -------------------------------------------------------------------


async def test_host_senders_to_a_view_that_stops_reading_are_bounded() -> None:
    async with hosted(buffer=4, timeout=0.3) as (bridge, view, parent):
        await view.initialize()
        await bridge.wait_initialized()
        started = time.monotonic()
        with anyio.fail_after(WAIT), pytest.raises(TimeoutError):  # noqa: PT012
            for _ in range(10_000):  # bounded: the buffers fill long before
                await bridge.send_tool_input_partial({"city": "P"})
        assert time.monotonic() - started < WAIT
        with anyio.fail_after(WAIT), pytest.raises(TimeoutError):
            await bridge.update_host_context(theme="dark")
        with anyio.fail_after(WAIT), pytest.raises(TimeoutError):
            await bridge.call_view_tool("pick_city", {})
        with anyio.fail_after(WAIT):
            assert await bridge.teardown(timeout=0.3) is False
        # the parent's own tools are untouched; once the view reads again, all is well
        assert await parent.get_model_context().call_tool("add", {"a": 1, "b": 1}) == 2
        await view.send(protocol.encode_request("after", "ping"))
        with anyio.fail_after(WAIT):
            for _ in range(10_000):
                message = await view.transport.receive()
                if message.get("id") == "after":
                    assert message["result"] == {}
                    break
        assert bridge.state == "initialized"


# -- the transport closing mid-everything --------------------------------------------------------


async def test_the_transport_closing_fails_everything_at_once() -> None:
    hang = anyio.Event()

    async def on_message(params: Any) -> None:
        await hang.wait()

    changes: list[int] = []
    async with hosted(timeout=60, on_message=on_message) as (bridge, view, parent):
        parent.subscribe(lambda: changes.append(1))
        await view.initialize({"tools": {"listChanged": True}})
        await answer_tools_list(view, [TOOL])
        await wait_until(lambda: "pick_city" in parent.get_model_context().tools)
        message = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
        await view.send(protocol.encode_request(1, protocol.MESSAGE, message))
        await wait_until(lambda: 1 in bridge._connection.in_flight)
        failures: list[BaseException] = []

        async def call(name: str) -> None:
            try:
                await parent.get_model_context().call_tool(name, {"city": "Oslo"})
            except BaseException as exc:
                failures.append(exc)
                raise

        seen = len(changes)
        with anyio.fail_after(2.0):  # far less than the 60 s timeout: at once
            async with anyio.create_task_group() as group:
                for _ in range(5):
                    group.start_soon(_swallow, call, "pick_city")
                await wait_until(lambda: len(bridge._machine.calls) == 5)
                await view.transport.aclose()
        assert len(failures) == 5
        assert all(isinstance(exc, FrameDisconnected) for exc in failures)
        assert bridge.state == "disconnected"
        assert bridge._connection.in_flight == {}
        assert len(bridge._machine.calls) == 0
        assert set(parent.get_model_context().tools) == {"add"}
        assert len(changes) > seen  # the parent was told
        with pytest.raises(FrameDisconnected):
            await bridge.send_tool_input({})
        with pytest.raises(FrameDisconnected):
            await bridge.call_view_tool("pick_city", {})
        assert await parent.get_model_context().call_tool("add", {"a": 1, "b": 2}) == 3


async def _swallow(function: Any, *args: Any) -> None:
    with suppress(FrameDisconnected):
        await function(*args)


async def test_a_pending_view_tool_call_times_out_typed() -> None:
    async with hosted(timeout=0.2) as (bridge, view, parent):
        await view.initialize()
        with anyio.fail_after(WAIT), pytest.raises(ToolCallTimeout):
            await bridge.call_tool("pick_city", {})
        assert len(bridge._machine.calls) == 0
        assert (await view.receive())["method"] == "tools/call"
        assert (await view.receive())["method"] == "notifications/cancelled"
        await still_alive(bridge, view, parent)
