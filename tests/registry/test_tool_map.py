"""``ToolMap``: a registry's tools made change by change, and what follows them (the
frame's wire form and patches, a host, a namespacing parent) giving exactly what a
rebuild of every tool gives, in the same order."""

from __future__ import annotations

import random
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assistant_frames import (
    AssistantFrameHost,
    AssistantFrameProvider,
    ModelContext,
    ModelContextRegistry,
    memory_pair,
)
from assistant_frames.registry.merge import namespaced
from assistant_frames.registry.registry import ToolHandle
from assistant_frames.registry.tool_map import ToolMap


def lookup(query: str) -> str:
    """Look something up."""
    return query


class Model:
    """A registry and what its tools must be: by handle, in the order added."""

    def __init__(self) -> None:
        self.registry = ModelContextRegistry()
        self.parent = ModelContextRegistry()
        self.parent.add_provider(self.registry, namespace="ns")
        self.handles: dict[ToolHandle, tuple[str, str]] = {}  # handle -> (name, description)
        self.count = 0

    def apply(self, op: str, pick: int) -> None:
        handles = list(self.handles)
        if op == "add" or not handles:
            self.count += 1
            name = f"t{self.count}"
            handle = self.registry.add_tool(name, lookup, description="new")
            self.handles[handle] = (name, "new")
            return
        handle = handles[pick % len(handles)]
        name, _ = self.handles[handle]
        if op == "update":
            description = f"changed {self.count}"
            self.count += 1
            handle.update(description=description)
            self.handles[handle] = (name, description)
        elif op == "rename":
            self.count += 1
            new = f"r{self.count}"
            handle.update(name=new)
            self.handles[handle] = (new, self.handles[handle][1])
        elif op == "remove":
            handle.remove()
            del self.handles[handle]
        elif op == "readd":  # the same name again: a new tool, so it goes last
            handle.remove()
            del self.handles[handle]
            again = self.registry.add_tool(name, lookup, description="again")
            self.handles[again] = (name, "again")

    def expected(self) -> list[tuple[str, str]]:
        return list(self.handles.values())


def described(context: ModelContext) -> list[tuple[str, str | None]]:
    return [(name, tool.description) for name, tool in context.tools.items()]


ops = st.lists(
    st.tuples(st.sampled_from(["add", "update", "rename", "remove", "readd"]), st.integers(0, 50)),
    max_size=40,
)


@settings(max_examples=150, deadline=None, database=None)
@given(steps=ops, batch=st.integers(1, 4))
def test_a_registry_made_change_by_change_is_what_a_rebuild_gives(
    steps: list[tuple[str, int]], batch: int
) -> None:
    model = Model()
    for index, (op, pick) in enumerate(steps):
        model.apply(op, pick)
        if index % batch:
            continue  # several changes between two looks: one map made from them all
        context = model.registry.get_model_context()
        assert type(context.tools) is ToolMap
        assert described(context) == model.expected()
        rebuilt = ModelContext(tools=dict(context.tools))
        assert described(model.parent.get_model_context()) == [
            (f"ns_{name}", description) for name, description in model.expected()
        ]
        assert described(namespaced(rebuilt, "ns")) == described(model.parent.get_model_context())


def test_a_map_follows_only_the_very_map_it_was_made_from() -> None:
    registry = ModelContextRegistry()
    registry.add_tool("a", lookup)
    first = registry.get_model_context().tools
    registry.add_tool("b", lookup)
    second = registry.get_model_context().tools
    assert isinstance(first, ToolMap)
    assert isinstance(second, ToolMap)
    assert second.lineage(first) == ((), ("b",))
    assert second.lineage(dict(first)) is None  # an equal map is not that map
    registry.add_tool("c", lookup)
    third = registry.get_model_context().tools
    assert isinstance(third, ToolMap)
    assert third.lineage(first) is None  # two steps away: rebuild
    assert type(dict(third)) is dict  # copies are plain


@pytest.mark.anyio
async def test_a_host_follows_a_long_run_of_changes_in_order() -> None:
    """Over a real memory pair: the frame serializes only what changed and sends it as
    patches; the host, and a parent namespacing it, hold what the registry holds."""
    model = Model()
    for _ in range(50):
        model.apply("add", 0)
    rng = random.Random(7)
    host_end, frame_end = memory_pair()
    parent = ModelContextRegistry()
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(AssistantFrameProvider(model.registry).serve, frame_end)
            async with AssistantFrameHost(host_end) as host:
                await host.wait_for_context()
                parent.add_provider(host, namespace="ns")
                for step in range(150):
                    op = rng.choice(["add", "update", "update", "rename", "remove", "readd"])
                    model.apply(op, rng.randrange(1000))
                    if step % 3:
                        continue
                    await settled(host, model)
                    assert described(host.get_model_context()) == model.expected()
                    assert described(parent.get_model_context()) == [
                        (f"ns_{name}", description) for name, description in model.expected()
                    ]
            tasks.cancel_scope.cancel()


async def settled(host: AssistantFrameHost, model: Model) -> None:
    """Wait, woken by the host, until it holds as many tools with the descriptions the
    registry has (the order is then checked by the caller)."""

    def done() -> bool:
        return sorted(described(host.get_model_context())) == sorted(model.expected())

    while not done():
        changed = anyio.Event()
        unsubscribe = host.subscribe(changed.set)
        try:
            if not done():
                await changed.wait()
        finally:
            unsubscribe()


def test_tool_map_pickles_as_a_dict() -> None:
    import copy
    import pickle

    tools: Any = ToolMap(a=None)
    assert type(copy.copy(tools)) is dict
    assert pickle.loads(pickle.dumps(tools)) == {"a": None}
