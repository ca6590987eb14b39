"""Wire compatibility with assistant-ui's JavaScript implementation (@assistant-ui/core 0.3.20).

One side is the real Python class; the other is a raw memory_pair() end that speaks plain
JSON dicts exactly as the JS peer would.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from assistant_frames import (
    AssistantFrameHost,
    AssistantFrameProvider,
    MemoryTransport,
    ModelContextRegistry,
    ToolArgumentsError,
    ToolCallError,
    ToolDisabledError,
    ToolNotFoundError,
    memory_pair,
)
from assistant_frames.testing import connect_frame

from helpers import (
    CHANNEL,
    EMPTY_OBJECT,
    Gate,
    Outcome,
    Segment,
    calculator,
    call_raw,
    envelope,
    next_message,
    raw_frame,
    served,
)

pytestmark = pytest.mark.anyio

# Captured from the real @assistant-ui/core 0.3.20 frame (zod schemas as draft-07).
JS_FRAME_UPDATE = (
    '{"channel":"assistant-ui-frame","message":{"type":"model-context-update","context":'
    '{"system":"You can add numbers with the add tool.","tools":{"add":{"description":'
    '"Add two numbers","parameters":{"$schema":"http://json-schema.org/draft-07/schema#",'
    '"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},'
    '"required":["a","b"]}},"fail":{"description":"Always throws","parameters":{"$schema":'
    '"http://json-schema.org/draft-07/schema#","type":"object","properties":{}}}}}}}'
)
# What the real JS host sends.
JS_HOST_REQUEST = '{"channel":"assistant-ui-frame","message":{"type":"model-context-request"}}'
JS_HOST_TOOL_CALL = (
    '{"channel":"assistant-ui-frame","message":{"type":"tool-call","id":"tool-cKFNxAk",'
    '"toolName":"add","args":{"a":20,"b":22}}}'
)
# What the JS host expects back for that call (a 0.3.35 frame adds its documentId).
JS_EXPECTED_TOOL_RESULT = (
    '{"channel":"assistant-ui-frame","message":{"type":"tool-result","id":"tool-cKFNxAk",'
    '"result":42}}'
)
SUBSCRIBE = '{"channel":"assistant-ui-frame","message":{"type":"model-context-subscribe"}}'
# What a Python host sends: it asks for changes as patches (a JS frame ignores it all).
SUBSCRIBE_PATCHES = (
    '{"channel":"assistant-ui-frame","message":{"type":"model-context-subscribe","patches":true}}'
)
UNSUBSCRIBE = '{"channel":"assistant-ui-frame","message":{"type":"model-context-unsubscribe"}}'

JS_CONTEXT = json.loads(JS_FRAME_UPDATE)["message"]["context"]


# -- Python host vs a JS frame ----------------------------------------------------------------


async def test_host_asks_first_and_accepts_the_js_context() -> None:
    golden = json.loads(JS_FRAME_UPDATE)["message"]["context"]
    with anyio.fail_after(5):
        host_end, frame_end = memory_pair()
        async with AssistantFrameHost(host_end, timeout=5) as host:
            assert await frame_end.receive() == json.loads(JS_HOST_REQUEST)
            await frame_end.send(json.loads(JS_FRAME_UPDATE))
            context = await host.wait_for_context(timeout=5)
            assert context.system == "You can add numbers with the add tool."
            assert list(context.tools) == ["add", "fail"]
            for name in ("add", "fail"):
                tool = context.tools[name]
                assert tool.name == name
                assert tool.description == golden["tools"][name]["description"]
                assert dict(tool.parameters) == golden["tools"][name]["parameters"]
                assert not tool.disabled
                assert tool.type is None
            # then it subscribes, which a JS frame simply ignores
            assert await frame_end.receive() == json.loads(SUBSCRIBE_PATCHES)
        # on close it unsubscribes
        assert await next_message(frame_end) == {"type": "model-context-unsubscribe"}


async def test_host_tool_call_shape() -> None:
    with anyio.fail_after(5):
        async with raw_frame(JS_CONTEXT) as (host, frame_end), anyio.create_task_group() as tg:
            outcome = Outcome()
            tg.start_soon(outcome.run, host, "add", {"a": 2, "b": 3})
            call = await next_message(frame_end)
            assert set(call) == {"type", "id", "toolName", "args"}
            assert call["type"] == "tool-call"
            assert isinstance(call["id"], str)
            assert call["id"]
            assert call["toolName"] == "add"
            assert call["args"] == {"a": 2, "b": 3}
            await frame_end.send(envelope({"type": "tool-result", "id": call["id"], "result": 5}))
            await outcome.done.wait()
            assert outcome.result == 5


_SUCCESS = "success"
RESULT_CASES: list[tuple[str, str, Any]] = [
    # (the JS frame's tool-result without its id, outcome, value or error message)
    ('{"type":"tool-result","result":{"sum":5}}', _SUCCESS, {"sum": 5}),
    ('{"type":"tool-result","error":"boom from iframe"}', "error", "boom from iframe"),
    (
        '{"type":"tool-result","error":"Tool \\"nope\\" not found"}',
        "error",
        'Tool "nope" not found',
    ),
    ('{"type":"tool-result"}', _SUCCESS, None),
    ('{"type":"tool-result","error":null}', _SUCCESS, None),
    ('{"type":"tool-result","result":7,"error":null}', _SUCCESS, 7),
    ('{"type":"tool-result","error":""}', "error", ""),
    (
        '{"type":"tool-result","result":[1,"x",null,{"k":false}]}',
        _SUCCESS,
        [1, "x", None, {"k": False}],
    ),
]


@pytest.mark.parametrize(("reply", "kind", "expected"), RESULT_CASES)
async def test_host_interprets_js_tool_results(reply: str, kind: str, expected: Any) -> None:
    with anyio.fail_after(5):
        async with raw_frame(JS_CONTEXT) as (host, frame_end), anyio.create_task_group() as tg:
            outcome = Outcome()
            tg.start_soon(outcome.run, host, "add", {"a": 2, "b": 3})
            call = await next_message(frame_end, "tool-call")
            message = json.loads(reply)
            message["id"] = call["id"]
            await frame_end.send(envelope(message))
            await outcome.done.wait()
            if kind == _SUCCESS:
                assert outcome.error is None
                assert outcome.result == expected
            else:
                assert isinstance(outcome.error, ToolCallError)
                assert outcome.error.message == expected
                assert outcome.error.message == expected
                assert outcome.error.tool_call_id == call["id"]


async def test_host_ignores_unknown_and_duplicate_results() -> None:
    with anyio.fail_after(5):
        async with raw_frame(JS_CONTEXT) as (host, frame_end), anyio.create_task_group() as tg:
            first = Outcome()
            tg.start_soon(first.run, host, "add", {"a": 1, "b": 1})
            call = await next_message(frame_end, "tool-call")
            await frame_end.send(
                envelope({"type": "tool-result", "id": "tool-unknown", "result": 0})
            )
            await frame_end.send(envelope({"type": "tool-result", "id": call["id"], "result": 2}))
            await first.done.wait()
            assert first.result == 2

            second = Outcome()
            tg.start_soon(second.run, host, "add", {"a": 2, "b": 2})
            call2 = await next_message(frame_end, "tool-call")
            assert call2["id"] != call["id"]
            # a duplicate of the finished call's result, and an error for an unknown id
            await frame_end.send(envelope({"type": "tool-result", "id": call["id"], "result": 99}))
            await frame_end.send(envelope({"type": "tool-result", "id": "tool-zzz", "error": "x"}))
            assert not second.done.is_set()
            await frame_end.send(envelope({"type": "tool-result", "id": call2["id"], "result": 4}))
            await second.done.wait()
            assert second.error is None
            assert second.result == 4
            # and a duplicate for this one is ignored too; the host still works
            await frame_end.send(
                envelope({"type": "tool-result", "id": call2["id"], "error": "late"})
            )
            third = Outcome()
            tg.start_soon(third.run, host, "fail", {})
            call3 = await next_message(frame_end, "tool-call")
            await frame_end.send(
                envelope({"type": "tool-result", "id": call3["id"], "error": "no"})
            )
            await third.done.wait()
            assert isinstance(third.error, ToolCallError)
            assert third.error.message == "no"


async def test_host_accepts_model_context_response_like_an_update() -> None:
    with anyio.fail_after(5):
        async with raw_frame(JS_CONTEXT) as (host, frame_end):
            changed = anyio.Event()
            host.subscribe(changed.set)
            await frame_end.send(
                envelope(
                    {
                        "type": "model-context-response",
                        "context": {
                            "system": "Replaced.",
                            "tools": {
                                "ask": {
                                    "parameters": EMPTY_OBJECT,
                                    "disabled": True,
                                    "type": "human",
                                }
                            },
                        },
                    }
                )
            )
            await changed.wait()
            context = host.get_model_context()
            assert context.system == "Replaced."
            assert list(context.tools) == ["ask"]  # replaced wholesale
            assert context.tools["ask"].disabled
            assert context.tools["ask"].type == "human"
            assert context.tools["ask"].description is None


async def test_host_accepts_a_context_without_tools_or_system() -> None:
    with anyio.fail_after(5):
        async with raw_frame(JS_CONTEXT) as (host, frame_end):
            changed = anyio.Event()
            host.subscribe(changed.set)
            await frame_end.send(envelope({"type": "model-context-update", "context": {}}))
            await changed.wait()
            assert host.get_model_context().system is None
            assert dict(host.get_model_context().tools) == {}


# -- Python frame vs a JS host ----------------------------------------------------------------


def python_registry() -> ModelContextRegistry:
    registry = calculator("Python tools.")

    @registry.tool
    def length(segment: Segment) -> float:
        """Length of a segment."""
        dx, dy = segment.end.x - segment.start.x, segment.end.y - segment.start.y
        return float((dx**2 + dy**2) ** 0.5)

    @registry.tool
    def ping() -> str:
        return "pong"

    return registry


async def barrier(end: MemoryTransport) -> list[dict[str, Any]]:
    """Round-trip a ping call; returns the messages received before its result."""
    result, before = await call_raw(end, "ping", {})
    assert result == {"type": "tool-result", "id": result["id"], "result": "pong"}
    return before


async def drain(end: MemoryTransport, seconds: float = 0.1) -> list[dict[str, Any]]:
    """Whatever else arrives within a short bounded while."""
    seen: list[dict[str, Any]] = []
    with anyio.move_on_after(seconds):
        while True:
            seen.append(await next_message(end))
    return seen


def find_keys(value: Any, keys: set[str]) -> list[str]:
    if isinstance(value, dict):
        found = [k for k in value if k in keys]
        for child in value.values():
            found += find_keys(child, keys)
        return found
    if isinstance(value, list):
        return [k for child in value for k in find_keys(child, keys)]
    return []


async def test_frame_answers_a_js_request_with_an_update() -> None:
    registry = python_registry()
    registry.add_tool("off", parameters=EMPTY_OBJECT, disabled=True, type="frontend")
    with anyio.fail_after(5):
        async with served(registry) as end:
            await end.send(json.loads(JS_HOST_REQUEST))
            raw = await end.receive()
            assert set(raw) == {"channel", "message"}
            assert raw["channel"] == CHANNEL
            message = raw["message"]
            assert set(message) == {"type", "context", "documentId"}
            assert isinstance(message["documentId"], str)
            assert message["type"] == "model-context-update"
            context = message["context"]
            assert set(context) == {"system", "tools"}
            assert context["system"] == "Python tools."
            assert list(context["tools"]) == ["add", "length", "ping", "off"]
            add = context["tools"]["add"]
            assert set(add) == {"description", "parameters"}
            assert add["description"] == "Add two numbers."
            assert add["parameters"]["type"] == "object"
            assert add["parameters"]["required"] == ["a", "b"]
            assert {k: v["type"] for k, v in add["parameters"]["properties"].items()} == {
                "a": "integer",
                "b": "integer",
            }
            assert context["tools"]["ping"] == {"parameters": {"type": "object", "properties": {}}}
            assert context["tools"]["off"]["disabled"] is True
            assert context["tools"]["off"]["type"] == "frontend"
            assert find_keys(context, {"$ref", "$defs", "definitions"}) == []
            segment = context["tools"]["length"]["parameters"]["properties"]["segment"]
            assert segment["properties"]["start"]["properties"]["x"]["type"] == "number"
            # JSON on the wire: it survives a real round trip through text
            assert json.loads(json.dumps(raw)) == raw


async def test_frame_answers_the_js_golden_tool_call_exactly() -> None:
    with anyio.fail_after(5):
        async with served(python_registry()) as end:
            await end.send(json.loads(JS_HOST_REQUEST))
            await next_message(end, "model-context-update")
            await end.send(json.loads(JS_HOST_TOOL_CALL))
            assert await next_message(end) == json.loads(JS_EXPECTED_TOOL_RESULT)["message"]


async def test_frame_answers_tool_calls_without_any_request() -> None:
    with anyio.fail_after(5):
        async with served(python_registry()) as end:
            await end.send(json.loads(JS_HOST_TOOL_CALL))
            assert await next_message(end) == json.loads(JS_EXPECTED_TOOL_RESULT)["message"]
            await end.send(
                envelope(
                    {"type": "tool-call", "id": "tool-Zz09aBc", "toolName": "nope", "args": {}}
                )
            )
            assert await next_message(end) == {
                "type": "tool-result",
                "id": "tool-Zz09aBc",
                "error": 'Tool "nope" not found',
            }


async def test_frame_pushes_changes_to_a_js_host_that_only_requested() -> None:
    registry = python_registry()
    with anyio.fail_after(5):
        async with served(registry) as end:
            await end.send(json.loads(JS_HOST_REQUEST))
            await next_message(end, "model-context-update")
            registry.add_instruction("More.")
            update = await next_message(end)
            assert update["type"] == "model-context-update"
            assert update["context"]["system"] == "Python tools.\n\nMore."
            tool = registry.add_tool("extra", parameters=EMPTY_OBJECT)
            update = await next_message(end)
            assert "extra" in update["context"]["tools"]
            tool.remove()
            update = await next_message(end)
            assert "extra" not in update["context"]["tools"]


def results_for(messages: list[dict[str, Any]], call_id: str) -> list[dict[str, Any]]:
    return [m for m in messages if m.get("type") == "tool-result" and m.get("id") == call_id]


async def test_tool_cancel_from_a_js_host() -> None:
    registry = python_registry()
    gate = Gate()
    registry.add_tool("slow", gate)
    with anyio.fail_after(5):
        async with served(registry) as end:
            await end.send(
                envelope(
                    {"type": "tool-call", "id": "tool-slow001", "toolName": "slow", "args": {}}
                )
            )
            await gate.started.wait()
            await end.send(envelope({"type": "tool-cancel", "id": "tool-slow001"}))
            await gate.cancelled.wait()
            gate.release.set()
            seen = await barrier(end)
            seen += await drain(end)
            assert results_for(seen, "tool-slow001") == []


async def test_a_call_cancelled_before_it_starts_never_runs() -> None:
    registry = python_registry()
    ran: list[str] = []

    @registry.tool
    async def record_async() -> str:
        ran.append("async")
        return "ran"

    @registry.tool
    def record_sync() -> str:
        ran.append("sync")
        return "ran"

    with anyio.fail_after(5):
        async with served(registry) as end:
            for name in ("record_async", "record_sync"):
                call_id = f"tool-{name}"
                # the JS host aborts at once: both arrive before the frame runs anything
                await end.send(envelope({"type": "tool-call", "id": call_id, "toolName": name}))
                await end.send(envelope({"type": "tool-cancel", "id": call_id}))
                seen = await barrier(end)
                seen += await drain(end)
                assert results_for(seen, call_id) == []
            # a reused id arriving before the older call started: only the newer runs
            await end.send(
                envelope({"type": "tool-call", "id": "tool-twice", "toolName": "record_async"})
            )
            await end.send(
                envelope(
                    {
                        "type": "tool-call",
                        "id": "tool-twice",
                        "toolName": "add",
                        "args": {"a": 1, "b": 1},
                    }
                )
            )
            seen = await barrier(end)
            while not results_for(seen, "tool-twice"):  # it may finish after the ping
                seen.append(await next_message(end))
            seen += await drain(end)
            assert results_for(seen, "tool-twice") == [
                {"type": "tool-result", "id": "tool-twice", "result": 2}
            ]
            assert ran == []


async def test_reused_live_id_cancels_the_older_call() -> None:
    registry = python_registry()
    gate = Gate()
    registry.add_tool("slow", gate)
    with anyio.fail_after(5):
        async with served(registry) as end:
            await end.send(
                envelope(
                    {"type": "tool-call", "id": "tool-same123", "toolName": "slow", "args": {}}
                )
            )
            await gate.started.wait()
            await end.send(
                envelope(
                    {
                        "type": "tool-call",
                        "id": "tool-same123",
                        "toolName": "add",
                        "args": {"a": 1, "b": 2},
                    }
                )
            )
            assert await next_message(end) == {
                "type": "tool-result",
                "id": "tool-same123",
                "result": 3,
            }
            await gate.cancelled.wait()
            gate.release.set()
            seen = await barrier(end)
            seen += await drain(end)
            assert results_for(seen, "tool-same123") == []


async def test_unsubscribe_stops_pushes() -> None:
    registry = python_registry()
    with anyio.fail_after(5):
        async with served(registry) as end:
            await end.send(json.loads(SUBSCRIBE))
            assert (await next_message(end))["type"] == "model-context-update"
            await end.send(json.loads(UNSUBSCRIBE))
            assert await barrier(end) == []  # the unsubscribe has been handled
            registry.add_instruction("Unseen.")
            seen = await barrier(end)
            seen += await drain(end)
            assert [m for m in seen if m["type"] == "model-context-update"] == []
            # subscribing again brings the current context
            await end.send(json.loads(SUBSCRIBE))
            update = await next_message(end)
            assert update["type"] == "model-context-update"
            assert update["context"]["system"] == "Python tools.\n\nUnseen."


async def test_a_peer_that_never_asked_gets_no_pushes() -> None:
    registry = python_registry()
    with anyio.fail_after(5):
        async with served(registry) as end:
            assert await barrier(end) == []
            registry.add_instruction("Unseen.")
            registry.add_tool("extra", parameters=EMPTY_OBJECT)
            seen = await barrier(end)
            seen += await drain(end)
            assert seen == []


async def test_frame_pushes_to_several_js_hosts_only_if_they_asked() -> None:
    registry = python_registry()
    frame = AssistantFrameProvider(registry)
    asked, silent = memory_pair(), memory_pair()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(frame.serve, asked[1])
            tg.start_soon(frame.serve, silent[1])
            await asked[0].send(json.loads(JS_HOST_REQUEST))
            await next_message(asked[0], "model-context-update")
            assert await barrier(silent[0]) == []
            registry.add_instruction("New.")
            update = await next_message(asked[0])
            assert update["context"]["system"] == "Python tools.\n\nNew."
            assert await barrier(silent[0]) == []
            tg.cancel_scope.cancel()


async def test_known_refusals_from_a_frame_keep_their_type() -> None:
    registry = ModelContextRegistry()
    registry.add_tool("off", lambda: 1, disabled=True)

    @registry.tool
    def add(a: int, b: int) -> int:
        return a + b

    async with connect_frame(registry) as host:
        with pytest.raises(ToolNotFoundError, match='Tool "nope" not found'):
            await host.call_tool("nope", {})
        with pytest.raises(ToolDisabledError, match='Tool "off" is disabled'):
            await host.call_tool("off", {})
        with pytest.raises(ToolArgumentsError, match='Invalid arguments for tool "add"'):
            await host.call_tool("add", {"a": "x"})
