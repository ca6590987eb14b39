"""A tool's output schema: the JSON Schema of its results, given or derived.

Given as a JSON Schema dict or a type (its serialization-mode schema, inlined), or
derived from ``execute``'s return annotation when that is a Pydantic model or a
``TypedDict`` (cached per function).
"""

from __future__ import annotations

import builtins
import contextlib
import inspect
import logging
import sys
import weakref
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, TypeAlias, get_args, get_origin, get_type_hints

from typing_extensions import is_typeddict

from .schema import inline_refs

__all__ = [
    "OutputSchema",
    "derived_output_schema",
    "explicit_output_schema",
    "return_annotation",
    "type_schema",
]

OutputSchema: TypeAlias = Mapping[str, Any] | type[Any] | Literal[False]
"""A JSON Schema of the results, a type to derive it from, or ``False`` for none."""

logger = logging.getLogger("assistant_frames.registry")


def explicit_output_schema(name: str, output_schema: OutputSchema | None) -> dict[str, Any] | None:
    """The output schema given for a tool: a JSON Schema dict, a type, or ``None``/``False``."""
    if output_schema is None or output_schema is False:
        return None
    if isinstance(output_schema, Mapping):
        return inline_refs(output_schema)
    if isinstance(output_schema, builtins.type) or get_origin(output_schema) is not None:
        try:
            return type_schema(output_schema)
        except Exception as exc:
            raise TypeError(
                f"Tool {name!r}: cannot build a JSON Schema for its output: {exc}"
            ) from exc
    raise TypeError(
        f"output_schema of tool {name!r} must be a JSON Schema dict, a type or False, "
        f"not {output_schema!r}"
    )


def type_schema(kind: Any) -> dict[str, Any]:
    """The inlined serialization-mode JSON Schema of ``kind``, without its top-level title."""
    from pydantic import TypeAdapter

    from ._tool_json_schema import ToolJsonSchema

    adapter: TypeAdapter[Any] = TypeAdapter(kind)
    schema = inline_refs(adapter.json_schema(mode="serialization", schema_generator=ToolJsonSchema))
    schema.pop("title", None)
    return schema


_output_schemas: weakref.WeakKeyDictionary[Any, dict[str, Any] | None] = weakref.WeakKeyDictionary()


def derived_output_schema(execute: Callable[..., Any]) -> dict[str, Any] | None:
    """The output schema ``execute``'s return annotation gives, if it is a model or TypedDict.

    Cached per function. A return type Pydantic cannot describe gives none and a warning
    rather than an error: such tools worked before output schemas existed, and still do.
    """
    try:
        return _output_schemas[execute]
    except (KeyError, TypeError):  # TypeError: not weakly referenceable
        pass
    schema: dict[str, Any] | None = None
    annotation = return_annotation(execute)
    if get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if _is_model_class(annotation) or is_typeddict(annotation):
        try:
            schema = type_schema(annotation)
        except Exception as exc:
            logger.warning(
                "No output schema for %r: its return type %r has no JSON Schema (%s); "
                "pass output_schema= to give one, or output_schema=False to silence this",
                getattr(execute, "__qualname__", execute),
                annotation,
                exc,
            )
    with contextlib.suppress(TypeError):
        _output_schemas[execute] = schema
    return schema


def _is_model_class(annotation: Any) -> bool:
    """Is ``annotation`` a Pydantic model class? Answered without importing Pydantic: no
    model class exists before ``pydantic.main`` (which defines ``BaseModel``) is loaded."""
    main = sys.modules.get("pydantic.main")
    return (
        main is not None
        and isinstance(annotation, builtins.type)
        and issubclass(annotation, main.BaseModel)
    )


def return_annotation(execute: Callable[..., Any]) -> Any:
    try:
        annotation = inspect.signature(execute).return_annotation
    except (TypeError, ValueError):
        return None
    if annotation is inspect.Signature.empty:
        return None
    if isinstance(annotation, str):  # postponed: resolve it where the function lives
        target = execute
        if not (inspect.isfunction(execute) or inspect.ismethod(execute)):
            target = getattr(execute, "__call__", execute)  # noqa: B004
        try:
            annotation = get_type_hints(target, include_extras=True).get("return")
        except Exception:
            return None
    return annotation
