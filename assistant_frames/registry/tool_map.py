"""``ToolMap``: a context's tools by name, knowing how it was made from the map before.

A context of thousands of tools changes one tool at a time. Whoever follows it change
by change (a frame serializing its tools, a host namespacing a member's, a frame
machine working out a patch) would otherwise walk every tool per change. A map made
by :meth:`ToolMap.derived` remembers its base (weakly) and the two steps that made it
from a copy of that base: the names removed, then the names put (in place when the
name stayed, last when it is new or was removed first). A follower that holds a
structure built from the base repeats those steps on a copy of it, and gets what a
walk over every tool would give, in the same order.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any

from .tool import Tool

__all__ = ["Lineage", "Steps", "ToolMap"]

#: How a map was made from its base: the names removed, then the names put.
Lineage = tuple[tuple[str, ...], tuple[str, ...]]
#: A :data:`Lineage` and whether the map was then put in another order (its own).
Steps = tuple[tuple[str, ...], tuple[str, ...], bool]


class ToolMap(dict[str, Tool]):
    """Tools by name (a plain ``dict`` to everyone else); never changed once shared."""

    __slots__ = ("__weakref__", "_base", "_put", "_removed", "_reordered")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._base: weakref.ref[ToolMap] | None = None
        self._removed: tuple[str, ...] = ()
        self._put: tuple[str, ...] = ()
        self._reordered = False

    @classmethod
    def derived(
        cls, base: Mapping[str, Tool], removed: tuple[str, ...], put: Mapping[str, Tool]
    ) -> ToolMap:
        """A copy of ``base`` without ``removed``, then with ``put``; it remembers how,
        when ``base`` is a :class:`ToolMap` (only the names removed that ``base`` had)."""
        tools = cls(base)
        for name in removed:
            tools.pop(name, None)
        tools.update(put)
        if isinstance(base, ToolMap):
            tools._remember(base, removed, tuple(put))
        return tools

    def reordered_from(
        self, base: ToolMap, removed: tuple[str, ...], put: tuple[str, ...]
    ) -> ToolMap:
        """Remember that this map is ``base`` without ``removed``, then with ``put``, in
        an order of its own (a new name in the middle); returns the map. Only
        :meth:`steps` tells it: :meth:`lineage` does not, as its followers keep order."""
        self._remember(base, removed, put)
        self._reordered = True
        return self

    def _remember(self, base: ToolMap, removed: tuple[str, ...], put: tuple[str, ...]) -> None:
        """Remember this map as made from ``base``: of ``removed``, only the names ``base``
        had (a name added and removed again since may be another map's, in a merge that
        follows this one)."""
        self._base = weakref.ref(base)
        self._removed = tuple(name for name in removed if name in base)
        self._put = put

    def lineage(self, since: Mapping[str, Any] | None) -> Lineage | None:
        """How this map was made from ``since`` (the names removed, then put), or
        ``None`` when it was not made from that very map, or not in that order."""
        steps = self.steps(since)
        return None if steps is None or steps[2] else steps[:2]

    def steps(self, since: Mapping[str, Any] | None) -> Steps | None:
        """As :meth:`lineage`, and whether the map was then put in its own order (the
        follower then takes that order, as one walk over every tool would)."""
        base = self._base
        if base is None or since is None or base() is not since:
            return None
        return self._removed, self._put, self._reordered

    def __reduce__(self) -> Any:  # copies and pickles are plain dicts: no lineage
        return (dict, (dict(self),))
