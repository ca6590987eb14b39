"""``Tool``: a named, described, schema-checked callable that a model may call.

A tool's parameters come from one of three places, and that choice also fixes how
``execute`` is called:

* nothing given: the schema is derived from ``execute``'s typed signature (Pydantic), and
  ``execute`` is called with the validated arguments as keyword arguments;
* a type (a Pydantic model, a ``TypedDict``, a dataclass...): ``execute`` receives one
  validated instance of it (on Python < 3.12 Pydantic needs ``typing_extensions.TypedDict``);
* a JSON Schema dict: the arguments are checked with ``jsonschema`` and ``execute``
  receives the dict.

``execute`` may be sync (it then runs in a worker thread so it cannot stall the event
loop, unless ``thread=False`` asks to run it on the loop) or async, and may ask for a
:class:`ToolCallContext` by annotating a parameter with that type (or, with explicit
parameters, by taking a second positional argument).

Besides what a model needs to call it, a tool may carry what MCP knows about tools:
a display ``title`` and ``icons``, ``annotations`` (:class:`ToolAnnotations`: behaviour
hints, and a title of their own), an ``output_schema`` (the JSON Schema of its results,
derived from a return annotation that is a Pydantic model or a ``TypedDict``), and
``meta`` (MCP's ``_meta``, passed through untouched). They travel with the tool over
frames and MCP alike, exactly as given: a tool listed by an MCP server is listed again
by :class:`~assistant_frames.mcp.MCPContextServer` field for field.
"""

from __future__ import annotations

import builtins
import itertools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypeVar

from pydantic_core import PydanticSerializationError, ValidationError, to_jsonable_python
from typing_extensions import TypedDict, Unpack

from ..errors import ToolDisabledError
from .call_context import ToolCallContext
from .events import ToolEventCallback
from .invoker import ExecuteFunction, Parameters, build
from .output_schema import OutputSchema, derived_output_schema, explicit_output_schema
from .schema import EMPTY_OBJECT_SCHEMA
from .ui import ToolUI, with_ui

if TYPE_CHECKING:
    # A Pydantic model: imported when a tool is given annotations, not by every worker.
    from .annotations import ToolAnnotations

__all__ = [
    "ExecuteFunction",
    "OutputSchema",
    "Parameters",
    "Tool",
    "ToolCallContext",
    "ToolOptions",
    "ToolType",
]

ToolType: TypeAlias = Literal["frontend", "backend", "human"] | str
"""assistant-ui's tool kinds; any string crosses the wire unchanged."""

_call_ids = itertools.count(1)
_UNSET: Any = object()

_Form = TypeVar("_Form")


class ToolOptions(TypedDict, total=False):
    """A tool's descriptive fields, as keyword arguments.

    What :meth:`ModelContextRegistry.add_tool`, ``@registry.tool``, :meth:`Tool.replace`,
    :meth:`Tool.from_parts` and :meth:`ToolHandle.update` accept besides the name, the
    function and its parameters; :class:`Tool` documents each.
    """

    description: str | None
    disabled: bool
    type: ToolType | None
    title: str | None
    icons: Sequence[Mapping[str, Any]] | None
    meta: Mapping[str, Any] | None
    annotations: ToolAnnotations | Mapping[str, Any] | None
    output_schema: OutputSchema | None
    ui: ToolUI | str | None


class Tool:
    """A tool: ``name``, ``description``, JSON Schema ``parameters`` and ``execute``.

    Tools are immutable; :meth:`replace` returns a changed copy. ``parameters`` is always
    a self-contained JSON Schema (``$ref`` inlined) whatever it was built from.

    Args:
        name: What the model calls the tool.
        execute: The function that runs it, sync or async (``None``: a tool that does
            nothing, e.g. one a frontend carries out).
        description: For the model; defaults to ``execute``'s docstring.
        parameters: A JSON Schema dict or a type; ``None`` derives it from the
            signature (see the module's documentation).
        disabled: Listed nowhere and refused when called.
        type: assistant-ui's kind of tool (``"frontend"``, ``"backend"``, ``"human"``...).
        title: A human-readable name for display (MCP's ``Tool.title``). ``None``
            takes the annotations' title, if they have one.
        icons: Icons for display, MCP's ``Tool.icons``: a list of JSON objects, each
            with at least a ``src`` URI (and optionally ``mimeType``, ``sizes``,
            ``theme``), passed on untouched (a shallow copy is kept).
        meta: Free-form metadata, MCP's ``_meta``: passed on untouched (a shallow copy
            is kept).
        annotations: :class:`ToolAnnotations`, or a dict of them in snake_case or
            MCP's camelCase (``{"readOnlyHint": True}``).
        ui: The tool's MCP Apps UI: a :class:`ToolUI`, or a ``ui://`` URI for one seen by
            the model and the view alike. It is kept as ``meta["ui"]`` (``_meta.ui``),
            replacing any ``ui`` entry ``meta`` has; read it back as :attr:`ui`.
        output_schema: The JSON Schema of the results, or a type to derive it from.
            ``None`` derives it from ``execute``'s return annotation when that is a
            Pydantic model or a ``TypedDict`` (else the tool has none); ``False``
            derives nothing.
        thread: Run a sync ``execute`` in a worker thread (the default), so that it
            cannot stall the event loop. ``False`` calls it on the event loop itself,
            which saves the thread hop for quick, non-blocking functions; such a
            function must never block, and cannot be interrupted once running. No
            effect on async functions.
    """

    __slots__ = (
        "_invoker",
        "_output_schema_source",
        "_parameters_source",
        "_serialized",
        "_serialized_by",
        "_thread",
        "_title_derived",
        "annotations",
        "description",
        "disabled",
        "execute",
        "icons",
        "meta",
        "name",
        "output_schema",
        "parameters",
        "title",
        "type",
    )

    name: str
    description: str | None
    parameters: Mapping[str, Any]
    execute: ExecuteFunction | None
    disabled: bool
    type: ToolType | None
    title: str | None
    """A human-readable name for display, MCP's ``Tool.title``."""
    icons: Sequence[Mapping[str, Any]] | None
    """Icons for display, MCP's ``Tool.icons`` (JSON objects with a ``src``)."""
    meta: Mapping[str, Any] | None
    """MCP's ``_meta``: anything the tool's author wants to pass along, untouched."""
    annotations: ToolAnnotations | None
    """MCP's annotations: behaviour hints (and a display title of their own)."""
    output_schema: Mapping[str, Any] | None
    """The JSON Schema of the tool's results (``$ref`` inlined), if known."""

    def __init__(
        self,
        name: str,
        execute: ExecuteFunction | None = None,
        *,
        description: str | None = None,
        parameters: Parameters | None = None,
        disabled: bool = False,
        type: ToolType | None = None,
        title: str | None = None,
        icons: Sequence[Mapping[str, Any]] | None = None,
        meta: Mapping[str, Any] | None = None,
        annotations: ToolAnnotations | Mapping[str, Any] | None = None,
        output_schema: OutputSchema | None = None,
        thread: bool = True,
        ui: ToolUI | str | None = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"A tool name must be a non-empty string, not {name!r}")
        if execute is not None and not callable(execute):
            raise TypeError(f"execute for tool {name!r} must be callable, not {execute!r}")
        self.name = name
        self.execute = execute
        self.disabled = bool(disabled)
        self.type = type
        self.meta = _check_meta(name, with_ui(meta, ui))
        self.annotations = _check_annotations(name, annotations)
        self.icons = _check_icons(name, icons)
        self.title = _check_title(name, title)
        self._title_derived = self.title is None
        if self._title_derived:
            self.title = _annotations_title(self.annotations)
        self._output_schema_source = output_schema
        if output_schema is None:
            self.output_schema = None if execute is None else derived_output_schema(execute)
        else:
            self.output_schema = explicit_output_schema(name, output_schema)
        self._thread = bool(thread)
        self._parameters_source = parameters
        self._serialized: Any = None  # the form that _serialized_by built
        self._serialized_by: Callable[[Tool], Any] | None = None
        doc_description, self.parameters, self._invoker = build(
            name, execute, parameters, self._thread
        )
        self.description = description if description is not None else doc_description

    @classmethod
    def from_parts(
        cls,
        name: str,
        invoke: Callable[[Any, ToolCallContext], Awaitable[Any]],
        *,
        parameters: Mapping[str, Any] | None = None,
        **options: Unpack[ToolOptions],
    ) -> Tool:
        """Build a tool around a ready ``invoke(args, context)`` coroutine function.

        Nothing is derived or validated: ``parameters`` (and a dict ``output_schema``,
        ``meta`` or ``icons``) are kept exactly as given, ``title`` is not taken from the
        annotations, and ``invoke`` receives the raw arguments. Frame hosts use this for
        remote tools, whose frame validates the arguments itself; it is also the cheapest
        way to build many tools at once.
        """
        tool = object.__new__(cls)
        tool.name = name
        tool.description = options.get("description")
        tool.parameters = parameters if parameters is not None else dict(EMPTY_OBJECT_SCHEMA)
        tool.disabled = bool(options.get("disabled", False))
        tool.type = options.get("type")
        tool.title = options.get("title")
        tool._title_derived = False
        tool.icons = options.get("icons")
        tool.meta = options.get("meta")
        if options.get("ui") is not None:
            tool.meta = with_ui(tool.meta, options.get("ui"))
        tool.annotations = _check_annotations(name, options.get("annotations"))
        output_schema = options.get("output_schema")
        tool._output_schema_source = output_schema
        tool.output_schema = (
            output_schema
            if output_schema is None or isinstance(output_schema, Mapping)
            else explicit_output_schema(name, output_schema)
        )
        tool.execute = invoke
        tool._invoker = invoke
        tool._thread = True
        tool._parameters_source = tool.parameters
        tool._serialized = tool._serialized_by = None
        return tool

    # -- calling ---------------------------------------------------------------------

    async def invoke(
        self,
        args: Any = None,
        *,
        tool_call_id: str | None = None,
        context: ToolCallContext | None = None,
        on_event: ToolEventCallback | None = None,
    ) -> Any:
        """Validate ``args`` against the schema and run ``execute``; return its result.

        ``on_event`` receives the call's :class:`ToolProgress` and :class:`ToolLog`
        events (ignored when a ``context`` is given: it carries its own).

        Raises :class:`ToolDisabledError` for a disabled tool and
        :class:`ToolArgumentsError` when the arguments do not fit the schema; whatever
        ``execute`` raises propagates unchanged.
        """
        if self.disabled:
            raise ToolDisabledError(self.name, tool_call_id=tool_call_id)
        if context is None:
            context = ToolCallContext(
                tool_call_id or f"call-{next(_call_ids)}", self.name, on_event
            )
        return await self._invoker(args, context)

    # -- copies ----------------------------------------------------------------------

    def replace(
        self,
        *,
        name: str = _UNSET,
        execute: ExecuteFunction | None = _UNSET,
        parameters: Parameters | None = _UNSET,
        thread: bool = _UNSET,
        **changes: Unpack[ToolOptions],
    ) -> Tool:
        """Return a copy with the given fields changed.

        ``output_schema=None`` (or ``False``) removes the output schema. A new
        ``execute``, ``parameters`` or ``thread`` builds the tool anew, and a derived
        output schema is then derived from the new function. A title taken from the
        annotations follows new annotations; ``title=None`` takes it from them again.
        """
        if execute is not _UNSET or parameters is not _UNSET or thread is not _UNSET:
            options: dict[str, Any] = {
                field: getattr(self, field) for field in _CHECKS if field != "ui"
            }
            options["output_schema"] = self._output_schema_source  # derived stays derived
            if self._title_derived:
                options["title"] = None  # derived stays derived
            options.update(changes)
            if "output_schema" in changes and changes["output_schema"] is None:
                options["output_schema"] = False  # removed, as in a copy: not derived again
            rebuilt = Tool(
                self.name if name is _UNSET else name,
                self.execute if execute is _UNSET else execute,
                parameters=self._parameters_source if parameters is _UNSET else parameters,
                thread=self._thread if thread is _UNSET else thread,
                **options,
            )
            if options["title"] is None and not self._title_derived and "title" not in changes:
                rebuilt.title, rebuilt._title_derived = None, False  # none, as given
            return rebuilt
        copy = object.__new__(Tool)
        for slot in Tool.__slots__:
            object.__setattr__(copy, slot, getattr(self, slot))
        copy._serialized = copy._serialized_by = None
        if name is not _UNSET:
            if not isinstance(name, str) or not name:
                raise ValueError(f"A tool name must be a non-empty string, not {name!r}")
            copy.name = name
        ui = changes.pop("ui", None)
        for field, value in changes.items():
            try:
                check = _CHECKS[field]
            except KeyError:
                raise TypeError(f"Tool.replace() got an unexpected keyword {field!r}") from None
            setattr(copy, field, check(copy.name, value))
        if "title" in changes:
            copy._title_derived = copy.title is None
        if copy._title_derived:
            copy.title = _annotations_title(copy.annotations)
        if ui is not None:  # after meta: ui= wins over a ui entry of a new meta
            copy.meta = _check_meta(copy.name, with_ui(copy.meta, ui))
        if "output_schema" in changes:  # given, never derived again when rebuilt
            source = changes["output_schema"]
            copy._output_schema_source = False if source is None else source
        return copy

    @property
    def ui(self) -> ToolUI | None:
        """The tool's MCP Apps UI, read from ``meta["ui"]`` (``None``: no UI)."""
        return ToolUI.from_meta(self.meta)

    def serialized_form(self, build: Callable[[Tool], _Form]) -> _Form:
        """What ``build(tool)`` returns for this tool, built on first use and kept with it.

        For the wire layer, which sends a tool's serialized form with every context
        update (``frames.protocol.serialize_tool``): a tool does not change once made
        (:meth:`replace` returns a copy, which keeps nothing), so its form is built once.
        One form is kept: a call with another ``build`` builds its own and keeps that.
        The form is shared, not copied: callers must not change it.
        """
        if self._serialized_by is build:
            form: _Form = self._serialized
            return form
        form = build(self)
        self._serialized, self._serialized_by = form, build
        return form

    def __repr__(self) -> str:
        flags = ", disabled=True" if self.disabled else ""
        return f"Tool(name={self.name!r}, description={self.description!r}{flags})"


# -- descriptive fields ----------------------------------------------------------------------


def _check_meta(name: str, meta: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if meta is None:
        return None
    if not isinstance(meta, Mapping):
        raise TypeError(f"meta of tool {name!r} must be a dict, not {builtins.type(meta).__name__}")
    try:  # it crosses frames and MCP as JSON: find out now, not when it is first sent
        to_jsonable_python(meta, inf_nan_mode="null")
    except (PydanticSerializationError, ValueError, TypeError, RecursionError) as exc:
        raise TypeError(f"meta of tool {name!r} must be JSON-compatible: {exc}") from None
    return dict(meta)


def _check_title(name: str, title: str | None) -> str | None:
    if title is not None and not isinstance(title, str):
        raise TypeError(
            f"title of tool {name!r} must be a str, not {builtins.type(title).__name__}"
        )
    return title


def _annotations_title(annotations: ToolAnnotations | None) -> str | None:
    """The annotations' title: a tool's title when none is given (MCP's display order)."""
    return None if annotations is None else annotations.title


def _check_icons(
    name: str, icons: Sequence[Mapping[str, Any]] | None
) -> list[dict[str, Any]] | None:
    if icons is None:
        return None
    if isinstance(icons, (str, bytes, Mapping)) or not isinstance(icons, Sequence):
        raise TypeError(
            f"icons of tool {name!r} must be a list of dicts, not {builtins.type(icons).__name__}"
        )
    for icon in icons:
        if not isinstance(icon, Mapping) or not isinstance(icon.get("src"), str):
            raise TypeError(f"each icon of tool {name!r} must be a dict with a str 'src'")
    try:  # it crosses frames and MCP as JSON: find out now, not when it is first sent
        to_jsonable_python(icons, inf_nan_mode="null")
    except (PydanticSerializationError, ValueError, TypeError, RecursionError) as exc:
        raise TypeError(f"icons of tool {name!r} must be JSON-compatible: {exc}") from None
    return [dict(icon) for icon in icons]


def _check_annotations(
    name: str, annotations: ToolAnnotations | Mapping[str, Any] | None
) -> ToolAnnotations | None:
    if annotations is None:
        return None
    from .annotations import ToolAnnotations

    try:
        return ToolAnnotations.coerce(annotations)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}"
            for error in exc.errors(include_url=False)
        )
        raise ValueError(f"annotations of tool {name!r} are invalid: {problems}") from None
    except TypeError as exc:
        raise TypeError(f"Tool {name!r}: {exc}") from None


_CHECKS: dict[str, Callable[[str, Any], Any]] = {
    "description": lambda name, value: value,
    "disabled": lambda name, value: bool(value),
    "type": lambda name, value: value,
    "title": _check_title,
    "icons": _check_icons,
    "meta": _check_meta,
    "annotations": _check_annotations,
    "output_schema": explicit_output_schema,
    "ui": lambda name, value: value,  # not stored: Tool.replace() folds it into meta
}
"""How each of :class:`ToolOptions` is checked when set on an existing tool.

Its keys are the descriptive fields, the same as :class:`ToolOptions`' (a test checks).
"""


def __getattr__(name: str) -> Any:
    if name == "ToolAnnotations":  # imported here before it was imported on first use
        from .annotations import ToolAnnotations

        return ToolAnnotations
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
