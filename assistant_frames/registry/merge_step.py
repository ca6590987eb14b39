"""A merge made from the last one in time of the change, not of the members.

A parent of 1,000 members (a discovery of 1,000 frames) changes one member at a time:
a member joins, its first context arrives, it adds a tool. :func:`merge_step` makes the
next merge from the last one and the members that changed, without a walk over every
member: the same context, order included, that a merge of everything again gives
(:func:`~assistant_frames.registry.merge._merge`). It steps only where that is plain: every
member at one priority (the merge order is the members' own), no tool name offered twice,
no conflicts; otherwise it says so (``None``) and the caller merges everything.

What it does walk every member for, it does at C speed and only when that part changed:
the joined instructions, the waiting names, the UI resources and settings, and the tools
when a member not last gains a name (which goes before the later members' tools).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import chain
from typing import Any

from .context import NO_UI_RESOURCES, ModelContext
from .tool import Tool
from .tool_map import ToolMap
from .ui import UIResource

__all__ = ["Item", "Merged", "merge_step"]

Item = tuple[ModelContext, object]  # a context and the source it came from


class Merged:
    """A merge's items, in merge order, and its result: what the next merge starts from."""

    __slots__ = ("flat", "items", "last_with_tools", "result", "unique")

    def __init__(
        self,
        items: list[Item],
        result: ModelContext,
        *,
        flat: bool | None = None,
        unique: bool | None = None,
        last_with_tools: int | None = None,
    ) -> None:
        self.items = items
        self.result = result
        #: Every item at one priority: the merge order is the items' own.
        self.flat = (
            flat if flat is not None else len({context.priority for context, _ in items}) <= 1
        )
        #: No tool name offered by two items (so no priority or conflict to resolve).
        self.unique = (
            unique
            if unique is not None
            else len(result.tools) == sum(len(context.tools) for context, _ in items)
        )
        #: The index of the last item with tools (-1: none); a new name before it goes
        #: before that item's tools. Never lower than the real one (only higher: safe).
        self.last_with_tools = (
            last_with_tools
            if last_with_tools is not None
            else max((i for i, (context, _) in enumerate(items) if context.tools), default=-1)
        )


def merge_step(
    previous: Merged, changes: Mapping[int, ModelContext], added: Sequence[Item]
) -> Merged | None:
    """``previous`` with the items at ``changes``' indices now those contexts (same
    sources), and ``added`` after the rest; ``None`` when that takes a full merge."""
    merged = previous.result
    if not (previous.flat and previous.unique) or type(merged.tools) is not ToolMap:
        return None
    items = previous.items
    priority = items[0][0].priority if items else 0
    before = merged.tools
    removed: list[str] = []
    put: dict[str, Tool] = {}
    reorder = False
    last = previous.last_with_tools
    parts: set[str] = set()  # which other parts of the result changed
    shared: Mapping[str, Tool] | None = None  # the map of the one item with tools
    new_items = list(items)
    for index in sorted(changes):
        context = changes[index]
        old, source = items[index]
        if context is old:
            continue
        if context.priority != priority or context.conflicts or old.conflicts:
            return None
        new_items[index] = (context, source)
        _note_parts(parts, context, old)
        tools = context.tools
        if tools is old.tools:
            continue
        if before is old.tools:  # it held the only tools: as a full merge, share its map
            shared = tools
        steps = tools.steps(old.tools) if type(tools) is ToolMap else None
        if steps is None:  # made anew (a host's first context): all out, then all in
            gone, changed = tuple(old.tools), tuple(tools)
        else:
            gone, changed, own_order = steps
            reorder = reorder or own_order  # its tools in an order of their own
        for name in changed:
            if name not in old.tools or name in gone:
                if name in put or (name in before and name not in old.tools):
                    return None  # another item offers it: priorities and conflicts decide
                if index < last:
                    reorder = True  # a full merge puts it before the later items' tools
            put[name] = tools[name]
        removed.extend(gone)
        if tools:
            last = max(last, index)
    for offset, (context, _) in enumerate(added):
        if context.priority != priority or context.conflicts:
            return None
        _note_parts(parts, context, None)
        for name, tool in context.tools.items():
            if name in put or name in before:
                return None
            put[name] = tool
        if context.tools:
            last = max(last, len(items) + offset)
    new_items.extend(added)
    if shared is not None:
        if any(name not in shared for name in put) or any(c.tools for c, _ in added):
            return None  # another item gained tools too: a full merge decides
        tools_now: Mapping[str, Tool] = shared
    elif not removed and not put:
        tools_now = before
    elif not reorder:
        tools_now = ToolMap.derived(before, tuple(removed), put)
    else:
        ordered = ToolMap()
        for context, _ in new_items:
            if context.tools:
                ordered.update(context.tools)
        tools_now = ordered.reordered_from(before, tuple(removed), tuple(put))
    return Merged(
        new_items,
        _result(merged, new_items, tools_now, parts),
        flat=True,
        unique=True,
        last_with_tools=last,
    )


def _note_parts(parts: set[str], context: ModelContext, old: ModelContext | None) -> None:
    """Add to ``parts`` what of ``context`` differs from ``old`` (``None``: a new item)."""
    if context.system != (old.system if old is not None else None):
        parts.add("system")
    if context.waiting != (old.waiting if old is not None else ()):
        parts.add("waiting")
    ui = old.ui_resources if old is not None else NO_UI_RESOURCES
    if context.ui_resources is not ui and context.ui_resources != ui:
        parts.add("ui")
    settings = (old.call_settings, old.config) if old is not None else (None, None)
    if (context.call_settings, context.config) != settings:
        parts.add("settings")


def _result(
    merged: ModelContext, items: list[Item], tools: Mapping[str, Tool], parts: set[str]
) -> ModelContext:
    """``merged`` with ``tools``, and each part in ``parts`` made again from ``items``."""
    system = merged.system
    if "system" in parts:
        system = "\n\n".join([c.system for c, _ in items if c.system]) or None
    waiting = merged.waiting
    if "waiting" in parts:
        # Most members wait for nothing: skip them (a join flips its member's twice).
        waiting = tuple(chain.from_iterable([c.waiting for c, _ in items if c.waiting]))
    ui_resources = merged.ui_resources
    if "ui" in parts:
        found: dict[str, UIResource] = {}
        for context, _ in items:
            for uri, resource in context.ui_resources.items():
                found.setdefault(uri, resource)  # as in a full merge: the first wins
        ui_resources = found or NO_UI_RESOURCES
    call_settings, config = merged.call_settings, merged.config
    if "settings" in parts:
        settings: dict[str, Any] = {}
        configs: dict[str, Any] = {}
        for context, _ in items:
            for key, value in (context.call_settings or {}).items():
                settings.setdefault(key, value)
            for key, value in (context.config or {}).items():
                configs.setdefault(key, value)
        call_settings, config = settings or None, configs or None
    return ModelContext(
        system=system,
        tools=tools,
        call_settings=call_settings,
        config=config,
        conflicts=merged.conflicts,
        waiting=waiting,
        ui_resources=ui_resources,
    )
