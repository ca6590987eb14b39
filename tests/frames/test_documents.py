"""Frame documents (``@assistant-ui/core`` 0.3.35): the machines' rules, fed the messages the
real 0.3.35 JS frame and host sent (captured in headless Chromium), and the drivers over
a memory pair.

What each side does with ``documentId``, ``requestId`` and ``provider-disposed`` is in
``docs/protocol.md`` (Documents); ``tests/browser/test_browser_documents.py`` runs the
same cases against the real JS, both releases.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from assistant_frames import (
    AssistantFrameHost,
    AssistantFrameProvider,
    DocumentChanged,
    FrameDisconnected,
    ModelContextRegistry,
    ProviderDisposed,
    ToolCallTimeout,
    memory_pair,
)
from assistant_frames.errors import ErrorCode, error_from_wire
from assistant_frames.frames import protocol
from assistant_frames.frames.frame_machine import CallRequested, FrameMachine, Refused
from assistant_frames.frames.host_machine import (
    FRAME_LOADED,
    ContextChanged,
    HostMachine,
    Malformed,
)
from assistant_frames.frames.protocol import MalformedMessage, SerializedTool
from assistant_frames.registry.tool import Tool, ToolCallContext

from helpers import Outcome, envelope, next_message, wait_until

# -- golden messages, as @assistant-ui/core 0.3.35 sent them -------------------------------------

D1 = "6c941dad-6127-4c02-883e-24da06c8f6e9"  # a JS frame's first page load
D2 = "bcbc31eb-11a1-4172-9979-459508a0b3f0"  # the same iframe, reloaded
TOOLS = (
    '{"add":{"description":"Add two numbers.","parameters":{"$schema":'
    '"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"type":'
    '"number"},"b":{"type":"number"}},"required":["a","b"]}},"fail":{"description":'
    '"Always throws.","parameters":{"$schema":"http://json-schema.org/draft-07/schema#",'
    '"type":"object","properties":{}}},"slow":{"description":"Waits until aborted (or 20 s).",'
    '"parameters":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object",'
    '"properties":{}}}}'
)
CONTEXT = '{"system":"You can add numbers with the add tool.","tools":' + TOOLS + "}"
# The frame's update on loading (and on every change), stamped with its document.
JS_UPDATE = (
    '{"channel":"assistant-ui-frame","message":{"type":"model-context-update","context":'
    + CONTEXT
    + ',"documentId":"'
    + D1
    + '"}}'
)
# Its answer to a model-context-request carrying a requestId.
JS_ANSWER = (
    '{"channel":"assistant-ui-frame","message":{"type":"model-context-update","context":'
    + CONTEXT
    + ',"requestId":"44efcafec4f34e17ae7fed5c712409c1","documentId":"'
    + D1
    + '"}}'
)
# AssistantFrameProvider.dispose() with one call running: these three, in this order.
JS_DISPOSED = [
    '{"channel":"assistant-ui-frame","message":{"type":"model-context-update","context":{},'
    '"documentId":"' + D1 + '"}}',
    '{"channel":"assistant-ui-frame","message":{"type":"tool-result","id":"tool-8a25661",'
    '"error":"AssistantFrameProvider has been disposed","documentId":"' + D1 + '"}}',
    '{"channel":"assistant-ui-frame","message":{"type":"provider-disposed","documentId":"'
    + D1
    + '"}}',
]
# The reloaded page's update, and its answer to a call addressed to the old page.
JS_UPDATE_D2 = JS_UPDATE.replace(D1, D2)
JS_STALE_REFUSED = (
    '{"channel":"assistant-ui-frame","message":{"type":"tool-result","id":"stale-1",'
    '"error":"AssistantFrame document has changed","documentId":"' + D2 + '"}}'
)
# A 0.3.35 JS host: frameLoaded()'s request, and a call to a Python frame's document.
JS_HOST_LOAD_REQUEST = (
    '{"channel":"assistant-ui-frame","message":{"type":"model-context-request",'
    '"requestId":"luwiBkq"}}'
)
PY_DOCUMENT = "46a38ac4-8671-45f1-a906-d7e6b95e217a"
JS_HOST_CALL = (
    '{"channel":"assistant-ui-frame","message":{"type":"tool-call","id":"tool-7nadh1e",'
    '"toolName":"multiply","args":{"a":6,"b":7},"documentId":"' + PY_DOCUMENT + '"}}'
)


def golden(text: str) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(text)
    return value


# == HostMachine ===================================================================================


def make_tool(name: str, spec: SerializedTool) -> Tool:
    async def invoke(args: Any, context: ToolCallContext) -> Any:  # never run here
        raise AssertionError("not called in these tests")

    return Tool.from_parts(name, invoke, parameters=spec.get("parameters"))


def new_host() -> HostMachine:
    machine = HostMachine(make_tool, id_prefix="t-", frame="js")
    machine.open()
    return machine


def feed(machine: HostMachine, raw: Any) -> tuple[bool, tuple[dict[str, Any], ...]]:
    """What ``machine.receive(raw)`` said, as (context changed, messages to send); a
    ``Malformed`` event raises ``MalformedMessage`` (for ``pytest.raises``)."""
    event = machine.receive(raw)
    if isinstance(event, Malformed):
        raise MalformedMessage(event.reason, message=raw)
    if event is None:
        return False, ()
    return isinstance(event, ContextChanged), event.sends


def call(machine: HostMachine, name: str = "add") -> tuple[Any, dict[str, Any]]:
    pending, message = machine.start_call(name, {"a": 1, "b": 2}, wake=lambda: None)
    pending.sent = True
    return pending, message["message"]


def outcome_error(machine: HostMachine, pending: Any) -> BaseException:
    with pytest.raises(FrameDisconnected) as failed:
        machine.outcome(pending, None)
    return failed.value


def test_the_first_document_is_adopted_and_addressed_by_calls() -> None:
    machine = new_host()
    early, early_message = call(machine)  # before any context: no document to address
    assert "documentId" not in early_message
    changed, sends = feed(machine, golden(JS_UPDATE))
    assert changed
    assert sends == (protocol.encode_context_subscribe(patches=True),)
    assert machine.document == D1
    assert sorted(machine.context.tools) == ["add", "fail", "slow"]
    assert not early.settled  # the first document known is no change: the call stands
    _, message = call(machine)
    assert message["documentId"] == D1
    feed(machine, golden(JS_ANSWER))  # the same document answering a request
    assert machine.document == D1
    assert not early.settled


def test_a_new_document_replaces_the_context_and_fails_the_old_calls() -> None:
    machine = new_host()
    feed(machine, golden(JS_UPDATE))
    pending, _ = call(machine)
    tools_before = machine.context.tools
    changed, sends = feed(machine, golden(JS_UPDATE_D2))
    assert changed
    # Nothing to cancel (the old document is gone); the new one is subscribed afresh.
    assert sends == (protocol.encode_context_subscribe(patches=True),)
    assert machine.document == D2
    assert machine.old_documents == {D1: None}
    assert pending.settled
    error = outcome_error(machine, pending)
    assert type(error) is DocumentChanged
    assert error.code is ErrorCode.DOCUMENT_CHANGED
    assert error.message == "AssistantFrame document has changed"
    assert (error.tool_name, error.frame) == ("add", "js")
    assert machine.context.tools is not tools_before  # rebuilt for the new document
    assert sorted(machine.context.tools) == ["add", "fail", "slow"]
    assert machine.refusal is None  # the new document's context came with it
    _, message = call(machine)
    assert message["documentId"] == D2


def test_messages_from_an_earlier_document_are_ignored() -> None:
    machine = new_host()
    feed(machine, golden(JS_UPDATE))
    feed(machine, golden(JS_UPDATE_D2))
    pending, _ = call(machine)
    context = machine.context
    late_update = golden(JS_UPDATE.replace("You can add", "Old page:"))
    assert feed(machine, late_update) == (False, ())
    assert machine.context is context
    late_result = envelope({"type": "tool-result", "id": pending.id, "result": 1, "documentId": D1})
    assert feed(machine, late_result) == (False, ())
    assert not pending.settled  # a result from the old page settles nothing
    feed(
        machine, envelope({"type": "tool-result", "id": pending.id, "result": 3, "documentId": D2})
    )
    assert machine.outcome(pending, None) == 3


def test_the_js_refusal_of_a_stale_call_comes_back_typed() -> None:
    machine = new_host()
    feed(machine, golden(JS_UPDATE_D2))
    pending, _ = machine.start_call("add", {}, call_id="stale-1", wake=lambda: None)
    feed(machine, golden(JS_STALE_REFUSED))
    error = outcome_error(machine, pending)
    assert type(error) is DocumentChanged
    assert error.tool_call_id == "stale-1"
    assert type(error_from_wire("AssistantFrameProvider has been disposed", "x")) is (
        ProviderDisposed
    )


def test_a_disposed_js_provider_fails_pending_and_new_calls_until_its_next_context() -> None:
    machine = new_host()
    feed(machine, golden(JS_UPDATE))
    running, _ = machine.start_call("slow", {}, call_id="tool-8a25661", wake=lambda: None)
    running.sent = True
    other, _ = call(machine)  # one the frame never answered
    empty, result, disposed = (golden(text) for text in JS_DISPOSED)
    assert feed(machine, empty) == (True, ())
    assert dict(machine.context.tools) == {}
    feed(machine, result)
    assert type(outcome_error(machine, running)) is ProviderDisposed
    changed, sends = feed(machine, disposed)
    assert not changed
    assert sends == (protocol.encode_tool_cancel(other.id),)  # as the JS host does
    assert type(outcome_error(machine, other)) is ProviderDisposed
    with pytest.raises(ProviderDisposed) as refused:
        call(machine)
    assert (refused.value.tool_name, refused.value.frame) == ("add", "js")
    assert len(machine.calls) == 0
    feed(machine, golden(JS_UPDATE))  # serving again
    assert machine.refusal is None
    call(machine)


def test_frame_loaded_asks_with_a_fresh_request_id_and_an_answer_ends_the_grace_period() -> None:
    machine = new_host()
    feed(machine, golden(JS_UPDATE))
    request_id = "44efcafec4f34e17ae7fed5c712409c1"
    sends = machine.frame_loaded(request_id)
    assert sends == (protocol.encode_context_request(request_id=request_id),)
    assert machine.load_timer == request_id
    # The old document still speaking (not answering) is asked again.
    assert feed(machine, golden(JS_UPDATE)) == (False, sends)
    assert machine.load_timer == request_id
    assert feed(machine, golden(JS_ANSWER)) == (False, ())
    assert machine.load_timer is None
    assert machine.load_request is None
    assert not machine.load_expired(request_id)  # answered: nothing to forget
    assert machine.document == D1


def test_silence_after_frame_loaded_forgets_the_old_document() -> None:
    machine = new_host()
    feed(machine, golden(JS_UPDATE))
    pending, _ = call(machine)
    machine.frame_loaded("r-1")
    machine.frame_loaded("r-2")  # a newer load takes over the grace period
    assert not machine.load_expired("r-1")
    assert machine.load_expired("r-2")  # the context was cleared
    assert machine.document is None
    assert D1 in machine.old_documents
    assert machine.wire is None
    assert type(outcome_error(machine, pending)) is DocumentChanged
    with pytest.raises(DocumentChanged):
        call(machine)
    # The next document is adopted; its calls address it.
    assert feed(machine, golden(JS_UPDATE_D2))[0]
    assert machine.document == D2
    _, message = call(machine)
    assert message["documentId"] == D2


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param({"type": "model-context-update", "context": {}}, id="0.3.20-update"),
        pytest.param(
            {"type": "tool-result", "id": "x", "result": 1, "documentId": D2}, id="another-document"
        ),
    ],
)
def test_a_020_update_or_another_document_ends_the_grace_period(reply: dict[str, Any]) -> None:
    machine = new_host()
    feed(machine, golden(JS_UPDATE))
    machine.frame_loaded("r-1")
    feed(machine, envelope(reply))
    assert machine.load_timer is None
    assert not machine.load_expired("r-1")


def test_the_relays_frame_loaded_notice_is_frame_loaded() -> None:
    machine = new_host()
    feed(machine, golden(JS_UPDATE))
    changed, sends = feed(machine, FRAME_LOADED)
    assert not changed
    (request,) = sends
    request_id = request["message"]["requestId"]
    assert isinstance(request_id, str)
    assert len(request_id) == 32
    assert machine.load_timer == request_id
    assert machine.ignored == 0  # not a stray message


def test_earlier_documents_are_remembered_up_to_a_bound() -> None:
    machine = new_host()
    for n in range(200):
        update = envelope({"type": "model-context-update", "context": {}, "documentId": f"d{n}"})
        feed(machine, update)
    assert machine.document == "d199"
    assert list(machine.old_documents) == [f"d{n}" for n in range(135, 199)]


@pytest.mark.parametrize(
    "message",
    [
        {"type": "model-context-update", "context": {}, "documentId": 7},
        {"type": "model-context-update", "context": {}, "requestId": ["x"]},
        {"type": "tool-result", "id": "t-1", "result": 1, "documentId": 1.5},
        {"type": "provider-disposed", "documentId": {}},
    ],
)
def test_ids_that_are_not_strings_make_a_message_malformed(message: dict[str, Any]) -> None:
    machine = new_host()
    with pytest.raises(MalformedMessage):
        feed(machine, envelope(message))
    assert machine.refusal is None
    assert machine.document is None


# == FrameMachine ==================================================================================


def test_the_frame_stamps_its_document_and_echoes_a_request_id() -> None:
    machine: FrameMachine[object] = FrameMachine(PY_DOCUMENT)
    machine.receive(golden(JS_HOST_LOAD_REQUEST))
    update = machine.context_update({"system": "s"})
    assert update == envelope(
        {
            "type": "model-context-update",
            "context": {"system": "s"},
            "requestId": "luwiBkq",
            "documentId": PY_DOCUMENT,
        }
    )
    pushed = machine.context_update({"system": "t"})  # a later push answers nothing
    assert pushed == envelope(
        {"type": "model-context-update", "context": {"system": "t"}, "documentId": PY_DOCUMENT}
    )


def test_the_frame_runs_calls_for_its_document_and_refuses_others() -> None:
    machine: FrameMachine[object] = FrameMachine(PY_DOCUMENT)
    event = machine.receive(golden(JS_HOST_CALL))
    assert isinstance(event, CallRequested)
    assert (event.id, event.tool_name, event.args) == ("tool-7nadh1e", "multiply", {"a": 6, "b": 7})
    live = object()
    machine.track(event.id, live)
    stale = golden(JS_HOST_CALL.replace(PY_DOCUMENT, D1))
    refused = machine.receive(stale)
    assert isinstance(refused, Refused)
    assert refused.reply == envelope(
        {
            "type": "tool-result",
            "id": "tool-7nadh1e",
            "error": "AssistantFrame document has changed",
            "documentId": PY_DOCUMENT,
        }
    )
    assert machine.calls == {"tool-7nadh1e": live}  # the live call with that id stands


def test_dispose_says_what_the_js_provider_says() -> None:
    machine: FrameMachine[str] = FrameMachine(D1)
    machine.receive(envelope({"type": "model-context-request"}))
    machine.context_update({"system": "s"})
    machine.track("tool-8a25661", "handle")
    handles, messages = machine.dispose()
    assert handles == ["handle"]
    assert messages == [golden(text) for text in JS_DISPOSED]
    assert machine.calls == {}
    assert machine.dispose() == ([], [golden(JS_DISPOSED[2])])  # nothing more to take back


def test_a_frame_that_never_sent_a_context_only_says_disposed() -> None:
    machine: FrameMachine[str] = FrameMachine(D1)
    assert machine.dispose() == ([], [golden(JS_DISPOSED[2])])


# == the drivers, over a memory pair ==============================================================


def calculator() -> ModelContextRegistry:
    registry = ModelContextRegistry()

    @registry.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @registry.tool
    async def slow() -> str:
        """Never finishes."""
        await anyio.sleep_forever()
        return "done"

    return registry


@pytest.mark.anyio
async def test_a_provider_stopping_on_an_open_connection_says_so() -> None:
    registry = calculator()
    frame = AssistantFrameProvider(registry)
    host_end, frame_end = memory_pair()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(frame.serve, frame_end)
            await host_end.send(envelope({"type": "model-context-request"}))
            update = await host_end.receive()
            assert update["message"]["documentId"] == frame.document_id
            await host_end.send(envelope({"type": "tool-call", "id": "c1", "toolName": "slow"}))
            await anyio.sleep(0.05)
            tg.cancel_scope.cancel()  # the frame stops; the connection is still open
        goodbye = [await host_end.receive() for _ in range(3)]
    assert goodbye == [
        protocol.encode_context_update({}, document_id=frame.document_id),
        protocol.encode_tool_error(
            "c1", "AssistantFrameProvider has been disposed", document_id=frame.document_id
        ),
        protocol.encode_provider_disposed(frame.document_id),
    ]


@pytest.mark.anyio
async def test_a_provider_never_waits_on_a_host_that_does_not_read() -> None:
    frame = AssistantFrameProvider(calculator())
    host_end, frame_end = memory_pair(max_buffer_size=1)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(frame.serve, frame_end)
            await host_end.send(envelope({"type": "model-context-request"}))
            await anyio.sleep(0.05)  # the update fills the one slot; nobody reads it
            started = anyio.current_time()
            tg.cancel_scope.cancel()
        assert anyio.current_time() - started < 2  # the goodbye's bound, not a hang


@pytest.mark.anyio
async def test_a_python_host_and_frame_across_a_frame_restart() -> None:
    """A host whose frame is replaced behind one connection (a relay to a restarted
    process): the second frame is a new document."""
    first = AssistantFrameProvider(calculator())
    second = AssistantFrameProvider(calculator())
    assert first.document_id != second.document_id
    host_end, relay_end = memory_pair()
    with anyio.fail_after(5):
        async with AssistantFrameHost(host_end, timeout=5) as host, anyio.create_task_group() as tg:
            a_end, a_frame = memory_pair()
            tg.start_soon(first.serve, a_frame)
            forward = anyio.CancelScope()

            async def relay(to: Any, scope: anyio.CancelScope) -> None:
                with scope:
                    async for message in relay_end:
                        await to.send(message)

            async def back(source: Any) -> None:
                async for message in source:
                    await relay_end.send(message)

            tg.start_soon(relay, a_end, forward)
            tg.start_soon(back, a_end)
            await host.wait_for_context()
            assert host.document_id == first.document_id
            outcome = Outcome()
            tg.start_soon(outcome.run, host, "slow", {})
            await anyio.sleep(0.05)
            # The relay now carries the second frame, which introduces itself.
            forward.cancel()
            b_end, b_frame = memory_pair()
            tg.start_soon(second.serve, b_frame)
            tg.start_soon(relay, b_end, anyio.CancelScope())
            tg.start_soon(back, b_end)
            await b_end.send(envelope({"type": "model-context-request"}))
            await outcome.done.wait()
            assert isinstance(outcome.error, DocumentChanged)
            assert host.document_id == second.document_id
            assert await host.call_tool("add", {"a": 2, "b": 3}) == 5
            tg.cancel_scope.cancel()


@pytest.mark.anyio
async def test_frame_loaded_without_an_answer_clears_within_its_grace() -> None:
    host_end, frame_end = memory_pair()
    with anyio.fail_after(5):
        async with AssistantFrameHost(host_end, timeout=5) as host:
            await frame_end.receive()  # the request
            await frame_end.send(golden(JS_UPDATE))
            await host.wait_for_context()
            changed = anyio.Event()
            host.subscribe(changed.set)
            started = anyio.current_time()
            host.frame_loaded(grace=0.3)
            request = await next_message(frame_end, "model-context-request")
            assert isinstance(request["requestId"], str)
            await changed.wait()
            assert 0.25 < anyio.current_time() - started < 2
            assert dict(host.get_model_context().tools) == {}
            with pytest.raises(DocumentChanged):
                await host.call_tool("add", {"a": 1, "b": 1})
            # A late answer to that request revives the document (as in the JS host).
            answer = golden(JS_ANSWER)
            answer["message"]["requestId"] = request["requestId"]
            await frame_end.send(answer)
            await wait_until(lambda: "add" in host.get_model_context().tools)
            assert host.document_id == D1


@pytest.mark.anyio
async def test_a_020_frame_keeps_working_without_documents() -> None:
    """No documentId anywhere: calls carry none, nothing is refused, a reload is just a
    new context, and a call lost with the old page waits out its timeout."""
    host_end, frame_end = memory_pair()
    update = golden(JS_UPDATE)
    del update["message"]["documentId"]
    with anyio.fail_after(5):
        async with AssistantFrameHost(host_end, timeout=5) as host, anyio.create_task_group() as tg:
            await frame_end.receive()
            await frame_end.send(update)
            await host.wait_for_context()
            outcome = Outcome()
            tg.start_soon(lambda: outcome.run(host, "slow", {}, timeout=0.3))
            call = await next_message(frame_end, "tool-call")
            assert "documentId" not in call
            await frame_end.send(update)  # the reloaded page
            await outcome.done.wait()
            assert isinstance(outcome.error, ToolCallTimeout)
            assert host.document_id is None


def test_a_frames_document_id_is_a_random_version_4_uuid() -> None:
    """As ``crypto.randomUUID()`` makes them (the JS frame's own ids), each new."""
    import uuid

    ids = {protocol.new_document_id() for _ in range(1000)}
    assert len(ids) == 1000
    for text in ids:
        parsed = uuid.UUID(text)
        assert str(parsed) == text  # lower-case, dashed: the canonical form
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122
