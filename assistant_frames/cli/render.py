"""A model context as text for a terminal: instructions, tools and parameter tables."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Mapping
from typing import Any

from .._text import format_table
from ..registry import ModelContext

__all__ = ["describe_type", "format_table", "parameter_rows", "render_context"]


def render_context(context: ModelContext, *, title: str | None = None, width: int = 100) -> str:
    """A model context as text for a terminal: its instructions, then each tool with a
    table of its parameters (name, type, required/optional, default, description)."""
    lines: list[str] = []
    if title:
        lines += [f"Frame: {title}", ""]
    lines.append("Instructions:")
    if context.system:
        for paragraph in context.system.split("\n"):
            lines.append(_wrap(paragraph, width, "  ") if paragraph.strip() else "")
    else:
        lines.append("  (none)")
    count = len(context.tools)
    lines += ["", f"Tools ({count}):" if count else "Tools: (none)"]
    for name, tool in context.tools.items():
        flags = []
        if tool.disabled:
            flags.append("disabled")
        if tool.type:
            flags.append(f"type: {tool.type}")
        lines.append("")
        lines.append(f"  {name}" + (f"  [{', '.join(flags)}]" if flags else ""))
        for paragraph in (tool.description or "(no description)").strip().split("\n"):
            lines.append(_wrap(paragraph, width, "      ") if paragraph.strip() else "")
        rows = parameter_rows(tool.parameters)
        if rows:
            lines.append("")
            table = [["PARAMETER", "TYPE", "REQUIRED", "DEFAULT", "DESCRIPTION"], *rows]
            lines += format_table(table, indent=6, width=width).splitlines()
        elif _accepts_anything(tool.parameters):
            lines.append("      parameters: any JSON value")
        else:
            lines.append("      no parameters")
    return "\n".join(lines)


def _wrap(text: str, width: int, indent: str) -> str:
    return textwrap.fill(
        text.strip(),
        width=max(width - 1, len(indent) + 30),
        initial_indent=indent,
        subsequent_indent=indent,
        break_on_hyphens=False,
    )


def _accepts_anything(schema: Mapping[str, Any]) -> bool:
    return not schema or (schema.get("type") != "object" and "properties" not in schema)


def parameter_rows(schema: Mapping[str, Any]) -> list[list[str]]:
    """One row per top-level parameter of a JSON Schema object: ``[name, type,
    "required"/"optional", default, description]`` (``-`` when there is no default)."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return []
    required = schema.get("required")
    required_names = set(required) if isinstance(required, list) else set()
    rows = []
    for name, spec in properties.items():
        spec = spec if isinstance(spec, Mapping) else {}
        default = _json_text(spec["default"]) if "default" in spec else "-"
        description = spec.get("description")
        rows.append(
            [
                str(name),
                describe_type(spec),
                "required" if name in required_names else "optional",
                default,
                description if isinstance(description, str) else "",
            ]
        )
    return rows


def describe_type(schema: Any) -> str:
    """A short, readable type for a JSON Schema: ``integer``, ``string | null``,
    ``array of string``, ``"a" | "b"``, ``string (date-time)``..."""
    if not isinstance(schema, Mapping):
        return "any" if schema is True or schema == {} else "?"
    if "const" in schema:
        return _json_text(schema["const"])
    if isinstance(schema.get("enum"), list):
        return " | ".join(_json_text(value) for value in schema["enum"])
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return " | ".join(dict.fromkeys(describe_type(option) for option in options))
    if isinstance(schema.get("allOf"), list) and len(schema["allOf"]) == 1:
        return describe_type(schema["allOf"][0])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(describe_type({**schema, "type": one}) for one in kind)
    if kind == "array":
        items = schema.get("items")
        return f"array of {describe_type(items)}" if isinstance(items, Mapping) else "array"
    if kind == "string" and isinstance(schema.get("format"), str):
        return f"string ({schema['format']})"
    if isinstance(kind, str):
        return kind
    if "properties" in schema:
        return "object"
    return "any"


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)
