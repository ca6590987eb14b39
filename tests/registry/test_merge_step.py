"""A parent of many members merges a change in time of the change
(``registry.merge_step``), and what it gives is what a merge of everything again gives:
the same instructions, tools (in the same order), waiting names, UI resources, settings
and conflicts, whatever mix of members join, leave and change."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from assistant_frames import ModelContext, ModelContextRegistry, Tool, merge_model_contexts
from assistant_frames.frames import protocol
from assistant_frames.frames.wire_tools import WireTools
from assistant_frames.registry.registry import ProviderHandle
from assistant_frames.registry.tool_map import ToolMap
from assistant_frames.registry.ui import UIResource


def lookup(query: str) -> str:
    """Look something up."""
    return query


class Member:
    """A provider whose whole context is replaced, as a host's is when a context arrives
    (its tools a plain map, made anew: no lineage to follow)."""

    def __init__(self, name: str, *, watched: bool = True) -> None:
        self.name = name
        self.context = ModelContext(waiting=(name,))
        self._subscribers: list[Callable[[], None]] = []
        if watched:
            self.subscribe = self._subscribe

    def get_model_context(self) -> ModelContext:
        return self.context

    def _subscribe(self, callback: Callable[[], None]) -> Callable[[], None]:
        self._subscribers.append(callback)
        return lambda: self._subscribers.remove(callback)

    def set(self, pick: int) -> None:
        names = [f"{self.name}_t{i}" for i in range(pick % 4)]
        if pick % 7 == 0:
            names.append("shared")  # offered by others too: a full merge resolves it
        self.context = ModelContext(
            system=f"I am {self.name} ({pick % 3})" if pick % 3 else None,
            tools={n: Tool(n, lookup, description=f"{pick}") for n in names},
            call_settings={"temperature": pick % 2} if pick % 5 == 0 else None,
            config={"from": self.name} if pick % 6 == 0 else None,
            ui_resources=(
                {f"ui://{self.name}/{pick % 2}": UIResource(f"ui://{self.name}/{pick % 2}", "<p/>")}
                if pick % 4 == 0
                else {}
            ),
            priority=1 if pick % 11 == 0 else 0,  # another priority: a full merge
        )
        for callback in list(self._subscribers):
            callback()


class Parent:
    def __init__(self) -> None:
        self.registry = ModelContextRegistry()
        self.registry.add_tool("own", lookup)
        self.members: list[tuple[Member | ModelContextRegistry, ProviderHandle]] = []
        self.count = 0

    def apply(self, op: str, which: int, pick: int) -> None:
        self.count += 1
        if op.startswith("join") or not self.members:
            member: Member | ModelContextRegistry
            if op == "join-registry":
                member = ModelContextRegistry()
            else:
                member = Member(f"m{self.count}", watched=op != "join-unwatched")
            namespace = f"n{self.count}" if pick % 2 else None
            self.members.append((member, self.registry.add_provider(member, namespace=namespace)))
            return
        member, handle = self.members[which % len(self.members)]
        if op == "leave":
            handle.remove()
            self.members.remove((member, handle))
        elif isinstance(member, Member):
            member.set(pick)
            if not member._subscribers and not hasattr(member, "subscribe"):
                # An unwatched member's change is read at the parent's next change.
                self.registry.add_instruction(f"after {member.name}")
        elif op == "instruct":
            member.add_instruction(f"registry {pick}")
        else:
            member.add_tool(f"r{self.count}", lookup)
        if op == "own":
            self.registry.add_instruction(f"own {pick}")

    def again(self) -> ModelContext:
        """Everything merged again, from plain copies (no merge to start from)."""
        registry = self.registry
        own = ModelContext(
            system="\n\n".join(t for t in registry._instructions.values() if t) or None,
            tools=dict(registry._own_tools()),
            priority=registry.priority,
        )
        items = [own]
        for entry in registry._providers.values():
            context = entry.context()
            items.append(dataclasses.replace(context, tools=dict(context.tools)))
        return merge_model_contexts(items, conflict=registry.conflict)


def shown(context: ModelContext) -> dict[str, Any]:
    return {
        "system": context.system,
        "tools": [(n, t.name, t.description, t.execute) for n, t in context.tools.items()],
        "waiting": context.waiting,
        "ui": sorted(context.ui_resources),
        "call_settings": dict(context.call_settings or {}),
        "config": dict(context.config or {}),
        "conflicts": [(c.name, c.kept, c.dropped) for c in context.conflicts],
    }


JOINS = ["join", "join", "join-registry", "join-unwatched"]
CHANGES = ["set", "set", "set", "instruct", "tool", "leave", "own"]
ops = st.sampled_from(JOINS + CHANGES)


@settings(max_examples=300, deadline=None, database=None)
@given(
    steps=st.lists(st.tuples(ops, st.integers(0, 20), st.integers(0, 100)), max_size=40),
    batch=st.integers(1, 3),
)
def test_a_merge_stepped_from_the_last_one_is_what_merging_again_gives(
    steps: list[tuple[str, int, int]], batch: int
) -> None:
    parent = Parent()
    tools = parent.registry.get_model_context().tools
    wire = WireTools()
    wire.advance(tools, None)
    for index, (op, which, pick) in enumerate(steps):
        parent.apply(op, which, pick)
        if index % batch:
            continue
        context = parent.registry.get_model_context()
        assert shown(context) == shown(parent.again())
        # Who follows the parent by its steps (a frame serving it) gets the same tools.
        now = context.tools
        made = now.steps(tools) if isinstance(now, ToolMap) and now is not tools else None
        wire.advance(now, made)
        assert list(wire.live) == list(now)
        assert wire.live == protocol.serialize_tools(now)
        tools = now
    assert shown(parent.registry.get_model_context()) == shown(parent.again())


def test_a_parent_of_one_member_with_tools_shares_its_map() -> None:
    """As a full merge does: the member's own map, whose steps its followers take."""
    parent = ModelContextRegistry()
    members = [Member("a"), Member("b")]
    for member in members:
        parent.add_provider(member)
    first = ToolMap({"b_t0": Tool("b_t0", lookup)})
    made = ToolMap.derived(first, (), {"b_t9": Tool("b_t9", lookup)})
    for tools in (first, made):
        members[1].context = ModelContext(tools=tools)
        for callback in members[1]._subscribers:
            callback()
        assert parent.get_model_context().tools is tools


def test_one_member_of_many_changing_steps_the_merge() -> None:
    """The step is taken: of 2,000 members, one's first context costs no walk over the
    others (the merge's items are not read again: only the one member is asked)."""
    parent = Parent()
    for _ in range(2000):
        parent.apply("join", 0, 0)
    parent.registry.get_model_context()
    asked: list[str] = []
    for member, _ in parent.members:
        assert isinstance(member, Member)
        member.get_model_context = (  # type: ignore[method-assign]
            lambda member=member: asked.append(member.name) or member.context
        )
    member = parent.members[1234][0]
    assert isinstance(member, Member)
    member.set(3)  # three tools, a system text, no longer waiting
    context = parent.registry.get_model_context()
    assert asked == [member.name]
    assert [n for n in context.tools if n != "own"] == ["m1235_t0", "m1235_t1", "m1235_t2"]
    assert context.system == "I am m1235 (0)" or context.system is None
    assert len(context.waiting) == 1999
    assert member.name not in context.waiting
    assert shown(context) == shown(parent.again())


def test_members_come_and_gone_unread_leave_nothing_behind() -> None:
    """What changed since the last merge is kept only until a member leaves (the next
    merge is whole then): a parent nobody reads does not grow with every member."""
    parent = ModelContextRegistry()
    parent.get_model_context()
    for i in range(1000):
        member = Member(f"m{i}")
        handle = parent.add_provider(member)
        member.set(3)
        handle.remove()
    assert len(parent._added) + len(parent._stale) == 0
    last = Member("last")
    parent.add_provider(last)
    last.set(1)
    assert list(parent.get_model_context().tools) == ["last_t0"]
