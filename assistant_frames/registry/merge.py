"""``merge_model_contexts``: assistant-ui's merge rules plus what federation needs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal, TypeAlias

from ..errors import ToolConflictError
from .context import NO_UI_RESOURCES, ModelContext, ModelContextProvider, ToolConflict
from .merge_step import Item, Merged
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
    items: list[Item] = []
    for source in _flatten(sources):
        context = source if isinstance(source, ModelContext) else source.get_model_context()
        items.append((context, source))
    return _merge(items, conflict).result


def _flatten(sources: tuple[Source | Iterable[Source], ...]) -> Iterable[Source]:
    for source in sources:
        if isinstance(source, ModelContext) or hasattr(source, "get_model_context"):
            yield source  # type: ignore[misc]
        elif isinstance(source, Iterable) and not isinstance(source, (str, bytes, Mapping)):
            yield from source
        else:
            raise TypeError(f"Cannot merge {source!r}: not a ModelContext or a provider")


def _merge(items: list[Item], conflict: ConflictPolicy, previous: Merged | None = None) -> Merged:
    """Merge ``items``; ``previous``, an earlier merge under the same ``conflict`` policy,
    lets a change of a few tools cost as much as the change, not every tool again."""
    if conflict not in ("first", "last", "error"):
        raise ValueError(f"conflict must be 'first', 'last' or 'error', not {conflict!r}")
    items = sorted(items, key=lambda item: -item[0].priority)  # stable
    with_tools = [context for context, _ in items if context.tools]
    merged: tuple[Mapping[str, Tool], tuple[ToolConflict, ...]] | None = None
    if len(with_tools) == 1:  # nothing to resolve: share the one mapping (often 1,000s)
        merged = with_tools[0].tools, tuple(c for context, _ in items for c in context.conflicts)
    elif previous is not None:
        merged = _merge_changes(items, previous.items, previous.result)
    tools, conflicts = _merge_tools(items, conflict) if merged is None else merged
    systems: list[str] = []
    call_settings: dict[str, Any] = {}
    config: dict[str, Any] = {}
    ui_resources: dict[str, UIResource] = {}
    for context, _ in items:
        for uri, resource in context.ui_resources.items():
            ui_resources.setdefault(uri, resource)  # as settings: the higher priority wins
        if context.system:
            systems.append(context.system)
        _update_lower(call_settings, context.call_settings)
        _update_lower(config, context.config)
    result = ModelContext(
        system="\n\n".join(systems) or None,
        tools=tools,
        call_settings=call_settings or None,
        config=config or None,
        conflicts=conflicts,
        waiting=tuple(name for context, _ in items for name in context.waiting),
        ui_resources=ui_resources or NO_UI_RESOURCES,
    )
    return Merged(items, result)


def _merge_tools(
    items: list[Item], conflict: ConflictPolicy
) -> tuple[ToolMap, tuple[ToolConflict, ...]]:
    """Every item's tools, resolved by priority and ``conflict``; the conflicts (each
    context's own, then those of this merge, in item order)."""
    tools = ToolMap()
    for context, _ in items:
        tools.update(context.tools)
    if len(tools) == sum(len(context.tools) for context, _ in items):
        # No name twice (the common case, and namespaced members' always): nothing to
        # resolve, and ``update`` ran at C speed.
        return tools, tuple(c for context, _ in items for c in context.conflicts)
    tools = ToolMap()
    owners: dict[str, tuple[int, object]] = {}  # name -> (priority, source)
    conflicts: list[ToolConflict] = []
    for context, source in items:
        conflicts.extend(context.conflicts)  # resolved further down: still worth reporting
        priority = context.priority
        for name, tool in context.tools.items():
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
    return tools, tuple(conflicts)


def _merge_changes(
    items: list[Item], before: list[Item], merged: ModelContext
) -> tuple[ToolMap, tuple[ToolConflict, ...]] | None:
    """The tools :func:`_merge_tools` would give, made from ``merged`` (the merge of
    ``before``) by repeating each changed item's steps (:meth:`ToolMap.lineage`).

    ``None`` unless that gives the very same map, order included: the same sources at
    the same priorities, each changed item's tools made from its tools before, and no
    name a changed item touched offered by another item (no priority or conflict to
    resolve). A name new to an item that later items follow goes before theirs: the
    map is then made in the items' order, at C speed, and says so (``ToolMap.steps``),
    so that who follows it takes the new order rather than walking every tool.
    """
    if len(items) != len(before) or type(merged.tools) is not ToolMap:
        return None
    removed: list[str] = []
    put: dict[str, Tool] = {}
    reorder = False
    # A name in a conflict the last merge resolved: who offers it now is for a full
    # merge to tell (the conflict may be gone, or kept by another item).
    contested = {c.name for c in merged.conflicts}
    for index, ((context, source), (old, old_source)) in enumerate(zip(items, before, strict=True)):
        if source is not old_source or context.priority != old.priority:
            return None
        if context.conflicts != old.conflicts:
            return None
        tools = context.tools
        if tools is old.tools:
            continue
        lineage = tools.lineage(old.tools) if type(tools) is ToolMap else None
        if lineage is None:
            return None
        gone, changed = lineage
        if contested and any(name in contested for name in (*gone, *changed)):
            return None
        others = [c.tools for i, (c, _) in enumerate(items) if i != index and c.tools]
        if any(name in other for other in others for name in (*gone, *changed)):
            return None
        last = not any(c.tools for c, _ in items[index + 1 :])
        moved = set(gone)
        for name in changed:
            if not last and (name in moved or name not in merged.tools):
                reorder = True  # a full merge puts it before the later items' tools
            put[name] = tools[name]
        removed.extend(gone)
    if not removed and not put:
        return merged.tools, merged.conflicts
    if not reorder:
        return ToolMap.derived(merged.tools, tuple(removed), put), merged.conflicts
    ordered = ToolMap()
    for context, _ in items:
        ordered.update(context.tools)
    if len(ordered) != sum(len(context.tools) for context, _ in items):
        return None  # a name twice: resolved by a full merge
    return ordered.reordered_from(merged.tools, tuple(removed), tuple(put)), merged.conflicts


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
    if previous is not None and tools is previous[0]:
        renamed = previous[1]  # the same tools (another part of the context changed)
    elif lineage is None:
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
