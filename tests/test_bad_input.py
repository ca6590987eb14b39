"""Bad input, both directions: nothing crashes, nothing stops serving.

Every test ends with a valid call on the same connection.
"""

from __future__ import annotations

import logging
import re
from functools import partial
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from assistant_frames import (
    AssistantFrameHost,
    AssistantFrameProvider,
    MemoryTransport,
    ToolArgumentsError,
    ToolCallError,
    ToolCallTimeout,
    memory_pair,
)

from helpers import (
    CHANNEL,
    EMPTY_OBJECT,
    Gate,
    Outcome,
    calculator,
    call_raw,
    envelope,
    next_message,
    raw_frame,
    serve_frame,
    served,
)

pytestmark = pytest.mark.anyio

LOGGER = "assistant_frames.frames"
NOT_SENDABLE = "Tool result could not be sent across the frame boundary"
GOOD_CONTEXT = {
    "system": "Good.",
    "tools": {"add": {"description": "Add", "parameters": EMPTY_OBJECT}},
}


def case_id(value: Any) -> str:
    """``repr`` without memory addresses: the same test ids in every process (pytest-xdist's
    workers must collect identical ids)."""
    return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(value))


def warnings_from_frames(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == LOGGER and r.levelno >= logging.WARNING]


# -- the frame side: a Python frame fed by a raw host end ---------------------------------------


async def frame_still_serves(end: MemoryTransport) -> list[Any]:
    """A valid call succeeds; returns what arrived before its result."""
    result, before = await call_raw(end, "add", {"a": 2, "b": 3})
    assert "error" not in result
    assert result["result"] == 5
    return before


VALID_CALL = {"type": "tool-call", "id": "x-1", "toolName": "add", "args": {"a": 1, "b": 1}}

NOT_OURS: list[Any] = [
    "hello",
    "",
    42,
    -1.5,
    True,
    None,
    [],
    [envelope(VALID_CALL)],
    {},
    {"channel": "other", "message": VALID_CALL},
    {"channel": "ASSISTANT-UI-FRAME", "message": VALID_CALL},
    {"channel": None, "message": VALID_CALL},
    {"channel": [CHANNEL], "message": VALID_CALL},
    {"message": VALID_CALL},
    {"type": "tool-call", "id": "x", "toolName": "add", "args": {}},  # no envelope
]


@pytest.mark.parametrize("garbage", NOT_OURS, ids=case_id)
async def test_frame_ignores_what_is_not_ours(
    garbage: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with anyio.fail_after(5):
        async with served(calculator()) as end:
            await end.send(garbage)
            assert await frame_still_serves(end) == []
    assert warnings_from_frames(caplog) == []


MALFORMED_DROPPED: list[Any] = [
    None,
    "tool-call",
    7,
    [VALID_CALL],
    {},
    {"type": None},
    {"type": 5},
    {"type": "unknown-type"},
    {"type": "TOOL-CALL", "id": "x", "toolName": "add"},
    {"id": "x", "toolName": "add", "args": {}},
    {"type": "tool-call", "toolName": "add", "args": {}},
    {"type": "tool-call", "id": 5, "toolName": "add", "args": {}},
    {"type": "tool-call", "id": None, "toolName": "add", "args": {}},
    {"type": "tool-call", "id": ["x"], "toolName": "add", "args": {}},
    {"type": "tool-cancel"},
    {"type": "tool-cancel", "id": 3},
    {"type": "model-context-update"},
    {"type": "model-context-update", "context": "nope"},
    {"type": "tool-result", "result": 1},
]


@pytest.mark.parametrize("message", MALFORMED_DROPPED, ids=case_id)
async def test_frame_drops_malformed_messages_with_one_warning(
    message: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with anyio.fail_after(5):
        async with served(calculator()) as end:
            await end.send(envelope(message))
            await end.send(envelope(message))
            assert await frame_still_serves(end) == []
    assert len(warnings_from_frames(caplog)) == 1


@pytest.mark.parametrize(
    "message",
    [
        {"type": "tool-call", "id": "tool-bad0001", "args": {}},
        {"type": "tool-call", "id": "tool-bad0001", "toolName": 5, "args": {}},
        {"type": "tool-call", "id": "tool-bad0001", "toolName": None},
        {"type": "tool-call", "id": "tool-bad0001", "toolName": {"name": "add"}},
    ],
    ids=case_id,
)
async def test_frame_answers_a_malformed_tool_call_that_has_an_id(
    message: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with anyio.fail_after(5):
        async with served(calculator()) as end:
            await end.send(envelope(message))
            (reply,) = await frame_still_serves(end)
            assert set(reply) == {"type", "id", "error"}
            assert reply["type"] == "tool-result"
            assert reply["id"] == "tool-bad0001"
            assert reply["error"].startswith("Malformed tool-call: ")
            assert "toolName" in reply["error"]
    assert len(warnings_from_frames(caplog)) == 1


async def test_frame_ignores_host_bound_messages_it_receives(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with anyio.fail_after(5):
        async with served(calculator()) as end:
            for message in (
                {"type": "model-context-update", "context": GOOD_CONTEXT},
                {"type": "model-context-response", "context": {}},
                {"type": "tool-result", "id": "x-1", "result": 1},
                {"type": "tool-result", "id": "x-2", "error": "no"},
            ):
                await end.send(envelope(message))
            assert await frame_still_serves(end) == []
    assert warnings_from_frames(caplog) == []


@pytest.mark.parametrize(
    ("args", "detail"),
    [
        ({"a": "x", "b": 1}, "a"),
        ({"a": 1}, "b"),
        ({}, "a"),
        (None, "a"),
        ([1, 2], ""),
        ("1, 2", ""),
        (3, ""),
    ],
    ids=case_id,
)
async def test_frame_refuses_arguments_that_fail_the_schema(args: Any, detail: str) -> None:
    with anyio.fail_after(5):
        async with served(calculator()) as end:
            result, _ = await call_raw(end, "add", args)
            assert result["error"].startswith('Invalid arguments for tool "add": ')
            assert detail in result["error"]
            assert await frame_still_serves(end) == []


async def test_frame_refuses_arguments_that_fail_a_dict_schema() -> None:
    registry = calculator()
    registry.add_tool(
        "echo",
        lambda args: args,
        parameters={
            "type": "object",
            "properties": {"text": {"type": "string", "maxLength": 5}},
            "required": ["text"],
            "additionalProperties": False,
        },
    )
    with anyio.fail_after(5):
        async with served(registry) as end:
            assert (await call_raw(end, "echo", {"text": "hi"}))[0]["result"] == {"text": "hi"}
            for bad in ({"text": "too long"}, {"text": 1}, {}, {"text": "a", "more": 1}):
                result, _ = await call_raw(end, "echo", bad)
                assert result["error"].startswith('Invalid arguments for tool "echo": ')
            assert await frame_still_serves(end) == []


async def test_frame_refuses_oversized_arguments() -> None:
    registry = calculator()
    seen: list[Any] = []
    registry.add_tool("take", seen.append, parameters={"type": "object"})
    with anyio.fail_after(5):
        async with served(registry, max_argument_bytes=64) as end:
            result, _ = await call_raw(end, "take", {"blob": "x" * 100})
            assert "error" in result
            assert "64" in result["error"]
            assert '"take"' in result["error"]
            assert seen == []
            result, _ = await call_raw(end, "take", {"blob": "x" * 10})
            assert "error" not in result
            assert await frame_still_serves(end) == []


async def test_frame_refuses_oversized_string_arguments() -> None:
    """A tool whose arguments are a bare string must not slip past the size limit."""
    registry = calculator()
    seen: list[Any] = []
    registry.add_tool("shout", seen.append, parameters={"type": "string"})
    with anyio.fail_after(5):
        async with served(registry, max_argument_bytes=64) as end:
            result, _ = await call_raw(end, "shout", "x" * 1000)
            assert "64" in result.get("error", ""), result
            assert seen == []
            assert await frame_still_serves(end) == []


async def test_frame_sends_only_the_message_of_a_raising_tool() -> None:
    registry = calculator()

    def deep() -> None:
        raise ValueError("bad value: 42")

    @registry.tool
    def fail() -> None:
        deep()

    @registry.tool
    def fail_quietly() -> None:
        raise RuntimeError

    @registry.tool
    async def fail_async() -> None:
        await anyio.lowlevel.checkpoint()
        raise KeyError("missing")

    with anyio.fail_after(5):
        async with served(registry) as end:
            result, _ = await call_raw(end, "fail", {})
            assert result == {"type": "tool-result", "id": result["id"], "error": "bad value: 42"}
            for name in ("fail_quietly", "fail_async"):
                result, _ = await call_raw(end, name, {})
                error = result["error"]
                assert isinstance(error, str)
                assert error
                assert "Traceback" not in error
                assert "File " not in error
                assert "line " not in error
            assert await frame_still_serves(end) == []


async def test_host_times_out_a_hanging_tool_and_the_connection_survives() -> None:
    registry = calculator()
    gate = Gate()
    registry.add_tool("hang", gate)
    with anyio.fail_after(5):
        async with serve_frame(AssistantFrameProvider(registry)) as host:
            with pytest.raises(ToolCallTimeout):
                await host.call_tool("hang", {}, timeout=0.2)
            await gate.cancelled.wait()
            assert await host.call_tool("add", {"a": 2, "b": 3}) == 5


class Unprintable:
    pass


def _cyclic() -> list[Any]:
    value: list[Any] = []
    value.append(value)
    return value


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (object(), NOT_SENDABLE),
        (Unprintable(), NOT_SENDABLE),
        ({"nested": [object()]}, NOT_SENDABLE),
        (_cyclic(), NOT_SENDABLE),
        ({3, 1, 2}, [1, 2, 3]),
        ((1, "a"), [1, "a"]),
        (float("inf"), None),
        ({"n": float("nan")}, {"n": None}),
    ],
    ids=case_id,
)
async def test_frame_results_that_are_not_json(value: Any, expected: Any) -> None:
    registry = calculator()
    registry.add_tool("odd", lambda: value)
    with anyio.fail_after(5):
        async with served(registry) as end:
            result, _ = await call_raw(end, "odd", {})
            if expected == NOT_SENDABLE:
                assert result.get("error") == NOT_SENDABLE, result
            else:
                assert "error" not in result
                got = result["result"]
                assert (sorted(got) if isinstance(value, set) else got) == expected
            assert await frame_still_serves(end) == []


async def test_frame_ignores_cancels_for_unknown_and_finished_ids(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with anyio.fail_after(5):
        async with served(calculator()) as end:
            await end.send(envelope({"type": "tool-cancel", "id": "tool-never"}))
            result, _ = await call_raw(end, "add", {"a": 1, "b": 1})
            await end.send(envelope({"type": "tool-cancel", "id": result["id"]}))
            await end.send(envelope({"type": "tool-cancel", "id": ""}))
            assert await frame_still_serves(end) == []
    assert warnings_from_frames(caplog) == []


async def test_frame_duplicate_ids() -> None:
    registry = calculator()
    gate = Gate()
    registry.add_tool("slow", gate)
    with anyio.fail_after(5):
        async with served(registry) as end:
            # an id may be reused once its call has finished: both are answered
            for expected in (2, 4):
                await end.send(
                    envelope(
                        {
                            "type": "tool-call",
                            "id": "dup",
                            "toolName": "add",
                            "args": {"a": expected // 2, "b": expected // 2},
                        }
                    )
                )
                assert await next_message(end) == {
                    "type": "tool-result",
                    "id": "dup",
                    "result": expected,
                }
            # a live id reused: the older call is cancelled, only the newer answered
            await end.send(envelope({"type": "tool-call", "id": "live", "toolName": "slow"}))
            await gate.started.wait()
            await end.send(envelope({"type": "tool-call", "id": "live", "toolName": "nope"}))
            assert await next_message(end) == {
                "type": "tool-result",
                "id": "live",
                "error": 'Tool "nope" not found',
            }
            await gate.cancelled.wait()
            gate.release.set()
            assert await frame_still_serves(end) == []


# -- the host side: a Python host fed by a raw frame end ---------------------------------------


async def host_still_works(host: AssistantFrameHost, frame_end: MemoryTransport) -> None:
    """A valid call round-trips through the raw frame end."""
    outcome = Outcome()
    async with anyio.create_task_group() as tg:
        tg.start_soon(outcome.run, host, "add", {"a": 2, "b": 3})
        while True:
            message = (await frame_end.receive())["message"]
            if message["type"] == "tool-call":
                break
        assert message["toolName"] == "add"
        assert message["args"] == {"a": 2, "b": 3}
        await frame_end.send(envelope({"type": "tool-result", "id": message["id"], "result": 5}))
        await outcome.done.wait()
    assert outcome.error is None
    assert outcome.result == 5


@pytest.mark.parametrize("garbage", NOT_OURS, ids=case_id)
async def test_host_ignores_what_is_not_ours(
    garbage: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with anyio.fail_after(5):
        async with raw_frame(GOOD_CONTEXT) as (host, frame_end):
            before = host.get_model_context()
            await frame_end.send(garbage)
            await host_still_works(host, frame_end)
            assert host.get_model_context() is before
            assert host.connected
    assert warnings_from_frames(caplog) == []


HOST_MALFORMED: list[Any] = [
    None,
    "model-context-update",
    [GOOD_CONTEXT],
    {},
    {"type": "unknown-type"},
    {"type": "tool-result"},
    {"type": "tool-result", "id": 5, "result": 1},
    {"type": "tool-result", "id": None, "error": "x"},
    {"type": "model-context-update"},
    {"type": "model-context-update", "context": "text"},
    {"type": "model-context-update", "context": None},
    {"type": "model-context-update", "context": [1, 2]},
    {"type": "model-context-update", "context": {"tools": "add"}},
    {"type": "model-context-update", "context": {"tools": ["add"]}},
    {"type": "model-context-update", "context": {"tools": {"t": "not an object"}}},
    {"type": "model-context-update", "context": {"tools": {"t": {"parameters": "string"}}}},
    {"type": "model-context-update", "context": {"tools": {"t": {"parameters": [1]}}}},
    {"type": "model-context-update", "context": {"tools": {"t": {"description": 5}}}},
    {"type": "model-context-update", "context": {"tools": {"t": {"type": ["x"]}}}},
    {"type": "model-context-update", "context": {"tools": {"": {"parameters": EMPTY_OBJECT}}}},
    {"type": "model-context-update", "context": {"system": 5}},
    {"type": "model-context-update", "context": {"system": {"text": "x"}}},
    {"type": "model-context-update", "context": {"system": ["a", "b"]}},
    {"type": "model-context-response", "context": {"system": 1, "tools": {}}},
    # MCP Apps' ui:// resources (this library's optional field) that are not resources
    {"type": "model-context-update", "context": {**GOOD_CONTEXT, "uiResources": "x"}},
    {"type": "model-context-update", "context": {**GOOD_CONTEXT, "uiResources": [1]}},
    {
        "type": "model-context-update",
        "context": {**GOOD_CONTEXT, "uiResources": [{"uri": "https://a.example", "html": ""}]},
    },
]


@pytest.mark.parametrize("message", HOST_MALFORMED, ids=case_id)
async def test_host_keeps_its_last_good_context_and_warns_once(
    message: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with anyio.fail_after(5):
        async with raw_frame(GOOD_CONTEXT) as (host, frame_end):
            before = host.get_model_context()
            notified: list[int] = []
            host.subscribe(lambda: notified.append(1))
            await frame_end.send(envelope(message))
            await frame_end.send(envelope(message))
            await host_still_works(host, frame_end)  # also proves both were handled
            assert host.get_model_context() is before
            assert before.system == "Good."
            assert list(before.tools) == ["add"]
            assert notified == []
            assert host.connected
    assert len(warnings_from_frames(caplog)) == 1


async def test_host_skips_a_malformed_first_context() -> None:
    with anyio.fail_after(5):
        host_end, frame_end = memory_pair()
        async with AssistantFrameHost(host_end, timeout=5) as host:
            await frame_end.receive()
            await frame_end.send(envelope({"type": "model-context-update", "context": 1}))
            await frame_end.send(
                envelope({"type": "model-context-update", "context": GOOD_CONTEXT})
            )
            context = await host.wait_for_context()
            assert context.system == "Good."
            await frame_end.receive()  # subscribe
            await host_still_works(host, frame_end)


async def test_host_ignores_results_for_unknown_ids(caplog: pytest.LogCaptureFixture) -> None:
    with anyio.fail_after(5):
        async with raw_frame(GOOD_CONTEXT) as (host, frame_end):
            for message in (
                {"type": "tool-result", "id": "tool-unknown", "result": 1},
                {"type": "tool-result", "id": "", "error": "x"},
                {"type": "tool-cancel", "id": "tool-unknown"},  # frame-bound, ignored
                {"type": "tool-call", "id": "t", "toolName": "add", "args": {}},  # likewise
                {"type": "model-context-request"},
            ):
                await frame_end.send(envelope(message))
            await host_still_works(host, frame_end)
    assert warnings_from_frames(caplog) == []


async def test_host_refuses_a_duplicate_pending_id() -> None:
    with anyio.fail_after(5):
        async with raw_frame(GOOD_CONTEXT) as (host, frame_end), anyio.create_task_group() as tg:
            first = Outcome()
            tg.start_soon(partial(first.run, host, "add", {}, tool_call_id="mine"))
            call = (await frame_end.receive())["message"]
            assert call["id"] == "mine"
            with pytest.raises(ValueError, match="already pending"):
                await host.call_tool("add", {}, tool_call_id="mine")
            await frame_end.send(envelope({"type": "tool-result", "id": "mine", "result": "ok"}))
            await first.done.wait()
            assert first.result == "ok"
            await host_still_works(host, frame_end)


@pytest.mark.parametrize("args", [object(), {"a": object()}, [1, Unprintable()]], ids=case_id)
async def test_host_refuses_arguments_that_are_not_json(args: Any) -> None:
    with anyio.fail_after(5):
        async with serve_frame(AssistantFrameProvider(calculator())) as host:
            with pytest.raises(ToolArgumentsError) as info:
                await host.call_tool("add", args)
            assert isinstance(info.value, ToolCallError)
            assert info.value.tool_name == "add"
            assert host.connected
            assert await host.call_tool("add", {"a": 2, "b": 3}) == 5
            # JSON-able non-dict values are converted, not refused
            with pytest.raises(ToolCallError, match="Invalid arguments"):
                await host.call_tool("add", {1, 2})
            assert await host.call_tool("add", {"a": 2, "b": 3}) == 5
