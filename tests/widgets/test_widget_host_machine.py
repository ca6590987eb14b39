"""The ``AUI_*`` widget host's rules on their own: ``WidgetHostMachine``, without I/O.

No event loop, no transport: every test here is a plain synchronous function (none is
marked ``anyio``, so the anyio plugin runs each once, not once per backend). The driver
is played by the test: it answers what the machine asks to run, and frees the places.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assistant_frames.widgets import WidgetManifest, protocol
from assistant_frames.widgets.host_machine import (
    DISPLAY_MODES,
    CallTool,
    HostMethod,
    Ignored,
    Legacy,
    MethodRequested,
    NotifyIntrinsicHeight,
    OpenExternal,
    Ready,
    Refused,
    RequestClose,
    RequestDisplayMode,
    RequestModal,
    SendFollowUpMessage,
    SetWidgetState,
    WidgetHostMachine,
)
from assistant_frames.widgets.protocol import LegacyMessage, MethodCall

from helpers import nested_json

PROPERTY = settings(
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
GLOBALS = {"theme": "light", "displayMode": "inline"}
EVERYTHING = WidgetManifest.all(extra=["uploadFile"])


def call(call_id: Any, method: str, *args: Any) -> dict[str, Any]:
    return {"type": protocol.METHOD_CALL, "id": call_id, "method": method, "args": list(args)}


def machine(**options: Any) -> WidgetHostMachine:
    options.setdefault("manifest", EVERYTHING)
    options.setdefault("globals", GLOBALS)
    return WidgetHostMachine(**options)


def refusal(machine: WidgetHostMachine, raw: Any) -> str:
    """The error a call is refused with (it must be refused)."""
    event = machine.receive(raw)
    assert isinstance(event, Refused), event
    assert event.reply["type"] == protocol.METHOD_RESPONSE
    assert event.reply["id"] == raw["id"]
    error: str = event.reply["error"]
    return error


# -- malformed input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("not a dict", "not an object (str)"),
        (None, "not an object (NoneType)"),
        ({"no": "type"}, "unknown message type None"),
        ({"type": "AUI_EXPLODE"}, "unknown message type 'AUI_EXPLODE'"),
        ({"type": protocol.SET_GLOBALS, "globals": {}}, "unknown message type"),  # ours to send
        ({"type": protocol.METHOD_CALL, "method": "requestClose"}, "without a string or number"),
        ({"type": protocol.METHOD_CALL, "id": True, "method": "requestClose"}, "number id"),
        ({"type": protocol.METHOD_CALL, "id": 1.5, "method": "requestClose"}, "number id"),
        ({"type": protocol.METHOD_CALL, "id": "x", "method": 7}, "without a method name"),
        (call("y", "requestClose") | {"args": "no"}, "args are not an array"),
        ({"type": "resize", "payload": "tall"}, "resize without a numeric height"),
        ({"type": "resize", "payload": True}, "resize without a numeric height"),
        ({"type": "resize"}, "resize without a numeric height"),
    ],
)
def test_malformed_input_is_ignored_saying_why(raw: Any, reason: str) -> None:
    host = machine()
    event = host.receive(raw)
    assert isinstance(event, Ignored)
    assert reason in event.reason
    assert event.first
    assert (host.ignored, host.in_flight, host.ready) == (1, 0, False)


def test_only_the_first_malformed_message_is_flagged_first() -> None:
    host = machine()
    events = [host.receive(junk) for junk in [42, [], {"type": "resize", "payload": "x"}]]
    assert [event.first for event in events if isinstance(event, Ignored)] == [True, False, False]
    assert host.ignored == 3
    assert isinstance(host.receive(call("a", "requestClose")), MethodRequested)
    assert host.ignored == 3


# -- refusals -----------------------------------------------------------------------------------


def test_unknown_and_ungranted_methods_are_refused_without_a_place() -> None:
    host = machine(manifest=WidgetManifest(), extra_methods={"uploadFile"}, max_calls=1)
    assert refusal(host, call("a", "selfDestruct")) == "Unknown method: selfDestruct"
    assert refusal(host, call("b", "callTool", "search", {})) == (
        "Method not granted to this widget by its manifest: callTool"
    )
    # A host's own method needs a grant too.
    assert refusal(host, call("c", "uploadFile")) == (
        "Method not granted to this widget by its manifest: uploadFile"
    )
    assert (host.in_flight, host.may_read) == (0, True)
    # The base methods need no permission.
    assert isinstance(host.receive(call("d", "setWidgetState", {"n": 1})), MethodRequested)


@pytest.mark.parametrize(
    ("method", "args", "error"),
    [
        ("callTool", [42, {}], "callTool(name, args): name: invalid argument 42"),
        ("callTool", [], "callTool(name, args): name: invalid argument None"),
        ("callTool", ["search", [1]], "callTool(name, args): args must be an object"),
        ("setWidgetState", [[1, 2]], "setWidgetState(state): state must be an object or null"),
        ("setWidgetState", ["x"], "setWidgetState(state): state must be an object or null"),
        ("sendFollowUpMessage", ["hi"], "sendFollowUpMessage({prompt}): invalid argument 'hi'"),
        (
            "sendFollowUpMessage",
            [{"text": "no prompt"}],
            "sendFollowUpMessage({prompt}): prompt must be a string",
        ),
        (
            "requestDisplayMode",
            [{"mode": "sideways"}],
            "requestDisplayMode: unknown mode 'sideways'",
        ),
        ("requestDisplayMode", [{"mode": ["pip"]}], "requestDisplayMode: unknown mode ['pip']"),
        ("requestDisplayMode", [], "requestDisplayMode({mode}): invalid argument None"),
        ("requestModal", ["big"], "requestModal(options): options must be an object"),
        (
            "openExternal",
            [{"href": "javascript:alert(1)"}],
            "openExternal: not an http(s) URL: 'javascript:alert(1)'",
        ),
        ("openExternal", [{}], "openExternal: not an http(s) URL: None"),
        ("openExternal", [True], "openExternal({href}): invalid argument True"),
        ("notifyIntrinsicHeight", ["420"], "notifyIntrinsicHeight(height): invalid argument '420'"),
        ("notifyIntrinsicHeight", [True], "notifyIntrinsicHeight(height): invalid argument True"),
    ],
)
def test_bad_arguments_are_refused_with_the_method_s_message(
    method: str, args: list[Any], error: str
) -> None:
    host = machine()
    assert refusal(host, call(7, method, *args)) == error
    assert host.in_flight == 0


# -- requests -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "args", "request_"),
    [
        ("callTool", ["search", {"q": "x"}], CallTool("search", {"q": "x"})),
        ("callTool", ["search"], CallTool("search", {})),
        ("callTool", ["search", None], CallTool("search", {})),
        ("setWidgetState", [{"n": 1}], SetWidgetState({"n": 1})),
        ("setWidgetState", [None], SetWidgetState(None)),
        ("setWidgetState", [], SetWidgetState(None)),
        ("sendFollowUpMessage", [{"prompt": "More"}], SendFollowUpMessage({"prompt": "More"})),
        ("requestDisplayMode", [{"mode": "pip"}], RequestDisplayMode("pip")),
        ("requestModal", [{"title": "Pick"}], RequestModal({"title": "Pick"})),
        ("requestModal", [], RequestModal({})),
        ("requestModal", [None], RequestModal({})),
        ("requestClose", [], RequestClose()),
        ("openExternal", [{"href": "https://a.example"}], OpenExternal("https://a.example")),
        ("notifyIntrinsicHeight", [420], NotifyIntrinsicHeight(420)),
        ("notifyIntrinsicHeight", [12.5], NotifyIntrinsicHeight(12.5)),
        ("uploadFile", ["data", 1], HostMethod("uploadFile", ("data", 1))),
    ],
)
def test_each_method_is_requested_with_its_checked_arguments(
    method: str, args: list[Any], request_: Any
) -> None:
    host = machine(extra_methods={"uploadFile"})
    event = host.receive(call("c1", method, *args))
    assert event == MethodRequested("c1", method, request_)
    assert event.request.method == method
    assert host.in_flight == 1


def test_a_host_method_takes_over_a_plan_method_of_the_same_name() -> None:
    handlers: dict[str, Any] = {}
    host = machine(extra_methods=handlers)
    assert isinstance(host.receive(call(1, "callTool", 42)), Refused)  # the plan's check
    handlers["callTool"] = print  # the collection is live: the driver's own dict
    event = host.receive(call(2, "callTool", 42))
    assert event == MethodRequested(2, "callTool", HostMethod("callTool", (42,)))


def test_manifest_and_extra_methods_are_read_at_each_call() -> None:
    host = machine(manifest=WidgetManifest())
    assert isinstance(host.receive(call(1, "requestModal")), Refused)
    host.manifest = EVERYTHING
    assert isinstance(host.receive(call(2, "requestModal")), MethodRequested)
    host.extra_methods = ["uploadFile"]
    assert isinstance(host.receive(call(3, "uploadFile")), MethodRequested)


# -- answers and admission ----------------------------------------------------------------------


def test_answers_are_method_responses() -> None:
    host = machine()
    assert host.answer("a", {"mode": "pip"}) == {
        "type": protocol.METHOD_RESPONSE,
        "id": "a",
        "result": {"mode": "pip"},
    }
    assert host.answer(3, None) == {"type": protocol.METHOD_RESPONSE, "id": 3, "result": None}
    assert host.fail("b", "no") == {"type": protocol.METHOD_RESPONSE, "id": "b", "error": "no"}


def test_the_host_reads_on_while_fewer_than_max_calls_are_in_flight() -> None:
    host = machine(max_calls=2)
    assert host.may_read
    host.receive(call("a", "requestClose"))
    assert (host.in_flight, host.may_read) == (1, True)
    host.receive(call("a", "requestClose"))  # a widget may reuse an id: two calls still
    assert (host.in_flight, host.may_read) == (2, False)
    host.finished("a")
    assert (host.in_flight, host.may_read) == (1, True)
    host.finished("a")
    assert host.in_flight == 0
    with pytest.raises(KeyError):
        host.finished("a")  # the driver's mistake, not the widget's
    assert host.in_flight == 0


def test_max_calls_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_calls must be at least 1, not 0"):
        WidgetHostMachine(max_calls=0)


# -- legacy messages and globals ----------------------------------------------------------------


def test_legacy_messages_carry_their_payload() -> None:
    host = machine()
    assert host.receive({"type": "resize", "payload": 512}) == Legacy("resize", 512)
    assert host.receive({"type": "resize", "payload": 0.5}) == Legacy("resize", 0.5)
    assert host.receive({"type": "action", "payload": "approve"}) == Legacy("action", "approve")
    assert host.receive({"type": "addResult", "payload": {"ok": 1}}) == Legacy(
        "addResult", {"ok": 1}
    )
    assert host.receive({"type": "error"}) == Legacy("error", None)
    assert host.ignored == 0


def test_globals_go_in_full_on_ready_then_only_their_changes() -> None:
    host = machine()
    assert host.update_globals({"theme": "dark"}) is None  # not ready: kept, not sent
    assert host.globals == {**GLOBALS, "theme": "dark"}
    assert not host.ready
    event = host.receive({"type": "ready"})
    assert event == Ready(protocol.encode_set_globals({**GLOBALS, "theme": "dark"}))
    assert host.ready
    assert host.update_globals({"theme": "light", "toolOutput": 1}) == (
        protocol.encode_set_globals({"theme": "light", "toolOutput": 1})
    )
    assert host.update_globals({"theme": "light"}) is None  # no change: nothing
    # A re-render in the same frame says ready again: everything again.
    again = host.receive({"type": "ready"})
    assert again == Ready(protocol.encode_set_globals({**GLOBALS, "toolOutput": 1}))


def test_full_updates_send_every_global_each_time() -> None:
    host = machine(full_updates=True)
    assert host.update_globals({"theme": "dark"}) is None
    host.receive({"type": "ready"})
    assert host.update_globals({"theme": "dark"}) == protocol.encode_set_globals(
        {**GLOBALS, "theme": "dark"}
    )


def test_the_loaded_state_is_a_global_unless_the_store_had_none() -> None:
    host = machine()
    host.state_loaded(None)
    assert host.globals["widgetState"] is None
    host = machine(globals={"widgetState": {"given": 1}})
    host.state_loaded(None)  # the store had none: the initial global stands
    assert host.globals["widgetState"] == {"given": 1}
    host.state_loaded({"kept": 2})
    assert host.globals["widgetState"] == {"kept": 2}


def test_a_saved_state_is_never_sent_back_to_the_widget() -> None:
    host = machine()
    host.state_saved({"before": "ready"})
    assert host.receive({"type": "ready"}) == Ready(
        protocol.encode_set_globals({**GLOBALS, "widgetState": {"before": "ready"}})
    )
    host.state_saved({"n": 1})
    assert host.globals["widgetState"] == {"n": 1}
    assert host.update_globals({"theme": "dark"}) == protocol.encode_set_globals({"theme": "dark"})


# -- properties: arbitrary input ----------------------------------------------------------------

json_values = nested_json(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=6)
    | st.sampled_from([protocol.METHOD_CALL, *protocol.LEGACY_TYPES, "pip", "https://a"]),
    max_size=3,
    key_size=6,
)
method_names = st.sampled_from([*sorted(protocol.METHODS), "uploadFile", "selfDestruct"])
call_args = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {},
        optional={
            "prompt": st.text(max_size=3) | json_values,
            "mode": st.sampled_from(DISPLAY_MODES) | json_values,
            "href": st.sampled_from(["https://a.example", "javascript:1"]) | json_values,
        },
    ),
)
message_like = st.fixed_dictionaries(
    {"type": st.sampled_from([protocol.METHOD_CALL, *sorted(protocol.LEGACY_TYPES)]) | json_values},
    optional={
        "id": st.sampled_from(["a", "b", 1, 2]) | json_values,
        "method": method_names | json_values,
        "args": st.lists(call_args, max_size=3) | json_values,
        "payload": json_values,
    },
)
well_formed_calls = st.builds(
    lambda call_id, method, args: call(call_id, method, *args),
    st.sampled_from(["a", "b", 1, 2]),
    method_names,
    st.lists(call_args, max_size=3),
)
GOOD_ARGS: list[tuple[str, list[Any]]] = [
    ("callTool", ["search", {"q": "x"}]),
    ("setWidgetState", [{"n": 1}]),
    ("sendFollowUpMessage", [{"prompt": "More"}]),
    ("requestDisplayMode", [{"mode": "pip"}]),
    ("requestModal", [{}]),
    ("requestClose", []),
    ("openExternal", [{"href": "https://a.example"}]),
    ("notifyIntrinsicHeight", [420]),
    ("uploadFile", ["data"]),
]
good_calls = st.builds(
    lambda call_id, method_args: call(call_id, method_args[0], *method_args[1]),
    st.sampled_from(["a", "b", 1, 2]),
    st.sampled_from(GOOD_ARGS),
)
received_values = st.one_of(
    json_values,
    message_like,
    well_formed_calls,
    good_calls,
    st.sampled_from([{"type": "ready"}, {"type": "resize", "payload": 300}]),
)
widget_steps = st.lists(
    st.one_of(
        st.tuples(st.just("receive"), received_values),
        st.tuples(st.just("finish"), st.integers(0, 50)),
        st.tuples(
            st.just("globals"), st.dictionaries(st.sampled_from(["theme", "x"]), json_values)
        ),
    ),
    max_size=40,
)
manifests = st.sampled_from([WidgetManifest(), EVERYTHING])
extras = st.sampled_from([(), ("uploadFile",), ("callTool", "uploadFile")])


class Call:
    """A call the machine asked to run, as the test's driver holds it."""

    def __init__(self, event: MethodRequested) -> None:
        self.event = event
        self.answers = 0


@PROPERTY
@given(
    steps=widget_steps,
    manifest=manifests,
    extra=extras,
    max_calls=st.integers(1, 4),
    full_updates=st.booleans(),
)
def test_the_books_stay_right_and_every_call_is_answered_once(
    steps: list[tuple[str, Any]],
    manifest: WidgetManifest,
    extra: tuple[str, ...],
    max_calls: int,
    full_updates: bool,
) -> None:
    host = WidgetHostMachine(
        manifest=manifest, extra_methods=extra, max_calls=max_calls, full_updates=full_updates
    )
    running: list[Call] = []  # the model: calls in flight, in arrival order
    answered: list[Call] = []
    ignored = 0
    widget_has: dict[str, Any] | None = None  # the globals as the widget has them
    for action, value in steps:
        if action == "receive":
            if not host.may_read:  # a driver reads nothing more now
                continue
            decoded = protocol.decode(value)
            event = host.receive(value)  # never raises
            if isinstance(event, Ignored):
                ignored += 1
                assert event.first is (ignored == 1)
                assert isinstance(decoded, str) or decoded == LegacyMessage(
                    "resize", decoded.payload
                )
            elif isinstance(decoded, MethodCall):  # exactly one of: refused, or to run
                if isinstance(event, Refused):
                    reply = event.reply
                    assert reply.keys() == {"type", "id", "error"}
                    assert (reply["type"], reply["id"]) == (protocol.METHOD_RESPONSE, decoded.id)
                    assert isinstance(reply["error"], str)
                else:
                    assert isinstance(event, MethodRequested)
                    assert (event.id, event.method) == (decoded.id, decoded.method)
                    assert event.request.method == decoded.method
                    assert decoded.method in protocol.METHODS or decoded.method in extra
                    assert manifest.grants(decoded.method)
                    running.append(Call(event))
            elif isinstance(event, Ready):
                message = event.set_globals
                assert message == protocol.encode_set_globals(host.globals)
                widget_has = dict(message["globals"])
            else:
                assert isinstance(event, Legacy)
                assert isinstance(decoded, LegacyMessage)
                assert (event.kind, event.payload) == (decoded.type, decoded.payload)
        elif action == "finish" and running:
            done = running.pop(value % len(running))
            answer = (host.answer if value % 2 else host.fail)(done.event.id, "x")
            assert answer["id"] == done.event.id
            done.answers += 1
            answered.append(done)
            host.finished(done.event.id)
        elif action == "globals":
            message = host.update_globals(value)
            if widget_has is None:
                assert message is None
            elif message is not None:
                if full_updates:
                    assert message["globals"] == host.globals
                widget_has.update(message["globals"])
        assert host.in_flight == len(running) <= max_calls
        assert host.may_read is (len(running) < max_calls)
        assert host.ignored == ignored
        assert host.ready is (widget_has is not None)
        if widget_has is not None:
            assert widget_has == host.globals  # the widget is never left behind
    for done in running:  # the driver answers the rest
        host.answer(done.event.id, None)
        done.answers += 1
        host.finished(done.event.id)
    assert host.in_flight == 0
    assert all(done.answers == 1 for done in [*answered, *running])


@PROPERTY
@given(
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("update"), st.dictionaries(st.sampled_from("abc"), json_values)),
            st.tuples(
                st.just("saved"), st.none() | st.dictionaries(st.text(max_size=2), json_values)
            ),
            st.tuples(st.just("ready"), st.none()),
        ),
        max_size=20,
    ),
    full_updates=st.booleans(),
)
def test_a_widget_keeps_up_with_the_globals_and_its_own_state(
    steps: list[tuple[str, Any]], full_updates: bool
) -> None:
    host = WidgetHostMachine(globals={"a": 1}, full_updates=full_updates)
    widget_has: dict[str, Any] | None = None
    for action, value in steps:
        if action == "update":
            message = host.update_globals(value)
            if message is not None:
                assert widget_has is not None
                changed = message["globals"]
                if not full_updates:  # only what the widget lacks, and never nothing
                    assert changed
                    assert all(widget_has.get(k, object()) != v for k, v in changed.items())
                widget_has.update(changed)
        elif action == "saved":
            host.state_saved(value)  # the widget set it: it has it already
            if widget_has is not None:
                widget_has["widgetState"] = value
        else:
            event = host.receive({"type": "ready"})
            assert isinstance(event, Ready)
            widget_has = dict(event.set_globals["globals"])
        if widget_has is not None:
            assert widget_has == host.globals
