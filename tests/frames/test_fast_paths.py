"""A frame reads what hosts send it without the message models (so a worker starts
without Pydantic): the fast paths must do exactly what decoding would have done."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assistant_frames.frames import protocol
from assistant_frames.frames.frame_machine import (
    CallCancelled,
    CallRequested,
    ContextWanted,
    FrameMachine,
    Malformed,
    Refused,
)

from helpers import CHANNEL

HOST_TYPES = (
    "model-context-request",
    "model-context-subscribe",
    "model-context-unsubscribe",
    "tool-cancel",
)

# Values of every kind a field might hold, valid or not (a str subclass, bytes...).
_Str = type("_Str", (str,), {})
field_values = st.none() | st.one_of(
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=6),
    st.binary(max_size=3),
    st.text(max_size=6).map(_Str),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
host_messages = st.fixed_dictionaries(
    {"type": st.sampled_from(HOST_TYPES) | st.text(max_size=4)},
    optional={
        "documentId": field_values,
        "requestId": field_values,
        "patches": field_values,
        "id": field_values,
        "extra": field_values,
    },
)


def _state(machine: FrameMachine[Any]) -> tuple[Any, ...]:
    return (
        machine.subscribed,
        machine.force_context,
        machine.request_id,
        machine.patches,
        machine.seq,
        dict(machine.calls),
        machine.malformed,
    )


def _event(event: object) -> tuple[Any, ...]:
    if isinstance(event, CallCancelled):
        return ("cancelled", event.handle)
    if isinstance(event, CallRequested):
        return ("call", event.id, event.tool_name, event.args, event.superseded, event.events)
    if isinstance(event, Malformed):
        return ("malformed", event.reason, event.reply, event.first)
    if isinstance(event, Refused):
        return ("refused", event.reply)
    assert event is None or isinstance(event, ContextWanted)
    return (type(event).__name__,)


def _decoding(raw: Any) -> tuple[str, Any] | None:
    """What decode() makes of ``raw``, in fast_host_message's terms."""
    try:
        message = protocol.decode(raw)
    except protocol.MalformedMessage:
        return None
    if isinstance(message, protocol.ModelContextRequest):
        return message.type, message.request_id
    if isinstance(message, protocol.ModelContextSubscribe):
        return message.type, message.wants_patches
    if isinstance(message, protocol.ModelContextUnsubscribe):
        return message.type, None
    if isinstance(message, protocol.ToolCancel):
        return message.type, message.id
    return None


@settings(max_examples=400, deadline=None, database=None)
@given(host_messages)
def test_what_the_fast_path_reads_decodes_to_the_same(message: dict[str, Any]) -> None:
    raw = {"channel": CHANNEL, "message": message}
    fast = protocol.fast_host_message(raw)
    if fast is not None:
        assert _decoding(raw) == fast


@settings(max_examples=400, deadline=None, database=None)
@given(st.lists(host_messages, min_size=1, max_size=6))
def test_a_frame_does_what_decoding_would_have_done(messages: list[dict[str, Any]]) -> None:
    fast: FrameMachine[str] = FrameMachine("doc")
    slow: FrameMachine[str] = FrameMachine("doc")
    for machine in (fast, slow):
        machine.track("c1", "handle-1")
        machine.track("1", "handle-2")
    for message in messages:
        raw = {"channel": CHANNEL, "message": message}
        fast_event = fast.receive(raw)
        with mock.patch.object(protocol, "fast_host_message", return_value=None):
            slow_event = slow.receive(raw)
        assert _event(fast_event) == _event(slow_event), message
        assert _state(fast) == _state(slow), message


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ({"type": "model-context-request"}, ("model-context-request", None)),
        ({"type": "model-context-request", "requestId": "r1"}, ("model-context-request", "r1")),
        ({"type": "model-context-subscribe"}, ("model-context-subscribe", False)),
        ({"type": "model-context-subscribe", "patches": True}, ("model-context-subscribe", True)),
        ({"type": "model-context-subscribe", "patches": 1}, ("model-context-subscribe", False)),
        ({"type": "model-context-unsubscribe", "x": 1}, ("model-context-unsubscribe", None)),
        ({"type": "tool-cancel", "id": "c1", "documentId": "d"}, ("tool-cancel", "c1")),
        # Left to decode(): what it might convert, or refuse.
        ({"type": "model-context-request", "requestId": 1}, None),
        ({"type": "model-context-request", "documentId": b"d"}, None),
        ({"type": "tool-cancel"}, None),
        ({"type": "tool-call", "id": "c1", "toolName": "t"}, None),
        ({"type": "model-context-update", "context": {}}, None),
    ],
)
def test_fast_host_message(message: dict[str, Any], expected: tuple[str, Any] | None) -> None:
    assert protocol.fast_host_message({"channel": CHANNEL, "message": message}) == expected
    assert protocol.fast_host_message({"channel": "other", "message": message}) is None


def test_the_message_models_are_protocols_names() -> None:
    from assistant_frames.frames import _messages

    for name in ("FrameMessage", "ModelContextUpdate", "ToolCall", "ToolResult"):
        assert getattr(protocol, name) is getattr(_messages, name)
        assert name in dir(protocol)
    assert protocol.three_tier_value is _messages.three_tier_value
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        protocol.Nope  # noqa: B018


def test_a_frame_serves_its_first_context_without_pydantic() -> None:
    """Over the wire, in a fresh interpreter: a host's subscribe and request, answered
    with the context, with no Pydantic model built (nor Pydantic imported) on the way."""
    code = textwrap.dedent(
        """
        import json, sys
        import anyio
        from assistant_frames import AssistantFrameProvider, ModelContextRegistry
        from assistant_frames.transports import memory_pair

        registry = ModelContextRegistry()

        @registry.tool
        async def add(a: int, b: int) -> int:
            return a + b

        CHANNEL = "assistant-ui-frame"

        async def main():
            host, frame = memory_pair()
            async with anyio.create_task_group() as tg:
                tg.start_soon(AssistantFrameProvider(registry).serve, frame)
                for message in (
                    {"type": "model-context-subscribe", "patches": True},
                    {"type": "model-context-request", "requestId": "r1"},
                ):
                    await host.send({"channel": CHANNEL, "message": message})
                received = (await host.receive())["message"]
                print(json.dumps([received, sorted(sys.modules)]))
                tg.cancel_scope.cancel()

        anyio.run(main)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    received, loaded = json.loads(done.stdout)
    assert received["type"] == "model-context-update"
    assert received["requestId"] == "r1"
    assert list(received["context"]["tools"]) == ["add"]
    assert "assistant_frames.frames._messages" not in loaded
    assert [m for m in loaded if m.split(".")[0] == "pydantic"] == []  # pydantic_core only
