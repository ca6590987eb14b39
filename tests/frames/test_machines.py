"""The sans-I/O cores on their own: PendingCalls, FrameMachine, HostMachine, the error table.

No event loop, no transport: every test here is a plain synchronous function (none is
marked ``anyio``, so the anyio plugin runs each once, not once per backend). Time is a
number the test passes in, and a call's ``wake`` is a counter.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from assistant_frames.calls import PendingCall, PendingCalls
from assistant_frames.errors import (
    ERROR_KINDS,
    RESULT_NOT_SENDABLE,
    AssistantFramesError,
    ErrorCode,
    FrameDisconnected,
    ToolArgumentsError,
    ToolCallError,
    ToolCallTimeout,
    ToolDisabledError,
    ToolNotFoundError,
    error_from_jsonrpc,
    error_from_wire,
)
from assistant_frames.frames import protocol
from assistant_frames.frames.frame_machine import (
    CallCancelled,
    CallRequested,
    ContextWanted,
    FrameMachine,
    Malformed,
)
from assistant_frames.frames.host_machine import EMPTY_CONTEXT, ContextChanged, HostMachine
from assistant_frames.frames.host_machine import CallEvent as HostCallEvent
from assistant_frames.frames.host_machine import Malformed as HostMalformed
from assistant_frames.frames.host_machine import Send as HostSend
from assistant_frames.frames.protocol import CHANNEL, MalformedMessage, SerializedTool
from assistant_frames.registry.tool import Tool, ToolCallContext

from helpers import EMPTY_OBJECT, MESSAGE_TYPES, envelope, nested_json

PROPERTY = settings(
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


class Wake:
    """A ``wake`` callback that counts how often it was called."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> None:
        self.count += 1


# == PendingCalls ===========================================================================


def test_ids_are_unique_and_carry_the_prefix() -> None:
    calls = PendingCalls("p-")
    ids = [calls.add("t").id for _ in range(50)]
    assert len(set(ids)) == 50
    assert all(call_id.startswith("p-") for call_id in ids)
    fresh = calls.new_id()
    assert fresh.startswith("p-")
    assert fresh not in ids
    assert len(calls) == 50
    assert [call.id for call in calls] == ids  # iteration: insertion order


def test_generated_ids_skip_ids_given_explicitly() -> None:
    calls = PendingCalls("p-")
    first = calls.add("t")
    assert first.id == "p-1"
    given_2 = calls.add("t", call_id="p-2")
    given_3 = calls.add("t", call_id="p-3")
    generated = [calls.add("t") for _ in range(3)]
    assert {call.id for call in generated}.isdisjoint({"p-1", "p-2", "p-3"})
    assert len({call.id for call in generated}) == 3
    assert len(calls) == 6
    assert calls.get("p-2") is given_2
    assert calls.get("p-3") is given_3


def test_duplicate_id_is_refused() -> None:
    calls = PendingCalls()
    original = calls.add("t", call_id="x", deadline=5.0)
    with pytest.raises(ValueError, match="'x'"):
        calls.add("u", call_id="x", deadline=1.0)
    assert len(calls) == 1
    assert calls.get("x") is original
    assert calls.next_deadline() == 5.0  # the refused call left no deadline behind
    calls.resolve("x", 1)
    again = calls.add("u", call_id="x")  # a finished id may be used again
    assert calls.get("x") is again


def test_resolve_wakes_exactly_once() -> None:
    calls = PendingCalls()
    wake = Wake()
    call = calls.add("t", call_id="a", wake=wake)
    assert wake.count == 0
    assert not call.settled
    assert calls.resolve("a", {"sum": 3}) is call
    assert (call.settled, call.result, call.error, call.timed_out) == (
        True,
        {"sum": 3},
        None,
        False,
    )
    assert wake.count == 1
    assert "a" not in calls
    assert len(calls) == 0
    assert calls.resolve("a", "again") is None  # a finished id is unknown now
    assert call.result == {"sum": 3}
    assert wake.count == 1
    assert calls.resolve("never", 1) is None


def test_resolve_with_an_error() -> None:
    calls = PendingCalls()
    wake = Wake()
    call = calls.add("t", wake=wake)
    assert calls.resolve(call.id, None, "boom") is call
    assert (call.settled, call.result, call.error) == (True, None, "boom")
    assert wake.count == 1


def test_discard_stops_tracking_without_waking() -> None:
    calls = PendingCalls()
    wake = Wake()
    call = calls.add("t", call_id="a", deadline=1.0, wake=wake)
    late = calls.add("t", call_id="b", deadline=0.5, wake=wake)  # the heap path
    assert calls.discard("a") is call
    assert calls.discard("b") is late
    assert calls.discard("a") is None
    assert calls.discard("unknown") is None
    assert len(calls) == 0
    assert calls.next_deadline() is None
    assert calls.expire(math.inf) == []
    assert calls.resolve("a", 1) is None
    assert calls.fail_all("gone") == []
    assert wake.count == 0
    assert not call.settled
    assert not late.settled


def test_fail_all_settles_every_call_once() -> None:
    calls = PendingCalls()
    wakes = [Wake() for _ in range(4)]
    pending = [
        calls.add("t", deadline=10.0, wake=wakes[0]),
        calls.add("t", deadline=5.0, wake=wakes[1]),  # heap
        calls.add("t", wake=wakes[2]),  # no deadline
        calls.add("t", deadline=20.0, wake=wakes[3]),
    ]
    error = FrameDisconnected("gone")
    failed = calls.fail_all(error)
    assert failed == pending
    assert all(call.settled and call.error is error for call in pending)
    assert not any(call.timed_out for call in pending)
    assert [wake.count for wake in wakes] == [1, 1, 1, 1]
    assert len(calls) == 0
    assert calls.next_deadline() is None
    assert calls.expire(math.inf) == []
    assert calls.fail_all(error) == []
    assert [wake.count for wake in wakes] == [1, 1, 1, 1]
    # The books are empty but usable.
    after = calls.add("t", deadline=1.0)
    assert calls.next_deadline() == 1.0
    assert calls.expire(1.0) == [after]


def test_expire_settles_due_calls_in_deadline_order() -> None:
    calls = PendingCalls()
    deadlines = [5.0, 10.0, 3.0, 7.0, 10.0, 1.0, None, 8.0]
    wakes = [Wake() for _ in deadlines]
    added = [
        calls.add("t", call_id=f"d{i}", deadline=deadline, wake=wake)
        for i, (deadline, wake) in enumerate(zip(deadlines, wakes, strict=True))
    ]
    assert calls.next_deadline() == 1.0
    assert calls.expire(0.5) == []
    expired = calls.expire(7.0)
    assert [call.deadline for call in expired] == [1.0, 3.0, 5.0, 7.0]
    assert [call.id for call in expired] == ["d5", "d2", "d0", "d3"]
    assert all(call.settled and call.timed_out and call.error is None for call in expired)
    assert [wake.count for wake in wakes] == [1, 0, 1, 1, 0, 1, 0, 0]
    assert calls.next_deadline() == 8.0
    assert [call.id for call in calls.expire(10.0)] == ["d7", "d1", "d4"]
    assert calls.expire(math.inf) == []  # the call without a deadline never expires
    assert [call.id for call in calls] == ["d6"]
    assert calls.next_deadline() is None
    assert [wake.count for wake in wakes] == [1, 1, 1, 1, 1, 1, 0, 1]
    assert not added[6].settled


def test_expire_never_touches_discarded_or_settled_calls() -> None:
    calls = PendingCalls()
    a = calls.add("t", call_id="a", deadline=4.0)
    b = calls.add("t", call_id="b", deadline=2.0)  # heap
    c = calls.add("t", call_id="c", deadline=6.0)
    d = calls.add("t", call_id="d", deadline=1.0)  # heap
    e = calls.add("t", call_id="e", deadline=6.0)
    calls.discard("a")
    calls.discard("d")
    calls.resolve("c", "done")
    assert calls.next_deadline() == 2.0
    assert calls.expire(math.inf) == [b, e]
    assert not a.settled
    assert not d.settled
    assert (c.timed_out, c.result) == (False, "done")


def test_a_reused_id_is_not_expired_by_the_stale_deadline() -> None:
    calls = PendingCalls()
    calls.add("t", call_id="x", deadline=10.0)
    calls.add("t", call_id="y", deadline=5.0)  # heap
    calls.discard("y")
    y = calls.add("t", call_id="y", deadline=20.0)  # ordered; the heap entry is stale
    assert calls.next_deadline() == 10.0
    assert calls.expire(6.0) == []
    assert not y.settled
    assert [call.id for call in calls.expire(20.0)] == ["x", "y"]


def test_next_deadline_is_the_minimum_live_deadline() -> None:
    calls = PendingCalls()
    assert calls.next_deadline() is None
    calls.add("t", call_id="none")
    assert calls.next_deadline() is None
    calls.add("t", call_id="b", deadline=5.0)
    calls.add("t", call_id="c", deadline=9.0)
    calls.add("t", call_id="a", deadline=3.0)  # heap
    assert calls.next_deadline() == 3.0
    calls.discard("a")
    assert calls.next_deadline() == 5.0
    calls.resolve("b")
    assert calls.next_deadline() == 9.0
    calls.add("t", call_id="d", deadline=7.0)  # heap
    assert calls.next_deadline() == 7.0


def test_timer_wakes_only_for_an_earlier_deadline() -> None:
    calls = PendingCalls()
    timer = Wake()
    calls.timer_wake = timer
    assert calls.arm() == math.inf
    calls.add("t")  # no deadline
    assert timer.count == 0
    calls.add("t", deadline=10.0)
    assert timer.count == 1  # nothing was armed
    calls.add("t", deadline=20.0)
    calls.add("t", deadline=10.0)  # not earlier
    assert timer.count == 1
    five = calls.add("t", deadline=5.0)
    assert timer.count == 2
    assert calls.arm() == 5.0
    calls.add("t", deadline=7.0)
    assert timer.count == 2
    calls.discard(five.id)
    assert calls.arm() == 7.0
    calls.add("t", deadline=8.0)
    assert timer.count == 2
    calls.add("t", deadline=6.0)
    assert timer.count == 3
    calls.expire(math.inf)
    assert calls.arm() == math.inf
    calls.add("t", deadline=100.0)
    assert timer.count == 4


CALL_IDS = ["c-1", "c-2", "c-3", "c-5", "x", "y"]


class PendingCallsModel(RuleBasedStateMachine):
    """PendingCalls against a dict of id -> deadline."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = PendingCalls("c-")
        self.timer = Wake()
        self.calls.timer_wake = self.timer
        self.model: dict[str, float | None] = {}
        self.live: dict[str, PendingCall] = {}
        self.everything: list[tuple[PendingCall, Wake]] = []
        self.armed = math.inf

    @rule(
        call_id=st.none() | st.sampled_from(CALL_IDS),
        deadline=st.none() | st.integers(0, 20).map(float),
    )
    def add(self, call_id: str | None, deadline: float | None) -> None:
        timer_before = self.timer.count
        if call_id is not None and call_id in self.model:
            with pytest.raises(ValueError, match="already pending"):
                self.calls.add("t", call_id=call_id, deadline=deadline)
            assert self.timer.count == timer_before
            return
        wake = Wake()
        call = self.calls.add("t", call_id=call_id, deadline=deadline, wake=wake)
        if call_id is None:
            assert call.id.startswith("c-")
        else:
            assert call.id == call_id
        assert call.id not in self.model
        assert call.deadline == deadline
        self.model[call.id] = deadline
        self.live[call.id] = call
        self.everything.append((call, wake))
        if deadline is not None and deadline < self.armed:
            self.armed = deadline
            assert self.timer.count == timer_before + 1
        else:
            assert self.timer.count == timer_before

    @rule(deadlines=st.lists(st.integers(0, 12).map(float), min_size=2, max_size=5))
    def add_several(self, deadlines: list[float]) -> None:
        """Calls whose deadlines go up and down: both the ordered dict and the heap."""
        for deadline in deadlines:
            self.add(None, deadline)

    def _pick(self, data: st.DataObject) -> str:
        return data.draw(st.sampled_from([*sorted(self.model), "unknown"]))

    @rule(data=st.data(), result=st.integers())
    def resolve(self, data: st.DataObject, result: int) -> None:
        call_id = self._pick(data)
        call = self.calls.resolve(call_id, result)
        if call_id not in self.model:
            assert call is None
            return
        assert call is self.live.pop(call_id)
        del self.model[call_id]
        assert (call.settled, call.result, call.timed_out) == (True, result, False)

    @rule(data=st.data())
    def discard(self, data: st.DataObject) -> None:
        call_id = self._pick(data)
        call = self.calls.discard(call_id)
        if call_id not in self.model:
            assert call is None
            return
        assert call is self.live.pop(call_id)
        del self.model[call_id]
        assert not call.settled

    @rule(now=st.integers(-1, 22).map(float) | st.just(math.inf))
    def expire(self, now: float) -> None:
        expired = self.calls.expire(now)
        due = {i for i, d in self.model.items() if d is not None and d <= now}
        assert {call.id for call in expired} == due
        assert len(expired) == len(due)
        deadlines = [call.deadline for call in expired]
        assert deadlines == sorted(deadlines)  # type: ignore[type-var]
        for call in expired:
            assert call.deadline is not None
            assert call.deadline <= now
            assert call is self.live.pop(call.id)
            del self.model[call.id]
            assert call.timed_out
            assert call.settled

    @rule()
    def fail_all(self) -> None:
        error = FrameDisconnected("gone")
        failed = self.calls.fail_all(error)
        assert failed == list(self.live.values())
        assert all(call.error is error and call.settled for call in failed)
        self.model.clear()
        self.live.clear()

    @rule()
    def arm(self) -> None:
        deadlines = [d for d in self.model.values() if d is not None]
        self.armed = min(deadlines, default=math.inf)
        assert self.calls.arm() == self.armed

    @invariant()
    def books_match_the_model(self) -> None:
        assert len(self.calls) == len(self.model)
        assert [call.id for call in self.calls] == list(self.model)
        for call_id, call in self.live.items():
            assert call_id in self.calls
            assert self.calls.get(call_id) is call
            assert not call.settled
        deadlines = [d for d in self.model.values() if d is not None]
        assert self.calls.next_deadline() == min(deadlines, default=None)

    @invariant()
    def each_call_woke_at_most_once(self) -> None:
        for call, wake in self.everything:
            assert wake.count == (1 if call.settled else 0)


TestPendingCallsModel = PendingCallsModel.TestCase
TestPendingCallsModel.settings = settings(PROPERTY, max_examples=100, stateful_step_count=30)


# == FrameMachine ===========================================================================

REQUEST = envelope({"type": "model-context-request"})
SUBSCRIBE = envelope({"type": "model-context-subscribe"})
UNSUBSCRIBE = envelope({"type": "model-context-unsubscribe"})
WIRE: protocol.SerializedModelContext = {
    "system": "Be brief.",
    "tools": {"add": {"parameters": EMPTY_OBJECT, "description": "Adds."}},
}


def tool_call(call_id: Any, name: Any = "add", args: Any = None) -> dict[str, Any]:
    return envelope({"type": "tool-call", "id": call_id, "toolName": name, "args": args})


def tool_cancel(call_id: Any) -> dict[str, Any]:
    return envelope({"type": "tool-cancel", "id": call_id})


def context_update(wire: Any, kind: str = "model-context-update") -> dict[str, Any]:
    return envelope({"type": kind, "context": wire})


def tool_result(call_id: Any, **fields: Any) -> dict[str, Any]:
    return envelope({"type": "tool-result", "id": call_id, **fields})


def test_frame_sends_nothing_unasked() -> None:
    machine: FrameMachine[object] = FrameMachine()
    assert not machine.subscribed
    assert machine.context_update(WIRE) is None
    assert machine.last_sent is None


def test_request_subscribes_and_forces_one_update() -> None:
    machine: FrameMachine[object] = FrameMachine()
    assert isinstance(machine.receive(REQUEST), ContextWanted)
    assert machine.subscribed
    update = {"channel": CHANNEL, "message": {"type": "model-context-update", "context": WIRE}}
    assert machine.context_update(WIRE) == update
    assert machine.context_update(WIRE) is None  # unchanged
    assert machine.context_update(copy.deepcopy(WIRE)) is None  # equal is unchanged
    assert isinstance(machine.receive(REQUEST), ContextWanted)
    assert machine.context_update(WIRE) == update  # asked: answered though unchanged
    assert machine.context_update(WIRE) is None  # once
    changed: protocol.SerializedModelContext = {"system": "Be verbose."}
    assert machine.context_update(changed) == protocol.encode_context_update(changed)
    assert machine.last_sent is changed


def test_subscribe_subscribes_without_forcing() -> None:
    machine: FrameMachine[object] = FrameMachine()
    assert isinstance(machine.receive(SUBSCRIBE), ContextWanted)
    assert machine.subscribed
    assert machine.context_update(WIRE) == protocol.encode_context_update(WIRE)
    assert isinstance(machine.receive(SUBSCRIBE), ContextWanted)
    assert machine.context_update(WIRE) is None  # already has it: nothing forced
    assert machine.context_update({}) == protocol.encode_context_update({})


def test_unsubscribe_stops_updates() -> None:
    machine: FrameMachine[object] = FrameMachine()
    machine.receive(REQUEST)
    assert machine.context_update(WIRE) is not None
    assert machine.receive(UNSUBSCRIBE) is None
    assert not machine.subscribed
    assert machine.context_update({"system": "changed"}) is None
    assert machine.context_update({"system": "changed again"}) is None
    machine.receive(SUBSCRIBE)
    assert machine.context_update({"system": "changed again"}) == protocol.encode_context_update(
        {"system": "changed again"}
    )


def test_context_update_goes_only_to_a_subscribed_host() -> None:
    subscribed: FrameMachine[object] = FrameMachine()
    other: FrameMachine[object] = FrameMachine()
    subscribed.receive(SUBSCRIBE)
    sent = [m.context_update(WIRE) for m in (subscribed, other)]
    assert sent == [protocol.encode_context_update(WIRE), None]
    assert other.last_sent is None


def test_tool_call_is_requested_and_tracked() -> None:
    machine: FrameMachine[str] = FrameMachine()
    event = machine.receive(tool_call("a", "add", {"x": 1}))
    assert isinstance(event, CallRequested)
    assert (event.id, event.tool_name, event.args) == ("a", "add", {"x": 1})
    assert event.superseded is None
    machine.track("a", "handle-a")
    assert machine.calls == {"a": "handle-a"}
    assert machine.is_live("a", "handle-a")
    assert machine.finish("a", "handle-a") is True
    assert machine.calls == {}
    assert machine.finish("a", "handle-a") is False
    assert not machine.is_live("a", "handle-a")


def test_a_reused_live_id_supersedes_the_older_call() -> None:
    machine: FrameMachine[object] = FrameMachine()
    first, second = object(), object()
    machine.receive(tool_call("a"))
    machine.track("a", first)
    event = machine.receive(tool_call("a", args=2))
    assert isinstance(event, CallRequested)
    assert event.superseded is first
    assert "a" not in machine.calls  # already forgotten
    machine.track("a", second)
    assert not machine.is_live("a", first)
    assert machine.finish("a", first) is False  # the older result is not sent
    assert machine.is_live("a", second)
    assert machine.finish("a", second) is True
    event = machine.receive(tool_call("a"))  # finished: no longer live
    assert isinstance(event, CallRequested)
    assert event.superseded is None


def test_cancel_of_a_live_call() -> None:
    machine: FrameMachine[object] = FrameMachine()
    handle, other = object(), object()
    machine.receive(tool_call("a"))
    machine.track("a", handle)
    machine.receive(tool_call("b"))
    machine.track("b", other)
    event = machine.receive(tool_cancel("a"))
    assert isinstance(event, CallCancelled)
    assert event.handle is handle
    assert machine.calls == {"b": other}
    assert machine.finish("a", handle) is False  # no result for a cancelled call
    assert machine.receive(tool_cancel("a")) is None  # no longer live
    assert machine.receive(tool_cancel("never")) is None
    assert machine.finish("b", other) is True
    assert machine.receive(tool_cancel("b")) is None  # finished


def test_malformed_call_with_an_id_is_answered() -> None:
    machine: FrameMachine[object] = FrameMachine()
    event = machine.receive(envelope({"type": "tool-call", "id": "x", "args": {}}))
    assert isinstance(event, Malformed)
    assert event.first is True
    assert "toolName" in event.reason
    assert event.reply is not None
    assert event.reply["channel"] == CHANNEL
    message = event.reply["message"]
    assert set(message) == {"type", "id", "error"}
    assert (message["type"], message["id"]) == ("tool-result", "x")
    assert message["error"] == f"Malformed tool-call: {event.reason}"
    assert error_from_wire(message["error"], "?").code is ErrorCode.MALFORMED_CALL
    assert machine.calls == {}
    assert machine.malformed == 1


@pytest.mark.parametrize(
    "message",
    [
        {"type": "tool-call", "toolName": "add"},  # no id
        {"type": "tool-call", "id": 5, "toolName": "add"},  # not a string id
        {"type": "tool-cancel"},
        {"type": "tool-cancel", "id": 5},
        {"type": "no-such-type"},
        {"no": "type"},
        "model-context-request",
        None,
        [1, 2],
    ],
)
def test_malformed_without_a_string_id_is_not_answered(message: Any) -> None:
    machine: FrameMachine[object] = FrameMachine()
    event = machine.receive(envelope(message))
    assert isinstance(event, Malformed)
    assert event.reply is None
    assert event.first is True
    assert machine.malformed == 1
    assert not machine.subscribed
    assert machine.calls == {}


def test_only_the_first_malformed_message_is_flagged_first() -> None:
    machine: FrameMachine[object] = FrameMachine()
    events = [machine.receive(envelope({"type": "bogus"})) for _ in range(3)]
    events.append(machine.receive(envelope({"type": "tool-call", "id": "z"})))
    assert all(isinstance(event, Malformed) for event in events)
    assert [event.first for event in events] == [True, False, False, False]  # type: ignore[union-attr]
    assert machine.malformed == 4


@pytest.mark.parametrize(
    "raw",
    [
        None,
        1,
        "assistant-ui-frame",
        [REQUEST],
        {},
        {"message": {"type": "model-context-request"}},
        {"channel": "other", "message": {"type": "model-context-request"}},
        {"channel": None, "message": {"type": "tool-call", "id": "a", "toolName": "t"}},
    ],
)
def test_what_is_not_ours_is_ignored(raw: Any) -> None:
    machine: FrameMachine[object] = FrameMachine()
    assert machine.receive(raw) is None
    assert machine.malformed == 0
    assert not machine.subscribed
    assert machine.calls == {}


@pytest.mark.parametrize(
    "raw",
    [
        tool_result("a", result=1),
        tool_result("a", error="boom"),
        context_update(WIRE),
        context_update(WIRE, "model-context-response"),
    ],
)
def test_frame_ignores_messages_meant_for_a_host(raw: dict[str, Any]) -> None:
    machine: FrameMachine[object] = FrameMachine()
    handle = object()
    machine.receive(tool_call("a"))
    machine.track("a", handle)
    assert machine.receive(raw) is None
    assert machine.calls == {"a": handle}
    assert not machine.subscribed
    assert machine.malformed == 0


# -- property: arbitrary input never breaks the frame's books --------------------------------

json_values = nested_json(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=6)
    | st.sampled_from([*MESSAGE_TYPES, CHANNEL, "a", "b"]),
    max_size=3,
    key_size=6,
)
pool_ids = st.sampled_from(["a", "b", "c"])
message_like = st.fixed_dictionaries(
    {"type": st.sampled_from(MESSAGE_TYPES) | json_values},
    optional={
        "id": pool_ids | json_values,
        "toolName": st.sampled_from(["add", ""]) | json_values,
        "args": json_values,
        "context": json_values,
        "result": json_values,
        "error": st.text(max_size=6) | json_values,
    },
)
received_values = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {"channel": st.just(CHANNEL) | json_values, "message": message_like | json_values}
    ),
    message_like.map(envelope),
)
valid_frame_messages = st.one_of(
    st.sampled_from([REQUEST, SUBSCRIBE, UNSUBSCRIBE]),
    st.builds(tool_call, pool_ids, st.sampled_from(["add", "x"]), json_values),
    st.builds(tool_cancel, pool_ids),
)
frame_steps = st.lists(
    st.one_of(
        st.tuples(st.just("receive"), received_values | valid_frame_messages),
        st.tuples(st.just("finish"), st.integers(0, 50)),
        st.tuples(st.just("update"), st.sampled_from([{}, WIRE, {"system": "other"}])),
    ),
    max_size=30,
)


class Handle:
    """What a driver runs a call with; counts how often finish() let its result go."""

    def __init__(self, call_id: str) -> None:
        self.call_id = call_id
        self.sent = 0


@PROPERTY
@given(steps=frame_steps)
def test_frame_machine_books_stay_right_under_any_input(steps: list[tuple[str, Any]]) -> None:
    machine: FrameMachine[Handle] = FrameMachine()
    live: dict[str, Handle] = {}  # the model: the handle last tracked per live id
    tracked: list[Handle] = []
    malformed = 0
    for action, value in steps:
        if action == "receive":
            subscribed_before = machine.subscribed
            event = machine.receive(value)
            if isinstance(event, CallRequested):
                call_id = event.id
                assert isinstance(call_id, str)
                assert event.superseded is live.pop(call_id, None)
                handle = Handle(call_id)
                machine.track(call_id, handle)
                live[call_id] = handle
                tracked.append(handle)
            elif isinstance(event, CallCancelled):
                handle = event.handle
                assert live.get(handle.call_id) is handle
                del live[handle.call_id]
            elif isinstance(event, ContextWanted):
                assert machine.subscribed
            elif isinstance(event, Malformed):
                malformed += 1
                assert event.first is (malformed == 1)
                if event.reply is not None:
                    message = event.reply["message"]
                    assert message["type"] == "tool-result"
                    assert isinstance(message["id"], str)
                    assert message["error"].startswith("Malformed tool-call: ")
                assert machine.subscribed is subscribed_before
            else:
                assert event is None
        elif action == "finish" and tracked:
            handle = tracked[value % len(tracked)]
            may_send = live.get(handle.call_id) is handle
            assert machine.is_live(handle.call_id, handle) is may_send
            assert machine.finish(handle.call_id, handle) is may_send
            if may_send:
                del live[handle.call_id]
                handle.sent += 1
        elif action == "update":
            update = machine.context_update(value)
            assert update is None or update == protocol.encode_context_update(value)
        assert machine.calls.keys() == live.keys()
        assert all(machine.calls[call_id] is handle for call_id, handle in live.items())
        assert machine.malformed == malformed
    assert all(handle.sent <= 1 for handle in tracked)


# == HostMachine ============================================================================


class ToolFactory:
    """``make_tool`` for a HostMachine: builds remote-tool stand-ins, remembering each."""

    def __init__(self) -> None:
        self.built: list[str] = []

    def __call__(self, name: str, spec: SerializedTool) -> Tool:
        self.built.append(name)

        async def invoke(args: Any, context: ToolCallContext) -> Any:  # never run here
            raise AssertionError("not called in these tests")

        return Tool.from_parts(
            name,
            invoke,
            description=spec.get("description"),
            parameters=spec.get("parameters"),
            disabled=bool(spec.get("disabled")),
            type=spec.get("type"),
        )


def new_host(*, opened: bool = True) -> tuple[HostMachine, ToolFactory]:
    factory = ToolFactory()
    machine = HostMachine(factory, id_prefix="t-")
    if opened:
        machine.open()
    return machine, factory


def feed(machine: HostMachine, raw: Any) -> tuple[bool, tuple[dict[str, Any], ...]]:
    """What ``machine.receive(raw)`` said, as (context changed, messages to send); a
    ``Malformed`` event raises ``MalformedMessage`` (for ``pytest.raises``)."""
    event = machine.receive(raw)  # bad peer input is an event, never an exception
    assert event is None or isinstance(
        event, (ContextChanged, HostSend, HostCallEvent, HostMalformed)
    )
    if isinstance(event, HostMalformed):
        raise MalformedMessage(event.reason, message=raw)
    if event is None:
        return False, ()
    return isinstance(event, ContextChanged), event.sends


def start(
    machine: HostMachine, name: str = "add", *, sent: bool = True, deadline: float | None = None
) -> tuple[PendingCall, Wake]:
    wake = Wake()
    call, message = machine.start_call(name, {"a": 1}, deadline=deadline, wake=wake)
    assert message == protocol.encode_tool_call(call.id, name, {"a": 1})
    call.sent = sent
    return call, wake


def test_open_returns_the_request_once() -> None:
    machine, _ = new_host(opened=False)
    assert machine.state == "new"
    assert machine.open() == {"channel": CHANNEL, "message": {"type": "model-context-request"}}
    assert machine.state == "connected"
    with pytest.raises(RuntimeError, match="connected"):
        machine.open()
    machine.close(FrameDisconnected("closed"))
    with pytest.raises(RuntimeError, match="closed"):
        machine.open()


def test_first_context_subscribes_once() -> None:
    machine, factory = new_host()
    assert machine.context is EMPTY_CONTEXT
    assert feed(machine, context_update(WIRE)) == (
        True,
        (protocol.encode_context_subscribe(patches=True),),
    )
    assert machine.subscribed
    context = machine.context
    assert context.system == "Be brief."
    assert list(context.tools) == ["add"]
    tool = context.tools["add"]
    assert (tool.name, tool.description, tool.parameters) == ("add", "Adds.", EMPTY_OBJECT)
    assert (tool.disabled, tool.type) == (False, None)
    assert factory.built == ["add"]
    # The same context again: nothing changed, nothing to send, nothing rebuilt.
    assert feed(machine, context_update(copy.deepcopy(WIRE))) == (False, ())
    assert machine.context is context
    assert factory.built == ["add"]
    # A response is a context too; the subscribe went out already.
    response = context_update({"system": "Hi", "tools": WIRE["tools"]}, "model-context-response")
    assert feed(machine, response) == (True, ())
    assert machine.context.system == "Hi"


def test_an_empty_first_context_is_a_change() -> None:
    machine, _ = new_host()
    assert feed(machine, context_update({})) == (
        True,
        (protocol.encode_context_subscribe(patches=True),),
    )
    assert machine.wire == {}
    assert machine.context.system is None
    assert dict(machine.context.tools) == {}
    assert feed(machine, context_update({"tools": None, "system": None})) == (False, ())


def test_a_context_before_open_does_not_subscribe() -> None:
    machine, _ = new_host(opened=False)
    assert feed(machine, context_update(WIRE)) == (True, ())
    assert not machine.subscribed
    machine.open()
    assert feed(machine, context_update({"system": "x"})) == (
        True,
        (protocol.encode_context_subscribe(patches=True),),
    )


def test_a_system_only_change_reuses_the_tools() -> None:
    machine, factory = new_host()
    feed(machine, context_update(WIRE))
    before = machine.context.tools
    changed, reply = feed(machine, context_update({**WIRE, "system": "Be verbose."}))
    assert (changed, reply) == (True, ())
    assert machine.context.system == "Be verbose."
    assert machine.context.tools["add"] is before["add"]
    assert factory.built == ["add"]
    assert feed(machine, context_update({"tools": WIRE["tools"]})) == (True, ())
    assert machine.context.system is None
    assert machine.context.tools["add"] is before["add"]


def test_a_changed_tool_is_rebuilt_alone() -> None:
    machine, factory = new_host()
    tools = {
        "a": {"parameters": EMPTY_OBJECT, "description": "A"},
        "b": {"parameters": EMPTY_OBJECT, "description": "B"},
    }
    feed(machine, context_update({"tools": tools}))
    old = dict(machine.context.tools)
    tools_b2 = {**tools, "b": {"parameters": EMPTY_OBJECT, "description": "B2", "disabled": True}}
    assert feed(machine, context_update({"tools": tools_b2})) == (True, ())
    new = machine.context.tools
    assert new["a"] is old["a"]
    assert new["b"] is not old["b"]
    assert (new["b"].description, new["b"].disabled) == ("B2", True)
    assert factory.built == ["a", "b", "b"]
    # A tool added, then one removed: both are changes; the others stay the same objects.
    with_c = {**tools_b2, "c": {"parameters": EMPTY_OBJECT, "type": "human"}}
    assert feed(machine, context_update({"tools": with_c})) == (True, ())
    assert machine.context.tools["c"].type == "human"
    assert machine.context.tools["a"] is old["a"]
    without_a = {"b": with_c["b"], "c": with_c["c"]}  # a new dict: what was sent is the host's
    assert feed(machine, context_update({"tools": without_a})) == (True, ())
    assert list(machine.context.tools) == ["b", "c"]
    # Same count, a different name: still a change.
    swapped = {"b": without_a["b"], "d": without_a["c"]}
    assert feed(machine, context_update({"tools": swapped})) == (True, ())
    assert list(machine.context.tools) == ["b", "d"]
    assert factory.built == ["a", "b", "b", "c", "d"]


@pytest.mark.xfail(
    strict=True,
    reason="Specs are compared with Python's ==, for which 1 == 1.0 == True: a change from "
    "1 to true alone goes unnoticed (strict JSON comparison would cost the one C-level pass)",
)
def test_a_change_from_one_to_true_is_a_change() -> None:
    machine, _ = new_host()
    schema = {"type": "object", "properties": {"x": {"const": 1}}}
    feed(machine, context_update({"tools": {"a": {"parameters": schema}}}))
    changed_schema = {"type": "object", "properties": {"x": {"const": True}}}
    assert feed(machine, context_update({"tools": {"a": {"parameters": changed_schema}}})) == (
        True,
        None,
    )
    assert machine.context.tools["a"].parameters == changed_schema
    assert machine.context.tools["a"].parameters["properties"]["x"]["const"] is True


@pytest.mark.parametrize(
    ("wire", "reason"),
    [
        ({"tools": []}, "tools must be an object"),
        ({"tools": "add"}, "tools must be an object"),
        ({"tools": {"add": "x"}}, "tools.add must be an object"),
        ({"tools": {"add": {"description": 5}}}, "tools.add.description must be str"),
        ({"tools": {"add": {"parameters": []}}}, "tools.add.parameters must be an object"),
        ({"tools": {"add": {"disabled": "yes"}}}, "tools.add.disabled must be bool"),
        ({"tools": {"add": {"type": 1}}}, "tools.add.type must be str"),
        ({"tools": {"": {}}}, "empty name"),
        ({"system": 5}, "system"),
        ([], "context"),
    ],
)
def test_an_unusable_context_keeps_the_last_good_one(wire: Any, reason: str) -> None:
    machine, factory = new_host()
    feed(machine, context_update(WIRE))
    good_context, good_wire = machine.context, machine.wire
    with pytest.raises(MalformedMessage, match=reason):
        feed(machine, context_update(wire))
    assert machine.malformed == 1
    assert machine.context is good_context
    assert machine.wire is good_wire
    assert factory.built == ["add"]


def test_an_unusable_first_context_sends_no_subscribe() -> None:
    machine, _ = new_host()
    with pytest.raises(MalformedMessage):
        feed(machine, context_update({"tools": {"add": {"disabled": 1}}}))
    assert (machine.wire, machine.context, machine.subscribed) == (None, EMPTY_CONTEXT, False)
    assert feed(machine, context_update(WIRE)) == (
        True,
        (protocol.encode_context_subscribe(patches=True),),
    )


def test_host_ignores_what_is_not_ours_or_not_for_it() -> None:
    machine, _ = new_host()
    call, wake = start(machine)
    for raw in [None, 3, {"channel": "other"}, REQUEST, SUBSCRIBE, tool_call(call.id)]:
        assert feed(machine, raw) == (False, ())
    assert feed(machine, tool_cancel(call.id)) == (False, ())
    assert machine.malformed == 0
    assert wake.count == 0
    assert machine.wire is None


def test_a_result_for_an_unknown_id_is_ignored() -> None:
    machine, _ = new_host()
    call, wake = start(machine)
    assert feed(machine, tool_result("unknown", result=1)) == (False, ())
    assert feed(machine, tool_result("unknown", error="boom")) == (False, ())
    assert wake.count == 0
    assert not call.settled
    assert call.id in machine.calls


def test_a_result_settles_its_call() -> None:
    machine, _ = new_host()
    call, wake = start(machine)
    other, other_wake = start(machine)
    assert call.id.startswith("t-")
    assert call.id != other.id
    assert feed(machine, tool_result(call.id, result={"sum": 3})) == (False, ())
    assert wake.count == 1
    assert call.settled
    assert machine.outcome(call, 30.0) == {"sum": 3}
    assert feed(machine, tool_result(call.id, result="late")) == (False, ())  # finished
    assert wake.count == 1
    assert machine.outcome(call, 30.0) == {"sum": 3}
    assert other_wake.count == 0
    assert list(machine.calls) == [other]


@pytest.mark.parametrize(
    ("error", "kind", "code"),
    [
        ('Tool "add" not found', ToolNotFoundError, ErrorCode.TOOL_NOT_FOUND),
        ('Tool "add" is disabled', ToolDisabledError, ErrorCode.TOOL_DISABLED),
        (
            'Invalid arguments for tool "add": a: Field required',
            ToolArgumentsError,
            ErrorCode.INVALID_ARGUMENTS,
        ),
        (RESULT_NOT_SENDABLE, ToolCallError, ErrorCode.RESULT_NOT_SENDABLE),
        ("Malformed tool-call: id: missing", ToolCallError, ErrorCode.MALFORMED_CALL),
        ("division by zero", ToolCallError, ErrorCode.TOOL_FAILED),
        ("", ToolCallError, ErrorCode.TOOL_FAILED),
        ('Tool "other" not found', ToolCallError, ErrorCode.TOOL_FAILED),  # not this tool
    ],
)
def test_an_error_result_raises_the_typed_error(
    error: str, kind: type[ToolCallError], code: ErrorCode
) -> None:
    machine, _ = new_host()
    call, wake = start(machine)
    feed(machine, tool_result(call.id, error=error, result="ignored"))
    assert wake.count == 1
    with pytest.raises(ToolCallError) as caught:
        machine.outcome(call, 30.0)
    assert type(caught.value) is kind
    assert caught.value.code is code
    assert caught.value.message == error
    assert (caught.value.tool_name, caught.value.tool_call_id) == ("add", call.id)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({}, None),
        ({"error": None}, None),
        ({"error": None, "result": 7}, 7),
        ({"result": None}, None),
        ({"result": [1, "x"]}, [1, "x"]),
        ({"error": 42, "result": "ok"}, "ok"),  # a non-string error is no error
        ({"error": {"message": "x"}}, None),
    ],
)
def test_a_result_without_a_string_error_is_success(fields: dict[str, Any], expected: Any) -> None:
    machine, _ = new_host()
    call, wake = start(machine)
    feed(machine, tool_result(call.id, **fields))
    assert wake.count == 1
    assert call.error is None
    assert machine.outcome(call, 30.0) == expected


def test_a_timed_out_call_raises_timeout_and_is_cancelled() -> None:
    machine, _ = new_host()
    call, wake = start(machine, deadline=12.5)
    assert machine.calls.expire(12.0) == []
    assert machine.calls.expire(12.5) == [call]
    assert wake.count == 1
    with pytest.raises(ToolCallTimeout, match=r"after 2\.5 s") as caught:
        machine.outcome(call, 2.5)
    assert caught.value.code is ErrorCode.TIMEOUT
    assert (caught.value.tool_name, caught.value.timeout) == ("add", 2.5)
    assert caught.value.tool_call_id == call.id
    assert isinstance(caught.value, TimeoutError)
    assert machine.abandon(call) == protocol.encode_tool_cancel(call.id)
    assert feed(machine, tool_result(call.id, result=1)) == (False, ())  # too late
    assert wake.count == 1


def test_abandon_cancels_only_a_sent_unfinished_call_while_connected() -> None:
    machine, _ = new_host()
    unsent, _ = start(machine, sent=False)
    assert machine.abandon(unsent) is None
    assert unsent.id not in machine.calls

    pending, wake = start(machine)
    assert machine.abandon(pending) == protocol.encode_tool_cancel(pending.id)
    assert pending.id not in machine.calls
    feed(machine, tool_result(pending.id, result=1))  # its result is ignored now
    assert wake.count == 0

    done, _ = start(machine)
    feed(machine, tool_result(done.id, result=1))
    assert machine.abandon(done) is None

    failed, _ = start(machine)
    feed(machine, tool_result(failed.id, error="boom"))
    assert machine.abandon(failed) is None

    timed_out, _ = start(machine)  # timed out by the caller's own timer (no deadline)
    timed_out.timed_out = True
    assert machine.abandon(timed_out) == protocol.encode_tool_cancel(timed_out.id)
    assert len(machine.calls) == 0


@pytest.mark.parametrize("end", ["connection_lost", "close"])
def test_abandon_sends_nothing_once_the_connection_ended(end: str) -> None:
    machine, _ = new_host()
    call, _ = start(machine)
    getattr(machine, end)(FrameDisconnected("gone"))
    assert machine.abandon(call) is None
    call.timed_out = True
    assert machine.abandon(call) is None


def test_close_cancels_sent_calls_unsubscribes_and_fails_all() -> None:
    machine, _ = new_host()
    feed(machine, context_update(WIRE))
    first, first_wake = start(machine)
    unsent, unsent_wake = start(machine, sent=False)
    last, last_wake = start(machine, deadline=100.0)
    settled, settled_wake = start(machine)
    feed(machine, tool_result(settled.id, result=1))
    error = FrameDisconnected("The host was closed")
    assert machine.close(error) == [
        protocol.encode_tool_cancel(first.id),
        protocol.encode_tool_cancel(last.id),
        protocol.encode_context_unsubscribe(),
    ]
    assert machine.state == "closed"
    assert [first_wake.count, unsent_wake.count, last_wake.count, settled_wake.count] == [1] * 4
    assert len(machine.calls) == 0
    assert all(call.error is error for call in (first, unsent, last))
    with pytest.raises(FrameDisconnected, match="The host was closed") as caught:
        machine.outcome(first, 30.0)
    assert caught.value is not error  # a fresh exception per caller
    assert machine.outcome(settled, 30.0) == 1
    assert machine.close(error) == []
    assert machine.connection_lost(FrameDisconnected("late")) is False
    assert first_wake.count == 1
    # The context stays until it is cleared.
    assert list(machine.context.tools) == ["add"]
    assert machine.clear_context() is True
    assert (machine.context, machine.wire) == (EMPTY_CONTEXT, None)
    assert machine.clear_context() is False


def test_close_before_any_context_sends_only_cancels() -> None:
    machine, _ = new_host()
    call, _ = start(machine)
    assert machine.close(FrameDisconnected("closed")) == [protocol.encode_tool_cancel(call.id)]


def test_close_after_the_connection_ended_sends_nothing() -> None:
    machine, _ = new_host()
    feed(machine, context_update(WIRE))
    start(machine)
    machine.connection_lost(FrameDisconnected("gone"))
    assert machine.close(FrameDisconnected("closed")) == []
    assert machine.state == "closed"
    never_opened, _ = new_host(opened=False)
    assert never_opened.close(FrameDisconnected("closed")) == []
    assert never_opened.state == "closed"


def test_connection_lost_fails_every_call_once() -> None:
    machine, _ = new_host()
    calls = [start(machine, sent=sent, deadline=d) for sent, d in [(True, None), (False, 5.0)]]
    error = FrameDisconnected("frame exited", returncode=3, stderr_tail="boom")
    assert machine.connection_lost(error) is True
    assert machine.state == "disconnected"
    assert machine.disconnected is error
    assert [wake.count for _, wake in calls] == [1, 1]
    for call, _ in calls:
        with pytest.raises(FrameDisconnected) as caught:
            machine.outcome(call, 30.0)
        assert (caught.value.message, caught.value.returncode) == ("frame exited", 3)
        assert caught.value.stderr_tail == "boom"
    assert machine.connection_lost(FrameDisconnected("again")) is False
    assert machine.disconnected is error
    assert [wake.count for _, wake in calls] == [1, 1]
    assert machine.calls.next_deadline() is None
    assert HostMachine(ToolFactory()).connection_lost(error) is False  # never opened


# -- property: whatever arrives, the host's context is the last good wire ---------------------

tool_specs = st.fixed_dictionaries(
    {},
    optional={
        "description": st.text(max_size=4) | json_values,
        "parameters": st.sampled_from([EMPTY_OBJECT, {"type": "object"}]) | json_values,
        "disabled": st.booleans() | json_values,
        "type": st.sampled_from(["frontend", "human"]) | json_values,
    },
)
wire_contexts = st.fixed_dictionaries(
    {},
    optional={
        "system": st.none() | st.sampled_from(["s", "t"]) | json_values,
        "tools": st.none()
        | st.dictionaries(st.sampled_from(["a", "b", "c", ""]), tool_specs, max_size=3)
        | json_values,
    },
)
host_values = st.one_of(
    received_values,
    st.builds(context_update, wire_contexts, st.sampled_from(MESSAGE_TYPES[3:5])),
    st.builds(
        tool_result,
        st.sampled_from(["t-1", "t-2", "t-3", "other"]),
        result=json_values,
        error=st.none() | st.text(max_size=3) | json_values,
    ),
)


def _usable(wire: dict[str, Any]) -> dict[str, Any] | None:
    """What a wire context means, or None when a host must refuse it."""
    system = wire.get("system")
    tools = wire.get("tools")
    if not (system is None or isinstance(system, str)):
        return None
    if tools is None:
        tools = {}
    if not isinstance(tools, dict):
        return None
    meaning = {}
    for name, spec in tools.items():
        if not name or not isinstance(spec, dict):
            return None
        for field, kind in (("description", str), ("parameters", dict), ("type", str)):
            if spec.get(field) is not None and not isinstance(spec[field], kind):
                return None
        if spec.get("disabled") is not None and not isinstance(spec["disabled"], bool):
            return None
        meaning[name] = spec
    return {"system": system, "tools": meaning}


@PROPERTY
@given(values=st.lists(host_values, max_size=20))
def test_host_context_is_always_the_last_accepted_wire(values: list[Any]) -> None:
    machine, _ = new_host()
    wakes = [start(machine)[1] for _ in range(3)]  # t-1, t-2, t-3
    accepted: dict[str, Any] | None = None
    subscribes = 0
    for raw in values:
        before = machine.context
        try:
            changed, reply = feed(machine, raw)
        except MalformedMessage:
            assert machine.context is before
            continue
        message = raw["message"] if isinstance(raw, dict) and raw.get("channel") == CHANNEL else {}
        if isinstance(message, dict) and message.get("type") in MESSAGE_TYPES[3:5]:
            meaning = _usable(message["context"])
            assert meaning is not None, "an unusable context was accepted"
            assert changed is (accepted is None or meaning != accepted)
            accepted = meaning
        else:
            assert (changed, reply) == (False, ())
            assert machine.context is before
        if reply:
            assert reply == (protocol.encode_context_subscribe(patches=True),)
            subscribes += 1
        if accepted is not None:
            context = machine.context
            assert context.system == accepted["system"]
            assert context.tools.keys() == accepted["tools"].keys()
            for name, tool in context.tools.items():
                spec = accepted["tools"][name]
                assert tool.name == name
                assert tool.description == spec.get("description")
                parameters = spec.get("parameters")
                assert tool.parameters == (EMPTY_OBJECT if parameters is None else parameters)
                assert tool.disabled is bool(spec.get("disabled"))
                assert tool.type == spec.get("type")
    assert subscribes == (0 if accepted is None else 1)
    assert all(wake.count <= 1 for wake in wakes)


# == the error table ========================================================================


def test_every_error_code_has_one_row() -> None:
    assert set(ERROR_KINDS) == set(ErrorCode)
    for code, kind in ERROR_KINDS.items():
        assert kind.code is code
        assert issubclass(kind.exception, AssistantFramesError)
        assert isinstance(kind.jsonrpc_code, int)
    assert ERROR_KINDS[ErrorCode.TOOL_NOT_FOUND].wire_message == 'Tool "{name}" not found'
    assert ERROR_KINDS[ErrorCode.RESULT_NOT_SENDABLE].wire_message == RESULT_NOT_SENDABLE
    assert ERROR_KINDS[ErrorCode.TIMEOUT].exception is ToolCallTimeout
    assert ERROR_KINDS[ErrorCode.DISCONNECTED].exception is FrameDisconnected
    assert ERROR_KINDS[ErrorCode.TOOL_NOT_FOUND].jsonrpc_code == -32602


WIRE_KINDS = [kind for kind in ERROR_KINDS.values() if kind.wire_message is not None]


@pytest.mark.parametrize("kind", WIRE_KINDS, ids=lambda kind: kind.code.value)
@settings(max_examples=50, deadline=None, database=None)
@given(name=st.text(max_size=12), detail=st.text(max_size=12))
def test_wire_messages_round_trip(kind: Any, name: str, detail: str) -> None:
    message = kind.wire_message.format(name=name)
    error = error_from_wire(message, name, "id-1")
    assert error.code is kind.code
    assert type(error) is kind.exception
    assert (error.message, error.tool_name, error.tool_call_id) == (message, name, "id-1")
    if kind.prefix:
        longer = f"{message}: {detail}"
        assert error_from_wire(longer, name).code is kind.code
        assert error_from_wire(longer, name).message == longer


@settings(max_examples=50, deadline=None, database=None)
@given(message=st.text(max_size=20))
def test_free_text_is_a_failed_call(message: str) -> None:
    known = {
        kind.wire_message.format(name="x")  # type: ignore[union-attr]
        for kind in WIRE_KINDS
    }
    if message in known or message.startswith(("Invalid arguments", "Malformed tool-call")):
        return
    error = error_from_wire(message, "x")
    assert type(error) is ToolCallError
    assert error.code is ErrorCode.TOOL_FAILED
    assert error.message == message


@pytest.mark.parametrize(
    ("message", "kind", "code"),
    [
        ('Tool "x" not found', ToolNotFoundError, ErrorCode.TOOL_NOT_FOUND),
        ('Tool "x" is disabled', ToolDisabledError, ErrorCode.TOOL_DISABLED),
        ('Invalid arguments for tool "x": bad', ToolArgumentsError, ErrorCode.INVALID_ARGUMENTS),
        ("Unknown tool: x", ToolCallError, ErrorCode.TOOL_FAILED),  # other words: a failure
        ('Tool "y" not found', ToolCallError, ErrorCode.TOOL_FAILED),
    ],
)
def test_jsonrpc_invalid_params(message: str, kind: type[ToolCallError], code: ErrorCode) -> None:
    error = error_from_jsonrpc(-32602, message, "x", "7")
    assert type(error) is kind
    assert error.code is code
    assert (error.tool_name, error.tool_call_id) == ("x", "7")


@settings(max_examples=50, deadline=None, database=None)
@given(jsonrpc_code=st.integers().filter(lambda code: code != -32602))
def test_other_jsonrpc_codes_are_failed_calls(jsonrpc_code: int) -> None:
    error = error_from_jsonrpc(jsonrpc_code, 'Tool "x" not found', "x")
    assert type(error) is ToolCallError
    assert error.code is ErrorCode.TOOL_FAILED
    assert error.message == 'Tool "x" not found'
