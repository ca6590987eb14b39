"""Property tests: arbitrary JSON thrown at a frame or a host never stops it serving.

Each example runs the real provider or host over memory_pair() with anyio.run, once on
asyncio and once on trio (hypothesis drives sync tests; async fixtures do not mix in).
"""

from __future__ import annotations

from typing import Any

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assistant_frames import (
    AssistantFrameHost,
    AssistantFrameProvider,
    ModelContextRegistry,
    memory_pair,
)
from assistant_frames.frames.protocol import MalformedMessage, decode

from helpers import CHANNEL, EMPTY_OBJECT, MESSAGE_TYPES, body, envelope, nested_json

BACKENDS = ("asyncio", "trio")
# Longer than any generated id, so garbage can never touch the probe's calls.
PROBE_ID = "probe-call-0123456789abcdef"
PROBE_SYSTEM = "The probe context, which no generated value can equal by chance."

FUZZ = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

json_values = nested_json(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=10)
    | st.sampled_from([*MESSAGE_TYPES, CHANNEL, "add", "probe"]),
    max_size=4,
    key_size=8,
)
ids = st.text(max_size=10) | json_values
tool_names = st.sampled_from(["add", "probe", "nope", ""]) | st.text(max_size=8) | json_values
tool_specs = st.fixed_dictionaries(
    {},
    optional={
        "description": st.text(max_size=10) | json_values,
        "parameters": st.just(EMPTY_OBJECT) | json_values,
        "disabled": st.booleans() | json_values,
        "type": st.sampled_from(["frontend", "backend", "human"]) | json_values,
    },
)
contexts = (
    st.fixed_dictionaries(
        {},
        optional={
            "system": st.text(max_size=10) | json_values,
            "tools": st.dictionaries(st.text(max_size=8), tool_specs | json_values, max_size=3)
            | json_values,
        },
    )
    | json_values
)
# Anything may be wrong with these: any field missing, mistyped or extra.
loose_messages = st.fixed_dictionaries(
    {"type": st.sampled_from(MESSAGE_TYPES) | json_values},
    optional={
        "id": ids,
        "toolName": tool_names,
        "args": json_values
        | st.fixed_dictionaries({"a": st.integers() | json_values, "b": st.integers()}),
        "context": contexts,
        "result": json_values,
        "error": st.text(max_size=10) | json_values,
    },
)

# Valid messages of each type, which partially_valid() then may break in one place.
valid_contexts = st.fixed_dictionaries(
    {},
    optional={
        "system": st.text(max_size=10),
        "tools": st.dictionaries(
            st.text(max_size=8),
            st.fixed_dictionaries(
                {
                    "parameters": st.just(EMPTY_OBJECT)
                    | st.dictionaries(st.text(max_size=5), json_values)
                },
                optional={
                    "description": st.text(max_size=10),
                    "disabled": st.booleans(),
                    "type": st.sampled_from(["frontend", "backend", "human"]),
                },
            ),
            max_size=3,
        ),
    },
)
valid_messages = st.one_of(
    st.sampled_from(MESSAGE_TYPES[:3]).map(lambda kind: {"type": kind}),
    st.fixed_dictionaries(
        {"type": st.sampled_from(MESSAGE_TYPES[3:5]), "context": valid_contexts},
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("tool-call"),
            "id": st.text(max_size=10),
            "toolName": st.sampled_from(["add", "probe", "nope", ""]) | st.text(max_size=8),
            "args": st.fixed_dictionaries({"a": st.integers(), "b": st.integers()}) | json_values,
        }
    ),
    st.fixed_dictionaries({"type": st.just("tool-cancel"), "id": st.text(max_size=10)}),
    st.fixed_dictionaries(
        {"type": st.just("tool-result"), "id": st.text(max_size=10)},
        optional={"result": json_values, "error": st.text(max_size=10) | st.none()},
    ),
)


@st.composite
def partially_valid(draw: st.DrawFn) -> dict[str, Any]:
    message = dict(draw(valid_messages))
    how = draw(st.sampled_from(["keep", "drop", "replace", "add"]))
    key = draw(st.sampled_from(sorted(message)))
    if how == "drop":
        del message[key]
    elif how == "replace":
        message[key] = draw(json_values)
    elif how == "add":
        message[draw(st.text(max_size=6))] = draw(json_values)
    return message


messages = partially_valid() | loose_messages
garbage_values = st.lists(
    json_values
    | st.fixed_dictionaries({"channel": st.just(CHANNEL), "message": messages | json_values})
    | st.fixed_dictionaries({"channel": st.just(CHANNEL), "message": partially_valid()})
    | st.fixed_dictionaries({"channel": st.text(max_size=8) | json_values, "message": messages}),
    max_size=8,
)


# -- the sans-I/O core -------------------------------------------------------------------------


@settings(max_examples=200, deadline=None, database=None)
@given(st.lists(json_values, max_size=3) | json_values | garbage_values)
def test_decode_returns_or_raises_malformed_only(value: Any) -> None:
    values = value if isinstance(value, list) else [value]
    for item in values:
        try:
            decode(item)
        except MalformedMessage as exc:
            problem = exc
        else:
            continue
        assert isinstance(problem.reason, str)
        assert problem.tool_call_id is None or isinstance(problem.tool_call_id, str)


# -- a serving frame ---------------------------------------------------------------------------


def probe_registry() -> ModelContextRegistry:
    registry = ModelContextRegistry()
    registry.add_instruction(PROBE_SYSTEM)

    @registry.tool
    async def add(a: int, b: int) -> int:
        return a + b

    return registry


async def frame_survives(garbage: list[Any]) -> None:
    frame = AssistantFrameProvider(probe_registry(), max_argument_bytes=4096)
    host_end, frame_end = memory_pair()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(frame.serve, frame_end)
            for value in garbage:
                await host_end.send(value)
            await host_end.send(envelope({"type": "model-context-request"}))
            await host_end.send(
                envelope(
                    {
                        "type": "tool-call",
                        "id": PROBE_ID,
                        "toolName": "add",
                        "args": {"a": 20, "b": 22},
                    }
                )
            )
            got_update = got_result = False
            while not (got_update and got_result):
                message = body(await host_end.receive())
                if message["type"] == "model-context-update":
                    context = message["context"]
                    if context.get("system") == PROBE_SYSTEM and list(context["tools"]) == ["add"]:
                        got_update = True
                elif message["type"] == "tool-result" and message["id"] == PROBE_ID:
                    assert message == {"type": "tool-result", "id": PROBE_ID, "result": 42}
                    got_result = True
                else:  # only results to generated tool-calls may come back
                    assert message["type"] == "tool-result", message
                    assert isinstance(message["id"], str)
            assert frame.connection_count == 1
            tg.cancel_scope.cancel()


@FUZZ
@given(garbage_values)
def test_frame_survives_arbitrary_input(garbage: list[Any]) -> None:
    for backend in BACKENDS:
        anyio.run(frame_survives, garbage, backend=backend)


# -- a host ------------------------------------------------------------------------------------


async def host_survives(garbage: list[Any]) -> None:
    host_end, frame_end = memory_pair()
    with anyio.fail_after(10):
        async with AssistantFrameHost(host_end, timeout=5) as host:
            first = await frame_end.receive()
            assert first == envelope({"type": "model-context-request"})
            changed = anyio.Event()

            def on_change() -> None:
                nonlocal changed
                changed.set()
                changed = anyio.Event()

            host.subscribe(on_change)
            for value in garbage:
                await frame_end.send(value)
            await frame_end.send(
                envelope(
                    {
                        "type": "model-context-update",
                        "context": {
                            "system": PROBE_SYSTEM,
                            "tools": {"probe": {"parameters": EMPTY_OBJECT}},
                        },
                    }
                )
            )
            while host.get_model_context().system != PROBE_SYSTEM:
                await changed.wait()
            assert list(host.get_model_context().tools) == ["probe"]
            assert host.connected

            result: list[Any] = []

            async def call() -> None:
                result.append(await host.get_model_context().call_tool("probe", {"x": 1}))

            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                while True:
                    message = (await frame_end.receive())["message"]
                    if message["type"] == "tool-call":
                        break
                    assert message["type"] == "model-context-subscribe", message
                assert message["toolName"] == "probe"
                assert message["args"] == {"x": 1}
                await frame_end.send(
                    envelope({"type": "tool-result", "id": message["id"], "result": {"ok": True}})
                )
            assert result == [{"ok": True}]


@FUZZ
@given(garbage_values)
def test_host_survives_arbitrary_input(garbage: list[Any]) -> None:
    for backend in BACKENDS:
        anyio.run(host_survives, garbage, backend=backend)
