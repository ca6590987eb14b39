"""Tool: schemas from signatures, models and dicts; validation; execution; contexts."""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Mapping
from typing import Annotated, Any, Literal

import anyio
import anyio.lowlevel
import anyio.to_thread
import pytest
from pydantic import Field
from typing_extensions import TypedDict

from assistant_frames import (
    ToolArgumentsError,
    ToolCallContext,
    ToolCallError,
    ToolDisabledError,
)
from assistant_frames.registry import Tool

from helpers import Point, Segment

pytestmark = pytest.mark.anyio


def _walk_keys(node: Any) -> set[str]:
    """Every dict key anywhere in a JSON-like value."""
    keys: set[str] = set()
    if isinstance(node, Mapping):
        for key, value in node.items():
            keys.add(key)
            keys |= _walk_keys(value)
    elif isinstance(node, list):
        for item in node:
            keys |= _walk_keys(item)
    return keys


class Person(TypedDict):
    name: str
    age: int


@dataclasses.dataclass
class Box:
    width: int
    height: int = 1


# -- schema from signatures ---------------------------------------------------------------


def test_schema_from_ints_floats_and_defaults() -> None:
    def scale(count: int, factor: float = 1.5) -> float:
        return count * factor

    schema = Tool("scale", scale).parameters
    assert schema["type"] == "object"
    assert schema["properties"]["count"]["type"] == "integer"
    assert schema["properties"]["factor"]["type"] == "number"
    assert schema["properties"]["factor"]["default"] == 1.5
    assert schema["required"] == ["count"]


def test_schema_optional_and_literal() -> None:
    def pick(mode: Literal["fast", "slow"], limit: int | None = None) -> str:
        return mode

    schema = Tool("pick", pick).parameters
    mode = schema["properties"]["mode"]
    assert mode["enum"] == ["fast", "slow"]
    limit = schema["properties"]["limit"]
    assert {"type": "integer"} in limit["anyOf"]
    assert {"type": "null"} in limit["anyOf"]
    assert limit["default"] is None
    assert schema["required"] == ["mode"]


def test_schema_nested_model_param_is_inlined() -> None:
    def length(segment: Segment, scale: float = 1.0) -> float:
        return 0.0

    schema = Tool("length", length).parameters
    keys = _walk_keys(schema)
    assert "$ref" not in keys
    assert "$defs" not in keys
    assert "definitions" not in keys
    segment = schema["properties"]["segment"]
    assert segment["properties"]["start"]["properties"]["x"]["type"] == "number"
    assert segment["properties"]["end"]["required"] == ["x", "y"]
    assert segment["required"] == ["start", "end"]
    # The schema is plain JSON.
    assert json.loads(json.dumps(schema)) == schema


def test_schema_top_level_title_dropped() -> None:
    def f(a: int) -> int:
        return a

    schema = Tool("f", f).parameters
    assert "title" not in schema
    assert Tool("seg", lambda s: s, parameters=Segment).parameters.get("title") is None


def test_schema_annotated_field_description() -> None:
    def search(
        query: Annotated[str, Field(description="What to look for")],
        limit: Annotated[int, Field(description="How many", ge=1)] = 10,
    ) -> list[str]:
        return []

    schema = Tool("search", search).parameters
    assert schema["properties"]["query"]["description"] == "What to look for"
    assert schema["properties"]["limit"]["description"] == "How many"
    assert schema["properties"]["limit"]["minimum"] == 1
    assert schema["properties"]["limit"]["default"] == 10


def test_schema_of_function_without_parameters() -> None:
    def now() -> str:
        return "now"

    schema = Tool("now", now).parameters
    assert schema["type"] == "object"
    assert schema["properties"] == {}


# -- docstrings ------------------------------------------------------------------------------


def test_google_docstring_description_and_params() -> None:
    def add(a: int, b: int) -> int:
        """Add two numbers.

        Works for negative numbers too.

        Args:
            a: The first number.
            b (int): The second number,
                which may span lines.

        Returns:
            The sum.
        """
        return a + b

    tool = Tool("add", add)
    assert tool.description == "Add two numbers.\n\nWorks for negative numbers too."
    assert tool.parameters["properties"]["a"]["description"] == "The first number."
    assert (
        tool.parameters["properties"]["b"]["description"]
        == "The second number, which may span lines."
    )


def test_rest_docstring_description_and_params() -> None:
    def greet(name: str, punctuation: str = "!") -> str:
        """Greet someone.

        :param name: Who to greet.
        :param str punctuation: What to end with.
        :returns: The greeting.
        """
        return f"Hello {name}{punctuation}"

    tool = Tool("greet", greet)
    assert tool.description == "Greet someone."
    assert tool.parameters["properties"]["name"]["description"] == "Who to greet."
    assert tool.parameters["properties"]["punctuation"]["description"] == "What to end with."


def test_explicit_description_overrides_docstring() -> None:
    def f(a: int) -> int:
        """From the docstring."""
        return a

    assert Tool("f", f, description="Explicit").description == "Explicit"
    assert Tool("f", f).description == "From the docstring."


def test_no_docstring_no_description() -> None:
    def f(a: int) -> int:
        return a

    assert Tool("f", f).description is None


# -- parameters given explicitly --------------------------------------------------------------


async def test_pydantic_model_parameters_execute_receives_instance() -> None:
    received: list[Any] = []

    def draw(segment: Segment) -> str:
        received.append(segment)
        return segment.label

    tool = Tool("draw", draw, parameters=Segment)
    assert "$ref" not in _walk_keys(tool.parameters)
    assert tool.parameters["properties"]["start"]["required"] == ["x", "y"]
    args = {"start": {"x": 0, "y": 0}, "end": {"x": 3, "y": 4}, "label": "hyp"}
    assert await tool.invoke(args) == "hyp"
    assert isinstance(received[0], Segment)
    assert received[0].end == Point(x=3, y=4)


async def test_typed_dict_parameters() -> None:
    received: list[Any] = []

    def hello(person: Person) -> str:
        received.append(person)
        return f"{person['name']} is {person['age']}"

    tool = Tool("hello", hello, parameters=Person)
    assert tool.parameters["properties"]["age"]["type"] == "integer"
    assert sorted(tool.parameters["required"]) == ["age", "name"]
    assert await tool.invoke({"name": "Ada", "age": 36}) == "Ada is 36"
    assert received == [{"name": "Ada", "age": 36}]
    with pytest.raises(ToolArgumentsError, match="age"):
        await tool.invoke({"name": "Ada"})


async def test_dataclass_parameters() -> None:
    received: list[Any] = []

    def area(box: Box) -> int:
        received.append(box)
        return box.width * box.height

    tool = Tool("area", area, parameters=Box)
    assert tool.parameters["properties"]["width"]["type"] == "integer"
    assert tool.parameters["required"] == ["width"]
    assert await tool.invoke({"width": 3, "height": 4}) == 12
    assert received == [Box(width=3, height=4)]
    assert await tool.invoke({"width": 5}) == 5


async def test_json_schema_dict_parameters() -> None:
    received: list[Any] = []
    schema = {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    }

    def add(args: dict[str, Any]) -> float:
        received.append(args)
        return float(args["a"] + args["b"])

    tool = Tool("add", add, parameters=schema)
    assert tool.parameters == schema
    assert await tool.invoke({"a": 1, "b": 2.5}) == 3.5
    assert received == [{"a": 1, "b": 2.5}]
    assert isinstance(received[0], dict)
    with pytest.raises(ToolArgumentsError, match="'b' is a required property") as info:
        await tool.invoke({"a": 1})
    assert info.value.tool_name == "add"
    assert '"add"' in str(info.value)


async def test_draft07_json_schema_with_dollar_schema() -> None:
    # Exactly what zod-to-json-schema produces in the JS frame, plus draft-07 tuple `items`.
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "a": {"type": "number"},
            "pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
        },
        "required": ["a"],
        "additionalProperties": False,
    }

    def run(args: dict[str, Any]) -> Any:
        return args

    tool = Tool("run", run, parameters=schema)
    assert tool.parameters["$schema"] == "http://json-schema.org/draft-07/schema#"
    assert await tool.invoke({"a": 1, "pair": ["x", 2]}) == {"a": 1, "pair": ["x", 2]}
    # Draft-07 array-form `items` validates position by position.
    with pytest.raises(ToolArgumentsError, match="pair"):
        await tool.invoke({"a": 1, "pair": ["x", "not an int"]})
    with pytest.raises(ToolArgumentsError, match="Additional properties"):
        await tool.invoke({"a": 1, "extra": True})
    with pytest.raises(ToolArgumentsError, match="'a' is a required property"):
        await tool.invoke({})


async def test_json_schema_with_defs_is_inlined() -> None:
    schema = {
        "type": "object",
        "properties": {"p": {"$ref": "#/$defs/P"}},
        "required": ["p"],
        "$defs": {"P": {"type": "object", "properties": {"x": {"type": "integer"}}}},
    }
    tool = Tool("t", lambda args: args["p"]["x"], parameters=schema)
    assert "$ref" not in _walk_keys(tool.parameters)
    assert "$defs" not in tool.parameters
    assert tool.parameters["properties"]["p"]["properties"]["x"] == {"type": "integer"}
    assert await tool.invoke({"p": {"x": 7}}) == 7
    with pytest.raises(ToolArgumentsError, match=r"p\.x"):
        await tool.invoke({"p": {"x": "seven"}})


async def test_invalid_parameters_type_refused() -> None:
    with pytest.raises(TypeError):
        Tool("t", lambda: None, parameters=42)  # type: ignore[arg-type]


async def test_tool_without_execute_returns_none() -> None:
    tool = Tool("ui_only", description="Rendered by the frontend", type="frontend")
    assert tool.parameters == {"type": "object", "properties": {}}
    assert await tool.invoke({}) is None


# -- execution -------------------------------------------------------------------------------


async def test_sync_execute_runs_in_worker_thread() -> None:
    loop_thread = threading.get_ident()
    seen: list[int] = []

    def where(a: int) -> int:
        seen.append(threading.get_ident())
        return a * 2

    assert await Tool("where", where).invoke({"a": 21}) == 42
    assert len(seen) == 1
    assert seen[0] != loop_thread


async def test_async_execute_runs_on_the_loop() -> None:
    loop_thread = threading.get_ident()
    seen: list[int] = []

    async def where(a: int) -> int:
        await anyio.lowlevel.checkpoint()
        seen.append(threading.get_ident())
        return a + 1

    assert await Tool("where", where).invoke({"a": 1}) == 2
    assert seen == [loop_thread]


async def test_sync_execute_in_thread_for_model_parameters() -> None:
    loop_thread = threading.get_ident()
    seen: list[int] = []

    def f(p: Point) -> float:
        seen.append(threading.get_ident())
        return p.x + p.y

    assert await Tool("f", f, parameters=Point).invoke({"x": 1, "y": 2}) == 3.0
    assert seen[0] != loop_thread


async def test_execute_exception_propagates_unchanged() -> None:
    class Boom(Exception):
        pass

    def explode() -> None:
        raise Boom("bang")

    with pytest.raises(Boom, match="bang"):
        await Tool("explode", explode).invoke({})


async def test_arguments_are_validated_and_coerced() -> None:
    received: list[Any] = []

    def f(count: int, ratio: float) -> None:
        received.append((count, ratio))

    await Tool("f", f).invoke({"count": 3, "ratio": 2})
    assert received == [(3, 2.0)]
    assert isinstance(received[0][1], float)


async def test_none_args_means_empty_object() -> None:
    def f(a: int = 4) -> int:
        return a

    assert await Tool("f", f).invoke(None) == 4
    assert await Tool("f", f).invoke() == 4


# -- ToolCallContext --------------------------------------------------------------------------


async def test_context_by_annotation_in_signature_style() -> None:
    seen: list[tuple[str, str, int]] = []

    async def lookup(key: str, ctx: ToolCallContext) -> str:
        seen.append((ctx.tool_call_id, ctx.tool_name, len(key)))
        return key.upper()

    tool = Tool("lookup", lookup)
    assert "ctx" not in tool.parameters["properties"]
    assert tool.parameters["required"] == ["key"]
    assert await tool.invoke({"key": "abc"}, tool_call_id="call-77") == "ABC"
    assert seen == [("call-77", "lookup", 3)]


async def test_context_by_annotation_sync_and_optional() -> None:
    seen: list[ToolCallContext | None] = []

    def f(ctx: ToolCallContext | None = None, n: int = 1) -> int:
        seen.append(ctx)
        return n

    tool = Tool("f", f)
    assert list(tool.parameters["properties"]) == ["n"]
    assert await tool.invoke({"n": 2}, tool_call_id="c1") == 2
    assert isinstance(seen[0], ToolCallContext)
    assert seen[0].tool_call_id == "c1"
    assert seen[0].tool_name == "f"


async def test_context_gets_generated_id_when_none_given() -> None:
    ids: list[str] = []

    def f(ctx: ToolCallContext) -> None:
        ids.append(ctx.tool_call_id)

    tool = Tool("f", f)
    await tool.invoke({})
    await tool.invoke({})
    assert len(ids) == 2
    assert all(isinstance(i, str) and i for i in ids)
    assert ids[0] != ids[1]


async def test_context_as_second_positional_with_model_parameters() -> None:
    seen: list[tuple[Point, str, str]] = []

    def f(point: Point, ctx: ToolCallContext) -> float:
        seen.append((point, ctx.tool_call_id, ctx.tool_name))
        return point.x

    tool = Tool("f", f, parameters=Point)
    assert await tool.invoke({"x": 1.5, "y": 0}, tool_call_id="id-1") == 1.5
    assert seen == [(Point(x=1.5, y=0), "id-1", "f")]


async def test_context_as_second_positional_with_dict_schema() -> None:
    seen: list[tuple[dict[str, Any], str, str]] = []

    async def f(args: dict[str, Any], ctx: ToolCallContext) -> int:
        seen.append((args, ctx.tool_call_id, ctx.tool_name))
        return len(args)

    tool = Tool("f", f, parameters={"type": "object", "properties": {"a": {"type": "string"}}})
    assert await tool.invoke({"a": "x"}, tool_call_id="id-2") == 1
    assert seen == [({"a": "x"}, "id-2", "f")]


async def test_explicit_context_object_is_passed_through() -> None:
    given = ToolCallContext("mine", "f")
    seen: list[ToolCallContext] = []

    def f(ctx: ToolCallContext) -> None:
        seen.append(ctx)

    await Tool("f", f).invoke({}, context=given)
    assert seen == [given]


def test_context_cancel_from_another_thread_wakes_waiter() -> None:
    ctx = ToolCallContext("c", "t")
    assert ctx.cancelled is False
    assert ctx.wait_cancelled(timeout=0.01) is False
    started = threading.Event()
    results: list[bool] = []

    def waiter() -> None:
        started.set()
        results.append(ctx.wait_cancelled(timeout=5))

    thread = threading.Thread(target=waiter)
    thread.start()
    assert started.wait(5)
    ctx.cancel()
    thread.join(5)
    assert not thread.is_alive()
    assert results == [True]
    assert ctx.cancelled is True
    # Once cancelled, waiting returns at once.
    assert ctx.wait_cancelled(timeout=0) is True


def test_context_cancel_before_wait() -> None:
    ctx = ToolCallContext("c", "t")
    canceller = threading.Thread(target=ctx.cancel)
    canceller.start()
    canceller.join(5)
    assert ctx.cancelled
    assert ctx.wait_cancelled() is True
    assert "cancelled=True" in repr(ctx)


async def test_sync_tool_observes_cancel_while_running() -> None:
    started = threading.Event()

    def slow(ctx: ToolCallContext) -> str:
        started.set()
        return "cancelled" if ctx.wait_cancelled(timeout=5) else "timed out"

    tool = Tool("slow", slow)
    ctx = ToolCallContext("c-9", "slow")
    results: list[str] = []

    async def run() -> None:
        results.append(await tool.invoke({}, context=ctx))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await anyio.to_thread.run_sync(started.wait, 5)
            ctx.cancel()
    assert results == ["cancelled"]


# -- errors ----------------------------------------------------------------------------------


async def test_invalid_arguments_name_tool_and_field() -> None:
    def add(a: int, b: int) -> int:
        return a + b

    tool = Tool("add", add)
    with pytest.raises(ToolArgumentsError) as info:
        await tool.invoke({"a": 1, "b": "two"})
    err = info.value
    assert isinstance(err, ToolCallError)
    assert err.tool_name == "add"
    assert str(err).startswith('Invalid arguments for tool "add": ')
    assert "b" in str(err).split(": ", 1)[1]
    assert "a:" not in str(err)

    with pytest.raises(ToolArgumentsError, match=r'tool "add".*\ba\b.*required'):
        await tool.invoke({"b": 2})


async def test_invalid_nested_argument_names_the_path() -> None:
    def length(segment: Segment) -> float:
        return 0.0

    with pytest.raises(ToolArgumentsError, match=r"segment\.end\.y"):
        await Tool("length", length).invoke(
            {"segment": {"start": {"x": 0, "y": 0}, "end": {"x": 1, "y": "up"}}}
        )


async def test_invalid_arguments_do_not_run_execute() -> None:
    calls: list[int] = []

    def f(a: int) -> None:
        calls.append(a)

    with pytest.raises(ToolArgumentsError):
        await Tool("f", f).invoke({"a": "nope"})
    with pytest.raises(ToolArgumentsError):
        await Tool("f", f).invoke(["not", "an", "object"])
    assert calls == []


async def test_invalid_arguments_for_model_parameters() -> None:
    with pytest.raises(ToolArgumentsError, match=r'tool "pt".*\by\b') as info:
        await Tool("pt", lambda p: p, parameters=Point).invoke({"x": 1})
    assert info.value.tool_name == "pt"


async def test_disabled_tool_refuses_calls() -> None:
    calls: list[int] = []

    def f(a: int) -> None:
        calls.append(a)

    tool = Tool("f", f, disabled=True)
    assert tool.disabled is True
    with pytest.raises(ToolDisabledError, match='Tool "f" is disabled') as info:
        await tool.invoke({"a": 1}, tool_call_id="x1")
    assert info.value.tool_name == "f"
    assert info.value.tool_call_id == "x1"
    assert calls == []


def test_var_positional_refused() -> None:
    def f(*args: int) -> int:
        return sum(args)

    with pytest.raises(TypeError, match="args"):
        Tool("f", f)


def test_var_keyword_refused() -> None:
    def f(a: int, **kwargs: Any) -> int:
        return a

    with pytest.raises(TypeError, match="kwargs"):
        Tool("f", f)


def test_bad_name_or_execute_refused() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        Tool("", lambda: None)
    with pytest.raises(TypeError):
        Tool("t", 42)  # type: ignore[arg-type]


async def test_awkward_parameter_names_still_work() -> None:
    received: list[tuple[Any, ...]] = []

    def f(_x: int, schema: str, model_config: bool = False, validate: int = 0) -> str:
        received.append((_x, schema, model_config, validate))
        return schema

    tool = Tool("f", f)
    props = tool.parameters["properties"]
    assert set(props) == {"_x", "schema", "model_config", "validate"}
    assert sorted(tool.parameters["required"]) == ["_x", "schema"]
    assert props["_x"]["type"] == "integer"
    result = await tool.invoke({"_x": 1, "schema": "s", "model_config": True, "validate": 3})
    assert result == "s"
    assert received == [(1, "s", True, 3)]
    with pytest.raises(ToolArgumentsError, match="_x"):
        await tool.invoke({"_x": "bad", "schema": "s"})


# -- replace / from_parts --------------------------------------------------------------------


async def test_replace_changes_fields_and_keeps_original() -> None:
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    tool = Tool("add", add, type="backend")
    renamed = tool.replace(name="plus", description="Plus", disabled=True, type="frontend")
    assert (renamed.name, renamed.description, renamed.disabled, renamed.type) == (
        "plus",
        "Plus",
        True,
        "frontend",
    )
    assert renamed.parameters == tool.parameters
    assert (tool.name, tool.description, tool.disabled, tool.type) == (
        "add",
        "Add.",
        False,
        "backend",
    )
    enabled = renamed.replace(disabled=False)
    assert await enabled.invoke({"a": 2, "b": 3}) == 5
    with pytest.raises(ToolDisabledError):
        await renamed.invoke({"a": 2, "b": 3})
    with pytest.raises(ValueError, match="non-empty"):
        tool.replace(name="")


async def test_replace_execute_and_parameters_rebuilds() -> None:
    def add(a: int, b: int) -> int:
        return a + b

    def mul(a: int, b: int) -> int:
        return a * b

    tool = Tool("op", add, description="Op")
    swapped = tool.replace(execute=mul)
    assert swapped.description == "Op"
    assert await swapped.invoke({"a": 3, "b": 4}) == 12
    assert await tool.invoke({"a": 3, "b": 4}) == 7

    with_schema = tool.replace(
        execute=lambda args: args["n"],
        parameters={"type": "object", "properties": {"n": {"type": "integer"}}},
    )
    assert with_schema.parameters["properties"] == {"n": {"type": "integer"}}
    assert await with_schema.invoke({"n": 9}) == 9
    with pytest.raises(ToolArgumentsError):
        await with_schema.invoke({"n": "nine"})


async def test_from_parts_keeps_parameters_and_passes_raw_args() -> None:
    seen: list[tuple[Any, str, str]] = []
    params = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"p": {"$ref": "#/definitions/P"}},
        "definitions": {"P": {"type": "integer"}},
    }

    async def invoke(args: Any, ctx: ToolCallContext) -> Any:
        seen.append((args, ctx.tool_call_id, ctx.tool_name))
        return "ok"

    tool = Tool.from_parts("remote", invoke, description="Remote", parameters=params, type="human")
    assert tool.parameters == params  # nothing inlined or derived
    assert tool.description == "Remote"
    assert tool.type == "human"
    # No validation: arguments that do not fit the schema still arrive unchanged.
    assert await tool.invoke({"p": "not an int"}, tool_call_id="r-1") == "ok"
    assert seen == [({"p": "not an int"}, "r-1", "remote")]


async def test_from_parts_defaults_and_disabled() -> None:
    async def invoke(args: Any, ctx: ToolCallContext) -> Any:
        return args

    tool = Tool.from_parts("x", invoke)
    assert tool.parameters == {"type": "object", "properties": {}}
    assert tool.description is None
    assert await tool.invoke([1, 2]) == [1, 2]
    disabled = Tool.from_parts("x", invoke, disabled=True)
    with pytest.raises(ToolDisabledError):
        await disabled.invoke({})
    renamed = tool.replace(name="y")
    assert renamed.name == "y"
    assert await renamed.invoke({"k": 1}) == {"k": 1}
