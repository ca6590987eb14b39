"""formats.tools: exporting a context's tools for OpenAI, Anthropic and MCP."""

from __future__ import annotations

import copy
import json
import logging
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest
from pydantic import TypeAdapter

from assistant_frames import ModelContext, ModelContextRegistry, Tool
from assistant_frames.formats import tools as tool_formats
from assistant_frames.formats.tools import (
    AnthropicTool,
    MCPTool,
    OpenAIChatTool,
    OpenAIFunctionDefinition,
    OpenAIResponsesTool,
    to_anthropic_tools,
    to_mcp_tools,
    to_openai_chat_tools,
    to_openai_responses_tools,
)

Exporter = Callable[..., list[Any]]

DRAFT_07 = "http://json-schema.org/draft-07/schema#"
SEARCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 1},
        "filters": {"type": "object", "properties": {"site": {"type": "string"}}},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["query"],
}
LOOKUP_SCHEMA: dict[str, Any] = {
    "$schema": DRAFT_07,
    "type": "object",
    "properties": {"key": {"type": "string"}},
    "required": ["key"],
}
# Every enabled tool of the context built by _parent(), in the context's order.
ENABLED = ["greet", "search", "lookup", "untyped", "calc_add"]


def _parent() -> ModelContextRegistry:
    """A parent registry: typed, dict-schema, disabled, draft-07 and namespaced tools."""
    calculator = ModelContextRegistry()

    @calculator.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    parent = ModelContextRegistry()

    @parent.tool
    def greet(name: str, excited: bool = False) -> str:
        """Greet someone.

        Args:
            name: Who to greet.
            excited: Add an exclamation mark.
        """
        return f"Hello, {name}{'!' if excited else '.'}"

    parent.add_tool(
        Tool("search", lambda args: [], description="Search.", parameters=SEARCH_SCHEMA)
    )

    @parent.tool(disabled=True)
    def delete_everything() -> None:
        """Not available right now."""

    # A JS frame's schema: draft-07 with a $schema key; no description.
    parent.add_tool(Tool("lookup", lambda args: args["key"], parameters=LOOKUP_SCHEMA))
    # A schema without "type".
    parent.add_tool(
        Tool(
            "untyped",
            lambda args: None,
            description="No type in its schema.",
            parameters={"properties": {"x": {"type": "string"}}},
        )
    )
    parent.add_provider(calculator, namespace="calc")
    return parent


def _name(entry: Mapping[str, Any]) -> str:
    """The tool name in any of the four formats."""
    return str(entry["function"]["name"] if "function" in entry else entry["name"])


def _body(entry: Mapping[str, Any]) -> Mapping[str, Any]:
    """The part holding name, description and schema (OpenAI Chat nests it)."""
    body: Mapping[str, Any] = entry.get("function", entry)
    return body


def _schema(entry: Mapping[str, Any]) -> dict[str, Any]:
    body = _body(entry)
    for key in ("parameters", "input_schema", "inputSchema"):
        if key in body:
            return body[key]  # type: ignore[no-any-return]
    raise AssertionError(f"no schema key in {entry!r}")


def _by_name(entries: list[Any]) -> dict[str, Any]:
    return {_name(entry): entry for entry in entries}


def _containers(value: Any) -> Iterator[Any]:
    """Every dict and list inside a JSON-like value, the value included."""
    if isinstance(value, Mapping):
        yield value
        for item in value.values():
            yield from _containers(item)
    elif isinstance(value, list):
        yield value
        for item in value:
            yield from _containers(item)


EXPORTERS = [
    pytest.param(to_openai_chat_tools, id="openai-chat"),
    pytest.param(to_openai_responses_tools, id="openai-responses"),
    pytest.param(to_anthropic_tools, id="anthropic"),
    pytest.param(to_mcp_tools, id="mcp"),
]
NAME_CHECKING = [
    pytest.param(to_openai_chat_tools, "OpenAI", id="openai-chat"),
    pytest.param(to_openai_responses_tools, "OpenAI", id="openai-responses"),
    pytest.param(to_anthropic_tools, "Anthropic", id="anthropic"),
]


# -- exact shapes ---------------------------------------------------------------------------


def test_exact_shapes_of_a_typed_tool() -> None:
    parent = _parent()
    parameters = dict(parent.get_model_context().tools["greet"].parameters)
    description = "Greet someone."
    assert _by_name(to_openai_chat_tools(parent))["greet"] == {
        "type": "function",
        "function": {"name": "greet", "description": description, "parameters": parameters},
    }
    assert _by_name(to_openai_responses_tools(parent))["greet"] == {
        "type": "function",
        "name": "greet",
        "description": description,
        "parameters": parameters,
        "strict": False,
    }
    assert _by_name(to_anthropic_tools(parent))["greet"] == {
        "name": "greet",
        "description": description,
        "input_schema": parameters,
    }
    assert _by_name(to_mcp_tools(parent))["greet"] == {
        "name": "greet",
        "description": description,
        "inputSchema": parameters,
    }
    assert parameters["properties"]["name"] == {"type": "string", "description": "Who to greet."}


def test_responses_tools_are_never_strict() -> None:
    tools = to_openai_responses_tools(_parent())
    assert tools
    assert all(tool["strict"] is False and tool["type"] == "function" for tool in tools)


# -- rules ----------------------------------------------------------------------------------


@pytest.mark.parametrize("export", EXPORTERS)
def test_disabled_tools_are_left_out_and_order_is_kept(export: Exporter) -> None:
    parent = _parent()
    assert "delete_everything" in parent.get_model_context().tools
    assert [_name(entry) for entry in export(parent)] == ENABLED


@pytest.mark.parametrize("export", EXPORTERS)
def test_order_follows_the_context_not_the_alphabet(export: Exporter) -> None:
    tools = {name: Tool(name, lambda: None) for name in ["zeta", "alpha", "mid"]}
    assert [_name(entry) for entry in export(ModelContext(tools=tools))] == [
        "zeta",
        "alpha",
        "mid",
    ]


@pytest.mark.parametrize("export", EXPORTERS)
def test_description_is_omitted_when_the_tool_has_none(export: Exporter) -> None:
    context = _parent().get_model_context()
    assert context.tools["lookup"].description is None
    entries = _by_name(export(context))
    assert "description" not in _body(entries["lookup"])
    assert _body(entries["search"])["description"] == "Search."
    assert _body(entries["calc_add"])["description"] == "Add two integers."
    empty = ModelContext(tools={"quiet": Tool("quiet", lambda: None, description="")})
    assert "description" not in _body(export(empty)[0])


@pytest.mark.parametrize("export", EXPORTERS[:-1])
def test_schema_key_is_removed_from_a_copy(export: Exporter) -> None:
    context = _parent().get_model_context()
    schema = _schema(_by_name(export(context))["lookup"])
    assert "$schema" not in schema
    assert schema == {k: v for k, v in LOOKUP_SCHEMA.items() if k != "$schema"}
    assert context.tools["lookup"].parameters["$schema"] == DRAFT_07  # source untouched


def test_mcp_lists_a_schema_as_it_is_in_a_copy() -> None:
    # MCP reads a schema without $schema as 2020-12: a draft-07 schema keeps saying so,
    # and a tool an MCP server declared is listed again as declared.
    context = _parent().get_model_context()
    schema = _schema(_by_name(to_mcp_tools(context))["lookup"])
    assert schema == LOOKUP_SCHEMA
    schema["properties"].clear()
    assert context.tools["lookup"].parameters["properties"] == {"key": {"type": "string"}}


@pytest.mark.parametrize("export", EXPORTERS)
def test_a_schema_without_type_gets_object(export: Exporter) -> None:
    context = _parent().get_model_context()
    schema = _schema(_by_name(export(context))["untyped"])
    assert schema == {"type": "object", "properties": {"x": {"type": "string"}}}
    assert "type" not in context.tools["untyped"].parameters  # source untouched


@pytest.mark.parametrize("export", EXPORTERS)
@pytest.mark.parametrize("kind", ["string", "array", ["object", "null"]])
def test_a_non_object_schema_raises_naming_the_tool(export: Exporter, kind: Any) -> None:
    registry = _parent()
    registry.add_tool(Tool("scalar_input", lambda args: args, parameters={"type": kind}))
    with pytest.raises(ValueError, match="scalar_input") as info:
        export(registry, strict=True)
    assert "object" in str(info.value)


@pytest.mark.parametrize("export", EXPORTERS)
def test_a_schema_that_is_not_a_dict_raises_naming_the_tool(export: Exporter) -> None:
    async def invoke(args: Any, context: Any) -> None:
        return None

    odd = Tool.from_parts("odd_schema", invoke, parameters=True)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="odd_schema"):
        export(ModelContext(tools={"odd_schema": odd}), strict=True)


@pytest.mark.parametrize("export", EXPORTERS)
def test_a_disabled_tool_is_not_checked(export: Exporter) -> None:
    tools = {
        "bad name": Tool("bad name", lambda args: args, parameters={"type": "string"}),
        "fine": Tool("fine", lambda: None),
    }
    tools["bad name"] = tools["bad name"].replace(disabled=True)
    assert [_name(entry) for entry in export(ModelContext(tools=tools))] == ["fine"]


BAD_NAMES = ["my tool", "calc.add", "x" * 65, "trailing\n", "ünïcode", "a/b"]


@pytest.mark.parametrize(("export", "vendor"), NAME_CHECKING)
def test_invalid_names_raise_naming_every_offending_tool(export: Exporter, vendor: str) -> None:
    names = ["ok", *BAD_NAMES, "also-ok_" + "y" * 56]
    context = ModelContext(tools={name: Tool(name, lambda: None) for name in names})
    with pytest.raises(ValueError, match=vendor) as info:
        export(context, strict=True)
    message = str(info.value)
    for name in BAD_NAMES:
        assert repr(name) in message
    assert "'ok'" not in message
    assert "also-ok_" not in message
    assert "Rename" in message
    assert "namespace" in message
    assert "^[a-zA-Z0-9_-]{1,64}$" in message


@pytest.mark.parametrize(("export", "vendor"), NAME_CHECKING)
def test_by_default_a_bad_tool_is_left_out_alone_and_logged_once(
    export: Exporter, vendor: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One bad tool (from any provider, a view's say) never keeps the others from the model."""
    monkeypatch.setattr(tool_formats, "_reported", set())  # what earlier tests logged
    tools = {name: Tool(name, lambda: None) for name in ["ok", *BAD_NAMES]}
    tools["scalar"] = Tool("scalar", lambda args: args, parameters={"type": "string"})
    tools["fine"] = Tool("fine", lambda: None)
    context = ModelContext(tools=tools)
    with caplog.at_level(logging.WARNING, logger="assistant_frames.tool_formats"):
        for _ in range(2):
            assert [_name(entry) for entry in export(context)] == ["ok", "fine"]
    for name in [*BAD_NAMES, "scalar"]:
        told = [r for r in caplog.records if repr(name)[:80] in r.getMessage()]
        assert len(told) == 1, name
        assert vendor in told[0].getMessage()


@pytest.mark.parametrize(("export", "vendor"), NAME_CHECKING)
def test_valid_names_at_the_limits_pass(export: Exporter, vendor: str) -> None:
    names = ["a", "A-z_0-9", "n" * 64]
    context = ModelContext(tools={name: Tool(name, lambda: None) for name in names})
    assert [_name(entry) for entry in export(context)] == names


@pytest.mark.parametrize(("export", "vendor"), NAME_CHECKING)
def test_a_namespace_can_make_or_break_a_name(export: Exporter, vendor: str) -> None:
    child = ModelContextRegistry()
    child.add_tool("t" * 60, lambda: None)
    parent = ModelContextRegistry()
    handle = parent.add_provider(child, namespace="ns")  # "ns_" + 60 characters: fits
    assert [_name(entry) for entry in export(parent)] == ["ns_" + "t" * 60]
    handle.update(namespace="longer")  # 67 characters
    with pytest.raises(ValueError, match=r"'longer_t{60}'"):
        export(parent, strict=True)
    assert export(parent) == []  # not strict: left out, the export goes on


def test_mcp_does_not_check_names() -> None:
    names = ["ok", *BAD_NAMES]
    context = ModelContext(tools={name: Tool(name, lambda: None) for name in names})
    assert [entry["name"] for entry in to_mcp_tools(context)] == names


@pytest.mark.parametrize("export", EXPORTERS)
def test_exports_are_new_objects_and_never_touch_the_tools(export: Exporter) -> None:
    context = _parent().get_model_context()
    before = {name: copy.deepcopy(dict(tool.parameters)) for name, tool in context.tools.items()}
    source_ids = {
        id(node) for tool in context.tools.values() for node in _containers(tool.parameters)
    }

    first = export(context)
    second = export(context)
    assert first == second
    assert first is not second
    for a, b in zip(first, second, strict=True):
        assert a is not b
    exported_ids = {id(node) for node in _containers(first)}
    assert not exported_ids & source_ids  # nothing shared with the tools' schemas

    for entry in first:  # mutating the export leaves the tools alone
        schema = _schema(entry)
        schema["additionalProperties"] = False
        for prop in schema.get("properties", {}).values():
            prop["mutated"] = True
        schema.get("required", []).append("mutated")
    assert {name: dict(tool.parameters) for name, tool in context.tools.items()} == before
    assert export(context) == second


@pytest.mark.parametrize("export", EXPORTERS)
def test_exports_are_json(export: Exporter) -> None:
    exported = export(_parent())
    assert json.loads(json.dumps(exported)) == exported


@pytest.mark.parametrize("export", EXPORTERS)
def test_a_provider_exports_its_current_context(export: Exporter) -> None:
    parent = _parent()
    assert export(parent) == export(parent.get_model_context())

    class BareProvider:  # only get_model_context(), as the functions promise
        def get_model_context(self) -> ModelContext:
            return parent.get_model_context()

    assert export(BareProvider()) == export(parent.get_model_context())

    parent.add_tool("late", lambda: None, description="Added later.")
    names = [_name(entry) for entry in export(parent)]
    assert names == [*ENABLED[:-1], "late", "calc_add"]  # own tools come before providers


@pytest.mark.parametrize("export", EXPORTERS)
def test_anything_else_is_a_type_error(export: Exporter) -> None:
    with pytest.raises(TypeError, match="ModelContext"):
        export({"tools": {}})


@pytest.mark.parametrize("export", EXPORTERS)
def test_an_empty_context_exports_an_empty_list(export: Exporter) -> None:
    assert export(ModelContext()) == []


@pytest.mark.parametrize(("old", "new"), [("tool_formats", "tools"), ("tool_calls", "calls")])
def test_the_former_module_names_warn_and_give_the_same_names(old: str, new: str) -> None:
    code = (
        "import warnings, importlib\n"
        "warnings.simplefilter('error')\n"
        f"new = importlib.import_module('assistant_frames.formats.{new}')\n"
        "try:\n"
        f"    importlib.import_module('assistant_frames.{old}')\n"
        "except DeprecationWarning as exc:\n"
        "    print(exc)\n"
        "warnings.simplefilter('ignore')\n"
        f"old = importlib.import_module('assistant_frames.{old}')\n"
        "assert old.__all__ == new.__all__\n"
        "assert all(getattr(old, name) is getattr(new, name) for name in new.__all__)\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == (
        f"assistant_frames.{old} is deprecated; import from assistant_frames.formats"
        " (or assistant_frames) instead"
    )


def test_no_vendor_sdk_is_imported() -> None:
    code = (
        "import sys, assistant_frames, assistant_frames.formats\n"
        "loaded = sorted({'openai', 'anthropic', 'mcp'} & set(sys.modules))\n"
        "assert not loaded, loaded\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert completed.returncode == 0, completed.stderr


# -- our TypedDicts describe what the functions return ---------------------------------------


@pytest.mark.parametrize(
    ("export", "typed_dict"),
    [
        (to_openai_chat_tools, OpenAIChatTool),
        (to_openai_responses_tools, OpenAIResponsesTool),
        (to_anthropic_tools, AnthropicTool),
        (to_mcp_tools, MCPTool),
    ],
)
def test_typed_dicts_match_the_exports(export: Exporter, typed_dict: Any) -> None:
    # description, and the tool metadata a format has a place for
    metadata = {"title", "icons", "annotations", "outputSchema", "output_schema", "_meta"}
    assert typed_dict.__optional_keys__ <= {"description", *metadata}
    for entry in export(_parent()):
        _assert_keys(entry, typed_dict.__required_keys__, typed_dict.__optional_keys__)
        TypeAdapter(typed_dict).validate_python(entry, strict=True)
        if "function" in entry:
            function_type = OpenAIFunctionDefinition
            _assert_keys(
                entry["function"],
                function_type.__required_keys__,
                function_type.__optional_keys__,
            )


def _assert_keys(entry: Mapping[str, Any], required: Any, optional: Any) -> None:
    keys = set(entry)
    assert set(required) <= keys, f"missing {set(required) - keys} in {entry!r}"
    assert keys <= set(required) | set(optional), (
        f"unknown {keys - set(required) - set(optional)} in {entry!r}"
    )


# -- the vendors' own type definitions ------------------------------------------------------


def _vendor_keys(typed_dict: Any) -> tuple[set[str], set[str]]:
    """(required, all) keys of a vendor TypedDict, as Pydantic resolves them.

    The SDKs' modules use ``from __future__ import annotations``, so on Python 3.11 their
    ``__required_keys__`` ignore ``Required[...]``; Pydantic evaluates the annotations.
    """
    schema = TypeAdapter(typed_dict).json_schema()
    return set(schema.get("required", [])), set(schema["properties"])


def _check_vendor(typed_dict: Any, entry: Mapping[str, Any]) -> None:
    """Validate ``entry`` with the vendor type and check its keys, which Pydantic ignores."""
    TypeAdapter(typed_dict).validate_python(entry)
    required, known = _vendor_keys(typed_dict)
    _assert_keys(entry, required, known - required)


def _assert_rejected(typed_dict: Any, entry: Mapping[str, Any]) -> None:
    with pytest.raises((AssertionError, ValueError)):
        _check_vendor(typed_dict, entry)


def test_openai_chat_tools_fit_the_openai_sdk_types() -> None:
    pytest.importorskip("openai")
    from openai.types.chat import ChatCompletionToolParam
    from openai.types.shared_params import FunctionDefinition

    exported = to_openai_chat_tools(_parent())
    assert len(exported) == len(ENABLED)
    for entry in exported:
        _check_vendor(ChatCompletionToolParam, entry)
        _check_vendor(FunctionDefinition, entry["function"])
    # The checks can fail: a misnamed key is caught, though Pydantic alone would ignore it.
    good = dict(exported[0]["function"])
    _assert_rejected(FunctionDefinition, {**good, "input_schema": good.pop("parameters")})
    _assert_rejected(ChatCompletionToolParam, {"type": "function"})


def test_openai_responses_tools_fit_the_openai_sdk_types() -> None:
    pytest.importorskip("openai")
    from openai.types.responses import FunctionToolParam

    exported = to_openai_responses_tools(_parent())
    assert len(exported) == len(ENABLED)
    for entry in exported:
        _check_vendor(FunctionToolParam, entry)
    good = dict(exported[0])
    _assert_rejected(FunctionToolParam, {k: v for k, v in good.items() if k != "strict"})
    _assert_rejected(FunctionToolParam, {**good, "function": {}})


def test_anthropic_tools_fit_the_anthropic_sdk_types() -> None:
    pytest.importorskip("anthropic")
    from anthropic.types import ToolParam

    exported = to_anthropic_tools(_parent())
    assert len(exported) == len(ENABLED)
    for entry in exported:
        _check_vendor(ToolParam, entry)
    good = dict(exported[0])
    _assert_rejected(ToolParam, {**good, "inputSchema": good.pop("input_schema")})


def test_mcp_tools_fit_the_mcp_sdk_types() -> None:
    mcp_types = pytest.importorskip("mcp.types")

    exported = to_mcp_tools(_parent())
    assert len(exported) == len(ENABLED)
    for entry in exported:
        tool = mcp_types.Tool.model_validate(entry)
        assert tool.name == entry["name"]
        assert tool.description == entry.get("description")
        # Nothing dropped or renamed: the wire form round-trips exactly.
        assert tool.model_dump(mode="json", by_alias=True, exclude_none=True) == entry
    misnamed = {"name": "x", "input_schema": {"type": "object"}}  # not the wire name
    tool = mcp_types.Tool.model_validate(misnamed)
    assert tool.model_dump(mode="json", by_alias=True, exclude_none=True) != misnamed
