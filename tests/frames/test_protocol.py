"""The sans-I/O frame protocol: decoding, encoding, context serialization, JSON values."""

from __future__ import annotations

import dataclasses
import json
import math
from datetime import date
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from assistant_frames import ModelContext, Tool
from assistant_frames.frames.protocol import (
    CHANNEL,
    MalformedMessage,
    ModelContextRequest,
    ModelContextResponse,
    ModelContextSubscribe,
    ModelContextUnsubscribe,
    ModelContextUpdate,
    NotJSONSerializable,
    ToolCall,
    ToolCancel,
    ToolResult,
    check_tool,
    check_tools,
    decode,
    encode_context_request,
    encode_context_subscribe,
    encode_context_unsubscribe,
    encode_context_update,
    encode_tool_call,
    encode_tool_cancel,
    encode_tool_error,
    encode_tool_result,
    serialize_context,
    to_json_value,
)

from helpers import MESSAGE_TYPES, envelope, nested_json

# Messages captured from the real JavaScript @assistant-ui/core 0.3.20 (fixtures of real
# traffic; keep them byte-for-byte as captured).
GOLDEN_JS_MESSAGES: dict[str, str] = {
    "update": (
        '{"channel":"assistant-ui-frame","message":{"type":"model-context-update","context":'
        '{"system":"You can add numbers with the add tool.","tools":{"add":{"description":'
        '"Add two numbers","parameters":{"$schema":"http://json-schema.org/draft-07/schema#",'
        '"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},'
        '"required":["a","b"]}},"fail":{"description":"Always throws","parameters":'
        '{"$schema":"http://json-schema.org/draft-07/schema#","type":"object",'
        '"properties":{}}}}}}}'
    ),
    "result-ok": (
        '{"channel":"assistant-ui-frame","message":'
        '{"type":"tool-result","id":"call-1","result":{"sum":5}}}'
    ),
    "result-error": (
        '{"channel":"assistant-ui-frame","message":'
        '{"type":"tool-result","id":"call-2","error":"boom from iframe"}}'
    ),
    "result-not-found": (
        '{"channel":"assistant-ui-frame","message":'
        '{"type":"tool-result","id":"call-3","error":"Tool \\"nope\\" not found"}}'
    ),
    "request": '{"channel":"assistant-ui-frame","message":{"type":"model-context-request"}}',
    "tool-call": (
        '{"channel":"assistant-ui-frame","message":{"type":"tool-call","id":"tool-cKFNxAk",'
        '"toolName":"add","args":{"a":20,"b":22}}}'
    ),
}


def _golden(key: str) -> Any:
    return json.loads(GOLDEN_JS_MESSAGES[key])


# -- not ours --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        None,
        0,
        1.5,
        True,
        "assistant-ui-frame",
        '{"channel":"assistant-ui-frame","message":{"type":"model-context-request"}}',
        b"bytes",
        [],
        [CHANNEL, {"type": "model-context-request"}],
        {},
        {"message": {"type": "model-context-request"}},
        {"channel": "other", "message": {"type": "model-context-request"}},
        {"channel": "assistant-ui-frame-v2", "message": {"type": "tool-call"}},
        {"channel": None, "message": {"type": "model-context-request"}},
        {"channel": ["assistant-ui-frame"], "message": {"type": "model-context-request"}},
        {"jsonrpc": "2.0", "method": "ui/initialize", "id": 1},
    ],
)
def test_decode_ignores_what_is_not_ours(raw: object) -> None:
    assert decode(raw) is None


# -- each message type -----------------------------------------------------------------------


def test_decode_request_subscribe_unsubscribe() -> None:
    assert isinstance(decode(envelope({"type": "model-context-request"})), ModelContextRequest)
    assert isinstance(decode(envelope({"type": "model-context-subscribe"})), ModelContextSubscribe)
    assert isinstance(
        decode(envelope({"type": "model-context-unsubscribe"})), ModelContextUnsubscribe
    )


@pytest.mark.parametrize(
    ("type_", "cls"),
    [
        ("model-context-update", ModelContextUpdate),
        ("model-context-response", ModelContextResponse),
    ],
)
def test_decode_context_messages(type_: str, cls: type[Any]) -> None:
    context = {
        "system": "Be brief.",
        "tools": {
            "t": {
                "description": "A tool",
                "parameters": {"type": "object", "properties": {}},
                "disabled": True,
                "type": "frontend",
            }
        },
    }
    message = decode(envelope({"type": type_, "context": context}))
    assert isinstance(message, cls)
    assert message.context == context


def test_decode_empty_context() -> None:
    message = decode(envelope({"type": "model-context-update", "context": {}}))
    assert isinstance(message, ModelContextUpdate)
    assert message.context == {}


def test_decode_tool_call_with_tool_name_alias() -> None:
    message = decode(
        envelope({"type": "tool-call", "id": "c1", "toolName": "add", "args": {"a": [1, None]}})
    )
    assert isinstance(message, ToolCall)
    assert message.id == "c1"
    assert message.tool_name == "add"
    assert message.args == {"a": [1, None]}


def test_decode_tool_cancel() -> None:
    message = decode(envelope({"type": "tool-cancel", "id": "c9"}))
    assert isinstance(message, ToolCancel)
    assert message.id == "c9"


def test_decode_ignores_extra_fields() -> None:
    message = decode(envelope({"type": "tool-cancel", "id": "c9", "reason": "timeout"}))
    assert isinstance(message, ToolCancel)
    assert decode({"channel": CHANNEL, "message": {"type": "model-context-request"}, "x": 1})


def test_tool_result_success() -> None:
    message = decode(envelope({"type": "tool-result", "id": "r1", "result": [1, 2]}))
    assert isinstance(message, ToolResult)
    assert message.failed is False
    assert message.result == [1, 2]


@pytest.mark.parametrize(
    "message",
    [
        {"type": "tool-result", "id": "r"},
        {"type": "tool-result", "id": "r", "error": None},
        {"type": "tool-result", "id": "r", "result": None},
        {"type": "tool-result", "id": "r", "result": None, "error": None},
    ],
)
def test_tool_result_missing_result_or_null_error_is_success(message: dict[str, Any]) -> None:
    decoded = decode(envelope(message))
    assert isinstance(decoded, ToolResult)
    assert decoded.failed is False
    assert decoded.result is None


@pytest.mark.parametrize("error", ["boom", ""])
def test_tool_result_string_error_is_failure(error: str) -> None:
    decoded = decode(envelope({"type": "tool-result", "id": "r", "error": error}))
    assert isinstance(decoded, ToolResult)
    assert decoded.failed is True
    assert decoded.error == error


def test_tool_result_string_error_wins_over_result() -> None:
    decoded = decode(envelope({"type": "tool-result", "id": "r", "result": 1, "error": "bad"}))
    assert isinstance(decoded, ToolResult)
    assert decoded.failed is True


# -- malformed -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        None,
        "model-context-request",
        ["model-context-request"],
        42,
        {},
        {"type": "unknown-type"},
        {"type": None},
        {"type": 3},
        {"type": ["tool-call"]},
        {"type": {"tool-call": 1}},
        {"type": "tool-cancel"},
        {"type": "tool-cancel", "id": 5},
        {"type": "tool-result"},
        {"type": "tool-result", "id": None, "result": 1},
        {"type": "model-context-update"},
        {"type": "model-context-update", "context": "everything"},
        {"type": "model-context-update", "context": {"system": 5}},
        {"type": "model-context-response", "context": None},
    ],
)
def test_malformed_messages_on_our_channel(message: Any) -> None:
    with pytest.raises(MalformedMessage) as info:
        decode(envelope(message))
    assert info.value.tool_call_id is None
    assert isinstance(info.value, ValueError)
    assert info.value.reason
    assert info.value.message == message


def test_missing_message_field_is_malformed() -> None:
    with pytest.raises(MalformedMessage):
        decode({"channel": CHANNEL})


@pytest.mark.parametrize(
    "message",
    [
        {"type": "tool-call", "id": "c1"},
        {"type": "tool-call", "id": "c1", "toolName": 5, "args": {}},
        {"type": "tool-call", "id": "c1", "toolName": None},
        {"type": "tool-call", "id": "c1", "toolName": ["add"], "args": {}},
    ],
)
def test_malformed_tool_call_with_string_id_carries_it(message: dict[str, Any]) -> None:
    with pytest.raises(MalformedMessage) as info:
        decode(envelope(message))
    assert info.value.tool_call_id == "c1"


@pytest.mark.parametrize(
    "message",
    [
        {"type": "tool-call", "toolName": "add"},
        {"type": "tool-call", "id": 7, "toolName": "add"},
        {"type": "tool-call", "id": None, "toolName": "add"},
        {"type": "tool-call", "id": ["c1"], "toolName": "add"},
        {"type": "tool-cancel", "id": 1},
        {"type": "tool-result", "id": 3},
    ],
)
def test_malformed_without_string_tool_call_id(message: dict[str, Any]) -> None:
    with pytest.raises(MalformedMessage) as info:
        decode(envelope(message))
    assert info.value.tool_call_id is None


def test_malformed_reason_names_the_field() -> None:
    with pytest.raises(MalformedMessage) as info:
        decode(envelope({"type": "tool-call", "id": "c1", "args": {}}))
    assert "toolName" in info.value.reason


# -- golden JS messages ----------------------------------------------------------------------


def test_golden_js_update() -> None:
    message = decode(_golden("update"))
    assert isinstance(message, ModelContextUpdate)
    context = message.context
    assert context.get("system") == "You can add numbers with the add tool."
    tools = context.get("tools")
    assert tools is not None
    assert list(tools) == ["add", "fail"]
    assert tools["add"].get("description") == "Add two numbers"
    assert tools["add"].get("parameters") == {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    }
    assert tools["fail"].get("description") == "Always throws"
    fail_params = tools["fail"].get("parameters")
    assert fail_params is not None
    assert fail_params["properties"] == {}


def test_golden_js_tool_results() -> None:
    ok = decode(_golden("result-ok"))
    assert isinstance(ok, ToolResult)
    assert (ok.id, ok.failed, ok.result) == ("call-1", False, {"sum": 5})

    error = decode(_golden("result-error"))
    assert isinstance(error, ToolResult)
    assert (error.id, error.failed, error.error) == ("call-2", True, "boom from iframe")

    not_found = decode(_golden("result-not-found"))
    assert isinstance(not_found, ToolResult)
    assert not_found.failed is True
    assert not_found.id == "call-3"
    assert not_found.error == 'Tool "nope" not found'


def test_golden_js_request() -> None:
    assert isinstance(decode(_golden("request")), ModelContextRequest)


def test_golden_js_tool_call() -> None:
    message = decode(_golden("tool-call"))
    assert isinstance(message, ToolCall)
    assert message.id == "tool-cKFNxAk"
    assert message.tool_name == "add"
    assert message.args == {"a": 20, "b": 22}


def test_golden_js_messages_match_our_encoders() -> None:
    assert _golden("request") == encode_context_request()
    assert _golden("tool-call") == encode_tool_call("tool-cKFNxAk", "add", {"a": 20, "b": 22})
    assert _golden("result-ok") == encode_tool_result("call-1", {"sum": 5})
    assert _golden("result-error") == encode_tool_error("call-2", "boom from iframe")


# -- encoding --------------------------------------------------------------------------------


def test_encode_envelopes_exact() -> None:
    assert encode_context_request() == {
        "channel": "assistant-ui-frame",
        "message": {"type": "model-context-request"},
    }
    assert encode_context_subscribe() == {
        "channel": "assistant-ui-frame",
        "message": {"type": "model-context-subscribe"},
    }
    assert encode_context_unsubscribe() == {
        "channel": "assistant-ui-frame",
        "message": {"type": "model-context-unsubscribe"},
    }
    assert encode_context_update({"system": "S"}) == {
        "channel": "assistant-ui-frame",
        "message": {"type": "model-context-update", "context": {"system": "S"}},
    }
    assert encode_tool_call("id1", "add", {"a": 1}) == {
        "channel": "assistant-ui-frame",
        "message": {"type": "tool-call", "id": "id1", "toolName": "add", "args": {"a": 1}},
    }
    assert encode_tool_cancel("id1") == {
        "channel": "assistant-ui-frame",
        "message": {"type": "tool-cancel", "id": "id1"},
    }
    assert encode_tool_result("id1", None) == {
        "channel": "assistant-ui-frame",
        "message": {"type": "tool-result", "id": "id1", "result": None},
    }
    assert encode_tool_error("id1", "") == {
        "channel": "assistant-ui-frame",
        "message": {"type": "tool-result", "id": "id1", "error": ""},
    }


@pytest.mark.parametrize(
    "encoded",
    [
        encode_context_request(),
        encode_context_subscribe(),
        encode_context_unsubscribe(),
        encode_context_update({"system": "S", "tools": {}}),
        encode_tool_call("i", "t", [1, 2]),
        encode_tool_cancel("i"),
        encode_tool_result("i", {"x": 1}),
        encode_tool_error("i", "bad"),
    ],
)
def test_encoded_messages_round_trip_through_json_and_decode(encoded: dict[str, Any]) -> None:
    wire = json.loads(json.dumps(encoded))
    message = decode(wire)
    assert message is not None
    assert message.type == encoded["message"]["type"]


def test_encoded_error_result_decodes_as_failure() -> None:
    message = decode(json.loads(json.dumps(encode_tool_error("i", ""))))
    assert isinstance(message, ToolResult)
    assert message.failed is True
    ok = decode(json.loads(json.dumps(encode_tool_result("i", None))))
    assert isinstance(ok, ToolResult)
    assert ok.failed is False


# -- serialize_context -----------------------------------------------------------------------


def test_serialize_context_only_system_and_tools() -> None:
    def add(a: int, b: int) -> int:
        return a + b

    tool = Tool("add", add, description="Add")
    hidden = Tool("ui", description=None, disabled=True, type="frontend")
    context = ModelContext(
        system="Sys.",
        tools={"add": tool, "ui": hidden},
        priority=9,
        call_settings={"temperature": 1},
        config={"secret": "x"},
    )
    wire = serialize_context(context)
    assert set(wire) == {"system", "tools"}
    tools = wire.get("tools")
    assert tools is not None
    assert tools["add"] == {"description": "Add", "parameters": dict(tool.parameters)}
    assert tools["ui"] == {
        "parameters": {"type": "object", "properties": {}},
        "disabled": True,
        "type": "frontend",
    }
    assert "description" not in tools["ui"]
    text = json.dumps(wire)
    assert "priority" not in text
    assert "temperature" not in text
    assert "secret" not in text


def test_serialize_empty_context() -> None:
    assert serialize_context(ModelContext()) == {}
    assert serialize_context(ModelContext(system="x")) == {"system": "x"}


def test_serialize_context_caches_per_tool() -> None:
    tool = Tool("t", lambda: None, description="T")
    first = serialize_context(ModelContext(tools={"t": tool}))
    second = serialize_context(ModelContext(system="other", tools={"t": tool}))
    first_tools = first.get("tools")
    second_tools = second.get("tools")
    assert first_tools is not None
    assert second_tools is not None
    assert first_tools["t"] is second_tools["t"]
    # A changed copy gets its own serialization.
    changed = tool.replace(description="Changed")
    third = serialize_context(ModelContext(tools={"t": changed}))
    third_tools = third.get("tools")
    assert third_tools is not None
    assert third_tools["t"].get("description") == "Changed"
    assert first_tools["t"].get("description") == "T"


def test_serialized_context_decodes_as_update() -> None:
    tool = Tool("add", lambda a, b: a + b, description="Add")
    wire = json.loads(
        json.dumps(
            encode_context_update(serialize_context(ModelContext(system="S", tools={"add": tool})))
        )
    )
    message = decode(wire)
    assert isinstance(message, ModelContextUpdate)
    tools = message.context.get("tools")
    assert tools is not None
    assert tools["add"].get("description") == "Add"
    assert tools["add"].get("parameters") == json.loads(json.dumps(dict(tool.parameters)))


# -- to_json_value ---------------------------------------------------------------------------


class Reading(BaseModel):
    value: float
    unit: str = "C"


@dataclasses.dataclass
class Pair:
    left: int
    right: list[str]


def test_to_json_value_plain_values_unchanged() -> None:
    for value in (None, "s", 0, -3, True, False, [1, "a", None], {"k": {"n": [1.5]}}):
        assert to_json_value(value) == value


def test_to_json_value_pydantic_and_dataclass() -> None:
    assert to_json_value(Reading(value=21.5)) == {"value": 21.5, "unit": "C"}
    assert to_json_value(Pair(1, ["a"])) == {"left": 1, "right": ["a"]}
    assert to_json_value({"r": [Reading(value=1, unit="K")], "when": date(2024, 1, 2)}) == {
        "r": [{"value": 1.0, "unit": "K"}],
        "when": "2024-01-02",
    }
    assert to_json_value((1, 2)) == [1, 2]


def test_to_json_value_non_finite_floats_become_null() -> None:
    assert to_json_value(math.nan) is None
    assert to_json_value(math.inf) is None
    assert to_json_value([1.0, math.nan, -math.inf]) == [1.0, None, None]
    assert to_json_value({"x": math.nan}) == {"x": None}


def test_to_json_value_refuses_values_without_json_form() -> None:
    with pytest.raises(NotJSONSerializable):
        to_json_value(object())
    with pytest.raises(NotJSONSerializable):
        to_json_value({"nested": [object()]})
    with pytest.raises(TypeError):  # NotJSONSerializable is a TypeError
        to_json_value(lambda: None)


# -- property tests --------------------------------------------------------------------------

JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
JSON_VALUES = nested_json(JSON_SCALARS, max_size=5, key_size=10)
# Message-like objects: a known type plus fields with the right names and arbitrary values.
MESSAGE_LIKE = st.fixed_dictionaries(
    {"type": st.sampled_from(MESSAGE_TYPES) | JSON_VALUES},
    optional={
        "id": st.text(max_size=8) | JSON_VALUES,
        "toolName": st.text(max_size=8) | JSON_VALUES,
        "args": JSON_VALUES,
        "result": JSON_VALUES,
        "error": st.text(max_size=8) | JSON_VALUES,
        "context": JSON_VALUES,
    },
)


# Envelope-shaped values: sometimes our channel, sometimes not, with or without a message.
ENVELOPES = st.fixed_dictionaries(
    {"channel": st.sampled_from([CHANNEL, "other"]) | JSON_VALUES},
    optional={"message": MESSAGE_LIKE | JSON_VALUES, "extra": JSON_VALUES},
)


def _ours(raw: Any) -> bool:
    return isinstance(raw, dict) and raw.get("channel") == CHANNEL


@settings(max_examples=120, deadline=None)
@given(JSON_VALUES | ENVELOPES)
def test_decode_arbitrary_json_only_raises_malformed(raw: Any) -> None:
    try:
        decoded = decode(raw)
    except MalformedMessage:
        assert _ours(raw)
        return
    # None exactly for what is not ours; a message only for what is.
    assert (decoded is None) == (not _ours(raw))


# Tool calls with a string id and a toolName/args that may or may not be valid.
TOOL_CALL_LIKE = st.fixed_dictionaries(
    {"type": st.just("tool-call"), "id": st.text(max_size=8)},
    optional={"toolName": st.text(max_size=8) | JSON_SCALARS, "args": JSON_VALUES},
)


@settings(max_examples=120, deadline=None)
@given(JSON_VALUES | MESSAGE_LIKE | TOOL_CALL_LIKE)
def test_decode_any_envelope_on_our_channel(message: Any) -> None:
    raw = envelope(message)
    error: MalformedMessage | None = None
    decoded = None
    try:
        decoded = decode(raw)
    except MalformedMessage as exc:
        error = exc
    if error is not None:
        assert error.message == message
        if (
            isinstance(message, dict)
            and message.get("type") == "tool-call"
            and isinstance(message.get("id"), str)
        ):
            assert error.tool_call_id == message["id"]
        else:
            assert error.tool_call_id is None
        return
    assert decoded is not None
    assert isinstance(message, dict)
    assert decoded.type == message["type"]


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=10), st.text(max_size=10), JSON_VALUES)
def test_tool_call_round_trip(call_id: str, name: str, args: Any) -> None:
    message = decode(json.loads(json.dumps(encode_tool_call(call_id, name, args))))
    assert isinstance(message, ToolCall)
    assert (message.id, message.tool_name, message.args) == (call_id, name, args)


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=10), JSON_VALUES)
def test_tool_result_round_trip(call_id: str, result: Any) -> None:
    message = decode(json.loads(json.dumps(encode_tool_result(call_id, result))))
    assert isinstance(message, ToolResult)
    assert (message.id, message.failed, message.result) == (call_id, False, result)


def _check_context_tools(tools: object) -> None:
    for name, spec in check_tools(tools).items():
        check_tool(name, spec)


@pytest.mark.parametrize(
    "tools",
    [[], "tools", 3, {"t": "not a tool"}, {"t": {"parameters": []}}, {"": {}}],
)
def test_unusable_context_tools_are_refused_by_the_checks(tools: object) -> None:
    # decode() leaves a context's tools to check_tools/check_tool, which a host runs
    # while it walks the tools anyway (contexts can hold thousands).
    update = {"type": "model-context-update", "context": {"tools": tools}}
    message = decode({"channel": CHANNEL, "message": update})
    assert isinstance(message, ModelContextUpdate)
    with pytest.raises(ValueError, match="tool"):
        _check_context_tools(message.context.get("tools"))


def test_tool_checks_accept_missing_and_null_fields() -> None:
    assert check_tools(None) == {}
    spec = {"description": None, "parameters": None, "disabled": None, "type": None, "x": 1}
    assert check_tool("t", spec) is spec
