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
    """One row per parameter of a JSON Schema object: ``[name, type,
    "required"/"optional", default, description]`` (``-`` when there is no default).

    The fields of a nested object follow its row, named by path (``person.address.city``,
    ``people[].name``); ``$ref`` into the schema's ``$defs``/``definitions`` is followed."""
    rows: list[list[str]] = []
    _object_rows(schema, schema, "", rows, frozenset())
    return rows


# Nested fields deeper than this are left to the type column: a table, not a dump.
_MAX_DEPTH = 4


def _object_rows(
    schema: Mapping[str, Any],
    root: Mapping[str, Any],
    prefix: str,
    rows: list[list[str]],
    seen: frozenset[str],
) -> None:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return
    required = schema.get("required")
    required_names = set(required) if isinstance(required, list) else set()
    for name, raw in properties.items():
        target, _ = _resolve(raw, root)
        # Keywords beside a $ref (a description, a default) belong to this parameter.
        spec = {**target, **{k: v for k, v in _as_mapping(raw).items() if k != "$ref"}}
        default = _json_text(spec["default"]) if "default" in spec else "-"
        description = spec.get("description")
        path = f"{prefix}{name}"
        rows.append(
            [
                path,
                describe_type(spec, root=root),
                "required" if name in required_names else "optional",
                default,
                description if isinstance(description, str) else "",
            ]
        )
        if path.count(".") >= _MAX_DEPTH:
            continue
        for nested, suffix, via in _nested_objects(raw, root):
            if not via & seen:  # a recursive model: its type names it, once is enough
                _object_rows(nested, root, f"{path}{suffix}.", rows, seen | via)


def _nested_objects(
    schema: Mapping[str, Any], root: Mapping[str, Any]
) -> list[tuple[Mapping[str, Any], str, frozenset[str]]]:
    """The object schemas with fields under ``schema``: itself, its array items, or the
    one non-null option of an optional (``X | None``) value; with the path suffix and the
    references followed to reach them."""
    schema, refs = _resolve(schema, root)
    found: list[tuple[Mapping[str, Any], str, frozenset[str]]] = []
    options = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(options, list):
        real = [option for option in options if _resolve(option, root)[0].get("type") != "null"]
        found = _nested_objects(real[0], root) if len(real) == 1 else []
    elif isinstance(schema.get("allOf"), list) and len(schema["allOf"]) == 1:
        found = _nested_objects(schema["allOf"][0], root)
    elif isinstance(schema.get("properties"), Mapping) and schema["properties"]:
        found = [(schema, "", frozenset())]
    elif schema.get("type") == "array" and isinstance(schema.get("items"), Mapping):
        found = [
            (nested, f"[]{suffix}", via)
            for nested, suffix, via in _nested_objects(schema["items"], root)
        ]
    return [(nested, suffix, via | refs) for nested, suffix, via in found]


def _as_mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _resolve(
    schema: Any, root: Mapping[str, Any] | None
) -> tuple[Mapping[str, Any], frozenset[str]]:
    """``schema`` with local ``$ref`` pointers followed, and the references followed."""
    refs: set[str] = set()
    schema = _as_mapping(schema)
    while isinstance(ref := schema.get("$ref"), str) and ref not in refs and root is not None:
        refs.add(ref)
        target = _pointer(root, ref)
        if target is None:
            break
        schema = target
    return schema, frozenset(refs)


def _pointer(root: Mapping[str, Any], ref: str) -> Mapping[str, Any] | None:
    if not ref.startswith("#"):
        return None  # remote references are not fetched
    node: Any = root
    for part in filter(None, ref[1:].split("/")):
        part = part.replace("~1", "/").replace("~0", "~")
        node = node.get(part) if isinstance(node, Mapping) else None
    return node if isinstance(node, Mapping) else None


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1] or "object"


def describe_type(schema: Any, *, root: Mapping[str, Any] | None = None) -> str:
    """A short, readable type for a JSON Schema: ``integer``, ``string | null``,
    ``array of string``, ``"a" | "b"``, ``string (date-time)``, ``object (Address)``,
    ``object of integer`` (a map)... ``root`` is the schema that ``$ref`` pointers
    (``#/$defs/Address``) resolve against; a reference it cannot resolve shows its name."""
    if not isinstance(schema, Mapping):
        return "any" if schema is True or schema == {} else "?"
    if isinstance(ref := schema.get("$ref"), str):
        target, _ = _resolve(schema, root)
        if target is schema or not target:
            return _ref_name(ref)
        title = target.get("title")
        named = target if isinstance(title, str) else {**target, "title": _ref_name(ref)}
        return describe_type({k: v for k, v in named.items() if k != "$ref"}, root=None)
    if "const" in schema:
        return _json_text(schema["const"])
    if isinstance(schema.get("enum"), list):
        return " | ".join(_json_text(value) for value in schema["enum"])
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return " | ".join(dict.fromkeys(describe_type(option, root=root) for option in options))
    if isinstance(schema.get("allOf"), list) and len(schema["allOf"]) == 1:
        return describe_type(schema["allOf"][0], root=root)
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(describe_type({**schema, "type": one}, root=root) for one in kind)
    if kind == "array":
        items = schema.get("items")
        return (
            f"array of {describe_type(items, root=root)}" if isinstance(items, Mapping) else "array"
        )
    if kind == "string" and isinstance(schema.get("format"), str):
        return f"string ({schema['format']})"
    if kind == "object" or (kind is None and "properties" in schema):
        return _describe_object(schema, root)
    if isinstance(kind, str):
        return kind
    return "any"


def _describe_object(schema: Mapping[str, Any], root: Mapping[str, Any] | None) -> str:
    title = schema.get("title")
    if isinstance(schema.get("properties"), Mapping) and schema["properties"]:
        return f"object ({title})" if isinstance(title, str) and title else "object"
    values = schema.get("additionalProperties")
    if isinstance(values, Mapping) and values:
        return f"object of {describe_type(values, root=root)}"
    return "object"


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)
