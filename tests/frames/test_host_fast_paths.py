"""A host reads the contexts, patches and disposals frames send it without the message
models (so a host, and the CLI, start without Pydantic): the fast path must do exactly
what decoding would have done."""

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
from test_fast_paths import field_values  # beside this file, as pytest imports it
from test_machines import ToolFactory

from assistant_frames.frames import protocol
from assistant_frames.frames.host_machine import HostMachine

from helpers import CHANNEL

FRAME_TYPES = (
    "model-context-update",
    "model-context-response",
    "model-context-patch",
    "provider-disposed",
)

tool_specs = st.dictionaries(
    st.sampled_from(("a", "b", "c", "d")),
    st.fixed_dictionaries({}, optional={"description": st.text(max_size=4)}) | field_values,
    max_size=3,
)
contexts = st.fixed_dictionaries(
    {},
    optional={
        "system": field_values,
        "tools": tool_specs | field_values,
        "uiResources": st.none() | st.just([]) | field_values,
        "extra": field_values,
    },
)
names = st.lists(st.sampled_from(("a", "b", "c", "d")), max_size=4)
# Mostly what a frame sends (so the fast path takes many), each field sometimes anything.
valid_contexts = st.fixed_dictionaries(
    {},
    optional={
        "system": st.none() | st.text(max_size=3),
        "tools": tool_specs,
        "uiResources": st.none() | st.just([]),
        "extra": field_values,
    },
)
likely_messages = st.fixed_dictionaries(
    {
        "type": st.sampled_from(FRAME_TYPES),
        "context": valid_contexts,
        "seq": st.integers(0, 4),
    },
    optional={
        "documentId": st.none() | st.sampled_from(("d1", "d2")) | field_values,
        "requestId": st.none() | st.text(max_size=2) | field_values,
        "removed": names | field_values,
        "order": st.none() | names | field_values,
    },
)
any_messages = st.fixed_dictionaries(
    {"type": st.sampled_from(FRAME_TYPES) | st.text(max_size=4)},
    optional={
        "documentId": st.none() | st.sampled_from(("d1", "d2")) | field_values,
        "requestId": field_values,
        "seq": st.integers(0, 4) | field_values,
        "context": contexts | field_values,
        "removed": names | field_values | st.lists(field_values, max_size=2),
        "order": st.none() | names | field_values,
        "extra": field_values,
    },
)
frame_messages = likely_messages | any_messages


def _fields(message: Any) -> tuple[Any, ...]:
    """What a host reads of a decoded or fast-read message."""
    fields: tuple[Any, ...] = (message.type, message.document_id)
    if message.type in ("model-context-update", "model-context-response"):
        seq = message.seq if message.type == "model-context-update" else None
        fields += (message.context, message.request_id, seq)
    elif message.type == "model-context-patch":
        fields += (message.seq, message.context, message.removed, message.order)
    return fields


@settings(max_examples=300, deadline=None, database=None)
@given(frame_messages)
def test_what_the_fast_path_reads_decodes_to_the_same(message: dict[str, Any]) -> None:
    raw = {"channel": CHANNEL, "message": message}
    fast = protocol.fast_frame_message(raw)
    if fast is not None:
        decoded = protocol.decode(raw)  # never raises: the fast path took only valid ones
        assert _fields(fast) == _fields(decoded)


def _state(machine: HostMachine) -> tuple[Any, ...]:
    context = machine.context
    return (
        context.system,
        {name: (tool.description, tool.parameters) for name, tool in context.tools.items()},
        list(context.tools),
        dict(machine.wire or {}),
        machine.document,
        machine.patch_seq,
        machine.resyncing,
        machine.subscribed,
        machine.refusal is not None,
        machine.malformed,
        machine.ignored,
    )


def _event(event: object) -> tuple[Any, ...]:
    return (type(event).__name__, getattr(event, "sends", None), getattr(event, "reason", None))


@settings(max_examples=200, deadline=None, database=None)
@given(st.lists(frame_messages, min_size=1, max_size=6))
def test_a_host_does_what_decoding_would_have_done(messages: list[dict[str, Any]]) -> None:
    fast = HostMachine(ToolFactory(), id_prefix="t-")
    slow = HostMachine(ToolFactory(), id_prefix="t-")
    for machine in (fast, slow):
        machine.open()
    for message in messages:
        raw = {"channel": CHANNEL, "message": message}
        fast_event = fast.receive(raw)
        with mock.patch.object(protocol, "fast_frame_message", return_value=None):
            slow_event = slow.receive(raw)
        assert _event(fast_event) == _event(slow_event), message
        assert _state(fast) == _state(slow), message


UPDATE = "model-context-update"


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (
            {"type": UPDATE, "context": {"system": "s", "tools": {}, "x": 1}, "seq": 3},
            (UPDATE, {"system": "s", "tools": {}}, None, 3, None),
        ),
        (
            {"type": "model-context-response", "context": {}, "seq": 3, "requestId": "r"},
            ("model-context-response", {}, "r", None, None),
        ),
        (
            {"type": "model-context-patch", "seq": 1, "context": {}, "documentId": "d"},
            ("model-context-patch", 1, {}, [], None, "d"),
        ),
        (
            {"type": "model-context-patch", "seq": 2, "context": {}, "removed": ["a"]},
            ("model-context-patch", 2, {}, ["a"], None, None),
        ),
        ({"type": "provider-disposed", "x": 1}, ("provider-disposed", None)),
        # Left to decode(): what it might convert, or refuse.
        ({"type": UPDATE, "context": {"system": 1}}, None),
        ({"type": UPDATE, "context": {}, "seq": True}, None),
        ({"type": UPDATE, "context": {}, "requestId": 1}, None),
        ({"type": UPDATE, "context": []}, None),
        ({"type": UPDATE}, None),
        ({"type": "model-context-patch", "context": {}}, None),
        ({"type": "model-context-patch", "seq": 1, "context": {}, "removed": None}, None),
        ({"type": "model-context-patch", "seq": 1, "context": {}, "order": [1]}, None),
        ({"type": "provider-disposed", "documentId": 1}, None),
        ({"type": "tool-result", "id": "c1"}, None),
    ],
)
def test_fast_frame_message(message: dict[str, Any], expected: tuple[Any, ...] | None) -> None:
    fast = protocol.fast_frame_message({"channel": CHANNEL, "message": message})
    assert (None if fast is None else tuple(fast)) == expected
    assert protocol.fast_frame_message({"channel": "other", "message": message}) is None


def test_a_host_takes_its_first_context_and_patches_without_pydantic() -> None:
    """In a fresh interpreter: a host opened, sent a context and a patch, holding the
    tools they give, with no Pydantic imported on the way (the frame is played by hand)."""
    code = textwrap.dedent(
        """
        import json, sys
        import anyio
        from assistant_frames import AssistantFrameHost
        from assistant_frames.transports import memory_pair

        CHANNEL = "assistant-ui-frame"
        TOOL = {"description": "Add.", "parameters": {"type": "object"}}

        async def main():
            host_end, frame = memory_pair()
            async with AssistantFrameHost(host_end) as host:
                await frame.receive()  # the host's model-context-request
                context = {"system": "hi", "tools": {"add": TOOL}}
                update = {"type": "model-context-update", "context": context}
                await frame.send({"channel": CHANNEL, "message": update})
                first = await host.wait_for_context(timeout=5)
                subscribe = (await frame.receive())["message"]
                patch = {"type": "model-context-patch", "seq": 1,
                         "context": {"tools": {"sub": TOOL}}}
                changed = anyio.Event()
                host.subscribe(changed.set)
                await frame.send({"channel": CHANNEL, "message": patch})
                with anyio.fail_after(5):
                    await changed.wait()
                now = host.get_model_context()
                print(json.dumps([subscribe, first.system, sorted(first.tools),
                                  sorted(now.tools), sorted(sys.modules)]))

        anyio.run(main)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    subscribe, system, first, now, loaded = json.loads(done.stdout)
    assert subscribe == {"type": "model-context-subscribe", "patches": True}
    assert (system, first, now) == ("hi", ["add"], ["add", "sub"])
    assert "assistant_frames.frames._messages" not in loaded
    assert [m for m in loaded if m.split(".")[0] == "pydantic"] == []  # pydantic_core only
