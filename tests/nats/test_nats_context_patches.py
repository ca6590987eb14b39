"""A frame's context over NATS as patches, against the real ``nats-server``.

Each replica publishes its first context whole, then each change as a numbered
``model-context-patch`` naming the replica (``AF-Replica``) and its number (``AF-Seq``);
a host follows one replica, the one whose context it holds, applies its patches in
order, and asks again (that replica alone, or every one) on a gap, when that replica is
gone, or once reconnected. What crosses the context subject is read by a plain nats-py
client, as anyone on the bus would.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
import pytest

from assistant_frames import ModelContextRegistry
from assistant_frames.frames import protocol

from helpers import calculator, wait_until
from nats_support import NATSServer, leavable, nats_server, replica_process

pytestmark = pytest.mark.anyio

nats = pytest.importorskip("nats")

from assistant_frames.nats import (  # noqa: E402  (needs the nats extra, checked just above)
    NATSFrameHost,
    NATSFrameProvider,
    connect_nats,
    nats_client,
)
from assistant_frames.nats.host_route import HostRoute  # noqa: E402
from assistant_frames.nats.subjects import FrameSubjects  # noqa: E402

__all__ = ["nats_server"]  # the fixture

HEARTBEAT = 0.1
CONTEXT = "frames.calc.context"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # nats-py is asyncio only


def lookup(query: str) -> str:
    """Look something up."""
    return query


def many_tools(count: int) -> tuple[ModelContextRegistry, list[Any]]:
    """The calculator and ``count`` more tools (``tool_0``...), each with a description;
    and their handles."""
    registry = calculator()
    handles = [
        registry.add_tool(f"tool_{i}", lookup, description=f"Tool number {i}") for i in range(count)
    ]
    return registry, handles


def replica_of(registry: ModelContextRegistry, url: str, **kw: Any) -> NATSFrameProvider:
    kw.setdefault("heartbeat", HEARTBEAT)
    return NATSFrameProvider(registry, "calc", nats=url, **kw)


@asynccontextmanager
async def host_of(url: str, **kw: Any) -> AsyncIterator[NATSFrameHost]:
    kw.setdefault("liveness", 0.5)
    async with NATSFrameHost("calc", nats=url, **kw) as host:
        await host.wait_for_context(5)
        yield host


class Spy:
    """A plain nats-py client's view of subjects: every message, with its headers."""

    def __init__(self) -> None:
        self.messages: list[Any] = []

    async def on(self, msg: Any) -> None:
        self.messages.append(msg)

    def bodies(self, kind: str | None = None) -> list[dict[str, Any]]:
        found = [json.loads(m.data)["message"] for m in self.messages if m.data]
        return [b for b in found if kind is None or b["type"] == kind]


async def settle(client: Any) -> None:
    """Wait until the server has every subscription ``client`` made. One flush is not
    enough: nats-py (2.16) writes a flush's PING at once, ahead of the commands its
    flusher task has yet to write (a SUB made just before can reach the server after
    the PONG); by the second PING's turn, that task has run."""
    await client.flush(timeout=5)
    await client.flush(timeout=5)


@asynccontextmanager
async def spying(url: str, *subjects: str) -> AsyncIterator[tuple[Any, Spy]]:
    """A raw client and a spy on ``subjects``, subscribed at the server."""
    async with await connect_nats(url) as raw:
        spy = Spy()
        for subject in subjects:
            await raw.subscribe(subject, cb=spy.on)
        await settle(raw)
        yield raw, spy


def held_by(host: NATSFrameHost) -> tuple[Any, list[tuple[str, Any]], Any]:
    """What the host holds, in wire form: system, tools in order, UI resources."""
    wire = host._machine.wire or {}
    return wire.get("system"), list((wire.get("tools") or {}).items()), wire.get("uiResources")


def served_by(replica: NATSFrameProvider) -> tuple[Any, list[tuple[str, Any]], Any]:
    """What the replica serves (its last context sent), as a host receives it (JSON)."""
    assert replica._route is not None
    wire = json.loads(json.dumps(replica._route.wire))
    return wire.get("system"), list((wire.get("tools") or {}).items()), wire.get("uiResources")


def same(host: NATSFrameHost, replica: NATSFrameProvider) -> bool:
    return held_by(host) == served_by(replica)


def description(host: NATSFrameHost, tool: str) -> str | None:
    found = host.get_model_context().tools.get(tool)
    return None if found is None else found.description


# -- a change crosses as the change ------------------------------------------------------------


async def test_a_change_to_a_frame_of_2000_tools_crosses_as_a_small_patch(
    nats_server: NATSServer,
) -> None:
    registry, handles = many_tools(2000)
    url = nats_server.url
    with anyio.fail_after(30):
        async with (
            spying(url, CONTEXT, "frames.calc.context.get.>") as (_, spy),
            replica_of(registry, url) as replica,
            host_of(url) as host,
        ):
            assert len(host.get_model_context().tools) == 2001
            assert host.route.following == replica.replica
            first = spy.messages[0]  # the replica's first context, whole and numbered 1
            assert json.loads(first.data)["message"]["type"] == "model-context-update"
            assert first.headers == {"AF-Replica": replica.replica, "AF-Seq": "1"}
            assert len(first.data) > 200_000
            unchanged = host.get_model_context().tools["tool_1"]
            spy.messages.clear()

            handles[7].update(description="Changed")
            await wait_until(lambda: description(host, "tool_7") == "Changed")

            [patch] = spy.messages
            assert len(patch.data) < 1000
            assert patch.headers == {"AF-Replica": replica.replica, "AF-Seq": "2"}
            body = json.loads(patch.data)["message"]
            assert body["type"] == "model-context-patch"
            assert body["seq"] == 2
            assert list(body["context"]["tools"]) == ["tool_7"]
            assert host.get_model_context().tools["tool_1"] is unchanged  # not built again
            assert host.route.resyncs == 0
            assert same(host, replica)

            # An added and a removed tool, the instruction: patches too, in order.
            handle = registry.add_tool("new_one", lookup)
            registry.add_instruction("And be brief.")
            await wait_until(lambda: "new_one" in host.get_model_context().tools)
            handle.remove()
            await wait_until(lambda: "new_one" not in host.get_model_context().tools)
            await wait_until(lambda: same(host, replica))
            kinds = {json.loads(m.data)["message"]["type"] for m in spy.messages}
            assert kinds == {"model-context-patch"}
            assert max(len(m.data) for m in spy.messages) < 1000
            assert host.route.resyncs == 0
            assert await host.call_tool("add", {"a": 1, "b": 2}) == 3


async def test_a_context_request_is_answered_whole_and_numbered(nats_server: NATSServer) -> None:
    # Every replica answers the frame's context request whole (a host connecting, an
    # older host too); asked on its own subject with the number the asker holds, a
    # replica answers "you hold my latest" with no payload while it is its own.
    registry = calculator()
    url = nats_server.url
    with anyio.fail_after(20):
        async with replica_of(registry, url) as replica, await connect_nats(url) as raw:
            answer = await raw.request("frames.calc.context.get", b"", timeout=5)
            body = json.loads(answer.data)["message"]
            assert body["type"] == "model-context-update"
            assert set(body["context"]["tools"]) == {"add"}
            assert body["seq"] == 1
            assert answer.headers["AF-Seq"] == "1"
            assert answer.headers["AF-Replica"] == replica.replica

            own = f"frames.calc.context.get.{replica.replica}"
            latest = await raw.request(own, b"", timeout=5, headers={"AF-Seq": "1"})
            assert latest.data == b""
            assert latest.headers["AF-Seq"] == "1"
            older = await raw.request(own, b"", timeout=5, headers={"AF-Seq": "0"})
            assert json.loads(older.data)["message"]["seq"] == 1
            whole = await raw.request(own, b"", timeout=5)  # no number: whole
            assert json.loads(whole.data)["message"]["context"] == body["context"]

            registry.add_tool("more", lookup)
            await wait_until(lambda: replica._route is not None and replica._route.seq == 2)
            stale = await raw.request(own, b"", timeout=5, headers={"AF-Seq": "1"})
            stale_body = json.loads(stale.data)["message"]
            assert stale_body["seq"] == 2
            assert set(stale_body["context"]["tools"]) == {"add", "more"}
            with pytest.raises(nats.errors.NoRespondersError):  # no such replica
                await raw.request("frames.calc.context.get.nobody", b"", timeout=5)


# -- several replicas --------------------------------------------------------------------------


async def test_two_replicas_changing_the_same_tool_never_make_the_host_ask_again(
    nats_server: NATSServer,
) -> None:
    # Both publish the same change; the host applies its replica's and ignores the
    # other's (it has that change already, or gets it from its own replica at once).
    url = nats_server.url
    (first, first_handles), (second, second_handles) = many_tools(50), many_tools(50)
    registries = [first_handles[3], second_handles[3]]
    with anyio.fail_after(30):
        async with (
            replica_of(first, url) as one,
            replica_of(second, url) as two,
            host_of(url) as host,
            spying(url, "frames.calc.context.get", "frames.calc.context.get.>") as (_, asks),
        ):
            followed = one if host.route.following == one.replica else two
            assert host.route.following == followed.replica
            for round_ in range(20):
                order = registries if round_ % 2 else registries[::-1]
                for handle in order:
                    handle.update(description=f"Round {round_}")
                    await anyio.sleep(0.001 * (round_ % 3))
                await wait_until(lambda r=round_: description(host, "tool_3") == f"Round {r}")
            await anyio.sleep(0.5)  # past the grace a change of the other replica gets
            assert description(host, "tool_3") == "Round 19"
            assert same(host, one)
            assert same(host, two)
            assert host.route.resyncs == 0
            assert asks.messages == []
            assert host.route.following == followed.replica
            assert not host.route.mismatch_reported


async def test_the_host_follows_another_replica_when_its_own_is_gone(
    nats_server: NATSServer,
) -> None:
    url = nats_server.url
    registries = [calculator(), calculator()]
    replicas = [replica_of(registry, url) for registry in registries]
    with anyio.fail_after(30):
        async with (
            leavable(replicas[0]) as leave_0,
            leavable(replicas[1]) as leave_1,
            host_of(url) as host,
        ):
            followed = host.route.following
            ids = [replica.replica for replica in replicas]
            assert followed in ids
            gone = ids.index(followed)
            stays = 1 - gone
            await (leave_0, leave_1)[gone]()
            # Only the replica left changes: its patch is news to the host, whose own
            # replica makes no such change. The host asks its replica, hears from the
            # server that it is gone, asks every replica, and follows the one left.
            registries[stays].add_tool("later", lookup)
            await wait_until(lambda: "later" in host.get_model_context().tools)
            assert host.route.following == ids[stays]
            assert host.route.resyncs == 2  # its own (gone), then every replica
            registries[stays].add_instruction("Then this.")
            await wait_until(lambda: "Then this." in (host.get_model_context().system or ""))
            assert same(host, replicas[stays])
            assert host.route.resyncs == 2
            assert await host.call_tool("later", {"query": "q"}) == "q"


async def test_the_host_follows_another_replica_when_its_own_is_killed(
    nats_server: NATSServer,
) -> None:
    url = nats_server.url
    registry = calculator()
    with anyio.fail_after(60):
        async with replica_of(registry, url) as here, host_of(url) as host:
            assert host.route.following == here.replica
            async with replica_process(url, "calc") as there:
                # Its first context, whole on the context subject: the host follows it.
                # (The route follows it at once; the host reads that context a moment later.)
                await wait_until(
                    lambda: (
                        host.route.following == there.id
                        and "whoami" in host.get_model_context().tools
                    ),
                    10,
                )
                there.kill()  # SIGKILL: it says nothing
                await there.wait()
                registry.add_tool("later", lookup)
                await wait_until(lambda: "later" in host.get_model_context().tools)
                assert host.route.following == here.replica
                assert same(host, here)
                assert await host.call_tool("later", {"query": "q"}) == "q"


async def test_a_restarted_replica_is_followed(nats_server: NATSServer) -> None:
    # A replica restarting is a new replica (a new id): its first context, whole, is
    # the host's, and its patches from then on.
    url = nats_server.url
    registry = calculator()
    with anyio.fail_after(30):
        async with host_of_after(url, registry) as (host, first):
            assert host.route.following == first
            registry.add_tool("while_down", lookup)  # no replica hears it, yet
            async with replica_of(registry, url) as again:
                await wait_until(lambda: "while_down" in host.get_model_context().tools)
                assert host.route.following == again.replica != first
                registry.add_tool("after", lookup)
                await wait_until(lambda: "after" in host.get_model_context().tools)
                assert same(host, again)
                assert host.route.resyncs == 0
                assert await host.call_tool("after", {"query": "x"}) == "x"


@asynccontextmanager
async def host_of_after(
    url: str, registry: ModelContextRegistry
) -> AsyncIterator[tuple[NATSFrameHost, str]]:
    """A host that got its context from a replica of ``registry`` which then stopped:
    yields the host and that replica's id."""
    async with AsyncExitStack() as stack:
        replica = replica_of(registry, url)
        leave = await stack.enter_async_context(leavable(replica))
        host = await stack.enter_async_context(host_of(url))
        first = replica.replica
        await leave()
        yield host, first


# -- missed patches ----------------------------------------------------------------------------


async def test_a_forged_patch_out_of_order_makes_the_host_ask_its_replica_once(
    nats_server: NATSServer,
) -> None:
    # Anyone on the bus may publish on the context subject. A patch numbered past the
    # next one is a gap: the host asks its replica, which answers that the host holds
    # its latest; nothing of the forged patch is applied.
    url = nats_server.url
    registry = calculator()
    with anyio.fail_after(30):
        async with (
            replica_of(registry, url) as replica,
            host_of(url) as host,
            spying(url, "frames.calc.context.get.>") as (raw, asks),
        ):
            forged = {
                "type": "model-context-patch",
                "seq": 7,
                "context": {"tools": {"forged": {"description": "no", "parameters": {}}}},
            }
            headers = {"AF-Replica": replica.replica, "AF-Seq": "7"}
            await raw.publish(CONTEXT, _envelope(forged), headers=headers)
            await raw.flush(timeout=5)
            await wait_until(lambda: host.route.resyncs == 1)
            await wait_until(lambda: len(asks.messages) == 1)
            assert asks.messages[0].headers == {"AF-Seq": "1"}
            await anyio.sleep(0.3)
            assert "forged" not in host.get_model_context().tools
            assert host.route.seq == 1
            registry.add_tool("real", lookup)
            await wait_until(lambda: "real" in host.get_model_context().tools)
            assert same(host, replica)
            assert host.route.resyncs == 1


async def test_a_host_that_missed_patches_asks_and_ends_equal_to_the_frame(
    nats_server: NATSServer,
) -> None:
    url = nats_server.url
    registry, handles = many_tools(200)
    with anyio.fail_after(30):
        async with replica_of(registry, url) as replica, host_of(url) as host:
            route = host.route
            await route._contexts.unsubscribe()  # deaf to the context subject, briefly
            await settle(route._client)
            handles[5].update(description="Missed")
            await wait_until(lambda: replica._route is not None and replica._route.seq == 2)
            registry.add_tool("missed_too", lookup)
            await wait_until(lambda: replica._route is not None and replica._route.seq == 3)
            await anyio.sleep(0.1)
            route._contexts = await route._client.subscribe(CONTEXT, cb=route._on_context)
            await settle(route._client)
            assert "missed_too" not in host.get_model_context().tools
            registry.add_instruction("Heard.")  # number 4: the host holds 1, so it asks
            await wait_until(lambda: "Heard." in (host.get_model_context().system or ""))
            assert description(host, "tool_5") == "Missed"
            assert "missed_too" in host.get_model_context().tools
            assert route.resyncs == 1
            assert route.seq == 4
            assert same(host, replica)
            registry.add_tool("next", lookup)
            await wait_until(lambda: "next" in host.get_model_context().tools)
            assert route.resyncs == 1
            assert same(host, replica)


async def test_a_host_reconnected_after_the_server_restarted_catches_up(
    nats_server: NATSServer,
) -> None:
    # A change published while the host was cut off (its replica held it for the
    # server) is one the host may never hear: once reconnected, it asks its replica.
    url = nats_server.url
    registry = calculator()
    with anyio.fail_after(40):
        async with replica_of(registry, url) as replica, host_of(url) as host:
            nats_server.kill()
            await anyio.sleep(0.3)
            registry.add_tool("while_cut_off", lookup)
            await anyio.to_thread.run_sync(nats_server.restart)
            await wait_until(lambda: "while_cut_off" in host.get_model_context().tools, 15)
            await wait_until(lambda: same(host, replica))
            registry.add_tool("after", lookup)
            await wait_until(lambda: "after" in host.get_model_context().tools, 15)
            assert same(host, replica)


async def test_a_host_too_slow_to_follow_gets_the_whole_context_not_a_backlog(
    nats_server: NATSServer,
) -> None:
    # The route holds patches the host has not read yet; past _MAX_PENDING (1024), it
    # drops them and asks its replica for the whole context instead.
    url = nats_server.url
    registry = calculator()
    with anyio.fail_after(60):
        async with replica_of(registry, url) as replica, nats_client(url) as client:
            route = HostRoute(client, FrameSubjects("calc"), liveness=3, context_timeout=5)
            await route.start()
            try:
                await route.send(protocol.encode_context_request())
                first = (await route.receive())["message"]
                assert set(first["context"]["tools"]) == {"add"}
                assert route.following == replica.replica
                for i in range(1100):  # one patch each, none read
                    registry.add_tool(f"t{i}", lookup)
                    await anyio.sleep(0.001)
                await wait_until(lambda: route.seq == 1101, timeout=20)
                assert route.resyncs == 1
                assert route.dropped >= 1024
                whole = (await route.receive())["message"]
                assert whole["type"] == "model-context-update"
                assert len(whole["context"]["tools"]) >= 1025
                # The replica's context number n holds n tools: the patches after it follow.
                held = len(whole["context"]["tools"])
                rest = [(await route.receive())["message"] for _ in range(1101 - held)]
                assert [message["type"] for message in rest] == ["model-context-patch"] * len(rest)
                assert route._pending == deque()
            finally:
                await route.aclose()


# -- compatibility, and the tool report ----------------------------------------------------------


async def test_a_replica_that_publishes_unnumbered_whole_contexts_is_still_heard(
    nats_server: NATSServer,
) -> None:
    # An older replica: it answers the context request, and publishes each change, with
    # a whole model-context-update carrying no number. The host takes each as it is.
    url = nats_server.url

    def context(tools: list[str]) -> bytes:
        specs = {name: {"description": name, "parameters": {}} for name in tools}
        return _envelope({"type": "model-context-update", "context": {"tools": specs}})

    with anyio.fail_after(20):
        async with await connect_nats(url) as old:

            async def answer(msg: Any) -> None:
                await old.publish(msg.reply, context(["a"]), headers={"AF-Replica": "old"})

            await old.subscribe("frames.calc.context.get", cb=answer)
            await settle(old)
            async with host_of(url) as host:
                assert set(host.get_model_context().tools) == {"a"}
                assert host.route.following is None
                await old.publish(CONTEXT, context(["a", "b"]), headers={"AF-Replica": "old"})
                await wait_until(lambda: set(host.get_model_context().tools) == {"a", "b"})
                await old.publish(CONTEXT, context(["b"]), headers={"AF-Replica": "old"})
                await wait_until(lambda: set(host.get_model_context().tools) == {"b"})
                assert host.route.resyncs == 0


async def test_replicas_and_hosts_follow_each_replicas_tools_through_its_patches(
    nats_server: NATSServer,
) -> None:
    url = nats_server.url
    mine, theirs = calculator(), calculator()
    with anyio.fail_after(30):
        async with (
            replica_of(mine, url) as one,
            replica_of(theirs, url) as two,
            host_of(url) as host,
        ):
            await wait_until(lambda: set(host.route.replica_tools) == {one.replica, two.replica})
            assert one.mismatches == {}
            assert two.mismatches == {}
            handle = theirs.add_tool("extra", lookup)  # a patch adds a name
            await wait_until(lambda: two.replica in one.mismatches)
            assert "extra" in one.mismatches[two.replica]
            await wait_until(lambda: host.route.mismatch_reported)
            assert host.route.replica_tools[two.replica] == {"add", "extra"}
            handle.remove()
            await wait_until(lambda: two.replica not in one.mismatches)
            await wait_until(lambda: host.route.replica_tools[two.replica] == {"add"})


def _envelope(message: Any) -> bytes:
    return json.dumps({"channel": "assistant-ui-frame", "message": message}).encode()


async def test_once_entered_a_replica_answers_on_every_subject(nats_server: NATSServer) -> None:
    # Entering waits for the server to hold the replica's subscriptions: a request made
    # right after finds it (nats-py's flush alone does not promise that; see settle).
    url = nats_server.url
    with anyio.fail_after(60):
        async with await connect_nats(url) as raw:
            for _ in range(30):
                async with replica_of(calculator(), url) as replica:
                    own = f"frames.calc.context.get.{replica.replica}"
                    for subject in (own, "frames.calc.context.get", "$SRV.PING.calc"):
                        answer = await raw.request(subject, b"", timeout=5)
                        assert answer.data, subject
