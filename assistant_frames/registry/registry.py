"""``ModelContextRegistry``: tools, instructions and providers, merged into one context."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Mapping
from dataclasses import replace as dataclass_replace
from typing import TYPE_CHECKING, Any, TypeVar, overload

from typing_extensions import Unpack

from ..errors import ToolConflictError
from .context import (
    NO_UI_RESOURCES,
    ModelContext,
    ModelContextProvider,
    Subscribers,
    ToolConflict,
    Unsubscribe,
)
from .merge import ConflictPolicy, _merge, namespaced
from .merge_step import Item, Merged, merge_step
from .tool import _UNSET, ExecuteFunction, Parameters, Tool, ToolOptions
from .tool_map import ToolMap
from .ui import UIResource
from .waiting import WaitsForTools

if TYPE_CHECKING:
    from mcp.server.apps import ResourceCsp, ResourcePermissions

__all__ = [
    "InstructionHandle",
    "ModelContextRegistry",
    "ProviderHandle",
    "ToolHandle",
    "UIResourceHandle",
]

logger = logging.getLogger("assistant_frames.registry")

F = TypeVar("F", bound=Callable[..., Any])


class ModelContextRegistry(WaitsForTools):
    """A mutable collection of tools, instructions and other providers.

    It is itself a :class:`ModelContextProvider`: ``get_model_context()`` returns the
    merge of its own instructions and tools (one context at ``priority``, counted as
    registered first) with every added provider, cached until something changes.

    Same-name tools among the registry's own tools are refused at once. Between
    providers, a same-priority clash is resolved by ``conflict`` (see
    :data:`~assistant_frames.ConflictPolicy`) and reported in the context's
    ``conflicts`` and the log; with ``strict=True`` a registration that would create one
    raises :class:`~assistant_frames.ToolConflictError` and is rolled back instead.

    A registry is not thread-safe: change it from one thread (normally the event loop's).
    """

    def __init__(
        self, *, priority: int = 0, conflict: ConflictPolicy = "first", strict: bool = False
    ) -> None:
        if conflict not in ("first", "last"):
            raise ValueError("conflict must be 'first' or 'last' (use strict=True to raise)")
        self.priority = priority
        self.conflict: ConflictPolicy = conflict
        self.strict = strict
        self._ids = itertools.count()
        self._tools: dict[int, Tool] = {}
        self._tools_by_name: ToolMap | None = None  # cache; never mutated once built
        # The last map built and what changed since (names removed, names put); ``None``:
        # build the next one whole.
        self._tools_built: ToolMap | None = None
        self._removed: dict[str, None] | None = {}
        self._put: dict[str, None] | None = {}
        self._tool_names: dict[str, int] = {}
        self._instructions: dict[int, str] = {}
        self._providers: dict[int, _ProviderEntry] = {}
        self._ui_resources: dict[str, UIResource] = {}
        self._subscribers = Subscribers()
        self._cache: ModelContext | None = None
        self._merged: Merged | None = None  # the last merge with providers, to start from
        # What changed since that merge: providers that said so, and providers added; a
        # provider removed means merging everything again.
        self._stale: dict[_ProviderEntry, None] = {}
        self._added: list[_ProviderEntry] = []
        self._unwatched: dict[_ProviderEntry, None] = {}  # no subscribe(): asked each time
        self._regroup = False
        self._reported: set[tuple[str, int, int]] = set()

    # -- ModelContextProvider ------------------------------------------------------------

    def get_model_context(self) -> ModelContext:
        """The merged context, rebuilt only after a change."""
        context = self._cache
        if context is None:
            context = self._cache = self._build(self.conflict)
            if context.conflicts:
                self._report(context.conflicts)
        return context

    def subscribe(self, callback: Callable[[], None]) -> Unsubscribe:
        """Call ``callback()`` after every change; returns the function that unsubscribes."""
        return self._subscribers.add(callback)

    # -- tools ---------------------------------------------------------------------------

    def add_tool(
        self,
        tool: Tool | str,
        execute: ExecuteFunction | None = None,
        *,
        parameters: Parameters | None = None,
        thread: bool = True,
        **options: Unpack[ToolOptions],
    ) -> ToolHandle:
        """Add a :class:`Tool`, or build one from a name, ``execute`` and options.

        The options are :class:`Tool`'s: ``description``, ``parameters``, ``disabled``,
        ``type``, ``title``, ``icons``, ``meta``, ``annotations``, ``output_schema`` and
        ``thread``.
        """
        if not isinstance(tool, Tool):
            tool = Tool(tool, execute, parameters=parameters, thread=thread, **options)
        elif (
            execute is not None
            or parameters is not None
            or not thread
            or any(value is not None and value is not False for value in options.values())
        ):
            raise TypeError("add_tool(Tool(...)) takes no further options; set them on the Tool")
        key = next(self._ids)
        self._put_tool(key, tool)
        return ToolHandle(self, key)

    @overload
    def tool(self, fn: F, /) -> F: ...

    @overload
    def tool(
        self,
        *,
        name: str | None = None,
        parameters: Parameters | None = None,
        thread: bool = True,
        **options: Unpack[ToolOptions],
    ) -> Callable[[F], F]: ...

    def tool(  # type: ignore[misc]
        self,
        fn: F | None = None,
        /,
        *,
        name: str | None = None,
        parameters: Parameters | None = None,
        thread: bool = True,
        **options: Unpack[ToolOptions],
    ) -> F | Callable[[F], F]:
        """Register a function as a tool; use bare (``@registry.tool``) or with options.

        The name defaults to the function's name, the description to its docstring
        (``Args:`` entries describe the parameters), the schema to its type hints and
        the output schema to its return annotation (a Pydantic model or a
        ``TypedDict``). The other options are :class:`Tool`'s (``annotations``,
        ``meta``, ``thread=False``...). The function is returned unchanged, so it
        stays directly callable.
        """

        def register(function: F) -> F:
            self.add_tool(
                name or function.__name__,
                function,
                parameters=parameters,
                thread=thread,
                **options,
            )
            return function

        return register(fn) if fn is not None else register

    # -- MCP Apps ------------------------------------------------------------------------

    def add_ui_resource(
        self,
        uri: str | UIResource,
        *,
        html: str | None = None,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        csp: ResourceCsp | Mapping[str, Any] | None = None,
        permissions: ResourcePermissions | Mapping[str, Any] | None = None,
        domain: str | None = None,
        prefers_border: bool | None = None,
    ) -> UIResourceHandle:
        """Add a ``ui://`` HTML resource that tools declared with ``ui=`` render.

        ``csp`` and ``permissions`` take ``mcp.server.apps``' ``ResourceCsp`` and
        ``ResourcePermissions`` (or their wire-form dicts); ``domain`` is a dedicated
        origin for the view and ``prefers_border`` its border preference. Or pass a
        ready :class:`UIResource`. A URI that is not ``ui://``, or one this registry
        already holds, raises ``ValueError``.
        """
        if isinstance(uri, UIResource):
            resource = uri
        else:
            if html is None:
                raise TypeError(f"add_ui_resource({uri!r}) needs html=")
            resource = UIResource.create(
                uri,
                html,
                name=name,
                title=title,
                description=description,
                csp=csp,
                permissions=permissions,
                domain=domain,
                prefers_border=prefers_border,
            )
        if resource.uri in self._ui_resources:
            raise ValueError(f"This registry already has a UI resource {resource.uri!r}")
        self._ui_resources[resource.uri] = resource
        self._changed()
        return UIResourceHandle(self, resource.uri)

    # -- instructions --------------------------------------------------------------------

    def add_instruction(self, text: str) -> InstructionHandle:
        """Add system text; instructions are joined with a blank line in order."""
        if not isinstance(text, str):
            raise TypeError(f"An instruction must be a string, not {text!r}")
        key = next(self._ids)
        self._instructions[key] = text
        self._changed()
        return InstructionHandle(self, key)

    # -- providers -----------------------------------------------------------------------

    def add_provider(
        self,
        provider: ModelContextProvider,
        *,
        priority: int | None = None,
        namespace: str | None = None,
    ) -> ProviderHandle:
        """Merge another provider (a frame host, another registry...) into this one.

        ``priority`` overrides the provider's own; ``namespace`` renames its tools to
        ``<namespace>_<name>`` as this registry sees them.
        """
        if not callable(getattr(provider, "get_model_context", None)):
            raise TypeError(f"{provider!r} is not a ModelContextProvider")
        if provider is self:
            raise ValueError("A registry cannot be added to itself")
        key = next(self._ids)
        entry = _ProviderEntry(provider, priority, namespace)
        self._providers[key] = entry
        try:
            self._check_strict()
        except ToolConflictError:
            del self._providers[key]
            raise
        self._added.append(entry)
        subscribe = getattr(provider, "subscribe", None)
        if subscribe is not None:

            def changed() -> None:
                self._stale[entry] = None
                self._changed()

            entry.unsubscribe = subscribe(changed)
        else:
            self._unwatched[entry] = None
        self._changed()
        return ProviderHandle(self, key)

    # -- internals -----------------------------------------------------------------------

    def _put_tool(self, key: int, tool: Tool) -> None:
        owner = self._tool_names.get(tool.name)
        if owner is not None and owner != key:
            raise ToolConflictError(tool.name)
        previous = self._tools.get(key)
        self._tools_by_name = None
        self._tools[key] = tool
        self._tool_names[tool.name] = key
        renamed = previous is not None and previous.name != tool.name
        if renamed:
            del self._tool_names[previous.name]  # type: ignore[union-attr]
        if renamed or self.strict:
            self._put = self._removed = None  # the next map is built whole
        try:
            self._check_strict()
        except ToolConflictError:
            self._tool_names.pop(tool.name, None)
            if previous is None:
                del self._tools[key]
            else:
                self._tools[key] = previous
                self._tool_names[previous.name] = key
            self._tools_by_name = None
            self._put = self._removed = None  # the check built a map with it: build whole
            raise
        if self._put is not None:
            self._put[tool.name] = None
        self._changed()

    def _remove_tool(self, key: int) -> None:
        tool = self._tools.pop(key, None)
        if tool is not None:
            self._tools_by_name = None
            del self._tool_names[tool.name]
            if self._removed is not None and self._put is not None:
                self._put.pop(tool.name, None)
                self._removed[tool.name] = None
            self._changed()

    def _check_strict(self) -> None:
        if self.strict:
            self._build("error")

    def _changed(self) -> None:
        self._cache = None
        self._subscribers.notify()

    def _own_tools(self) -> ToolMap:
        """The registry's own tools by name; the same object until a tool changes, then
        made from the last one (:class:`ToolMap`: followers see what changed)."""
        tools = self._tools_by_name
        if tools is None:
            built, removed, put = self._tools_built, self._removed, self._put
            if built is not None and removed is not None and put is not None:
                by_key, tool_names = self._tools, self._tool_names
                tools = ToolMap.derived(
                    built, tuple(removed), {name: by_key[tool_names[name]] for name in put}
                )
            else:
                tools = ToolMap((tool.name, tool) for tool in self._tools.values())
            self._tools_by_name = self._tools_built = tools
            self._removed, self._put = {}, {}
        return tools

    def _build(self, conflict: ConflictPolicy) -> ModelContext:
        own = ModelContext(
            system="\n\n".join(text for text in self._instructions.values() if text) or None,
            tools=self._own_tools(),
            priority=self.priority,
            ui_resources=dict(self._ui_resources) if self._ui_resources else NO_UI_RESOURCES,
        )
        if not self._providers:
            return own
        if conflict != self.conflict:  # strict's check: a merge of its own
            return _merge(self._items(own), conflict).result
        merged = self._step(own)
        if merged is None:
            merged = _merge(self._items(own), conflict, self._merged)
            for index, entry in enumerate(self._providers.values(), 1):
                entry.index = index  # as the merge orders them, when it steps (flat)
        self._merged = merged
        self._stale.clear()
        self._added.clear()
        self._regroup = False
        return dataclass_replace(merged.result, priority=self.priority)

    def _items(self, own: ModelContext) -> list[Item]:
        items: list[Item] = [(own, self)]
        items.extend((entry.context(), entry.provider) for entry in self._providers.values())
        return items

    def _step(self, own: ModelContext) -> Merged | None:
        """The next merge made from the last one and what changed since, in time of the
        change (:func:`~assistant_frames.registry.merge_step.merge_step`); ``None``: merge
        everything."""
        previous = self._merged
        if previous is None or self._regroup:
            return None
        changes = {0: own}
        for watched in (self._stale, self._unwatched):
            for entry in watched:
                if entry.index:  # 0: added since (in ``added``)
                    changes[entry.index] = entry.context()
        added = self._added
        merged = merge_step(previous, changes, [(e.context(), e.provider) for e in added])
        if merged is not None:
            for offset, entry in enumerate(added):
                entry.index = len(previous.items) + offset
        return merged

    def _report(self, conflicts: tuple[ToolConflict, ...]) -> None:
        for c in conflicts:
            key = (c.name, id(c.kept_source), id(c.dropped_source))
            if key not in self._reported:
                self._reported.add(key)
                logger.warning(
                    "Tool name conflict: %r offered by %r and %r at priority %d; keeping %r",
                    c.name,
                    c.kept_source,
                    c.dropped_source,
                    c.priority,
                    c.kept_source,
                )

    def __repr__(self) -> str:
        return (
            f"<ModelContextRegistry tools={len(self._tools)} "
            f"instructions={len(self._instructions)} providers={len(self._providers)}>"
        )


class _ProviderEntry:
    """A provider plus how this registry sees it; caches the adjusted context."""

    __slots__ = ("_adjusted", "_seen", "index", "namespace", "priority", "provider", "unsubscribe")

    def __init__(
        self, provider: ModelContextProvider, priority: int | None, namespace: str | None
    ) -> None:
        self.provider = provider
        self.priority = priority
        self.namespace = namespace
        self.unsubscribe: Unsubscribe | None = None
        self.index = 0  # its place in the registry's last merge (0: not in it yet)
        self._seen: ModelContext | None = None
        self._adjusted: ModelContext | None = None

    def context(self) -> ModelContext:
        context = self.provider.get_model_context()
        if context is self._seen and self._adjusted is not None:
            return self._adjusted
        adjusted = context
        if self.namespace:
            seen, before = self._seen, self._adjusted
            previous = None
            if seen is not None and before is not None and type(before.tools) is ToolMap:
                previous = (seen.tools, before.tools)  # rename only what changed since
            adjusted = namespaced(adjusted, self.namespace, previous=previous)
        if self.priority is not None and adjusted.priority != self.priority:
            adjusted = dataclass_replace(adjusted, priority=self.priority)
        self._seen, self._adjusted = context, adjusted
        return adjusted


class _Handle:
    __slots__ = ("_key", "_registry")

    def __init__(self, registry: ModelContextRegistry, key: int) -> None:
        self._registry = registry
        self._key = key


class ToolHandle(_Handle):
    """Returned by :meth:`ModelContextRegistry.add_tool`: change or remove that tool."""

    __slots__ = ()

    @property
    def tool(self) -> Tool | None:
        """The tool as registered now, or ``None`` once removed."""
        return self._registry._tools.get(self._key)

    def update(
        self,
        tool: Tool | None = None,
        *,
        name: str = _UNSET,
        execute: ExecuteFunction | None = _UNSET,
        parameters: Parameters | None = _UNSET,
        thread: bool = _UNSET,
        **changes: Unpack[ToolOptions],
    ) -> None:
        """Replace the tool, or change some of its fields (see :meth:`Tool.replace`).

        No-op once removed.
        """
        current = self.tool
        if current is None:
            return
        if tool is None:
            tool = current.replace(
                name=name, execute=execute, parameters=parameters, thread=thread, **changes
            )
        self._registry._put_tool(self._key, tool)

    def remove(self) -> None:
        """Remove the tool (idempotent)."""
        self._registry._remove_tool(self._key)


class InstructionHandle(_Handle):
    """Returned by :meth:`ModelContextRegistry.add_instruction`."""

    __slots__ = ()

    def update(self, text: str) -> None:
        """Replace the text. No-op once removed."""
        if not isinstance(text, str):
            raise TypeError(f"An instruction must be a string, not {text!r}")
        if self._key in self._registry._instructions:
            self._registry._instructions[self._key] = text
            self._registry._changed()

    def remove(self) -> None:
        """Remove the instruction (idempotent)."""
        if self._registry._instructions.pop(self._key, None) is not None:
            self._registry._changed()


class ProviderHandle(_Handle):
    """Returned by :meth:`ModelContextRegistry.add_provider`."""

    __slots__ = ()

    def update(self, *, priority: int | None = _UNSET, namespace: str | None = _UNSET) -> None:
        """Change how the registry sees the provider. No-op once removed."""
        entry = self._registry._providers.get(self._key)
        if entry is None:
            return
        old = (entry.priority, entry.namespace)
        if priority is not _UNSET:
            entry.priority = priority
        if namespace is not _UNSET:
            entry.namespace = namespace
        entry._seen = None
        registry = self._registry
        try:
            registry._check_strict()
        except ToolConflictError:
            entry.priority, entry.namespace = old
            entry._seen = None
            raise
        registry._stale[entry] = None
        registry._changed()

    def remove(self) -> None:
        """Remove the provider and stop listening to it (idempotent)."""
        registry = self._registry
        entry = registry._providers.pop(self._key, None)
        if entry is not None:
            if entry.unsubscribe is not None:
                entry.unsubscribe()
            registry._unwatched.pop(entry, None)
            # The places after it move: the next merge is whole, and needs no list of
            # what changed (kept, the list would grow with every member come and gone).
            registry._regroup = True
            registry._stale.clear()
            registry._added.clear()
            registry._changed()


class UIResourceHandle:
    """Returned by :meth:`ModelContextRegistry.add_ui_resource`."""

    __slots__ = ("_registry", "uri")

    def __init__(self, registry: ModelContextRegistry, uri: str) -> None:
        self._registry = registry
        self.uri = uri

    @property
    def resource(self) -> UIResource | None:
        """The resource, or ``None`` once removed."""
        return self._registry._ui_resources.get(self.uri)

    def remove(self) -> None:
        """Remove the resource (idempotent)."""
        if self._registry._ui_resources.pop(self.uri, None) is not None:
            self._registry._changed()
