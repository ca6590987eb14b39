"""How a tool validates its arguments and calls ``execute``: its invoker.

A tool's parameters come from ``execute``'s typed signature (a Pydantic model built once
per function; for plain parameters, by the first call, the schema being written without
Pydantic), a type (a ``TypeAdapter``), or a JSON Schema dict (``jsonschema``, imported
when first needed); each gives the tool's input schema and an invoker that validates the
received arguments, raising :class:`~assistant_frames.ToolArgumentsError` with a short
message, then calls ``execute`` (in a worker thread if it is sync, unless asked not to).
Pydantic itself is imported when first needed.
"""

from __future__ import annotations

import builtins
import contextlib
import inspect
import itertools
import math
import types
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, TypeAlias, Union, get_args, get_origin, get_type_hints

from pydantic_core import ValidationError

from .._threads import run_sync as run_in_thread
from ..errors import ToolArgumentsError
from .call_context import ToolCallContext
from .docstrings import parse_docstring
from .schema import EMPTY_OBJECT_SCHEMA, inline_refs

if TYPE_CHECKING:
    from pydantic.plugin._schema_validator import PluggableSchemaValidator
    from pydantic_core import SchemaValidator as _SchemaValidator

    SchemaValidator: TypeAlias = _SchemaValidator | PluggableSchemaValidator

__all__ = ["ExecuteFunction", "Invoker", "Parameters", "build", "runner"]

ExecuteFunction: TypeAlias = Callable[..., Any]
Parameters: TypeAlias = Mapping[str, Any] | type[Any]

# An invoker takes already-received arguments and a context, validates, and runs execute.
Invoker: TypeAlias = Callable[[Any, ToolCallContext], Awaitable[Any]]


def _is_async(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - callable objects with async __call__
    )


def runner(fn: Callable[..., Any], thread: bool) -> Callable[..., Awaitable[Any]]:
    """Wrap ``fn`` so calling it returns an awaitable: direct if async, else in a thread
    (or, with ``thread=False``, called right here on the event loop)."""
    if _is_async(fn):
        return fn
    if not thread:

        async def run_here(*args: Any, **kwargs: Any) -> Any:
            result = fn(*args, **kwargs)
            if inspect.isawaitable(result):  # a sync callable that returned a coroutine
                result = await result
            return result

        return run_here

    async def run_sync(*args: Any, **kwargs: Any) -> Any:
        result = await run_in_thread(lambda: fn(*args, **kwargs))
        if inspect.isawaitable(result):  # a sync callable that returned a coroutine
            result = await result
        return result

    return run_sync


def build(
    name: str, execute: ExecuteFunction | None, parameters: Parameters | None, thread: bool
) -> tuple[str | None, dict[str, Any], Invoker]:
    """Return ``(docstring description, JSON Schema, invoker)`` for a tool."""
    doc_description: str | None = None
    if execute is not None:
        doc_description, _ = parse_docstring(inspect.getdoc(execute))

    if parameters is None:
        if execute is None:
            return doc_description, dict(EMPTY_OBJECT_SCHEMA), _no_execute(name)
        return (doc_description, *_from_signature(name, execute, thread))
    if isinstance(parameters, Mapping):
        return doc_description, *_from_json_schema(name, execute, parameters, thread)
    if isinstance(parameters, builtins.type):
        return doc_description, *_from_type(name, execute, parameters, thread)
    raise TypeError(
        f"parameters for tool {name!r} must be a JSON Schema dict or a type "
        f"(e.g. a Pydantic model), not {parameters!r}"
    )


def _no_execute(name: str) -> Invoker:
    async def invoke(args: Any, context: ToolCallContext) -> Any:
        return None

    return invoke


def _wants_context_positionally(execute: Callable[..., Any]) -> bool:
    """For ``execute(args)`` style tools: does it take a second (context) argument?"""
    try:
        params = list(inspect.signature(execute).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [
        p
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) or p.kind is p.VAR_POSITIONAL
    ]
    return len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in params)


def _call_with_one(
    execute: ExecuteFunction | None, validate: Callable[[Any], Any], thread: bool
) -> Invoker:
    """Invoker for tools whose execute receives the validated arguments as one value."""
    if execute is None:

        async def invoke_nothing(args: Any, context: ToolCallContext) -> Any:
            validate(args)
            return None

        return invoke_nothing
    run = runner(execute, thread)
    if _wants_context_positionally(execute):

        async def invoke_with_context(args: Any, context: ToolCallContext) -> Any:
            return await run(validate(args), context)

        return invoke_with_context

    async def invoke(args: Any, context: ToolCallContext) -> Any:
        return await run(validate(args))

    return invoke


def _from_json_schema(
    name: str, execute: ExecuteFunction | None, parameters: Mapping[str, Any], thread: bool
) -> tuple[dict[str, Any], Invoker]:
    import jsonschema.validators  # imported when needed: it costs workers start-up time

    schema = inline_refs(parameters)
    validator_class = jsonschema.validators.validator_for(schema)
    try:
        validator_class.check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        raise ValueError(
            f"parameters of tool {name!r} are not a valid JSON Schema "
            f"({validator_class.__name__}): {exc.message}"
        ) from None
    validator = validator_class(schema)

    def validate(args: Any) -> Any:
        if args is None and schema.get("type") == "object":
            args = {}
        try:
            errors = sorted(validator.iter_errors(args), key=lambda e: str(list(e.absolute_path)))
        except Exception as exc:  # e.g. an unresolvable $ref: still the caller's problem
            raise ToolArgumentsError(
                f'Cannot check arguments for tool "{name}" against its schema: {exc}',
                tool_name=name,
            ) from None
        if errors:
            raise ToolArgumentsError(
                _format_errors(name, (_jsonschema_error(e) for e in errors)), tool_name=name
            )
        return args

    return schema, _call_with_one(execute, validate, thread)


def _jsonschema_error(error: Any) -> str:
    path = ".".join(str(p) for p in error.absolute_path)
    return f"{path}: {error.message}" if path else str(error.message)


def _from_type(
    name: str, execute: ExecuteFunction | None, parameters: type[Any], thread: bool
) -> tuple[dict[str, Any], Invoker]:
    from pydantic import TypeAdapter

    from ._tool_json_schema import ToolJsonSchema

    adapter: TypeAdapter[Any] = TypeAdapter(parameters)
    schema = inline_refs(adapter.json_schema(schema_generator=ToolJsonSchema))
    schema.pop("title", None)
    validator = adapter.validator

    def validate(args: Any) -> Any:
        try:
            return validator.validate_python({} if args is None else args)
        except ValidationError as exc:
            raise ToolArgumentsError(_pydantic_message(name, exc), tool_name=name) from None

    return schema, _call_with_one(execute, validate, thread)


def _is_context_annotation(annotation: Any) -> bool:
    if annotation is ToolCallContext:
        return True
    return get_origin(annotation) is not None and ToolCallContext in get_args(annotation)


class _Signature:
    """What a typed signature gives a tool: schema, validator, and how to call ``execute``.

    Cached per function, so registering many tools from one function (generated tools,
    a burst of ``add_tool``) builds the Pydantic model once. When every parameter is
    plain (see :func:`_plain_schema`), the schema is written here as Pydantic would
    derive it, and the model that validates the arguments is built by the first call
    (:meth:`built`): a worker that serves such tools sends its first context without
    importing Pydantic. Any other signature builds the model at once, as it always did,
    so what Pydantic cannot handle is still refused when the tool is made.
    """

    __slots__ = (
        "_fields",
        "_model_name",
        "_name",
        "aliases",
        "context_param",
        "schema",
        "validator",
    )

    def __init__(self, name: str, execute: ExecuteFunction) -> None:
        try:
            signature = inspect.signature(execute)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"Cannot read the signature of execute for tool {name!r}") from exc
        try:
            hints = get_type_hints(execute, include_extras=True)
        except Exception:  # unresolvable forward references: fall back to the raw annotations
            hints = {}
        _, param_docs = parse_docstring(inspect.getdoc(execute))

        # parameter -> (annotation, default or Parameter.empty, description or None)
        fields: dict[str, tuple[Any, Any, str | None]] = {}
        self.context_param: str | None = None
        for param in signature.parameters.values():
            annotation = hints.get(param.name, param.annotation)
            if annotation is inspect.Parameter.empty:
                annotation = Any
            if _is_context_annotation(annotation):
                self.context_param = param.name
                continue
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
                raise TypeError(
                    f"Tool {name!r}: parameter {param.name!r} must be passable by keyword "
                    "(no *args, **kwargs or positional-only parameters); pass `parameters=` "
                    "explicitly to use such a function"
                )
            fields[param.name] = (annotation, param.default, param_docs.get(param.name))
        self._name = name
        self._model_name = f"{getattr(execute, '__name__', name)}_arguments"
        self._fields = fields
        self.aliases: dict[str, str] = {}  # model field -> parameter name, where they differ
        self.validator: SchemaValidator | None = None
        plain = _plain_schema(fields)
        if plain is None:
            self.schema = self._build()
        else:
            self.schema = plain

    def built(self) -> tuple[SchemaValidator, dict[str, str]]:
        """The validator of the arguments and the aliases of its fields, built on first use."""
        validator = self.validator
        if validator is None:
            self._build()
            validator = self.validator
            assert validator is not None
        return validator, self.aliases

    def _build(self) -> dict[str, Any]:
        """Build the Pydantic model of the arguments; its JSON Schema."""
        from pydantic import BaseModel, ConfigDict, Field, create_model

        from ._tool_json_schema import ToolJsonSchema

        name = self._name
        fields: dict[str, Any] = {}
        aliases: dict[str, str] = {}
        for param_name, (annotation, param_default, description) in self._fields.items():
            field_name = param_name
            if field_name.startswith("_") or hasattr(BaseModel, field_name):
                field_name = f"field_{len(fields)}"
                aliases[field_name] = param_name
            default = ... if param_default is inspect.Parameter.empty else param_default
            options: dict[str, Any] = {}
            if field_name != param_name:
                options["alias"] = param_name
            if description is not None:  # never override an Annotated Field's description
                options["description"] = description
            fields[field_name] = (annotation, Field(default, **options) if options else default)

        model: type[BaseModel] = create_model(
            self._model_name,
            __config__=ConfigDict(protected_namespaces=(), arbitrary_types_allowed=True),
            **fields,
        )
        try:
            schema = inline_refs(model.model_json_schema(schema_generator=ToolJsonSchema))
        except Exception as exc:
            raise TypeError(
                f"Tool {name!r}: cannot build a JSON Schema for its parameters: {exc}"
            ) from exc
        schema.pop("title", None)
        schema.setdefault("properties", {})
        self.aliases = aliases
        self.validator = model.__pydantic_validator__
        return schema


# The plain parameter types, and their JSON Schema types.
_PLAIN_TYPES: Final[tuple[tuple[type, str], ...]] = (
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (bool, "boolean"),
)


def _plain_schema(fields: dict[str, tuple[Any, Any, str | None]]) -> dict[str, Any] | None:
    """The JSON Schema that Pydantic derives (with :class:`ToolJsonSchema`, untitled) for
    parameters that are all plain, else ``None``.

    Plain: annotated ``int``, ``float``, ``str``, ``bool``, one of them ``| None``, ``Any``
    or not at all; a default, if any, of exactly that type (a finite float), or ``None``
    where ``None`` is allowed. For these Pydantic writes ``{"type": ...}`` (``{}`` for
    ``Any``; ``{"anyOf": [..., {"type": "null"}]}`` for ``| None``), then ``default`` and
    ``description``, keys sorted; a test compares the two on many signatures.
    """
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, (annotation, default, description) in fields.items():
        if name.startswith("field_") and name[6:].isdigit():
            return None  # may be the name _build gives another parameter: Pydantic decides
        schema = _plain_property(annotation, default)
        if schema is None:
            return None
        if description is not None:
            schema["description"] = description
        properties[name] = dict(sorted(schema.items()))
        if default is inspect.Parameter.empty:
            required.append(name)
    if required:
        return {"properties": properties, "required": required, "type": "object"}
    return {"properties": properties, "type": "object"}


def _plain_property(annotation: Any, default: Any) -> dict[str, Any] | None:
    """The schema of one plain parameter (see :func:`_plain_schema`), else ``None``."""
    schema: dict[str, Any] = {}
    defaults: tuple[type, ...] = (int, float, str, bool)  # the types a default may have
    nullable = True  # may the default be None?
    if annotation is not Any:
        plain = _plain(annotation)
        nullable = False
        if plain is None and get_origin(annotation) in (Union, types.UnionType):
            args = get_args(annotation)
            if len(args) == 2 and type(None) in args:
                plain = _plain(args[0] if args[1] is type(None) else args[1])
                nullable = True
        if plain is None:
            return None
        defaults = (plain[0],)
        schema = {"type": plain[1]}
        if nullable:
            schema = {"anyOf": [schema, {"type": "null"}]}
    if default is inspect.Parameter.empty:
        return schema
    if default is None:
        if not nullable:
            return None
    elif type(default) not in defaults or (type(default) is float and not math.isfinite(default)):
        return None
    schema["default"] = default
    return schema


def _plain(annotation: Any) -> tuple[type, str] | None:
    for plain in _PLAIN_TYPES:
        if annotation is plain[0]:
            return plain
    return None


_signatures: weakref.WeakKeyDictionary[Any, _Signature] = weakref.WeakKeyDictionary()


def _signature_of(name: str, execute: ExecuteFunction) -> _Signature:
    try:
        return _signatures[execute]
    except (KeyError, TypeError):  # TypeError: not weakly referenceable
        pass
    signature = _Signature(name, execute)
    with contextlib.suppress(TypeError):
        _signatures[execute] = signature
    return signature


def _from_signature(
    name: str, execute: ExecuteFunction, thread: bool
) -> tuple[dict[str, Any], Invoker]:
    info = _signature_of(name, execute)
    validator, aliases = info.validator, info.aliases
    run = runner(execute, thread)

    def validate(args: Any) -> dict[str, Any]:
        nonlocal validator, aliases
        if validator is None:  # the first call of a tool whose schema was written directly
            validator, aliases = info.built()
        try:
            values: dict[str, Any] = validator.validate_python(
                {} if args is None else args
            ).__dict__
        except ValidationError as exc:
            raise ToolArgumentsError(_pydantic_message(name, exc), tool_name=name) from None
        if aliases:
            return {aliases.get(k, k): v for k, v in values.items()}
        return values

    if info.context_param is not None:
        key = info.context_param

        async def invoke_with_context(args: Any, context: ToolCallContext) -> Any:
            kwargs = dict(validate(args))
            kwargs[key] = context
            return await run(**kwargs)

        return info.schema, invoke_with_context

    async def invoke(args: Any, context: ToolCallContext) -> Any:
        return await run(**validate(args))

    return info.schema, invoke


def _pydantic_message(name: str, exc: ValidationError) -> str:
    def one(error: Any) -> str:
        loc = ".".join(str(part) for part in error["loc"])
        return f"{loc}: {error['msg']}" if loc else str(error["msg"])

    return _format_errors(name, (one(e) for e in exc.errors(include_url=False)))


def _format_errors(name: str, errors: Any, limit: int = 5) -> str:
    items = list(itertools.islice(errors, limit + 1))
    text = "; ".join(items[:limit])
    if len(items) > limit:
        text += "; ..."
    return f'Invalid arguments for tool "{name}": {text}'
