"""BridgeMachine: the AppBridge's rules without I/O, fed golden and hostile messages."""

from __future__ import annotations

from typing import Any

import mcp_types as mcp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assistant_frames.apps import protocol
from assistant_frames.apps.bridge_machine import (
    BridgeEvent,
    BridgeMachine,
    Initialized,
    NotificationReceived,
    RequestReceived,
    Send,
    Settled,
)

from helpers import nested_json

# What the ext-apps 2.0.4 ``App`` sends first (appInfo/appCapabilities as a view fills them).
GOLDEN_INITIALIZE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "ui/initialize",
    "params": {
        "protocolVersion": "2026-01-26",
        "appInfo": {"name": "weather-view", "version": "1.0.0"},
        "appCapabilities": {"tools": {"listChanged": True}},
    },
}
GOLDEN_INITIALIZED: dict[str, Any] = {"jsonrpc": "2.0", "method": "ui/notifications/initialized"}
HOST = mcp.Implementation(name="test-host", version="0.1")


def machine(**context: Any) -> BridgeMachine:
    return BridgeMachine(
        HOST,
        host_capabilities=protocol.HostCapabilities(open_links=protocol.Empty()),
        host_context=protocol.HostContext.model_validate(context or {"theme": "light"}),
    )


def sent(event: BridgeEvent | None) -> list[dict[str, Any]]:
    """The messages ``event`` asks the driver to send."""
    return event.messages if isinstance(event, Send | Initialized) else []


def emitted(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every message the machine emits decodes as a valid message of the protocol."""
    for message in messages:
        decoded = protocol.decode(message)
        if isinstance(decoded, protocol.Response) and message["id"] == 0:
            protocol.parse_result(protocol.INITIALIZE, decoded.result)
    return messages


def handshake(bridge: BridgeMachine) -> list[dict[str, Any]]:
    emitted(sent(bridge.receive(GOLDEN_INITIALIZE)))
    return emitted(sent(bridge.receive(GOLDEN_INITIALIZED)))


def test_handshake_answers_all_four_fields() -> None:
    bridge = machine(theme="dark", locale="en-GB")
    out = bridge.receive(GOLDEN_INITIALIZE)
    assert isinstance(out, Send)
    assert emitted(out.messages) == [
        {
            "jsonrpc": "2.0",
            "id": 0,
            "result": {
                "protocolVersion": "2026-01-26",
                "hostInfo": {"name": "test-host", "version": "0.1"},
                "hostCapabilities": {"openLinks": {}},
                "hostContext": {"theme": "dark", "locale": "en-GB"},
            },
        }
    ]
    assert bridge.state == "initializing"
    assert bridge.app_info == mcp.Implementation(name="weather-view", version="1.0.0")
    assert bridge.app_capabilities is not None
    assert bridge.app_capabilities.tools == protocol.ListChanged(list_changed=True)
    assert bridge.receive(GOLDEN_INITIALIZED) == Initialized([])
    assert bridge.state == "initialized"


def test_unsupported_version_gets_latest_and_second_initialize_is_answered() -> None:
    bridge = machine()
    old = {**GOLDEN_INITIALIZE, "params": {**GOLDEN_INITIALIZE["params"], "protocolVersion": "1"}}
    [answer] = emitted(sent(bridge.receive(old)))
    assert answer["result"]["protocolVersion"] == protocol.PROTOCOL_VERSION
    again = {**GOLDEN_INITIALIZE, "id": 7}
    [answer] = emitted(sent(bridge.receive(again)))
    assert answer["id"] == 7
    assert answer["result"]["protocolVersion"] == "2026-01-26"
    assert bridge.initializations == 2
    assert bridge.state == "initializing"


def test_messages_queue_until_initialized_in_order() -> None:
    bridge = machine()
    assert bridge.send_tool_input_partial({"loc": "N"}) == []
    assert bridge.send_tool_input({"location": "New York"}) == []
    assert sent(bridge.receive(GOLDEN_INITIALIZE))[0]["id"] == 0  # still queued after it
    assert bridge.set_host_context({"theme": "dark"}) == []
    assert bridge.send_tool_result({"content": [{"type": "text", "text": "sunny"}]}) == []
    assert bridge.queued == 4
    released = handshake_rest(bridge)
    assert [m["method"] for m in released] == [
        protocol.TOOL_INPUT_PARTIAL,
        protocol.TOOL_INPUT,
        protocol.HOST_CONTEXT_CHANGED,
        protocol.TOOL_RESULT,
    ]
    assert released[0]["params"] == {"arguments": {"loc": "N"}}
    assert released[2]["params"] == {"theme": "dark"}
    assert bridge.queued == 0
    # Once initialized, messages go out at once.
    assert emitted(bridge.send_tool_cancelled("user")) == [
        {"jsonrpc": "2.0", "method": protocol.TOOL_CANCELLED, "params": {"reason": "user"}}
    ]


def handshake_rest(bridge: BridgeMachine) -> list[dict[str, Any]]:
    return emitted(sent(bridge.receive(GOLDEN_INITIALIZED)))


def test_initialized_before_initialize_is_ignored() -> None:
    bridge = machine()
    bridge.send_tool_input({})
    assert sent(bridge.receive(GOLDEN_INITIALIZED)) == []
    assert bridge.state == "new"
    assert bridge.ignored == 1
    assert bridge.queued == 1


def test_host_context_sends_only_changed_keys() -> None:
    bridge = machine(theme="light", locale="en-GB")
    handshake(bridge)
    [note] = emitted(bridge.set_host_context({"theme": "dark", "locale": "en-GB"}))
    assert note == {
        "jsonrpc": "2.0",
        "method": protocol.HOST_CONTEXT_CHANGED,
        "params": {"theme": "dark"},
    }
    assert bridge.set_host_context({"theme": "dark", "locale": "en-GB"}) == []  # equal
    # A full replace: the dropped key is gone from the stored context, not announced.
    [note] = emitted(bridge.set_host_context(protocol.HostContext(display_mode="fullscreen")))
    assert note["params"] == {"displayMode": "fullscreen"}
    assert protocol.to_wire(bridge.host_context) == {"displayMode": "fullscreen"}


def test_partial_input_after_full_input_is_refused() -> None:
    bridge = machine()
    handshake(bridge)
    assert len(emitted(bridge.send_tool_input_partial({"a": 1}))) == 1
    assert len(emitted(bridge.send_tool_input({"a": 12}))) == 1
    with pytest.raises(RuntimeError, match="partial tool input after the complete"):
        bridge.send_tool_input_partial({"a": 123})


@pytest.mark.parametrize(
    ("answer", "result", "error"),
    [
        ({"result": {}}, {}, None),
        ({"error": {"code": -32601, "message": "Method not found"}}, {}, None),
        ({"error": {"code": -32603, "message": "boom"}}, None, "boom"),
    ],
)
def test_teardown_answers(answer: dict[str, Any], result: Any, error: str | None) -> None:
    bridge = machine()
    handshake(bridge)
    messages, call = bridge.request_teardown(deadline=10.0)
    [request] = emitted(messages)
    assert request["method"] == protocol.RESOURCE_TEARDOWN
    assert request["id"] == call.id
    assert bridge.calls.next_deadline() == 10.0
    out = bridge.receive({"jsonrpc": "2.0", "id": call.id, **answer})
    assert out == Settled(call)
    assert call.settled
    assert len(bridge.calls) == 0
    if error is None:
        assert call.error is None
        assert protocol.to_wire(call.result) == result
    else:
        assert isinstance(call.error, protocol.ErrorResponse)
        assert call.error.message == error


def test_teardown_queues_before_initialized() -> None:
    bridge = machine()
    messages, call = bridge.request_teardown()
    assert messages == []
    assert not call.settled
    [request] = handshake(bridge)
    assert request["id"] == call.id


def test_response_to_unknown_id_is_ignored() -> None:
    bridge = machine()
    assert bridge.receive({"jsonrpc": "2.0", "id": "host-99", "result": {}}) is None
    assert bridge.ignored == 1


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ({"jsonrpc": "2.0", "id": 3, "method": "ui/no-such-thing"}, -32601),
        ({"jsonrpc": "2.0", "id": 3, "method": protocol.RESOURCE_TEARDOWN, "params": {}}, -32601),
        ({"jsonrpc": "2.0", "id": 3, "method": "ui/open-link", "params": {"url": 5}}, -32602),
        ({"jsonrpc": "2.0", "id": 3, "method": "ui/initialize", "params": []}, -32600),
        ({"jsonrpc": "2.0", "id": 3, "method": "ui/initialize", "params": {}}, -32602),
    ],
)
def test_bad_requests_are_answered_and_machine_stays_usable(raw: Any, code: int) -> None:
    bridge = machine()
    [answer] = emitted(sent(bridge.receive(raw)))
    assert answer["id"] == 3
    assert answer["error"]["code"] == code
    assert bridge.malformed == 1
    assert handshake(bridge) == []
    assert bridge.state == "initialized"


@pytest.mark.parametrize(
    "raw",
    [None, "text", [], {"jsonrpc": "1.0"}, {"jsonrpc": "2.0", "method": "ui/nope"}],
)
def test_unanswerable_input_sends_nothing(raw: Any) -> None:
    bridge = machine()
    assert bridge.receive(raw) is None
    assert bridge.malformed == 1


def test_host_decisions_come_back_to_the_driver() -> None:
    bridge = machine()
    handshake(bridge)
    link = {"jsonrpc": "2.0", "id": 4, "method": "ui/open-link", "params": {"url": "https://x"}}
    call = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "t"}}
    ping = {"jsonrpc": "2.0", "id": 6, "method": "ping"}
    size = {"jsonrpc": "2.0", "method": protocol.SIZE_CHANGED, "params": {"height": 300}}
    events = [bridge.receive(raw) for raw in (link, call, ping)]
    requests = [event.request for event in events if isinstance(event, RequestReceived)]
    assert [(r.id, r.method) for r in requests] == [
        (4, "ui/open-link"),
        (5, "tools/call"),
        (6, "ping"),
    ]
    assert requests[0].params == protocol.OpenLinkParams(url="https://x")
    event = bridge.receive(size)
    assert isinstance(event, NotificationReceived)
    assert event.notification.params == protocol.SizeChangedParams(height=300)
    # A host-only notification from the view is dropped, not passed on.
    assert bridge.receive({**size, "method": protocol.TOOL_INPUT, "params": {}}) is None
    assert bridge.ignored == 1


def test_requests_hold_places_up_to_max_requests_and_ids_are_not_reused() -> None:
    bridge = BridgeMachine(HOST, max_requests=2)
    handshake(bridge)
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert isinstance(bridge.receive(ping), RequestReceived)
    [reused] = sent(bridge.receive(ping))
    assert reused["error"] == {"code": -32000, "message": "Request id 1 is already in flight"}
    # A driver's own extension method takes a place the same way.
    extension = protocol.Request(2, "x-host/thing", {}, {})
    assert bridge.admit(extension) == RequestReceived(extension)
    [over] = sent(bridge.receive({**ping, "id": 3}))
    assert over["error"]["message"] == "Too many requests in flight (at most 2)"
    assert bridge.in_flight == 2
    bridge.finished(1)
    assert isinstance(bridge.receive({**ping, "id": 3}), RequestReceived)
    with pytest.raises(ValueError, match="max_requests must be at least 1"):
        BridgeMachine(HOST, max_requests=0)


def test_answers_to_the_view_s_requests() -> None:
    bridge = machine()
    assert bridge.answer(4, {}) == {"jsonrpc": "2.0", "id": 4, "result": {}}
    failed = bridge.fail(4, RuntimeError())
    assert failed["error"] == {"code": -32603, "message": "RuntimeError"}
    refused = bridge.fail(5, protocol.MethodNotFound("Method not found: x"))
    assert refused["error"] == {"code": -32601, "message": "Method not found: x"}


def test_may_call_follows_visibility() -> None:
    schema: dict[str, Any] = {"type": "object"}
    app_only = mcp.Tool(name="a", input_schema=schema, _meta={"ui": {"visibility": ["app"]}})
    model_only = mcp.Tool(name="m", input_schema=schema, _meta={"ui": {"visibility": ["model"]}})
    plain = mcp.Tool(name="p", input_schema=schema)
    assert BridgeMachine.may_call(app_only)
    assert BridgeMachine.may_call(plain)
    assert not BridgeMachine.may_call(model_only)
    assert not BridgeMachine.may_call({"ui": {"visibility": []}})
    assert BridgeMachine.may_call(None)


_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
_methods = st.sampled_from([*protocol.METHODS, "ui/nope"])
_messages = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0")},
    optional={
        "id": st.integers(-2, 2) | st.sampled_from(["host-1", "x"]) | st.none(),
        "method": _methods | _scalars,
        "params": nested_json(_scalars, max_size=3, key_size=8),
        "result": nested_json(_scalars, max_size=3, key_size=8),
        "error": nested_json(_scalars, max_size=3, key_size=8),
    },
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_messages | nested_json(_scalars, max_size=3, key_size=8), max_size=6))
def test_random_input_never_raises(raws: list[Any]) -> None:
    bridge = machine()
    bridge.request_teardown()
    for raw in [GOLDEN_INITIALIZE, *raws, GOLDEN_INITIALIZED]:
        emitted(sent(bridge.receive(raw)))
    assert bridge.state == "initialized"
