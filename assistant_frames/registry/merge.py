"""``merge_model_contexts``: assistant-ui's merge rules plus what federation needs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal, TypeAlias

from ..errors import ToolConflictError
from .context import NO_UI_RESOURCES, ModelContext, ModelContextProvider, ToolConflict
from .tool import Tool
from .tool_map import ToolMap
from .ui import UIResource

__all__ = ["ConflictPolicy", "merge_model_contexts", "namespaced"]

ConflictPolicy: TypeAlias = Literal["first", "last", "error"]
"""What to do with two same-name tools at the same priority.

``"first"`` keeps the one from the context listed (registered) first, ``"last"`` the one
listed last, ``"error"`` raises :class:`~assistant_frames.ToolConflictError`. Tools at
different priorities never conflict: the higher priority wins.
"""

Source: TypeAlias = ModelContext | ModelContextProvider


def merge_model_contexts(
    *sources: Source | Iterable[Source], conflict: ConflictPolicy = "first"
) -> ModelContext:
    """Merge contexts (or providers' current contexts) into one.

    The rules are assistant-ui's: contexts are ordered by ``priority``, highest first and
    stable; their ``system`` texts are joined with a blank line in that order; a tool name
    offered at several priorities resolves to the highest. A same-priority clash, which
    assistant-ui turns into an exception, is resolved by ``conflict`` and recorded in the
    result's ``conflicts`` so that a remote frame cannot break ``get_model_context()`` by
    publishing a colliding name. ``call_settings`` and ``config`` are merged key by key,
    higher priority winning.
    """
    items: list[tuple[ModelContext, object]] = []
    for source in _flatten(sources):
        context = source if isinstance(source, ModelContext) else source.get_model_context()
        items.append((context, source))
    return _merge(items, conflict)


def _flatten(sources: tuple[Source | Iterable[Source], ...]) -> Iterable[Source]:
    for source in sources:
        if isinstance(source, ModelContext) or hasattr(source, "get_model_context"):
            yield source  # type: ignore[misc]
        elif isinstance(source, Iterable) and not isinstance(source, (str, bytes, Mapping)):
            yield from source
        else:
            raise TypeError(f"Cannot merge {source!r}: not a ModelContext or a provider")


def _merge(items: list[tuple[ModelContext, object]], conflict: ConflictPolicy) -> ModelContext:
    if conflict not in ("first", "last", "error"):
        raise ValueError(f"conflict must be 'first', 'last' or 'error', not {conflict!r}")
    items = sorted(items, key=lambda item: -item[0].priority)  # stable
    with_tools = [context for context, _ in items if context.tools]
    if len(with_tools) == 1:  # nothing to resolve: share the one mapping (often 1,000s)
        tools_only: Mapping[str, Tool] | None = with_tools[0].tools
    else:
        tools_only = None
    systems: list[str] = []
    tools: dict[str, Tool] = {}
    owners: dict[str, tuple[int, object]] = {}  # name -> (priority, source)
    conflicts: list[ToolConflict] = []
    call_settings: dict[str, Any] = {}
    config: dict[str, Any] = {}
    ui_resources: dict[str, UIResource] = {}
    for context, source in items:
        for uri, resource in context.ui_resources.items():
            ui_resources.setdefault(uri, resource)  # as settings: the higher priority wins
        conflicts.extend(context.conflicts)  # resolved further down: still worth reporting
        if context.system:
            systems.append(context.system)
        priority = context.priority
        for name, tool in () if tools_only is not None else context.tools.items():
            existing = tools.get(name)
            if existing is None:
                tools[name] = tool
                owners[name] = (priority, source)
                continue
            existing_priority, existing_source = owners[name]
            if existing is tool or existing_priority != priority:
                continue  # the same tool twice, or the earlier (higher) priority wins
            if conflict == "error":
                raise ToolConflictError(
                    name,
                    f"Two tools named {name!r} at priority {priority}: from {existing_source!r} "
                    f"and from {source!r}",
                )
            if conflict == "last":
                tools[name] = tool
                owners[name] = (priority, source)
                conflicts.append(
                    ToolConflict(name, priority, tool, existing, source, existing_source)
                )
            else:
                conflicts.append(
                    ToolConflict(name, priority, existing, tool, existing_source, source)
                )
        _update_lower(call_settings, context.call_settings)
        _update_lower(config, context.config)
    return ModelContext(
        system="\n\n".join(systems) or None,
        tools=tools if tools_only is None else tools_only,
        call_settings=call_settings or None,
        config=config or None,
        conflicts=tuple(conflicts),
        waiting=tuple(name for context, _ in items for name in context.waiting),
        ui_resources=ui_resources or NO_UI_RESOURCES,
    )


def _update_lower(target: dict[str, Any], values: Mapping[str, Any] | None) -> None:
    """Add keys a higher-priority context has not already set."""
    if values:
        for key, value in values.items():
            target.setdefault(key, value)


def namespaced(
    context: ModelContext,
    namespace: str,
    separator: str = "_",
    *,
    previous: tuple[Mapping[str, Tool], ToolMap] | None = None,
) -> ModelContext:
    """A copy of ``context`` whose tools are named ``<namespace><separator><name>``.

    Calls to a renamed tool still reach the original (a remote frame still sees its own
    name), so namespacing is purely how the parent and its model see the tool. UI
    resources keep their URIs, so a renamed tool's ``_meta.ui`` still points at its own.
    ``previous``, the tools of an earlier context and their namespaced map, lets only the
    tools that changed since be renamed, when ``context``'s were made from those.
    """
    prefix = f"{namespace}{separator}"
    tools = context.tools
    lineage = None
    if previous is not None and type(tools) is ToolMap:
        lineage = tools.lineage(previous[0])
    renamed: ToolMap
    if lineage is None:
        renamed = ToolMap(
            (f"{prefix}{name}", tool.replace(name=f"{prefix}{name}"))
            for name, tool in tools.items()
        )
    else:
        assert previous is not None
        removed, put = lineage
        renamed = ToolMap.derived(
            previous[1],
            tuple(f"{prefix}{name}" for name in removed),
            {f"{prefix}{name}": tools[name].replace(name=f"{prefix}{name}") for name in put},
        )
    return ModelContext(
        system=context.system,
        tools=renamed,
        priority=context.priority,
        call_settings=context.call_settings,
        config=context.config,
        conflicts=context.conflicts,
        waiting=context.waiting,
        ui_resources=context.ui_resources,
    )
