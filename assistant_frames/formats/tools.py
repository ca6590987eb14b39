"""Export a model context's tools in the tool formats of model vendors.

Each function takes a :class:`~assistant_frames.ModelContext` (or any provider, whose
current context is used) and returns a new list of plain dicts, ready to pass as the
``tools`` of a model request. No vendor SDK is imported.

* :func:`to_openai_chat_tools`: OpenAI Chat Completions.
* :func:`to_openai_responses_tools`: the OpenAI Responses API.
* :func:`to_anthropic_tools`: the Anthropic Messages API.
* :func:`to_mcp_tools`: MCP ``Tool`` objects in their wire shape.

The rules are the same for all four: disabled tools are left out, the context's order
is kept, ``description`` is omitted when a tool has none, and ``parameters`` is a deep
copy of the tool's schema with ``"type": "object"`` added when the schema has no
``type``, and (except for MCP, which lists schemas as they are) without its top-level
``$schema`` key. A schema of another top-level type raises :class:`ValueError`. The
OpenAI and Anthropic formats also require tool names that match ``^[a-zA-Z0-9_-]{1,64}$``.

A tool's metadata goes where a format has a place for it, and nowhere else:

* MCP carries all of it, as the tool has it: ``title``, ``icons``, ``annotations``,
  ``outputSchema`` (an object schema; MCP requires that) and ``_meta``. A tool that an
  MCP server declared is therefore listed again exactly as that server declared it.
* The OpenAI Responses API has ``output_schema`` (the JSON Schema of what the function
  returns), which the output schema fills.
* OpenAI Chat Completions (``name``, ``description``, ``parameters``, ``strict``) and
  Anthropic Messages (``name``, ``description``, ``input_schema``, and fields for
  caching, strict inputs, examples and deferred loading) have no field for annotations,
  metadata or an output schema, so these are left out.

Examples:
    >>> from assistant_frames import ModelContextRegistry
    >>> registry = ModelContextRegistry()
    >>> @registry.tool
    ... def add(a: int, b: int) -> int:
    ...     '''Add two integers.'''
    ...     return a + b
    >>> to_anthropic_tools(registry)[0]["name"]
    'add'
"""

# No ``from __future__ import annotations`` here: the TypedDicts need evaluated annotations
# for ``__required_keys__`` and ``__optional_keys__`` to honour ``NotRequired`` at runtime.

import logging
import re
from collections.abc import Callable, Mapping
from typing import Any, Literal, NotRequired, TypeVar, cast

# typing_extensions' TypedDict, so that Pydantic can validate these types on Python 3.11.
from typing_extensions import TypedDict

from ..registry.context import ModelContext, ModelContextProvider
from ..registry.tool import Tool

__all__ = [
    "AnthropicTool",
    "MCPTool",
    "OpenAIChatTool",
    "OpenAIFunctionDefinition",
    "OpenAIResponsesTool",
    "to_anthropic_tools",
    "to_mcp_tools",
    "to_openai_chat_tools",
    "to_openai_responses_tools",
]

logger = logging.getLogger("assistant_frames.tool_formats")

_VALID_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_NAME_RULE = "^[a-zA-Z0-9_-]{1,64}$"

_T = TypeVar("_T")


class _Description(TypedDict):
    description: NotRequired[str]


class OpenAIFunctionDefinition(TypedDict):
    """The ``function`` of an :class:`OpenAIChatTool`."""

    name: str
    description: NotRequired[str]
    parameters: dict[str, Any]


class OpenAIChatTool(TypedDict):
    """One entry of the ``tools`` of an OpenAI Chat Completions request."""

    type: Literal["function"]
    function: OpenAIFunctionDefinition


class OpenAIResponsesTool(TypedDict):
    """One entry of the ``tools`` of an OpenAI Responses API request."""

    type: Literal["function"]
    name: str
    description: NotRequired[str]
    parameters: dict[str, Any]
    strict: bool
    output_schema: NotRequired[dict[str, Any]]


class AnthropicTool(TypedDict):
    """One entry of the ``tools`` of an Anthropic Messages API request."""

    name: str
    description: NotRequired[str]
    input_schema: dict[str, Any]


class MCPTool(TypedDict):
    """An MCP ``Tool`` in its wire shape (camelCase ``inputSchema``)."""

    name: str
    title: NotRequired[str]
    description: NotRequired[str]
    inputSchema: dict[str, Any]
    outputSchema: NotRequired[dict[str, Any]]
    icons: NotRequired[list[dict[str, Any]]]
    annotations: NotRequired[dict[str, Any]]
    _meta: NotRequired[dict[str, Any]]


def to_openai_chat_tools(
    context: ModelContext | ModelContextProvider, *, strict: bool = False
) -> list[OpenAIChatTool]:
    """The context's enabled tools as OpenAI Chat Completions ``tools``.

    Args:
        context: A model context, or a provider whose current context is exported.
        strict: Raise for a tool the format cannot hold, instead of leaving it out.

    Returns:
        One ``{"type": "function", "function": {"name", "description", "parameters"}}``
        per enabled tool, in the context's order (``description`` only when the tool
        has one).

    Raises:
        ValueError: With ``strict``, a tool name does not match
            ``^[a-zA-Z0-9_-]{1,64}$`` (every such tool is named), or a tool's parameters
            are not an object schema. Without it, such a tool is left out (logged once
            at WARNING): one bad tool never keeps the others from the model.

    Examples:
        >>> from assistant_frames import ModelContext, Tool
        >>> context = ModelContext(tools={"ping": Tool("ping", lambda: "pong")})
        >>> to_openai_chat_tools(context)[0]["function"]
        {'name': 'ping', 'parameters': {'properties': {}, 'type': 'object'}}
    """

    def build(name: str, tool: Tool) -> OpenAIChatTool:
        function: OpenAIFunctionDefinition = {
            "name": name,
            **_description(tool),
            "parameters": _parameters(name, tool),
        }
        return {"type": "function", "function": function}

    return _export(context, build, vendor="OpenAI", strict=strict, label="OpenAI Chat Completions")


def to_openai_responses_tools(
    context: ModelContext | ModelContextProvider, *, strict: bool = False
) -> list[OpenAIResponsesTool]:
    """The context's enabled tools as OpenAI Responses API ``tools``.

    ``strict`` is always ``False``: the Responses API treats a missing ``strict`` as
    ``True``, which only accepts a restricted subset of JSON Schema (every property
    required, ``additionalProperties: false``), so ordinary schemas would be refused.

    Args:
        context: A model context, or a provider whose current context is exported.
        strict: Raise for a tool the format cannot hold, instead of leaving it out.

    Returns:
        One ``{"type": "function", "name", "description", "parameters", "strict":
        False}`` per enabled tool, in the context's order (``description`` only when
        the tool has one), plus ``output_schema`` for a tool with an output schema.

    Raises:
        ValueError: With ``strict``, a tool name does not match
            ``^[a-zA-Z0-9_-]{1,64}$`` (every such tool is named), or a tool's parameters
            are not an object schema. Without it, such a tool is left out (logged once
            at WARNING): one bad tool never keeps the others from the model.

    Examples:
        >>> from assistant_frames import ModelContext, Tool
        >>> context = ModelContext(tools={"ping": Tool("ping", lambda: "pong")})
        >>> [tool["strict"] for tool in to_openai_responses_tools(context)]
        [False]
    """

    def build(name: str, tool: Tool) -> OpenAIResponsesTool:
        entry = cast(
            "OpenAIResponsesTool",
            {
                "type": "function",
                "name": name,
                **_description(tool),
                "parameters": _parameters(name, tool),
                "strict": False,
            },
        )
        if tool.output_schema is not None:
            entry["output_schema"] = _schema_copy(tool.output_schema)
        return entry

    return _export(context, build, vendor="OpenAI", strict=strict, label="OpenAI Responses")


def to_anthropic_tools(
    context: ModelContext | ModelContextProvider, *, strict: bool = False
) -> list[AnthropicTool]:
    """The context's enabled tools as Anthropic Messages API ``tools``.

    Args:
        context: A model context, or a provider whose current context is exported.
        strict: Raise for a tool the format cannot hold, instead of leaving it out.

    Returns:
        One ``{"name", "description", "input_schema"}`` per enabled tool, in the
        context's order (``description`` only when the tool has one).

    Raises:
        ValueError: With ``strict``, a tool name does not match
            ``^[a-zA-Z0-9_-]{1,64}$`` (every such tool is named), or a tool's parameters
            are not an object schema. Without it, such a tool is left out (logged once
            at WARNING): one bad tool never keeps the others from the model.

    Examples:
        >>> from assistant_frames import ModelContext, Tool
        >>> context = ModelContext(tools={"ping": Tool("ping", lambda: "pong")})
        >>> to_anthropic_tools(context)
        [{'name': 'ping', 'input_schema': {'properties': {}, 'type': 'object'}}]
    """

    def build(name: str, tool: Tool) -> AnthropicTool:
        return {"name": name, **_description(tool), "input_schema": _parameters(name, tool)}

    return _export(context, build, vendor="Anthropic", strict=strict, label="Anthropic")


def to_mcp_tools(
    context: ModelContext | ModelContextProvider, *, strict: bool = False
) -> list[MCPTool]:
    """The context's enabled tools as MCP ``Tool`` objects in wire shape.

    The dicts are what an MCP server lists in a ``tools/list`` result, and
    ``mcp.types.Tool.model_validate`` accepts them. MCP sets no hard rule on tool
    names, so names are not checked.

    Args:
        context: A model context, or a provider whose current context is exported.
        strict: Raise for a tool the format cannot hold, instead of leaving it out.

    Returns:
        One ``{"name", "description", "inputSchema"}`` per enabled tool, in the
        context's order (``description`` only when the tool has one), with what the
        tool has of ``title``, ``outputSchema`` (when it is an object schema, as MCP
        requires), ``icons``, ``annotations`` and ``_meta``, each as the tool has it:
        nothing is moved from one to another, and schemas keep their ``$schema``.

    Raises:
        ValueError: With ``strict``, a tool's parameters are not an object schema;
            without it, such a tool is left out (logged once at WARNING).

    Examples:
        >>> from assistant_frames import ModelContext, Tool
        >>> context = ModelContext(tools={"ping": Tool("ping", lambda: "pong")})
        >>> to_mcp_tools(context)
        [{'name': 'ping', 'inputSchema': {'properties': {}, 'type': 'object'}}]
    """

    def build(name: str, tool: Tool) -> MCPTool:
        entry = cast(
            "MCPTool",
            {
                "name": name,
                **_description(tool),
                "inputSchema": _parameters(name, tool, keep_schema_key=True),
            },
        )
        if tool.title is not None:
            entry["title"] = tool.title
        output_schema = tool.output_schema
        if output_schema is not None and output_schema.get("type") == "object":
            entry["outputSchema"] = _copy(output_schema)
        if tool.icons is not None:
            entry["icons"] = _copy(tool.icons)
        if tool.annotations is not None:
            entry["annotations"] = tool.annotations.to_wire()
        if tool.meta is not None:
            entry["_meta"] = _copy(tool.meta)
        return entry

    return _export(context, build, vendor=None, strict=strict, label="MCP")


# -- internals ------------------------------------------------------------------------------


def _export(
    source: ModelContext | ModelContextProvider,
    build: Callable[[str, Tool], _T],
    *,
    vendor: str | None,
    strict: bool,
    label: str,
) -> list[_T]:
    """One entry per enabled tool; a tool the format cannot hold raises (``strict``) or
    is left out, logged once."""
    if isinstance(source, ModelContext):
        context = source
    elif callable(getattr(source, "get_model_context", None)):
        context = source.get_model_context()
    else:
        raise TypeError(f"Expected a ModelContext or a ModelContextProvider, not {source!r}")
    if vendor is None:  # MCP lists app-only tools too: MCP Apps hosts filter them
        tools = [(name, tool) for name, tool in context.tools.items() if not tool.disabled]
    else:  # a model's format: never an app-only tool
        tools = list(context.model_tools().items())
        if strict:
            _check_names(vendor, [name for name, _ in tools])
    if strict:
        return [build(name, tool) for name, tool in tools]
    entries: list[_T] = []
    for name, tool in tools:
        if vendor is not None and not _VALID_NAME.fullmatch(name):
            _left_out(label, name, f"{vendor} tool names must match {_NAME_RULE}")
            continue
        try:
            entries.append(build(name, tool))
        except ValueError as exc:
            _left_out(label, name, str(exc))
    return entries


_reported: set[tuple[str, str]] = set()  # (format, tool name) logged once; bounded


def _left_out(label: str, name: str, why: str) -> None:
    if (label, name) not in _reported and len(_reported) < 1024:
        _reported.add((label, name))
        logger.warning("Left the tool %.80r out of the %s tools: %s", name, label, why)


def _description(tool: Tool) -> _Description:
    """``{"description": ...}``, or ``{}`` when the tool has no (or an empty) description."""
    return {"description": tool.description} if tool.description else {}


def _check_names(vendor: str, names: list[str]) -> None:
    bad = [name for name in names if not _VALID_NAME.fullmatch(name)]
    if bad:
        listed = ", ".join(repr(name) for name in bad)
        raise ValueError(
            f"{vendor} refuses these tool names: {listed}. Tool names must match "
            f"{_NAME_RULE} (letters, digits, '_' and '-', at most 64 characters). "
            "Rename the tools, or change or shorten the namespace their provider was "
            "added under (add_provider(..., namespace=...) joins with '_', so a namespace "
            "of those characters keeps names valid)."
        )


def _parameters(name: str, tool: Tool, *, keep_schema_key: bool = False) -> dict[str, Any]:
    """A deep copy of the tool's schema, with an object type and (unless
    ``keep_schema_key``) without ``$schema``."""
    schema = tool.parameters
    if not isinstance(schema, Mapping):
        raise ValueError(
            f"Tool {name!r} cannot be exported: its parameters are not a JSON Schema "
            f"object but {type(schema).__name__}"
        )
    copy: dict[str, Any] = {
        key: _copy(value) for key, value in schema.items() if keep_schema_key or key != "$schema"
    }
    kind = copy.setdefault("type", "object")
    if kind != "object":
        raise ValueError(
            f"Tool {name!r} cannot be exported: its parameters schema has type {kind!r}, "
            'but model vendors need a schema of type "object"'
        )
    return copy


def _schema_copy(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of a JSON Schema, without its top-level ``$schema`` key."""
    return {key: _copy(value) for key, value in schema.items() if key != "$schema"}


def _copy(value: Any) -> Any:
    """Copy JSON-like data: mappings become dicts, lists and tuples become lists."""
    if isinstance(value, Mapping):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_copy(item) for item in value]
    return value
