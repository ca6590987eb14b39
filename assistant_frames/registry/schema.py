"""JSON Schema helpers: derive schemas with Pydantic and inline ``$ref`` for LLMs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._tool_json_schema import ToolJsonSchema

__all__ = ["EMPTY_OBJECT_SCHEMA", "ToolJsonSchema", "inline_refs", "model_schema"]

EMPTY_OBJECT_SCHEMA: Mapping[str, Any] = {"type": "object", "properties": {}}


def __getattr__(name: str) -> Any:
    # ToolJsonSchema subclasses Pydantic's generator: imported on first use (PEP 562), so
    # that importing this module (every tool does) does not import Pydantic's JSON Schema.
    if name == "ToolJsonSchema":
        from ._tool_json_schema import ToolJsonSchema

        return ToolJsonSchema
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def inline_refs(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Return a copy of ``schema`` with local ``#/$defs/...`` references replaced inline.

    Models and providers of LLM tools handle self-contained schemas best. A recursive
    reference cannot be inlined; it is left as a ``$ref`` and its definition is kept.
    """
    defs: dict[str, Any] = dict(schema.get("$defs") or schema.get("definitions") or {})
    kept: set[str] = set()

    def resolve(node: Any, active: tuple[str, ...]) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                name = _local_def_name(ref)
                if name is not None and name in defs:
                    if name in active:  # recursion: keep the reference
                        kept.add(name)
                        return dict(node)
                    target = resolve(defs[name], (*active, name))
                    extra = {
                        k: resolve(v, active)
                        for k, v in node.items()
                        if k not in ("$ref", "$defs", "definitions")
                    }
                    return {**target, **extra} if extra else target
            return {
                k: resolve(v, active) for k, v in node.items() if k not in ("$defs", "definitions")
            }
        if isinstance(node, list):
            return [resolve(item, active) for item in node]
        return node

    result: dict[str, Any] = resolve(dict(schema), ())
    if kept:  # a recursive schema still needs its definitions for the refs left in it
        result["$defs"] = defs
    return result


def _local_def_name(ref: str) -> str | None:
    for prefix in ("#/$defs/", "#/definitions/"):
        if ref.startswith(prefix):
            return ref[len(prefix) :]
    return None


def model_schema(model: type[Any]) -> dict[str, Any]:
    """The inlined JSON Schema of a Pydantic model class, without the top-level title."""
    from ._tool_json_schema import ToolJsonSchema

    schema = inline_refs(model.model_json_schema(schema_generator=ToolJsonSchema))
    schema.pop("title", None)
    schema.setdefault("properties", {})
    return schema
