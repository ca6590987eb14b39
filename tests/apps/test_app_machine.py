"""The MCP Apps view side's rules on their own: ``AppMachine``, without I/O.

No event loop, no transport: every test here is a plain synchronous function (none is
marked ``anyio``, so the anyio plugin runs each once, not once per backend). The driver
is played by the test: it answers the host's requests it is handed, and frees places.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp_types.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST

from assistant_frames.apps import protocol
from assistant_frames.apps.app_machine import (
    MAX_HOST_CONTEXT_KEYS,
    AppMachine,
    CancelRequested,
    Heard,
    HostError,
    Rejected,
    RequestReceived,
)

from helpers import nested_json

PROPERTY = settings(
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
REFUSED = -32000


def request(request_id: Any, method: str = "ping", params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def notification(method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def initialize_result(**context: Any) -> protocol.InitializeResult:
    return protocol.InitializeResult.model_validate(
        {
            "protocolVersion": protocol.PROTOCOL_VERSION,
            "hostInfo": {"name": "host", "version": "1"},
            "hostCapabilities": {},
            "hostContext": context,
        }
    )


# -- receiving ---------------------------------------------------------------------------------


def test_another_channel_s_message_is_not_the_machine_s() -> None:
    machine = AppMachine()
    assert machine.receive({"channel": "other", "message": {}}) is None
    assert machine.receive({"jsonrpc": "1.0", "id": 1, "method": "ping"}) is None
    assert machine.rejected == 0


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ({"jsonrpc": "2.0", "id": 1, "method": 5}, INVALID_REQUEST),
        ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}, INVALID_REQUEST),
        (request(3, "tools/call", {"name": 5}), INVALID_PARAMS),
        (request(4, "no/such-method"), protocol.METHOD_NOT_FOUND),
    ],
)
def test_a_malformed_request_is_rejected_with_its_error_answer(raw: Any, code: int) -> None:
    machine = AppMachine()
    event = machine.receive(raw)
    assert isinstance(event, Rejected)
    assert event.first
    assert machine.rejected == 1
    if raw["jsonrpc"] == "2.0" and isinstance(raw["id"], int):
        assert event.reply is not None
        assert event.reply["id"] == raw["id"]
        assert event.reply["error"]["code"] == code
    else:  # an id that is no id: nothing to answer to
        assert event.reply is None


def test_only_the_first_rejection_is_flagged_first() -> None:
    machine = AppMachine()
    events = [machine.receive("not a message") for _ in range(3)]
    assert [e.first for e in events if isinstance(e, Rejected)] == [True, False, False]
    assert machine.rejected == 3


def test_requests_hold_places_up_to_max_requests_and_ids_are_not_reused() -> None:
    machine = AppMachine(max_requests=2)
    assert isinstance(machine.receive(request(1)), RequestReceived)
    reused = machine.receive(request(1))
    assert isinstance(reused, Rejected)
    assert reused.reply is not None
    assert reused.reply["error"] == {
        "code": REFUSED,
        "message": "Request id 1 is already in flight",
    }
    assert isinstance(machine.receive(request(2)), RequestReceived)
    over = machine.receive(request(3))
    assert isinstance(over, Rejected)
    assert over.reply is not None
    assert over.reply["error"]["message"] == "Too many requests in flight (at most 2)"
    assert machine.in_flight == 2
    machine.finished(1)
    assert machine.in_flight == 1
    assert isinstance(machine.receive(request(1)), RequestReceived)  # free again


def test_max_requests_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_requests must be at least 1"):
        AppMachine(max_requests=0)


def test_what_the_host_says_is_applied_and_handed_to_the_driver() -> None:
    machine = AppMachine()
    heard = machine.receive(notification(protocol.TOOL_INPUT, {"arguments": {"q": 1}}))
    assert heard == Heard("tool_input", {"q": 1})
    assert machine.tool_input == {"q": 1}
    heard = machine.receive(notification(protocol.TOOL_INPUT_PARTIAL, {"arguments": {"q": 0}}))
    assert heard == Heard("tool_input_partial", {"q": 0})
    result = {"content": [{"type": "text", "text": "done"}]}
    heard = machine.receive(notification(protocol.TOOL_RESULT, result))
    assert isinstance(heard, Heard)
    assert heard.kind == "tool_result"
    assert machine.tool_result is not None
    assert protocol.to_wire(machine.tool_result)["content"][0]["text"] == "done"
    heard = machine.receive(notification(protocol.TOOL_CANCELLED, {"reason": "user"}))
    assert heard == Heard("tool_cancelled", "user")
    assert machine.cancelled
    assert machine.tool_cancelled == "user"
    assert machine.rejected == 0


def test_the_host_context_merges_shallowly_and_stays_bounded() -> None:
    machine = AppMachine()
    machine.initialized(initialize_result(theme="light", locale="en"))
    heard = machine.receive(notification(protocol.HOST_CONTEXT_CHANGED, {"theme": "dark"}))
    assert isinstance(heard, Heard)
    assert heard.kind == "host_context_changed"
    wire = protocol.to_wire(machine.host_context)
    assert wire == {"theme": "dark", "locale": "en"}
    too_many = {f"k{i}": i for i in range(MAX_HOST_CONTEXT_KEYS)}
    first = machine.receive(notification(protocol.HOST_CONTEXT_CHANGED, too_many))
    again = machine.receive(notification(protocol.HOST_CONTEXT_CHANGED, too_many))
    assert isinstance(first, Rejected)
    assert isinstance(again, Rejected)
    assert first.reply is None
    assert first.first
    assert not again.first
    assert protocol.to_wire(machine.host_context) == wire  # unchanged


def test_a_cancellation_names_the_request_and_a_view_s_notification_is_dropped() -> None:
    machine = AppMachine()
    cancel = machine.receive(notification("notifications/cancelled", {"requestId": 7}))
    assert cancel == CancelRequested(7)
    dropped = machine.receive(notification(protocol.SIZE_CHANGED, {"width": 1, "height": 2}))
    assert isinstance(dropped, Rejected)
    assert dropped.reply is None
    assert not dropped.first


def test_an_error_without_an_id_is_the_host_s_own() -> None:
    machine = AppMachine()
    raw = {"jsonrpc": "2.0", "id": None, "error": {"code": -1, "message": "boom"}}
    assert machine.receive(raw) == HostError("boom", True)
    assert machine.receive(raw) == HostError("boom", False)


# -- our requests ------------------------------------------------------------------------------


def test_an_answer_settles_its_request_and_wakes_it() -> None:
    machine = AppMachine()
    woken: list[str] = []
    call, message = machine.request("tools/call", {"name": "t"}, wake=lambda: woken.append("x"))
    assert message == {
        "jsonrpc": "2.0",
        "id": call.id,
        "method": "tools/call",
        "params": {"name": "t"},
    }
    assert call.id.startswith("view-")
    assert machine.receive({"jsonrpc": "2.0", "id": call.id, "result": {"content": []}}) is None
    assert woken == ["x"]
    assert call.settled
    assert call.result == {"content": []}


def test_an_error_answer_and_a_malformed_answer_settle_it_with_the_error() -> None:
    machine = AppMachine()
    call, _ = machine.request("ui/message", None, wake=lambda: None)
    error = {"jsonrpc": "2.0", "id": call.id, "error": {"code": -32000, "message": "no"}}
    assert machine.receive(error) is None
    assert isinstance(call.error, protocol.ErrorResponse)
    assert call.error.message == "no"
    call, _ = machine.request("ui/message", None, wake=lambda: None)
    bad = machine.receive({"jsonrpc": "2.0", "id": call.id, "error": "not an object"})
    assert isinstance(bad, Rejected)
    assert bad.reply is None
    assert isinstance(call.error, protocol.ProtocolError)


def test_a_notification_is_refused_as_a_request_before_anything_is_tracked() -> None:
    machine = AppMachine()
    with pytest.raises(protocol.MethodNotFound):
        machine.request(protocol.SIZE_CHANGED, None, wake=lambda: None)
    assert len(machine.calls) == 0


def test_abandoning_a_sent_request_cancels_it_once() -> None:
    machine = AppMachine()
    unsent, _ = machine.request("ui/message", None, wake=lambda: None)
    assert machine.abandon(unsent, "gone") is None  # the host never had it
    call, _ = machine.request("ui/message", None, wake=lambda: None)
    call.sent = True
    cancel = machine.abandon(call, "Timed out")
    assert cancel == notification(
        "notifications/cancelled", {"requestId": call.id, "reason": "Timed out"}
    )
    assert machine.abandon(call, "Timed out") is None


def test_answers_to_the_host_s_requests() -> None:
    machine = AppMachine()
    assert machine.answer(5, {}) == {"jsonrpc": "2.0", "id": 5, "result": {}}
    failed = machine.fail(5, RuntimeError("broke"))
    assert failed == {
        "jsonrpc": "2.0",
        "id": 5,
        "error": {"code": INTERNAL_ERROR, "message": "broke"},
    }
    invalid = machine.fail(6, protocol.InvalidParams('Tool "x" not found', method="tools/call"))
    assert invalid is not None
    assert invalid["error"]["code"] == INVALID_PARAMS
    assert machine.rejected == 1


def test_initialized_takes_the_host_s_answer() -> None:
    machine = AppMachine()
    notice = machine.initialized(initialize_result(theme="dark"))
    assert notice == notification(protocol.INITIALIZED)
    assert machine.host_info is not None
    assert machine.host_info.name == "host"
    assert machine.protocol_version == protocol.PROTOCOL_VERSION
    assert machine.host_context.theme == "dark"


# -- properties --------------------------------------------------------------------------------

JSON = nested_json(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
    max_size=3,
    key_size=6,
)
MESSAGES = st.one_of(
    JSON,
    st.builds(
        request, st.integers(0, 5) | st.text(max_size=2), st.sampled_from(sorted(protocol.METHODS))
    ),
    st.builds(
        notification,
        st.sampled_from(sorted(protocol.METHODS)),
        st.dictionaries(st.text(max_size=5), JSON, max_size=3),
    ),
)


@PROPERTY
@given(st.lists(st.tuples(MESSAGES, st.booleans()), max_size=60), st.integers(1, 4))
def test_no_input_raises_and_the_places_stay_bounded(
    steps: list[tuple[Any, bool]], max_requests: int
) -> None:
    machine = AppMachine(max_requests=max_requests)
    admitted: list[Any] = []
    rejected = 0
    for raw, finish_one in steps:
        event = machine.receive(raw)
        if isinstance(event, RequestReceived):
            assert event.request.id not in admitted
            admitted.append(event.request.id)
        elif isinstance(event, Rejected):
            rejected += 1
            if event.reply is not None:
                assert event.reply["jsonrpc"] == "2.0"
                assert "error" in event.reply
        assert machine.in_flight == len(admitted) <= max_requests
        if finish_one and admitted:
            machine.finished(admitted.pop(0))
    assert machine.rejected == rejected
