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

import asyncio
import builtins
import contextlib
import dataclasses
import inspect
import itertools
import logging
import threading
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import (
    Annotated,
    Any,
    Literal,
    TypeAlias,
    TypeVar,
    get_args,
    get_origin,
    get_type_hints,
)

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model
from pydantic_core import PydanticSerializationError, to_jsonable_python
from typing_extensions import TypedDict, Unpack, is_typeddict

from .._threads import asyncio_call_soon_threadsafe, call_soon_threadsafe
from .._threads import run_sync as run_in_thread
from ..errors import ToolArgumentsError, ToolDisabledError
from .annotations import ToolAnnotations
from .docstrings import parse_docstring
from .events import (
    LOG_LEVELS,
    LogLevel,
    ToolEvent,
    ToolEventCallback,
    ToolLog,
    ToolProgress,
    deliver_event,
)
from .schema import EMPTY_OBJECT_SCHEMA, ToolJsonSchema, inline_refs
from .ui import ToolUI, with_ui

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

ExecuteFunction: TypeAlias = Callable[..., Any]
Parameters: TypeAlias = Mapping[str, Any] | type[Any]
OutputSchema: TypeAlias = Mapping[str, Any] | type[Any] | Literal[False]
"""A JSON Schema of the results, a type to derive it from, or ``False`` for none."""

logger = logging.getLogger("assistant_frames.registry")

_call_ids = itertools.count(1)
_event_lock = threading.Lock()
_UNSET: Any = object()

_Form = TypeVar("_Form")


class ToolCallContext:
    """What an ``execute`` function may learn about the call it is serving, and how it
    talks back to the caller before it returns.

    Async tools are cancelled the ordinary way (their task is cancelled); sync tools run in
    a thread that cannot be interrupted, so they should poll :attr:`cancelled` or block in
    :meth:`wait_cancelled` instead of ``time.sleep``.

    :meth:`report_progress` and :meth:`log` send :class:`ToolProgress` and
    :class:`ToolLog` events to the caller's ``on_event`` callback, across frames and
    MCP. They never block and may be called from the event loop or from the tool's
    worker thread; when nobody listens (:attr:`wants_events` is false) they do nothing.
    """

    __slots__ = ("_cancelled", "_event", "_sink", "tool_call_id", "tool_name")

    def __init__(
        self,
        tool_call_id: str,
        tool_name: str,
        on_event: ToolEventCallback | None = None,
    ) -> None:
        self.tool_call_id = tool_call_id
        self.tool_name = tool_name
        self._cancelled = False
        self._event: threading.Event | None = None
        self._sink = None if on_event is None else _EventSink(on_event)

    @property
    def cancelled(self) -> bool:
        """True once the caller has cancelled this call (``tool-cancel`` or timeout)."""
        return self._cancelled

    @property
    def wants_events(self) -> bool:
        """True when the caller receives this call's progress and log events."""
        return self._sink is not None

    def cancel(self) -> None:
        """Mark the call cancelled and wake :meth:`wait_cancelled` (frames call this)."""
        with _event_lock:
            self._cancelled = True
            if self._event is not None:
                self._event.set()

    def wait_cancelled(self, timeout: float | None = None) -> bool:
        """Block the calling thread until cancelled or ``timeout``; return :attr:`cancelled`.

        Meant for sync tools running in a worker thread; never call it on the event loop.
        """
        with _event_lock:
            if self._cancelled:
                return True
            if self._event is None:
                self._event = threading.Event()
            event = self._event
        return event.wait(timeout)

    def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Tell the caller how far the call is: ``progress`` of ``total`` (if known).

        Progress should only grow (MCP requires it). Reports faster than the caller can
        take them are coalesced: the latest wins.
        """
        sink = self._sink
        if sink is None or self._cancelled:
            return
        sink.emit(ToolProgress(progress, total, message, self.tool_call_id, self.tool_name))

    def log(self, level: LogLevel, message: str | None = None, *, data: Any = None) -> None:
        """Send the caller a log message at ``level`` (MCP's levels: ``"debug"``,
        ``"info"``, ``"notice"``, ``"warning"``, ``"error"``, ``"critical"``,
        ``"alert"``, ``"emergency"``), with optional JSON ``data``."""
        if level not in LOG_LEVELS:
            raise ValueError(f"log level must be one of {', '.join(LOG_LEVELS)}, not {level!r}")
        sink = self._sink
        if sink is None or self._cancelled:
            return
        sink.emit(ToolLog(level, message, data, self.tool_call_id, self.tool_name))

    def send_event(self, event: ToolEvent) -> None:
        """Pass on an event from elsewhere (a nested call) as this call's own.

        A frame host's tools use it: the progress of the call they forward becomes the
        progress of the call they serve.
        """
        sink = self._sink
        if sink is None or self._cancelled:
            return
        sink.emit(
            dataclasses.replace(event, tool_call_id=self.tool_call_id, tool_name=self.tool_name)
        )

    def __repr__(self) -> str:
        return (
            f"ToolCallContext(tool_call_id={self.tool_call_id!r}, "
            f"tool_name={self.tool_name!r}, cancelled={self._cancelled})"
        )


_MAX_PENDING_EVENTS = 100  # per call, reported from a thread and not yet on the loop


class _EventSink:
    """Delivers a call's events to its callback on the event loop's thread.

    Created on the loop (a context with a callback is made there). From another thread
    (a sync tool), events wait in a short list until the loop runs the one scheduled
    flush: a burst of progress from a thread keeps only its latest, and more than
    :data:`_MAX_PENDING_EVENTS` waiting events are dropped rather than grow memory.
    """

    __slots__ = ("_call_soon", "_dropped", "_lock", "_loop_thread", "_pending", "callback")

    def __init__(self, callback: ToolEventCallback) -> None:
        self.callback = callback
        self._loop_thread = threading.get_ident()
        self._call_soon: Callable[[Callable[[], Any]], Any] | None = None
        self._lock = threading.Lock()
        self._pending: list[ToolEvent] = []
        self._dropped = 0
        try:  # asyncio's, looked up directly: this runs once per call that listens
            self._call_soon = asyncio_call_soon_threadsafe(asyncio.get_running_loop())
        except RuntimeError:
            with contextlib.suppress(Exception):  # no loop at all: events stay on this thread
                self._call_soon = call_soon_threadsafe()

    def emit(self, event: ToolEvent) -> None:
        if threading.get_ident() == self._loop_thread or self._call_soon is None:
            deliver_event(self.callback, event)
            return
        with self._lock:
            pending = self._pending
            scheduled = bool(pending)
            if pending and type(event) is ToolProgress and type(pending[-1]) is ToolProgress:
                pending[-1] = event  # latest wins
            elif len(pending) < _MAX_PENDING_EVENTS:
                pending.append(event)
            else:
                self._dropped += 1
        if not scheduled:
            with contextlib.suppress(RuntimeError):  # the loop has ended: nobody listens
                self._call_soon(self._flush)

    def _flush(self) -> None:
        with self._lock:
            events, self._pending = self._pending, []
            dropped, self._dropped = self._dropped, 0
        if dropped:
            logger.warning("Dropped %d events of a tool call: its caller was too slow", dropped)
        for event in events:
            deliver_event(self.callback, event)


# An invoker takes already-received arguments and a context, validates, and runs execute.
_Invoker: TypeAlias = Callable[[Any, ToolCallContext], Awaitable[Any]]


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
            self.output_schema = None if execute is None else _derived_output_schema(execute)
        else:
            self.output_schema = _explicit_output_schema(name, output_schema)
        self._thread = bool(thread)
        self._parameters_source = parameters
        self._serialized: Any = None  # the form that _serialized_by built
        self._serialized_by: Callable[[Tool], Any] | None = None
        doc_description, self.parameters, self._invoker = _build(
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
        annotations = options.get("annotations")
        tool.annotations = (
            annotations
            if annotations is None or isinstance(annotations, ToolAnnotations)
            else _check_annotations(name, annotations)
        )
        output_schema = options.get("output_schema")
        tool._output_schema_source = output_schema
        tool.output_schema = (
            output_schema
            if output_schema is None or isinstance(output_schema, Mapping)
            else _explicit_output_schema(name, output_schema)
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


def _explicit_output_schema(name: str, output_schema: OutputSchema | None) -> dict[str, Any] | None:
    """The output schema given for a tool: a JSON Schema dict, a type, or ``None``/``False``."""
    if output_schema is None or output_schema is False:
        return None
    if isinstance(output_schema, Mapping):
        return inline_refs(output_schema)
    if isinstance(output_schema, builtins.type) or get_origin(output_schema) is not None:
        try:
            return _type_schema(output_schema)
        except Exception as exc:
            raise TypeError(
                f"Tool {name!r}: cannot build a JSON Schema for its output: {exc}"
            ) from exc
    raise TypeError(
        f"output_schema of tool {name!r} must be a JSON Schema dict, a type or False, "
        f"not {output_schema!r}"
    )


def _type_schema(kind: Any) -> dict[str, Any]:
    """The inlined serialization-mode JSON Schema of ``kind``, without its top-level title."""
    adapter: TypeAdapter[Any] = TypeAdapter(kind)
    schema = inline_refs(adapter.json_schema(mode="serialization", schema_generator=ToolJsonSchema))
    schema.pop("title", None)
    return schema


_CHECKS: dict[str, Callable[[str, Any], Any]] = {
    "description": lambda name, value: value,
    "disabled": lambda name, value: bool(value),
    "type": lambda name, value: value,
    "title": _check_title,
    "icons": _check_icons,
    "meta": _check_meta,
    "annotations": _check_annotations,
    "output_schema": _explicit_output_schema,
    "ui": lambda name, value: value,  # not stored: Tool.replace() folds it into meta
}
"""How each of :class:`ToolOptions` is checked when set on an existing tool.

Its keys are the descriptive fields, the same as :class:`ToolOptions`' (a test checks).
"""

_output_schemas: weakref.WeakKeyDictionary[Any, dict[str, Any] | None] = weakref.WeakKeyDictionary()


def _derived_output_schema(execute: ExecuteFunction) -> dict[str, Any] | None:
    """The output schema ``execute``'s return annotation gives, if it is a model or TypedDict.

    Cached per function. A return type Pydantic cannot describe gives none and a warning
    rather than an error: such tools worked before output schemas existed, and still do.
    """
    try:
        return _output_schemas[execute]
    except (KeyError, TypeError):  # TypeError: not weakly referenceable
        pass
    schema: dict[str, Any] | None = None
    annotation = _return_annotation(execute)
    if get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if (isinstance(annotation, builtins.type) and issubclass(annotation, BaseModel)) or (
        is_typeddict(annotation)
    ):
        try:
            schema = _type_schema(annotation)
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


def _return_annotation(execute: ExecuteFunction) -> Any:
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


# -- building the invoker ------------------------------------------------------------------


def _is_async(fn: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - callable objects with async __call__
    )


def _runner(fn: Callable[..., Any], thread: bool) -> Callable[..., Awaitable[Any]]:
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


def _build(
    name: str, execute: ExecuteFunction | None, parameters: Parameters | None, thread: bool
) -> tuple[str | None, dict[str, Any], _Invoker]:
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


def _no_execute(name: str) -> _Invoker:
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
) -> _Invoker:
    """Invoker for tools whose execute receives the validated arguments as one value."""
    if execute is None:

        async def invoke_nothing(args: Any, context: ToolCallContext) -> Any:
            validate(args)
            return None

        return invoke_nothing
    run = _runner(execute, thread)
    if _wants_context_positionally(execute):

        async def invoke_with_context(args: Any, context: ToolCallContext) -> Any:
            return await run(validate(args), context)

        return invoke_with_context

    async def invoke(args: Any, context: ToolCallContext) -> Any:
        return await run(validate(args))

    return invoke


def _from_json_schema(
    name: str, execute: ExecuteFunction | None, parameters: Mapping[str, Any], thread: bool
) -> tuple[dict[str, Any], _Invoker]:
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
) -> tuple[dict[str, Any], _Invoker]:
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
    a burst of ``add_tool``) builds the Pydantic model once.
    """

    __slots__ = ("aliases", "context_param", "schema", "validator")

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

        fields: dict[str, Any] = {}
        self.aliases: dict[str, str] = {}  # model field -> parameter name, where they differ
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
            field_name = param.name
            if field_name.startswith("_") or hasattr(BaseModel, field_name):
                field_name = f"field_{len(fields)}"
                self.aliases[field_name] = param.name
            default = ... if param.default is inspect.Parameter.empty else param.default
            options: dict[str, Any] = {}
            if field_name != param.name:
                options["alias"] = param.name
            if param.name in param_docs:  # never override an Annotated Field's description
                options["description"] = param_docs[param.name]
            fields[field_name] = (annotation, Field(default, **options) if options else default)

        model: type[BaseModel] = create_model(
            f"{getattr(execute, '__name__', name)}_arguments",
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
        self.schema = schema
        self.validator = model.__pydantic_validator__


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
) -> tuple[dict[str, Any], _Invoker]:
    info = _signature_of(name, execute)
    validator, aliases = info.validator, info.aliases
    run = _runner(execute, thread)

    def validate(args: Any) -> dict[str, Any]:
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
