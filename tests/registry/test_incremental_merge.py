"""A parent registry's merged context, made change by change from the last merge
(``registry.merge._merge_changes``), is exactly what a merge of everything again gives:
the same tools in the same order, the same conflicts."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from assistant_frames import ModelContext, ModelContextRegistry, Tool, merge_model_contexts
from assistant_frames.frames import protocol
from assistant_frames.frames.serialization import ToolChanges
from assistant_frames.frames.wire_tools import JOURNAL_LENGTH, KEPT_WHOLES, WireTools
from assistant_frames.registry.registry import ToolHandle
from assistant_frames.registry.tool_map import ToolMap

NAMES = [f"t{i}" for i in range(6)]  # few names: children without a namespace collide


def lookup(query: str) -> str:
    """Look something up."""
    return query


class Federation:
    """A parent with tools of its own and children, some namespaced, at two priorities."""

    def __init__(self, children: list[tuple[str | None, int]]) -> None:
        self.parent = ModelContextRegistry()
        self.parent.add_tool("own", lookup)
        self.children = [ModelContextRegistry() for _ in children]
        self.handles: list[list[ToolHandle]] = [[] for _ in children]
        self.count = 0
        for child, (namespace, priority) in zip(self.children, children, strict=True):
            self.parent.add_provider(child, namespace=namespace, priority=priority)

    def apply(self, which: int, op: str, pick: int) -> None:
        child, handles = self.children[which], self.handles[which]
        self.count += 1
        if op == "add" or not handles:
            handles.append(
                child.add_tool(f"{NAMES[pick % len(NAMES)]}_{which}_{self.count}", lookup)
            )
            return
        if op == "add-common":  # a name other children may have too (not this one twice)
            name = NAMES[pick % len(NAMES)]
            if name not in child.get_model_context().tools:
                handles.append(child.add_tool(name, lookup))
            return
        handle = handles[pick % len(handles)]
        if op == "update":
            handle.update(description=f"change {self.count}")
        elif op == "rename":
            handle.update(name=f"r{self.count}")
        elif op == "remove":
            handle.remove()
            handles.remove(handle)

    def rebuilt(self) -> ModelContext:
        """Everything merged again, from plain copies (no map to start from)."""
        parent = self.parent
        own = ModelContext(tools=dict(parent._own_tools()), priority=parent.priority)
        items = [own] + [
            ModelContext(
                tools=dict(entry.context().tools),
                priority=entry.context().priority,
                conflicts=entry.context().conflicts,
            )
            for entry in parent._providers.values()
        ]
        return merge_model_contexts(items, conflict=parent.conflict)


def described(context: ModelContext) -> list[tuple[str, str | None, object]]:
    return [(name, tool.description, tool.execute) for name, tool in context.tools.items()]


children = st.lists(
    st.tuples(st.sampled_from([None, "a", "b", "c"]), st.sampled_from([0, 0, 1])),
    min_size=1,
    max_size=4,
)
steps = st.lists(
    st.tuples(
        st.integers(0, 3),
        st.sampled_from(["add", "add", "add-common", "update", "rename", "remove"]),
        st.integers(0, 50),
    ),
    max_size=40,
)


@settings(max_examples=200, deadline=None, database=None)
@given(children=children, steps=steps, batch=st.integers(1, 3))
def test_a_merge_made_from_the_last_one_is_what_merging_again_gives(
    children: list[tuple[str | None, int]], steps: list[tuple[int, str, int]], batch: int
) -> None:
    federation = Federation(children)
    for index, (which, op, pick) in enumerate(steps):
        federation.apply(which % len(children), op, pick)
        if index % batch:
            continue
        merged = federation.parent.get_model_context()
        again = federation.rebuilt()
        assert described(merged) == described(again)
        assert [(c.name, c.kept, c.dropped) for c in merged.conflicts] == [
            (c.name, c.kept, c.dropped) for c in again.conflicts
        ]


def test_a_name_added_and_removed_between_merges_leaves_another_members_tool() -> None:
    """A member that adds a tool another member offers and removes it again before the
    parent merges says it removed that name; the other member's tool stays."""
    federation = Federation([(None, 0), (None, 0)])
    federation.children[1].add_tool("shared", lookup)
    assert "shared" in federation.parent.get_model_context().tools
    handle = federation.children[0].add_tool("shared", lookup)
    handle.remove()
    merged = federation.parent.get_model_context()
    assert described(merged) == described(federation.rebuilt())
    assert "shared" in merged.tools


def test_a_conflict_both_sides_left_between_merges_is_no_longer_reported() -> None:
    """Two members offered one name (a conflict the merge resolved and reported); both
    remove it before the parent merges again: the conflict goes with it."""
    federation = Federation([(None, 0), (None, 0), (None, 0)])
    for which in range(3):
        federation.children[which].add_tool(f"own_{which}", lookup)
    shared = [federation.children[which].add_tool("shared", lookup) for which in (1, 2)]
    assert [c.name for c in federation.parent.get_model_context().conflicts] == ["shared"]
    for handle in shared:
        handle.remove()
    merged = federation.parent.get_model_context()
    assert described(merged) == described(federation.rebuilt())
    assert merged.conflicts == ()


def test_a_change_in_one_member_is_merged_from_the_last_merge() -> None:
    """The path is taken: the parent's tools are made from its previous tools, so whoever
    follows the parent (a frame serving it) sees the one change too."""
    federation = Federation([("a", 0), ("b", 0), ("c", 0)])
    for which in range(3):
        for _ in range(100):
            federation.apply(which, "add", 0)
    before = federation.parent.get_model_context().tools
    federation.apply(1, "update", 7)
    after = federation.parent.get_model_context().tools
    assert isinstance(after, ToolMap)
    removed, put = after.lineage(before) or ((), ())
    assert removed == ()
    assert len(put) == 1
    assert put[0].startswith("b_")
    assert list(after) == list(before)  # updated in place: the order stays
    federation.apply(2, "add", 3)  # new in the last member: goes last
    latest = federation.parent.get_model_context().tools
    assert isinstance(latest, ToolMap)
    assert latest.lineage(after) is not None
    assert list(latest)[-1].startswith("c_")
    assert described(federation.parent.get_model_context()) == described(federation.rebuilt())


def test_a_new_tool_in_an_earlier_member_is_merged_again_in_its_place() -> None:
    federation = Federation([("a", 0), ("b", 0)])
    federation.apply(0, "add", 0)
    federation.apply(1, "add", 0)
    before = federation.parent.get_model_context().tools
    federation.apply(0, "add", 1)
    after = federation.parent.get_model_context()
    assert isinstance(after.tools, ToolMap)
    assert after.tools.lineage(before) is None  # its place is before b's: not in order
    assert [name[:2] for name in after.tools] == ["ow", "a_", "a_", "b_"]
    # ... but it says how it was made, for a follower that takes the new order.
    steps = after.tools.steps(before)
    assert steps is not None
    removed, put, reordered = steps
    assert (removed, reordered) == ((), True)
    assert [name[:2] for name in put] == ["a_"]
    assert put[0] not in before


def applied(held: dict[str, Any], changes: ToolChanges) -> dict[str, Any]:
    """What a host holding ``held`` holds once it applied ``changes`` (as a patch)."""
    host_side = dict(held)
    for name in changes.removed:
        host_side.pop(name, None)
    host_side.update(changes.put)
    if changes.order is not None:
        host_side = {name: host_side[name] for name in changes.order}
    return host_side


@settings(max_examples=200, deadline=None, database=None)
@given(children=children, steps=steps)
def test_the_wire_form_followed_step_by_step_is_the_wire_form(
    children: list[tuple[str | None, int]], steps: list[tuple[int, str, int]]
) -> None:
    """What a frame serving the parent does per change (frames.provider): follow the
    parent's tools by their steps, new order included, instead of serializing them all;
    and the patch that says what changed gives the host the same tools, in that order."""
    federation = Federation(children)
    tools = federation.parent.get_model_context().tools
    wire = WireTools()
    wire.advance(tools, None)
    host_side = wire.snapshot()
    in_order = True  # until a merge made whole is walked (a reorder alone is no change)
    for which, op, pick in steps:
        version = wire.version
        federation.apply(which % len(children), op, pick)
        now = federation.parent.get_model_context().tools
        made = now.steps(tools) if isinstance(now, ToolMap) else None
        expected = protocol.serialize_tools(now)
        wire.advance(now, made)
        assert list(wire.live) == list(expected)
        assert wire.live == expected
        changes = wire.changes_since(version)
        assert changes is not None
        host_side = applied(host_side, changes)
        assert host_side == expected
        in_order = in_order and made is not None
        if in_order:
            assert list(host_side) == list(expected)
        tools = now


@settings(max_examples=200, deadline=None, database=None)
@given(
    children=children,
    steps=steps,
    batch=st.integers(1, 3),
    lag=st.lists(st.integers(0, 70), min_size=1, max_size=8),
)
def test_hosts_behind_by_any_number_of_versions_are_patched_to_the_tools(
    children: list[tuple[str | None, int]],
    steps: list[tuple[int, str, int]],
    batch: int,
    lag: list[int],
) -> None:
    """A frame's wire tools change in place; a host that holds any version still
    remembered gets, from the steps since put together, the tools in order. Changes are
    taken in batches (a frame coalesces them: a batch has no steps, and is walked)."""
    federation = Federation(children)
    wire = WireTools()
    held = {wire.version: wire.snapshot()}  # what a host sent each version holds
    tools = federation.parent.get_model_context().tools
    wire.advance(tools, None)
    held[wire.version] = wire.snapshot()
    walked = {wire.version}  # versions serialized whole (a reorder alone is no change)
    wholes = [wire.version]  # the versions serialized whole that were a change
    for index, (which, op, pick) in enumerate(steps):
        federation.apply(which % len(children), op, pick)
        if index % batch:
            continue
        now = federation.parent.get_model_context().tools
        made = now.steps(tools) if isinstance(now, ToolMap) else None
        wire.advance(now, made)
        if made is None:
            walked.add(wire.version)
            if wire.version != wholes[-1]:
                wholes.append(wire.version)
        tools = now
        expected = protocol.serialize_tools(now)
        assert wire.live == expected
        held.setdefault(wire.version, wire.snapshot())
        for behind in lag:
            version = max(wire.version - behind, 0)
            changes = wire.changes_since(version)
            if changes is None:  # forgotten, or behind a whole one no longer kept: sent whole
                assert version < wire.version - JOURNAL_LENGTH or any(
                    version < whole for whole in wholes[:-KEPT_WHOLES]
                )
                continue
            host_side = applied(held[version], changes)
            assert host_side == expected
            if not walked.intersection(range(version, wire.version + 1)):
                assert list(host_side) == list(expected)
        assert held[wire.version] == expected  # snapshots never change


def test_wire_tools_change_in_place_and_count_only_changes() -> None:
    registry = ModelContextRegistry()
    handles = [registry.add_tool(f"t{i}", lookup) for i in range(3)]
    wire = WireTools()
    first = registry.get_model_context().tools
    wire.advance(first, None)
    live, snapshot, version = wire.live, wire.snapshot(), wire.version
    assert wire.snapshot() is snapshot  # one per version
    handles[1].update(description="changed")
    second = registry.get_model_context().tools
    wire.advance(second, second.steps(first))
    assert wire.live is live  # in place: no copy of every tool per change
    assert wire.version == version + 1
    assert snapshot == protocol.serialize_tools(first)  # what was sent stays as it was
    assert wire.snapshot() is not snapshot
    assert wire.changes_since(version) == (
        {"t1": protocol.serialize_tools(second)["t1"]},
        [],
        None,
    )
    # The same tools again, serialized whole: no new version.
    wire.advance(dict(second), None)
    assert wire.version == version + 1
    assert wire.changes_since(wire.version) == ({}, [], None)


def test_a_host_further_behind_than_the_journal_is_sent_everything() -> None:
    registry = ModelContextRegistry()
    handle = registry.add_tool("t", lookup)
    wire = WireTools()
    tools = registry.get_model_context().tools
    wire.advance(tools, None)
    start = wire.version
    for change in range(JOURNAL_LENGTH + 1):
        handle.update(description=f"change {change}")
        now = registry.get_model_context().tools
        wire.advance(now, now.steps(tools))
        tools = now
    assert wire.changes_since(start) is None
    assert wire.changes_since(start + 1) is not None  # the oldest still remembered
    assert wire.changes_since(wire.version + 1) is None  # a version never made


def test_only_the_last_whole_serializations_keep_the_dict_before_them() -> None:
    """Memory stays bounded when every change is serialized whole (a frame's bursts):
    a few old dicts are kept, and a host behind an earlier one is sent everything."""
    wire = WireTools()
    versions = []
    for count in range(1, KEPT_WHOLES + 3):
        wire.advance({f"t{i}": Tool(f"t{i}", lookup) for i in range(count)}, None)
        versions.append(wire.version)
    changes = wire.changes_since(versions[-KEPT_WHOLES - 1])
    assert changes is not None
    assert list(changes.put) == [f"t{i}" for i in range(len(versions) - KEPT_WHOLES, len(versions))]
    assert wire.changes_since(versions[-KEPT_WHOLES - 2]) is None
    assert wire.changes_since(versions[0]) is None


def test_steps_that_do_not_lead_to_the_tools_start_the_wire_form_over() -> None:
    """A follower's bug (steps that miss a name) costs a whole context, not the frame."""
    first = ToolMap({"a": Tool("a", lookup)})
    tools = ToolMap({"a": first["a"], "b": Tool("b", lookup), "c": Tool("c", lookup)})
    for reordered in (False, True):
        wire = WireTools()
        wire.advance(first, None)
        version = wire.version
        wire.advance(tools, ((), ("b",), reordered))  # "c" is not put
        assert wire.live == protocol.serialize_tools(tools)
        assert wire.version == version + 1
        assert wire.changes_since(version) is None  # no dict to walk from: sent whole
