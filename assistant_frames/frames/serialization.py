"""Tools and model contexts in their wire form, both ways.

:func:`serialize_context` and :func:`serialize_tool` give what a frame sends (every tool
field but ``execute``; the wire form of a tool is cached on the immutable tool), and
:func:`to_json_value` turns a tool's result into JSON data. :func:`check_tools`,
:func:`check_tool` and :func:`tool_options` take what a host received: each field is
checked as the host walks the tools (a context can hold thousands), and becomes the
options of the host's local stand-in for the frame's tool.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, NamedTuple

from pydantic_core import PydanticSerializationError, to_jsonable_python
from typing_extensions import TypedDict

from ..registry.context import ModelContext
from ..registry.tool import Tool, ToolOptions

__all__ = [
    "NotJSONSerializable",
    "SerializedModelContext",
    "SerializedTool",
    "ContextChanges",
    "ToolChanges",
    "check_tool",
    "check_tools",
    "context_changes",
    "serialize_context",
    "serialize_tool",
    "serialize_tools",
    "to_json_value",
    "tool_changes",
    "tool_options",
]


class SerializedTool(TypedDict, total=False):
    """A tool as it crosses the wire: everything but ``execute``.

    ``title``, ``icons``, ``annotations``, ``outputSchema`` and ``_meta`` are this
    library's additions (MCP's names and shapes), sent only when a tool has them, as it
    has them; the JS implementation ignores them.
    """

    description: str | None
    parameters: dict[str, Any] | None
    disabled: bool | None
    type: str | None
    title: str | None
    icons: list[dict[str, Any]] | None
    annotations: dict[str, Any] | None
    outputSchema: dict[str, Any] | None
    _meta: dict[str, Any] | None


class SerializedModelContext(TypedDict, total=False):
    """A model context as it crosses the wire: ``system`` and ``tools``, and
    ``uiResources`` (this library's addition, which the JS implementation ignores):
    the ``ui://`` resources of MCP Apps, sent only when there are some."""

    system: str | None
    tools: dict[str, SerializedTool] | None
    uiResources: list[dict[str, Any]] | None


class NotJSONSerializable(TypeError):
    """A value has no JSON form (see :func:`to_json_value`)."""


def to_json_value(value: Any) -> Any:
    """Convert a tool result to plain JSON data (Pydantic models, dataclasses, datetimes...).

    Non-finite floats become ``null`` as in JavaScript's ``JSON.stringify``; values with
    no JSON form raise :class:`NotJSONSerializable`.
    """
    if value is None or type(value) in (str, int, bool):
        return value
    try:
        return to_jsonable_python(value, inf_nan_mode="null")
    except (PydanticSerializationError, ValueError, TypeError, RecursionError) as exc:
        raise NotJSONSerializable(str(exc)) from None


def serialize_tool(tool: Tool) -> SerializedTool:
    """The wire form of a tool (cached on the immutable tool)."""
    return tool.serialized_form(_wire_form)


def _wire_form(tool: Tool) -> SerializedTool:
    """Build the wire form of a tool (see :func:`serialize_tool`)."""
    form: dict[str, Any] = {"parameters": dict(tool.parameters)}
    if tool.description:
        form["description"] = tool.description
    if tool.disabled:
        form["disabled"] = True
    if tool.type:
        form["type"] = tool.type
    if tool.title is not None:
        form["title"] = tool.title
    if tool.icons is not None:
        form["icons"] = to_json_value(tool.icons)
    if tool.annotations is not None:  # empty ones too: MCP tells {} from none
        form["annotations"] = to_json_value(tool.annotations.to_wire())
    if tool.output_schema is not None:
        form["outputSchema"] = dict(tool.output_schema)
    if tool.meta is not None:
        form["_meta"] = to_json_value(tool.meta)
    return form  # type: ignore[return-value]


def serialize_tools(tools: Mapping[str, Tool]) -> dict[str, SerializedTool]:
    """The wire form of a context's tools."""
    return {name: tool.serialized_form(_wire_form) for name, tool in tools.items()}


def serialize_context(
    context: ModelContext, *, tools: dict[str, SerializedTool] | None = None
) -> SerializedModelContext:
    """The wire form of a context: ``system``, ``tools`` and ``uiResources``.

    ``tools`` is the context's tools already serialized, for callers that cache them.
    """
    wire: SerializedModelContext = {}
    if context.system is not None:
        wire["system"] = context.system
    if context.tools:
        wire["tools"] = serialize_tools(context.tools) if tools is None else tools
    if context.ui_resources:
        wire["uiResources"] = [resource.to_wire() for resource in context.ui_resources.values()]
    return wire


class ToolChanges(NamedTuple):
    """What changed between two versions of a context's tools in wire form."""

    #: The tools added or replaced.
    put: dict[str, SerializedTool]
    #: The tools that went.
    removed: list[str]
    #: Every tool's name in the new order, when adding the new tools at the end of what
    #: stays would not give it (else ``None``).
    order: list[str] | None


def tool_changes(
    old: Mapping[str, SerializedTool], new: Mapping[str, SerializedTool]
) -> ToolChanges:
    """What changed from ``old`` to ``new`` (tools in wire form), by one walk.

    An unchanged tool is usually the same object in both (tools cache their wire form),
    so a change costs one identity check per tool. The order counts only where tools
    came or went (a reorder alone is no change, as for whole contexts).
    """
    if new is old:
        return ToolChanges({}, [], None)
    put: dict[str, SerializedTool] = {}
    added: list[str] = []
    for name, spec in new.items():
        previous = old.get(name)
        if previous is None:
            added.append(name)
            put[name] = spec
        elif previous is not spec and previous != spec:
            put[name] = spec
    removed: list[str] = []
    if len(old) + len(added) != len(new):  # some went
        removed = [name for name in old if name not in new]
    order = None
    if added and list(new)[-len(added) :] != added:
        order = list(new)  # added anywhere but at the end
    return ToolChanges(put, removed, order)


class ContextChanges(NamedTuple):
    """What changed between two contexts in wire form (see :func:`context_changes`)."""

    #: ``system`` when it changed (``None``: it went), the tools added or replaced,
    #: ``uiResources`` whole when they changed.
    changed: SerializedModelContext
    #: The tools that went.
    removed: list[str]
    #: Every tool's name in the new order, when adding the new tools at the end of what
    #: stays would not give it (else ``None``).
    order: list[str] | None


def context_changes(
    old: SerializedModelContext,
    new: SerializedModelContext,
    tools: ToolChanges | None = None,
) -> ContextChanges | None:
    """What changed from ``old`` to ``new`` (both in wire form), or ``None``: nothing.

    ``tools`` is what changed of the tools when the caller knows it (a frame's
    :class:`~.wire_tools.WireTools` does, from the steps that made each version; ``new``'s
    tools may then be ahead of ``old``'s, changed in place); otherwise
    :func:`tool_changes` walks them.
    """
    changed: SerializedModelContext = {}
    system = new.get("system")
    if system != old.get("system"):
        changed["system"] = system
    if tools is None:
        tools = tool_changes(old.get("tools") or {}, new.get("tools") or {})
    if tools.put:
        changed["tools"] = tools.put
    resources = new.get("uiResources")
    if resources != old.get("uiResources"):
        changed["uiResources"] = resources or []
    if not changed and not tools.removed:
        return None
    return ContextChanges(changed, tools.removed, tools.order)


_TOOL_FIELDS: Final = (
    ("description", str),
    ("parameters", dict),
    ("disabled", bool),
    ("type", str),
    ("title", str),
    ("icons", list),
    ("annotations", dict),
    ("outputSchema", dict),
    ("_meta", dict),
)
_ANNOTATION_FIELDS: Final = (
    ("title", str),
    ("readOnlyHint", bool),
    ("destructiveHint", bool),
    ("idempotentHint", bool),
    ("openWorldHint", bool),
)


def check_tools(tools: Any) -> Mapping[str, Any]:
    """Check the ``tools`` of a received context: an object, or missing/``null``."""
    if tools is None:
        return {}
    if not isinstance(tools, dict):
        raise ValueError(f"tools must be an object, not {tools!r:.40}")
    return tools


def check_tool(name: str, spec: Any) -> SerializedTool:
    """Check one received tool; ``ValueError`` naming the field if it is unusable.

    Every field may be missing or ``null`` (JSON drops ``undefined``); unknown fields are
    ignored for forward compatibility.
    """
    if not name:
        raise ValueError("a tool has an empty name")
    if not isinstance(spec, dict):
        raise ValueError(f"tools.{name} must be an object, not {spec!r:.40}")
    for field, kind in _TOOL_FIELDS:
        value = spec.get(field)
        if value is not None and not isinstance(value, kind):
            raise ValueError(f"tools.{name}.{field} must be {_KIND[kind]}, not {value!r:.40}")
    icons = spec.get("icons")
    if icons and not all(
        isinstance(icon, dict) and isinstance(icon.get("src"), str) for icon in icons
    ):
        raise ValueError(f"tools.{name}.icons must be objects with a str src, not {icons!r:.40}")
    annotations = spec.get("annotations")
    if annotations:
        for field, kind in _ANNOTATION_FIELDS:
            value = annotations.get(field)
            if value is not None and not isinstance(value, kind):
                raise ValueError(
                    f"tools.{name}.annotations.{field} must be {_KIND[kind]}, not {value!r:.40}"
                )
    return spec  # type: ignore[return-value]


_KIND: Final[Mapping[type, str]] = {str: "str", bool: "bool", dict: "an object", list: "an array"}


def tool_options(spec: SerializedTool) -> ToolOptions:
    """The :class:`~assistant_frames.ToolOptions` of a tool that :func:`check_tool` accepted.

    For ``Tool.from_parts(name, invoke, parameters=spec.get("parameters"),
    **tool_options(spec))``: a host's remote tool describes itself as the frame's does.
    """
    options: ToolOptions = {
        "description": spec.get("description"),
        "disabled": bool(spec.get("disabled")),
        "type": spec.get("type"),
    }
    for key, option in _OPTIONAL_KEYS:
        value = spec.get(key)
        if value is not None:
            options[option] = value  # type: ignore[literal-required]
    annotations = spec.get("annotations")
    if annotations is not None:  # a Pydantic model: imported when a tool has annotations
        from ..registry.annotations import ToolAnnotations

        options["annotations"] = ToolAnnotations.model_validate(annotations)
    return options


# The wire's optional keys that become a ToolOptions entry as they are (wire, option).
_OPTIONAL_KEYS = (
    ("title", "title"),
    ("icons", "icons"),
    ("outputSchema", "output_schema"),
    ("_meta", "meta"),
)
