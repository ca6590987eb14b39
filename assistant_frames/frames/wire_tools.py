"""``WireTools``: a frame's tools in wire form, changed in place, version by version.

A frame serving thousands of tools sees them change one at a time. Copying the whole
wire form per change, so that what each host was sent stays as it was (and freeing the
copy before), took a fifth of a change's time at 10,000 tools. So the form is changed
in place (:attr:`WireTools.live`), and each version remembers how it was made from the
one before: the names removed, then put
(:class:`~assistant_frames.registry.tool_map.ToolMap` steps), or, when the tools were
serialized whole, the dict that held the version before (never changed again; kept for
the last few such versions). A host that takes patches is sent what changed since the
version it holds (:meth:`WireTools.changes_since`); one sent whole contexts gets
:meth:`WireTools.snapshot`, a copy made once per version.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Mapping
from typing import Final

from ..registry.tool import Tool
from ..registry.tool_map import Steps
from .serialization import (
    SerializedTool,
    ToolChanges,
    serialize_tool,
    serialize_tools,
    tool_changes,
)

__all__ = ["JOURNAL_LENGTH", "KEPT_WHOLES", "WireTools"]

#: Versions remembered: a host further behind than this is sent the whole context.
JOURNAL_LENGTH: Final = 64
#: Whole serializations whose dict before is kept (each is as large as the tools).
KEPT_WHOLES: Final = 4


class WireTools:
    """A frame's current tools in wire form, and how each recent version was made.

    :attr:`live` changes in place: send :meth:`snapshot` (or what
    :meth:`changes_since` returns), never :attr:`live` itself. Besides the steps, the
    dicts that held the versions before the last :data:`KEPT_WHOLES` whole
    serializations are kept (memory stays bounded; a host behind an earlier one is sent
    the whole context).
    """

    __slots__ = ("_befores", "_journal", "_snapshot", "live", "version")

    def __init__(self) -> None:
        self.live: dict[str, SerializedTool] = {}
        #: Bumped by every change of :attr:`live`'s content (a reorder alone is none).
        self.version = 0
        # The steps that made each of the last versions, the newest last (``None``:
        # serialized whole); an entry's version is told by its place.
        self._journal: deque[Steps | None] = deque(maxlen=JOURNAL_LENGTH)
        self._befores: dict[int, dict[str, SerializedTool]] = {}  # by the version after
        self._snapshot: dict[str, SerializedTool] | None = None

    def advance(self, tools: Mapping[str, Tool], steps: Steps | None) -> None:
        """Take ``tools`` as the current tools. ``steps`` says how their map was made
        from the last one taken (only the tools it puts are serialized); ``None``
        serializes them all."""
        if steps is None:
            before, self.live = self.live, serialize_tools(tools)
            if self.live != before:
                self._record(None)
                self._befores[self.version] = before  # never changed again
                if len(self._befores) > KEPT_WHOLES:
                    del self._befores[next(iter(self._befores))]
            else:  # a new order alone: no change (as for whole contexts), new snapshots
                self._snapshot = None
            return
        removed, put, reordered = steps
        live = self.live
        changed = reordered or any(name in live for name in removed)
        for name in removed:
            live.pop(name, None)
        for name in put:
            form = serialize_tool(tools[name])
            held = live.get(name)
            if held is not form and held != form:
                changed = True
            live[name] = form
        if reordered:
            self.live = {name: live[name] for name in tools if name in live}
        if len(self.live) != len(tools):
            # Steps that do not lead to these tools (a follower's bug): start over, with
            # no dict to walk from (hosts are sent the whole context).
            self.live = serialize_tools(tools)
            self._record(None)
        elif changed:
            self._record(steps)

    def _record(self, steps: Steps | None) -> None:
        self.version += 1
        self._snapshot = None
        self._journal.append(steps)

    def snapshot(self) -> dict[str, SerializedTool]:
        """A copy of the current tools that never changes (one per version)."""
        if self._snapshot is None:
            self._snapshot = self.live.copy()
        return self._snapshot

    def changes_since(self, version: int) -> ToolChanges | None:
        """What changed since ``version``, or ``None`` when that is no longer known
        (older than the versions remembered, or behind a whole serialization whose dict
        before is no longer kept): send the whole context then.

        The steps since are put together: every name removed, then every name put, each
        where it first went after its last removal (in place, or last when new or removed
        first), so that a host applying them, removals first, gets the tools in order.
        The first whole serialization since is a walk from the dict that held the version
        before it to now.
        """
        behind = self.version - version
        if behind == 0:
            return ToolChanges({}, [], None)
        journal = self._journal
        if not 0 < behind <= len(journal):
            return None  # forgotten (or a version never made)
        live = self.live
        removed: dict[str, None] = {}
        put: dict[str, None] = {}
        reorder = False
        entries = itertools.islice(journal, len(journal) - behind, None)
        for made, steps in enumerate(entries, version + 1):
            whole = steps is None
            if steps is None:
                before = self._befores.get(made)
                if before is None:
                    return None  # an earlier whole serialization: its dict is gone
                walked = tool_changes(before, live)
                steps = (tuple(walked.removed), tuple(walked.put), walked.order is not None)
            gone, names, reordered = steps
            for name in gone:
                put.pop(name, None)
                removed[name] = None
            for name in names:
                put.setdefault(name, None)  # where it first went since its last removal
            reorder = reorder or reordered
            if whole:  # the walk goes to now
                break
        return ToolChanges(
            {name: live[name] for name in put}, list(removed), list(live) if reorder else None
        )
