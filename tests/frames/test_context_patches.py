"""Context changes as patches: a Python host asks (``model-context-subscribe`` with
``patches: true``), a Python frame then sends only what changed, numbered.

The machines are tested without an event loop; the whole path over a real memory pair
and a real WebSocket on 127.0.0.1.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from anyio.abc import ObjectStream
from hypothesis import given
from hypothesis import strategies as st
from test_machines import PROPERTY, ToolFactory

from assistant_frames import (
    AssistantFrameHost,
    AssistantFrameProvider,
    ModelContext,
    ModelContextRegistry,
    memory_pair,
)
from assistant_frames.frames import protocol
from assistant_frames.frames.frame_machine import FrameMachine
from assistant_frames.frames.host_machine import ContextChanged, HostMachine
from assistant_frames.frames.host_machine import Malformed as HostMalformed
from assistant_frames.frames.host_machine import Send as HostSend
from assistant_frames.frames.serialization import context_changes
from assistant_frames.frames.wire_tools import JOURNAL_LENGTH, WireTools
from assistant_frames.registry.tool import Tool
from assistant_frames.registry.tool_map import ToolMap
from assistant_frames.registry.ui import UIResource
from assistant_frames.transports.websocket import connect_websocket, websocket_server

from helpers import EMPTY_OBJECT, envelope

REQUEST = envelope({"type": "model-context-request"})
SUBSCRIBE_PATCHES = protocol.encode_context_subscribe(patches=True)


def spec(description: str) -> protocol.SerializedTool:
    return {"description": description, "parameters": EMPTY_OBJECT}


def frame_sends(machine: FrameMachine[Any], wire: protocol.SerializedModelContext) -> Any:
    """The message the frame sends for ``wire`` (or ``None``), as its peer receives it."""
    message = machine.context_update(wire)
    return None if message is None else json.loads(json.dumps(message))


def patched_frame(wire: protocol.SerializedModelContext) -> FrameMachine[Any]:
    """A frame machine that sent ``wire`` to a host, which then asked for patches."""
    frame: FrameMachine[Any] = FrameMachine(document_id="doc")
    frame.receive(REQUEST)
    assert frame_sends(frame, wire)["message"]["type"] == "model-context-update"
    frame.receive(SUBSCRIBE_PATCHES)
    return frame


# == the frame ================================================================================


def test_a_frame_sends_only_what_changed_numbered_from_one() -> None:
    first = {"system": "Be brief.", "tools": {"a": spec("A"), "b": spec("B")}}
    frame = patched_frame(first)
    assert frame_sends(frame, first) is None  # nothing changed: nothing sent
    second = {"system": "Be brief.", "tools": {"a": first["tools"]["a"], "b": spec("B2")}}
    message = frame_sends(frame, second)["message"]
    assert message == {
        "type": "model-context-patch",
        "seq": 1,
        "context": {"tools": {"b": spec("B2")}},
        "documentId": "doc",
    }
    third = {"tools": {"c": spec("C")}}
    message = frame_sends(frame, third)["message"]
    assert message["seq"] == 2
    assert message["context"] == {"system": None, "tools": {"c": spec("C")}}
    assert message["removed"] == ["a", "b"]


def test_a_request_is_answered_whole_and_numbered() -> None:
    wire = {"tools": {"a": spec("A")}}
    frame = patched_frame(wire)
    frame.receive(REQUEST)
    message = frame_sends(frame, wire)["message"]
    assert message["type"] == "model-context-update"
    assert message["seq"] == 1  # the next patch follows from it
    assert message["context"] == wire
    assert frame_sends(frame, {"tools": {}})["message"]["seq"] == 2


def test_a_frame_not_asked_for_patches_sends_snapshots_without_numbers() -> None:
    frame: FrameMachine[Any] = FrameMachine()
    frame.receive(REQUEST)
    frame_sends(frame, {"tools": {"a": spec("A")}})
    frame.receive(envelope({"type": "model-context-subscribe", "patches": "yes"}))  # not true
    message = frame_sends(frame, {"tools": {"b": spec("B")}})["message"]
    assert message["type"] == "model-context-update"
    assert "seq" not in message


def test_unsubscribing_ends_the_patches() -> None:
    frame = patched_frame({"tools": {"a": spec("A")}})
    frame.receive(envelope({"type": "model-context-unsubscribe"}))
    assert frame_sends(frame, {"tools": {}}) is None
    frame.receive(REQUEST)
    assert frame_sends(frame, {"tools": {}})["message"]["type"] == "model-context-update"


class ServedTools:
    """A registry's tools followed in place by :class:`WireTools`, as a provider does."""

    def __init__(self, *names: str) -> None:
        self.registry = ModelContextRegistry()
        self.handles = {name: self.registry.add_tool(name, lookup) for name in names}
        self.tools = WireTools()
        self._followed: Any = None
        self.follow()

    def follow(self) -> protocol.SerializedModelContext:
        """Take the registry's current tools; the wire context a provider would send."""
        context = self.registry.get_model_context()
        now = context.tools
        steps = now.steps(self._followed) if isinstance(now, ToolMap) else None
        self.tools.advance(now, steps)
        self._followed = now
        return protocol.serialize_context(context, tools=self.tools.live)

    def sends(self, frame: FrameMachine[Any], wire: protocol.SerializedModelContext) -> Any:
        message = frame.context_update(wire, self.tools)
        return None if message is None else json.loads(json.dumps(message))


def versioned_frame(served: ServedTools, *, patches: bool = True) -> FrameMachine[Any]:
    frame: FrameMachine[Any] = FrameMachine(document_id="doc")
    frame.receive(REQUEST)
    assert served.sends(frame, served.follow())["message"]["type"] == "model-context-update"
    if patches:
        frame.receive(SUBSCRIBE_PATCHES)
    return frame


def test_a_host_behind_by_several_changes_gets_them_in_one_patch() -> None:
    served = ServedTools("a", "b", "c")
    frame = versioned_frame(served)
    live = served.tools.live
    served.handles["a"].update(description="A2")
    served.follow()
    served.handles["b"].remove()
    served.registry.add_tool("d", lookup)
    wire = served.follow()
    assert served.tools.live is live  # changed in place, not copied
    message = served.sends(frame, wire)["message"]
    assert message["type"] == "model-context-patch"
    assert message["seq"] == 1
    assert message["removed"] == ["b"]
    assert list(message["context"]["tools"]) == ["a", "d"]
    assert message["context"]["tools"]["a"]["description"] == "A2"
    assert served.sends(frame, wire) is None  # nothing since


def test_whole_contexts_carry_a_snapshot_that_later_changes_leave_alone() -> None:
    served = ServedTools("a")
    frame = versioned_frame(served, patches=False)
    served.handles["a"].update(description="A2")
    message = frame.context_update(served.follow(), served.tools)
    assert message is not None
    sent = message["message"]["context"]["tools"]
    assert sent is not served.tools.live
    served.registry.add_tool("b", lookup)
    wire = served.follow()
    assert list(sent) == ["a"]  # what went out stays as it went
    assert served.sends(frame, wire)["message"]["context"]["tools"].keys() == {"a", "b"}
    assert served.sends(frame, wire) is None  # unchanged: nothing


def test_a_host_further_behind_than_the_versions_kept_is_sent_everything_numbered() -> None:
    served = ServedTools("a")
    frame = versioned_frame(served)
    for change in range(JOURNAL_LENGTH + 1):
        served.handles["a"].update(description=f"A{change}")
        wire = served.follow()
    message = served.sends(frame, wire)["message"]
    assert message["type"] == "model-context-update"
    assert message["seq"] == 1
    assert message["context"]["tools"]["a"]["description"] == f"A{JOURNAL_LENGTH}"
    served.handles["a"].update(description="next")
    assert served.sends(frame, served.follow())["message"]["type"] == "model-context-patch"


def test_a_host_that_stops_taking_patches_still_gets_what_changed_in_place() -> None:
    served = ServedTools("a")
    frame = versioned_frame(served)
    served.handles["a"].update(description="A2")
    assert served.sends(frame, served.follow())["message"]["type"] == "model-context-patch"
    frame.receive(envelope({"type": "model-context-unsubscribe"}))
    served.handles["a"].update(description="A3")  # the tools the frame last sent change too
    wire = served.follow()
    frame.receive(envelope({"type": "model-context-subscribe"}))
    message = served.sends(frame, wire)["message"]
    assert message["type"] == "model-context-update"
    assert message["context"]["tools"]["a"]["description"] == "A3"


def test_a_change_that_serializes_the_same_is_no_version() -> None:
    served = ServedTools("a")
    frame = versioned_frame(served)
    version = served.tools.version
    served.handles["a"].update(description=served.handles["a"].tool.description)
    assert served.sends(frame, served.follow()) is None
    assert served.tools.version == version


def test_context_changes_of_the_same_context_is_none() -> None:
    wire = {"system": "s", "tools": {"a": spec("A")}, "uiResources": [{"uri": "ui://x"}]}
    assert context_changes(wire, json.loads(json.dumps(wire))) is None
    changed = context_changes(wire, {**wire, "uiResources": None})
    assert changed == ({"uiResources": []}, [], None)


# == the host =================================================================================


def subscribed_host(wire: protocol.SerializedModelContext) -> tuple[HostMachine, ToolFactory]:
    factory = ToolFactory()
    host = HostMachine(factory, id_prefix="t-")
    host.open()
    event = host.receive(envelope({"type": "model-context-update", "context": wire}))
    assert isinstance(event, ContextChanged)
    assert event.sends == (SUBSCRIBE_PATCHES,)
    return host, factory


def patch(seq: int, context: Any, removed: list[str] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"type": "model-context-patch", "seq": seq, "context": context}
    if removed is not None:
        message["removed"] = removed
    return envelope(message)


def test_a_host_applies_a_patch_building_only_the_changed_tools() -> None:
    host, factory = subscribed_host({"system": "s", "tools": {"a": spec("A"), "b": spec("B")}})
    a = host.context.tools["a"]
    factory.built.clear()
    event = host.receive(patch(1, {"tools": {"b": spec("B2"), "c": spec("C")}}))
    assert isinstance(event, ContextChanged)
    assert factory.built == ["b", "c"]  # a is the same object
    assert host.context.tools["a"] is a
    assert [(t.name, t.description) for t in host.context.tools.values()] == [
        ("a", "A"),
        ("b", "B2"),
        ("c", "C"),
    ]
    assert host.context.system == "s"
    assert isinstance(host.receive(patch(2, {"system": None}, ["a", "c"])), ContextChanged)
    assert list(host.context.tools) == ["b"]
    assert host.context.system is None
    assert host.patch_seq == 2


def test_a_patch_that_does_not_follow_asks_once_for_a_snapshot() -> None:
    host, _ = subscribed_host({"tools": {"a": spec("A")}})
    held = host.context
    event = host.receive(patch(2, {"tools": {"b": spec("B")}}))  # 1 went missing
    assert isinstance(event, HostSend)
    assert event.sends == (protocol.encode_context_request(),)
    assert host.context is held  # not applied
    assert host.receive(patch(3, {"tools": {"c": spec("C")}})) is None  # asked already
    snapshot = {"type": "model-context-update", "context": {"tools": {"z": spec("Z")}}, "seq": 7}
    assert isinstance(host.receive(envelope(snapshot)), ContextChanged)
    assert list(host.context.tools) == ["z"]
    assert isinstance(host.receive(patch(8, {"tools": {"y": spec("Y")}})), ContextChanged)
    assert list(host.context.tools) == ["z", "y"]


def test_an_unusable_patch_keeps_the_context_and_the_next_one_resyncs() -> None:
    host, _ = subscribed_host({"tools": {"a": spec("A")}})
    held = host.context
    bad = host.receive(patch(1, {"tools": {"b": {"parameters": "not a schema"}}}))
    assert isinstance(bad, HostMalformed)
    assert host.context is held
    event = host.receive(patch(2, {"tools": {"c": spec("C")}}))
    assert isinstance(event, HostSend)
    assert event.sends == (protocol.encode_context_request(),)


def test_a_patch_with_unusable_ui_resources_changes_nothing_held() -> None:
    host, _ = subscribed_host({"tools": {"a": spec("A")}})
    assert isinstance(host.receive(patch(1, {"tools": {"b": spec("B")}})), ContextChanged)
    held, wire = host.context, json.dumps(host.wire)
    bad = patch(2, {"tools": {"c": spec("C")}, "uiResources": [{"uri": 5}]}, ["a"])
    assert isinstance(host.receive(bad), HostMalformed)
    assert host.context is held
    assert json.dumps(host.wire) == wire  # the tools it holds in wire form too


def test_a_patch_whose_order_does_not_name_every_tool_once_is_not_applied() -> None:
    host, _ = subscribed_host({"tools": {"a": spec("A"), "b": spec("B")}})
    held = host.context
    for order in (["a", "a", "c"], ["a", "c"], ["c", "b", "a", "a"], ["a", "b", "x"]):
        host.patch_seq = 0
        event = host.receive(
            envelope({**patch(1, {"tools": {"c": spec("C")}})["message"], "order": order})
        )
        assert isinstance(event, HostMalformed)
        assert host.context is held
    host.patch_seq = 0
    good = {**patch(1, {"tools": {"c": spec("C")}})["message"], "order": ["c", "a", "b"]}
    assert isinstance(host.receive(envelope(good)), ContextChanged)
    assert list(host.context.tools) == ["c", "a", "b"]


def test_a_patch_before_any_subscription_asks_for_a_snapshot() -> None:
    host = HostMachine(ToolFactory(), id_prefix="t-")
    host.open()
    event = host.receive(patch(1, {"tools": {"a": spec("A")}}))
    assert isinstance(event, HostSend)
    assert event.sends == (protocol.encode_context_request(),)


# == the two together, any sequence of changes ===============================================

descriptions = st.sampled_from(["one", "two", "three"])
contexts = st.fixed_dictionaries(
    {"tools": st.dictionaries(st.sampled_from("abcdefg"), descriptions, max_size=7)},
    optional={"system": st.sampled_from(["s", "t"]), "ui": st.booleans()},
)


def to_wire(
    drawn: dict[str, Any], cache: dict[tuple[str, str], protocol.SerializedTool]
) -> protocol.SerializedModelContext:
    # An unchanged tool keeps its wire form object, as a frame's cached tools do. Sorted:
    # a reorder alone is no change (as for whole contexts), but tools come in anywhere.
    tools = {
        name: cache.setdefault((name, d), spec(d)) for name, d in sorted(drawn["tools"].items())
    }
    wire: protocol.SerializedModelContext = {"tools": tools}
    if "system" in drawn:
        wire["system"] = drawn["system"]
    if drawn.get("ui"):
        wire["uiResources"] = [UIResource.create("ui://w/x", "<p>x</p>").to_wire()]
    return wire


@PROPERTY
@given(steps=st.lists(contexts, min_size=1, max_size=12))
def test_a_host_fed_patches_holds_what_the_frame_holds(steps: list[dict[str, Any]]) -> None:
    cache: dict[tuple[str, str], protocol.SerializedTool] = {}
    frame: FrameMachine[Any] = FrameMachine(document_id="doc")
    host = HostMachine(ToolFactory(), id_prefix="t-")
    to_frame = [host.open()]
    patches = 0
    received: list[tuple[Any, str]] = []  # what the host got (the very objects), as sent
    for drawn in steps:
        for message in to_frame:  # what the host sent arrives first
            frame.receive(json.loads(json.dumps(message)))
        wire = to_wire(drawn, cache)
        sent = frame_sends(frame, wire)
        to_frame = []
        if sent is not None:
            patches += sent["message"]["type"] == "model-context-patch"
            received.append((sent, json.dumps(sent)))
            event = host.receive(sent)
            assert not isinstance(event, HostMalformed)
            if event is not None:
                to_frame = list(event.sends)
        assert not host.resyncing
        held = host.context
        assert {n: t.description for n, t in held.tools.items()} == {
            n: s["description"] for n, s in wire["tools"].items()
        }
        assert list(held.tools) == list(wire["tools"])
        assert held.system == wire.get("system")
        assert list(held.ui_resources) == (["ui://w/x"] if "uiResources" in wire else [])
    assert patches <= len(steps) - 1  # the first context is whole
    # Over a memory pair the host holds what the frame sent: it changes none of it.
    assert [json.dumps(message) for message, _ in received] == [text for _, text in received]


# == over real transports =====================================================================


class Counting(ObjectStream[Any]):
    """The host's end of a transport, counting the context messages and their sizes."""

    def __init__(self, inner: ObjectStream[Any]) -> None:
        self.inner = inner
        self.sizes: dict[str, list[int]] = {}
        self.kinds: list[str] = []  # in the order received

    async def send(self, item: Any) -> None:
        await self.inner.send(item)

    async def receive(self) -> Any:
        item = await self.inner.receive()
        kind = item.get("message", {}).get("type") if isinstance(item, dict) else None
        if kind in ("model-context-update", "model-context-patch"):
            self.sizes.setdefault(kind, []).append(len(json.dumps(item)))
            self.kinds.append(kind)
        return item

    async def send_eof(self) -> None:
        await self.inner.send_eof()

    async def aclose(self) -> None:
        await self.inner.aclose()


@asynccontextmanager
async def served_over(
    kind: str, registry: ModelContextRegistry
) -> AsyncIterator[tuple[AssistantFrameHost, Counting]]:
    provider = AssistantFrameProvider(registry)
    async with anyio.create_task_group() as tasks:
        if kind == "memory":
            host_end, frame_end = memory_pair()
            tasks.start_soon(provider.serve, frame_end)
            transport: ObjectStream[Any] = host_end
            async with Counting(transport) as counting, AssistantFrameHost(counting) as host:
                yield host, counting
        else:
            async with (
                websocket_server(provider.serve) as server,
                connect_websocket(server.url) as transport,
            ):
                counting = Counting(transport)
                async with AssistantFrameHost(counting) as host:
                    yield host, counting
        tasks.cancel_scope.cancel()


async def until(host: AssistantFrameHost, check: Callable[[ModelContext], bool]) -> None:
    """Wait (woken by the host, never polling) until ``check`` holds for its context."""
    while not check(host.get_model_context()):
        changed = anyio.Event()
        unsubscribe = host.subscribe(changed.set)
        try:
            if not check(host.get_model_context()):
                await changed.wait()
        finally:
            unsubscribe()


def lookup(query: str) -> str:
    """Look something up."""
    return query


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["memory", "websocket"])
async def test_changes_cross_as_small_patches(kind: str) -> None:
    registry = ModelContextRegistry()
    handles = [
        registry.add_tool(f"tool_{i}", lookup, description=f"Tool {i}: " + "x" * 100)
        for i in range(200)
    ]
    with anyio.fail_after(10):
        async with served_over(kind, registry) as (host, counting):
            await host.wait_for_context()
            await until(host, lambda context: len(context.tools) == 200)
            for i in range(10):
                registry.add_tool(f"extra_{i}", lookup, description="Added.")
                await until(host, lambda context, i=i: f"extra_{i}" in context.tools)
            handles[0].remove()
            await until(host, lambda context: "tool_0" not in context.tools)
            registry.add_instruction("Be brief.")
            await until(host, lambda context: context.system == "Be brief.")
            handles[1].update(description="Changed.")
            await until(host, lambda context: context.tools["tool_1"].description == "Changed.")

            context = host.get_model_context()
            expected = registry.get_model_context()
            assert list(context.tools) == list(expected.tools)
            for name, tool in expected.tools.items():
                assert context.tools[name].description == tool.description
                assert dict(context.tools[name].parameters) == dict(tool.parameters)
            # Whole contexts until the frame heard the subscribe (one, or two if a change
            # came first), then only patches: a few hundred bytes each, not ~40 KB.
            snapshots = counting.kinds.count("model-context-update")
            assert 1 <= snapshots <= 2
            assert set(counting.kinds[snapshots:]) == {"model-context-patch"}
            patches = counting.sizes["model-context-patch"]
            assert len(patches) >= 14 - snapshots
            assert max(patches) * 50 < min(counting.sizes["model-context-update"])


class NoSubscribe(Counting):
    """The host's end, dropping its subscribes: a frame that never hears them."""

    async def send(self, item: Any) -> None:
        if item.get("message", {}).get("type") != "model-context-subscribe":
            await self.inner.send(item)


@pytest.mark.anyio
async def test_a_frame_that_never_heard_the_subscribe_sends_snapshots_the_host_takes() -> None:
    # As a JS frame, or a Python frame before patches: a request alone subscribes it.
    registry = ModelContextRegistry()
    registry.add_tool(Tool("a", lookup))
    host_end, frame_end = memory_pair()
    provider = AssistantFrameProvider(registry)
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(provider.serve, frame_end)
            counting = NoSubscribe(host_end)
            async with AssistantFrameHost(counting) as host:
                await host.wait_for_context()
                registry.add_tool(Tool("b", lookup))
                await until(host, lambda context: "b" in context.tools)
            tasks.cancel_scope.cancel()
    assert len(counting.sizes["model-context-update"]) == 2
    assert "model-context-patch" not in counting.sizes


class SlowSends(Counting):
    """The frame's end of a pair, taking a while over each send: the frame's pushes to
    this host fall behind a burst of changes."""

    async def send(self, item: Any) -> None:
        await anyio.sleep(0.003)
        await self.inner.send(item)


@pytest.mark.anyio
async def test_a_host_that_falls_behind_a_burst_ends_with_the_frames_tools_in_order() -> None:
    """Two hosts of one frame whose members change in a burst: one keeps up, the other
    gets what changed over several versions at once (or, further behind, the whole
    context); both end with the frame's tools, in its order."""
    parent = ModelContextRegistry()
    members = [ModelContextRegistry() for _ in range(3)]
    for index, member in enumerate(members):
        parent.add_provider(member, namespace=f"m{index}")
    handles = [
        [member.add_tool(f"t{i}", lookup, description=f"Tool {i}") for i in range(30)]
        for member in members
    ]
    provider = AssistantFrameProvider(parent)
    fast_end, fast_frame = memory_pair()
    slow_end, slow_frame = memory_pair()
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(provider.serve, fast_frame)
            tasks.start_soon(provider.serve, SlowSends(slow_frame))
            async with (
                Counting(slow_end) as counting,
                AssistantFrameHost(fast_end, name="fast") as fast,
                AssistantFrameHost(counting, name="slow") as slow,
            ):
                await fast.wait_for_context()
                await slow.wait_for_context()
                await until(slow, lambda context: len(context.tools) == 90)
                changes = 0
                for step in range(300):
                    which = step % 3
                    member, held = members[which], handles[which]
                    if step % 5 == 0 or not held:
                        held.insert(step % 7, member.add_tool(f"n{step}", lookup))
                    elif step % 5 == 1:
                        held.pop(step % len(held)).remove()
                    else:
                        held[step % len(held)].update(description=f"change {step}")
                    changes += 1
                    if step % 4 == 0:  # the fast host's push keeps up; the slow one's does not
                        await anyio.sleep(0.001)
                expected = parent.get_model_context().tools

                def caught_up(context: ModelContext) -> bool:
                    return [(name, tool.description) for name, tool in context.tools.items()] == [
                        (name, tool.description) for name, tool in expected.items()
                    ]

                await until(fast, caught_up)
                await until(slow, caught_up)
                patches = counting.kinds.count("model-context-patch")
                assert 3 <= patches < changes / 4  # several versions per patch
                assert counting.kinds.count("model-context-update") <= 2  # the first ones
            tasks.cancel_scope.cancel()
