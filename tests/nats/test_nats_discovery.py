"""``NATSDiscovery`` against the real ``nats-server``: frames join and leave a parent live.

Frames are ``NATSFrameProvider`` replicas in this process, each on its own NATS
connection, found through the NATS service API as the discovery runs its rounds.
asyncio only: ``nats-py`` runs on asyncio.
"""

from __future__ import annotations

import json
import time
from contextlib import AsyncExitStack
from typing import Any

import anyio
import pytest

from assistant_frames import (
    Federation,
    ModelContextRegistry,
    ToolCallContext,
    ToolEvent,
    ToolProgress,
    connect,
)
from assistant_frames.nats import NATSDiscovery, NATSFrameProvider, nats_client

from helpers import wait_until
from nats_support import NATSServer, nats_server
from nats_support import greeting_frame as frame

pytestmark = pytest.mark.anyio

__all__ = ["nats_server"]  # a fixture, used by name

FAST = {"interval": 0.2, "window": 0.1, "missed": 2}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def tools(discovery: NATSDiscovery) -> list[str]:
    return sorted(discovery.get_model_context().tools)


async def test_frames_started_after_the_parent_join_and_leave(nats_server: NATSServer) -> None:
    url = nats_server.url
    async with NATSDiscovery(nats=url, **FAST) as bus:
        assert bus.frames == []
        assert tools(bus) == []
        async with NATSFrameProvider(frame("a"), "a", nats=url):
            started = time.perf_counter()
            await bus.wait_for("a", timeout=10)
            assert time.perf_counter() - started < 5  # a few rounds, not a restart
            assert tools(bus) == ["a_hello"]
            assert await bus.call_tool("a_hello", {"who": "you"}) == "a greets you"
            async with NATSFrameProvider(frame("b"), "b", nats=url):
                await bus.wait_for("b", timeout=10)
                assert tools(bus) == ["a_hello", "b_hello"]
            # b stopped: after `missed` silent rounds it leaves, its tools with it.
            await wait_until(lambda: tools(bus) == ["a_hello"], timeout=10)
            assert bus.frames == ["a"]
        await wait_until(lambda: bus.frames == [], timeout=10)


async def test_replicas_are_one_frame_and_the_frame_stays_while_one_is_up(
    nats_server: NATSServer,
) -> None:
    url = nats_server.url
    async with (
        NATSFrameProvider(frame("calc"), "calc", nats=url),
        NATSDiscovery(nats=url, **FAST) as bus,
    ):
        assert bus.frames == ["calc"]  # found on entering, context there
        assert tools(bus) == ["calc_hello"]
        async with NATSFrameProvider(frame("calc"), "calc", nats=url):  # the same tools
            await bus.discover()
            assert bus.frames == ["calc"]  # two replicas, one frame
        for _ in range(FAST["missed"] + 1):  # the second replica went; one is left
            await bus.discover()
        assert bus.frames == ["calc"]
        assert await bus.call_tool("calc_hello", {"who": "me"}) == "calc greets me"


async def test_another_tenant_and_other_services_are_invisible(nats_server: NATSServer) -> None:
    url = nats_server.url
    async with nats_client(url) as client:
        # A NATS service that is no frame, and answers that are not what $SRV.INFO says.
        from nats.micro import add_service

        other = await add_service(client, name="billing", version="1.0.0")

        async def junk(msg: Any) -> None:
            for payload in [b"not json", b"[1]", json.dumps({"name": "x y"}).encode()]:
                await client.publish(msg.reply, payload)

        spoiler = await client.subscribe("$SRV.INFO", cb=junk)
        try:
            async with (
                NATSFrameProvider(frame("notes"), "notes", nats=url, prefix="acme.frames"),
                NATSFrameProvider(frame("notes"), "notes", nats=url, prefix="globex.frames"),
                NATSFrameProvider(frame("ledger"), "ledger", nats=url, prefix="globex.frames"),
                NATSDiscovery(nats=url, prefix="acme.frames", **FAST) as acme,
            ):
                assert acme.frames == ["notes"]
                assert await acme.call_tool("notes_hello", {"who": "acme"}) == "notes greets acme"
                # Many rounds later, still only acme's frame.
                for _ in range(3):
                    assert await acme.discover() == ["notes"]
        finally:
            await spoiler.unsubscribe()
            await other.stop()


async def test_connect_to_the_bus_and_to_one_frame(nats_server: NATSServer) -> None:
    url = nats_server.url
    async with NATSFrameProvider(frame("x"), "x", nats=url):
        async with connect(url) as bus:
            assert sorted(bus.get_model_context().tools) == ["x_hello"]
            assert await bus.call_tool("x_hello", {"who": "bus"}) == "x greets bus"
        async with connect(f"{url}/x") as one:
            assert sorted(one.get_model_context().tools) == ["hello"]
        async with connect(f"{url}?prefix=nobody") as empty:
            assert empty.get_model_context().tools == {}


async def test_discovery_rides_out_a_server_restart(nats_server: NATSServer) -> None:
    url = nats_server.url
    async with (
        NATSFrameProvider(frame("r"), "r", nats=url),
        NATSDiscovery(nats=url, interval=0.2, window=0.1, missed=2) as bus,
    ):
        assert bus.frames == ["r"]
        left: list[list[str]] = []  # the frame lists seen while the server was away
        nats_server.kill()
        for _ in range(5):  # more silent rounds than `missed`: a cut-off parent proves nothing
            await bus.discover()
            left.append(bus.frames)
        nats_server.restart()
        # Reconnected, the frame still answers: a call goes through again.
        with anyio.fail_after(15):
            while True:
                try:
                    assert await bus.call_tool("r_hello", {"who": "again"}) == "r greets again"
                    break
                except Exception:
                    await anyio.sleep(0.2)
        assert bus.frames == ["r"]
        assert left == [["r"]] * 5


def test_discovery_options_are_checked() -> None:
    with pytest.raises(ValueError, match="window"):
        NATSDiscovery(nats="nats://127.0.0.1:1", interval=0.1, window=0.5)
    with pytest.raises(ValueError, match="missed"):
        NATSDiscovery(nats="nats://127.0.0.1:1", missed=0)
    with pytest.raises(ValueError, match="prefix"):
        NATSDiscovery(nats="nats://127.0.0.1:1", prefix="a.*")


async def test_a_call_goes_to_the_frame_whose_namespace_it_is(nats_server: NATSServer) -> None:
    """Frames "a" and "a_b" both prefix "a_b_hello": it is a_b's hello."""
    url = nats_server.url
    async with (
        NATSFrameProvider(frame("a"), "a", nats=url),
        NATSFrameProvider(frame("a_b"), "a_b", nats=url),
        NATSDiscovery(nats=url, **FAST) as bus,
    ):
        await bus.wait_for("a", "a_b", timeout=10)
        assert tools(bus) == ["a_b_hello", "a_hello"]
        assert await bus.call_tool("a_b_hello", {"who": "x"}) == "a_b greets x"
        assert await bus.call_tool("a_hello", {"who": "y"}) == "a greets y"


async def test_tool_events_of_every_frame_reach_a_subscriber_of_the_bus(
    nats_server: NATSServer,
) -> None:
    """subscribe_tool_events: each frame forwards its calls' events, only while someone listens."""
    url = nats_server.url
    counting = frame("counter")

    @counting.tool
    async def count(n: int, context: ToolCallContext) -> str:
        """Count to n, reporting each step."""
        for i in range(1, n + 1):
            context.report_progress(i, n)
            await anyio.sleep(0.01)
        return f"counted to {n}"

    events: list[ToolEvent] = []
    async with (
        NATSFrameProvider(counting, "counter", nats=url),
        NATSDiscovery(nats=url, **FAST) as bus,
    ):
        unsubscribe = bus.subscribe_tool_events(events.append)
        assert await bus.call_tool("counter_count", {"n": 3}) == "counted to 3"
        progress = [e for e in events if isinstance(e, ToolProgress)]
        assert [(e.progress, e.total) for e in progress][-1] == (3, 3)
        async with NATSFrameProvider(frame("late"), "late", nats=url):  # joins while listened
            await bus.wait_for("late", timeout=10)
            assert "late" in bus._forwarding
        unsubscribe()
        assert bus._forwarding == {}  # nobody listens: no frame is asked for events
        heard = len(events)
        assert await bus.call_tool("counter_count", {"n": 2}) == "counted to 2"
        assert len(events) == heard


async def test_a_federation_takes_nats_urls(nats_server: NATSServer) -> None:
    url = nats_server.url
    async with (
        NATSFrameProvider(frame("calc"), "calc", nats=url),
        Federation() as federation,
    ):
        await federation.add("one", f"{url}/calc")  # one frame
        await federation.add("bus", url, namespaced=False)  # every frame, already namespaced
        assert sorted(federation.get_model_context().tools) == ["calc_hello", "one_hello"]
        assert await federation.call_tool("one_hello", {"who": "f"}) == "calc greets f"
        assert await federation.call_tool("calc_hello", {"who": "g"}) == "calc greets g"


async def test_a_federation_member_joins_when_its_frame_starts_later(
    nats_server: NATSServer,
) -> None:
    url = nats_server.url
    async with Federation(initial_delay=0.05, max_delay=0.2) as federation:
        # No replica yet: the member is added, and keeps trying (as for any target).
        await federation.add("later", f"{url}/calc", wait=False)
        connection = federation.connection("later")
        await wait_until(lambda: connection.last_error is not None, timeout=5)
        assert "No replica of frame 'calc' answers" in str(connection.last_error)
        # Between attempts it is "reconnecting"; an attempt under way may show otherwise.
        await wait_until(lambda: federation.status("later").state == "reconnecting", timeout=5)
        assert federation.get_model_context().tools == {}
        async with NATSFrameProvider(frame("calc"), "calc", nats=url):
            await wait_until(lambda: "later_hello" in federation.get_model_context().tools, 10)
            assert federation.status("later").state == "connected"
            assert await federation.call_tool("later_hello", {"who": "h"}) == "calc greets h"


async def test_leaving_in_a_cancelled_scope_still_closes_every_client(
    nats_server: NATSServer,
) -> None:
    """A task group cancelling its discovery (or a client) must not leave clients open."""
    url = nats_server.url
    async with NATSFrameProvider(frame("a"), "a", nats=url):
        with anyio.fail_after(15):
            with anyio.CancelScope() as scope:
                async with nats_client(url) as client:
                    scope.cancel()
                    await anyio.sleep(10)
            assert client.is_closed
            with anyio.CancelScope() as scope:
                async with NATSDiscovery(nats=url, **FAST) as bus:
                    await bus.wait_for("a", timeout=10)
                    shared = bus._client
                    assert shared is not None
                    scope.cancel()
                    await anyio.sleep(10)
            assert shared.is_closed
            assert bus.frames == []  # the frame's host left too


async def test_a_name_two_frames_make_calls_the_tool_the_registry_shows(
    nats_server: NATSServer,
) -> None:
    """Frame "a"'s tool "b_hello" and frame "a_b"'s "hello" are both "a_b_hello": the
    model sees one of them, and a call must reach that one, not the other."""
    url = nats_server.url
    first = ModelContextRegistry()

    @first.tool
    def b_hello(who: str) -> str:
        """Frame a's b_hello."""
        return f"a's b_hello greets {who}"

    with anyio.fail_after(20):
        async with (
            NATSFrameProvider(first, "a", nats=url),
            NATSDiscovery(nats=url, **FAST) as bus,
        ):
            await bus.wait_for("a", timeout=10)
            async with NATSFrameProvider(frame("a_b"), "a_b", nats=url):
                await bus.wait_for("a_b", timeout=10)
                shown = bus.get_model_context().tools["a_b_hello"]
                assert shown.description == "Frame a's b_hello."  # the first frame's
                assert await bus.call_tool("a_b_hello", {"who": "x"}) == "a's b_hello greets x"
            # Once "a_b" has left, the name is "a"'s alone, as before.
            await wait_until(lambda: bus.frames == ["a"], timeout=10)
            assert await bus.call_tool("a_b_hello", {"who": "y"}) == "a's b_hello greets y"


async def test_a_client_closed_for_good_ends_the_discovery(nats_server: NATSServer) -> None:
    """As a host does, the discovery notices its client closed for good (not reconnecting):
    it is no longer connected, and whoever waits for it to end (a Federation) hears so."""
    url = nats_server.url
    async with (
        NATSFrameProvider(frame("a"), "a", nats=url),
        nats_client(url) as client,
        NATSDiscovery(nats=client, **FAST) as bus,
    ):
        await bus.wait_for("a", timeout=10)
        assert bus.connected
        await client.close()
        with anyio.fail_after(5):
            await bus.wait_disconnected()
        assert bus.state == "disconnected"
        assert not bus.connected


async def test_rounds_at_once_agree_on_frames_joining_and_leaving(nats_server: NATSServer) -> None:
    """discover() called while a round runs (a user's call beside the periodic one)."""
    url = nats_server.url
    names = ["a", "b", "c"]
    async with NATSDiscovery(nats=url, interval=0.3, window=0.3, missed=1) as bus:
        for _ in range(3):
            async with AsyncExitStack() as frames:
                for name in names:
                    await frames.enter_async_context(NATSFrameProvider(frame(name), name, nats=url))
                with anyio.fail_after(10):
                    async with anyio.create_task_group() as group:
                        for _ in range(4):
                            group.start_soon(bus.discover)
                assert bus.frames == names
            with anyio.fail_after(10):  # every frame leaves in the same rounds
                async with anyio.create_task_group() as group:
                    for _ in range(4):
                        group.start_soon(bus.discover)
            assert bus.frames == []
            assert tools(bus) == []
