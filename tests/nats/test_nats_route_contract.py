"""The transport contract (``transports/contract.py``) for the two streams of a NATS frame.

A frame on NATS is not one connection between two peers, so the conformance suite's
pairs (``test_transport_contract.py``) do not fit it. Its streams are routes, each
carrying the frame protocol over the frame's subjects: the host's
(``nats.host_route.HostRoute``: calls out, each to one replica, and their replies back)
and a replica's (``nats.replica_route.ReplicaRoute``: every caller's calls in, each
reply to its own caller). Two promises differ, by design:

* a route carries frame-protocol messages, not any JSON: a message that is none has
  nowhere to go and is not sent;
* a replica leaving is not the end of the host's stream (another may serve the frame, or
  start later): its calls fail with ``ReplicaLost`` or ``NoResponders`` instead
  (``test_nats_frames.py``). The host's stream ends when its NATS client closes for good.

Every other promise holds for both routes, and is checked here against the real server:
order, whole messages under concurrent senders, the receiver's own copy, refusal of a
message with no JSON form or over the size limit (the server's ``max_payload``) with the
route still usable, the end of the stream seen within 100 ms, and ``aclose``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from assistant_frames import ModelContextRegistry, ToolCallContext, ToolCallError
from assistant_frames.frames import protocol
from assistant_frames.transports import (
    MessageTooLarge,
    TransportAttribute,
    TransportClosed,
    UnsendableMessage,
    close_reason,
)

from helpers import calculator, wait_until
from nats_support import NATSServer, nats_server

pytestmark = pytest.mark.anyio

nats = pytest.importorskip("nats")

from assistant_frames.nats import NATSFrameHost, NATSFrameProvider, nats_client  # noqa: E402
from assistant_frames.nats.host_route import HostRoute  # noqa: E402
from assistant_frames.nats.replica_route import ReplicaRoute  # noqa: E402
from assistant_frames.nats.subjects import FrameSubjects  # noqa: E402

__all__ = ["nats_server"]  # the fixture

ABRUPT_BOUND = 0.1  # as for every transport: an end is seen within 100 ms
SUBJECTS = FrameSubjects("calc")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # nats-py is asyncio only


def frame() -> ModelContextRegistry:
    """``add``, ``count(n)`` (logs 1..n), ``echo(text)``, ``unsendable()``, ``grow(size)``."""
    registry = calculator()

    @registry.tool
    async def count(n: int, context: ToolCallContext) -> int:
        """Log 1..n (logs are never coalesced, unlike progress), then return n."""
        for step in range(1, n + 1):
            context.log("info", str(step))
            await anyio.lowlevel.checkpoint()
        return n

    @registry.tool
    def echo(text: str) -> str:
        """Return ``text``."""
        return text

    @registry.tool
    def unsendable() -> Any:
        """Return a value with no JSON form."""
        return object()

    @registry.tool
    def grow(size: int) -> str:
        """Return ``size`` characters."""
        return "y" * size

    return registry


class HostSide:
    """A raw host route to the frame ``calc``: messages in and out, sorted by call."""

    def __init__(self, route: HostRoute) -> None:
        self.route = route
        self.replies: dict[str, list[dict[str, Any]]] = {}
        self._done: dict[str, anyio.Event] = {}
        self._numbers = iter(range(1, 1_000_000))

    async def call(self, tool: str, args: Any, *, events: bool = False) -> list[dict[str, Any]]:
        """Send one call and wait (bounded) for its result: every message about it."""
        call_id = f"c{next(self._numbers)}"
        done = self._done[call_id] = anyio.Event()
        await self.route.send(protocol.encode_tool_call(call_id, tool, args, events=events))
        with anyio.fail_after(10):
            await done.wait()
        return self.replies.pop(call_id)

    async def read(self) -> None:
        """Sort what the route receives by call, until it ends."""
        while True:
            message = await self.route.receive()
            body = message["message"]
            call_id = body.get("id")
            if not isinstance(call_id, str):
                continue  # the context
            self.replies.setdefault(call_id, []).append(body)
            if body["type"] == "tool-result":
                self._done[call_id].set()


@asynccontextmanager
async def host_route(url: str, *, liveness: float = 3.0) -> AsyncIterator[HostSide]:
    """A started host route (its watch running, its replies read) on its own client."""
    async with AsyncExitStack() as stack:
        client = await stack.enter_async_context(nats_client(url))
        route = HostRoute(client, SUBJECTS, liveness=liveness, context_timeout=5)
        await route.start()
        stack.push_async_callback(route.aclose)
        side = HostSide(route)
        group = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(group.cancel_scope.cancel)
        group.start_soon(route.watch)
        group.start_soon(side.read)
        yield side


@asynccontextmanager
async def replica_route(url: str) -> AsyncIterator[ReplicaRoute]:
    """A replica's route, not serving (for the promises about its own end)."""
    async with nats_client(url) as client:
        route = ReplicaRoute(client, SUBJECTS, "replica-1", heartbeat=0.5)
        try:
            yield route
        finally:
            await route.aclose()


# -- order, whole messages, own copies ---------------------------------------------------------


async def test_order_is_kept_from_the_replica_to_the_host(nats_server: NATSServer) -> None:
    async with (
        NATSFrameProvider(frame(), "calc", nats=nats_server.url),
        host_route(nats_server.url) as host,
    ):
        replies = await host.call("count", {"n": 200}, events=True)
    logged = [int(m["message"]) for m in replies if m["type"] == "tool-log"]
    assert logged == list(range(1, 201))
    assert replies[-1] == {"type": "tool-result", "id": replies[-1]["id"], "result": 200}


async def test_a_result_taken_on_arrival_comes_after_all_before_it(
    nats_server: NATSServer,
) -> None:
    # A host takes results as they arrive (receive_on_arrival), without its reading task:
    # only when nothing about the call waits in the stream before the result.
    async with (
        NATSFrameProvider(frame(), "calc", nats=nats_server.url),
        host_route(nats_server.url) as host,
    ):
        taken: list[tuple[dict[str, Any], int]] = []

        def on_arrival(message: Any) -> bool:
            body = message["message"]
            taken.append((body, len(host.replies.get(body["id"], []))))
            host.replies.setdefault(body["id"], []).append(body)
            host._done[body["id"]].set()
            return True

        host.route.receive_on_arrival(on_arrival)
        plain = await host.call("add", {"a": 2, "b": 3})
        logged = await host.call("count", {"n": 200}, events=True)
        host.route.receive_on_arrival(None)
        again = await host.call("add", {"a": 1, "b": 1})
    assert plain[-1]["result"] == 5
    assert [m["type"] for m in logged] == ["tool-log"] * 200 + ["tool-result"]
    assert [int(m["message"]) for m in logged[:-1]] == list(range(1, 201))
    assert again[-1]["result"] == 2
    # The first result was taken on arrival; the second, if so, after its 200 logs; the
    # third (no handler) was read from the stream.
    assert taken[0] == (plain[-1], 0)
    assert all(body["id"] != again[-1]["id"] for body, _ in taken)
    assert all(before == 200 for body, before in taken[1:])


async def test_order_is_kept_from_the_host_to_the_replica(nats_server: NATSServer) -> None:
    arrived: dict[int, int] = {}  # the replica's own call id (given in order) -> i
    registry = ModelContextRegistry()

    @registry.tool
    async def record(i: int, context: ToolCallContext) -> int:
        """Note which call brought ``i`` (tools run concurrently: the ids tell the order)."""
        arrived[int(context.tool_call_id)] = i
        return i

    async with (
        NATSFrameProvider(registry, "calc", nats=nats_server.url),
        host_route(nats_server.url) as host,
        anyio.create_task_group() as group,
    ):
        # Sent one after another, without waiting for results: they arrive in order.
        for i in range(100):
            group.start_soon(host.call, "record", {"i": i})
            await anyio.lowlevel.checkpoint()
    assert [arrived[n] for n in sorted(arrived)] == list(range(100))


async def test_concurrent_senders_interleave_whole_messages(nats_server: NATSServer) -> None:
    texts = {f"{s}-{n}": f"{s}:{n}:" + "x" * 30_000 for s in range(8) for n in range(12)}
    results: dict[str, Any] = {}

    async def sender(host: HostSide, keys: list[str]) -> None:
        for key in keys:
            replies = await host.call("echo", {"text": texts[key]})
            results[key] = replies[-1]["result"]

    async with (
        NATSFrameProvider(frame(), "calc", nats=nats_server.url),
        host_route(nats_server.url) as host,
    ):
        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                for s in range(8):
                    group.start_soon(sender, host, [k for k in texts if k.startswith(f"{s}-")])
    assert results == texts


async def test_the_receiver_gets_its_own_copy(nats_server: NATSServer) -> None:
    args = {"text": "mine"}
    async with (
        NATSFrameProvider(frame(), "calc", nats=nats_server.url),
        host_route(nats_server.url) as host,
    ):
        first = await host.call("echo", args)
        first[-1]["result"] = "changed"
        args["text"] = "changed too"  # after sending: the replica has its own copy
        second = await host.call("echo", {"text": "mine"})
    assert second[-1]["result"] == "mine"


# -- refused at send, and still usable -----------------------------------------------------------


async def test_a_message_with_no_json_form_is_refused_at_send_by_the_host(
    nats_server: NATSServer,
) -> None:
    async with (
        NATSFrameProvider(frame(), "calc", nats=nats_server.url),
        host_route(nats_server.url) as host,
    ):
        with pytest.raises(UnsendableMessage):
            await host.route.send(protocol.encode_tool_call("bad", "add", {"a": object(), "b": 1}))
        replies = await host.call("add", {"a": 1, "b": 2})
    assert replies[-1]["result"] == 3


async def test_a_result_with_no_json_form_is_refused_by_the_replica_which_serves_on(
    nats_server: NATSServer,
) -> None:
    async with (
        NATSFrameProvider(frame(), "calc", nats=nats_server.url),
        NATSFrameHost("calc", nats=nats_server.url, timeout=10) as host,
    ):
        await host.wait_for_context(5)
        with pytest.raises(ToolCallError, match="could not be sent"):
            await host.call_tool("unsendable", {})
        assert await host.call_tool("add", {"a": 2, "b": 3}) == 5


async def test_the_size_limit_is_the_servers_max_payload_on_both_routes(
    nats_server: NATSServer,
) -> None:
    async with (
        NATSFrameProvider(frame(), "calc", nats=nats_server.url) as service,
        host_route(nats_server.url) as host,
    ):
        limit = host.route.extra(TransportAttribute.max_message_bytes)
        assert limit == 1024 * 1024  # nats-server's default max_payload
        assert service._route is not None
        assert service._route.extra(TransportAttribute.max_message_bytes) == limit
        with pytest.raises(MessageTooLarge) as refused:
            await host.route.send(protocol.encode_tool_call("big", "echo", {"text": "x" * limit}))
        assert refused.value.limit == limit
        replies = await host.call("echo", {"text": "still usable"})
        assert replies[-1]["result"] == "still usable"

        # The replica refuses a result past the limit the same way; the caller hears why.
        async with NATSFrameHost("calc", nats=nats_server.url, timeout=10) as full:
            await full.wait_for_context(5)
            with pytest.raises(ToolCallError, match="could not be sent"):
                await full.call_tool("grow", {"size": limit})
            assert await full.call_tool("add", {"a": 1, "b": 1}) == 2


# -- the end of the stream, and aclose -----------------------------------------------------------


async def test_the_hosts_stream_ends_within_100_ms_of_its_client_closing(
    nats_server: NATSServer,
) -> None:
    async with nats_client(nats_server.url) as client:
        route = HostRoute(client, SUBJECTS, liveness=3.0, context_timeout=5)
        await route.start()
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(route.watch)
                await anyio.sleep(0.05)
                await client.close()  # for good: nats-py will not reconnect it
                closed_at = anyio.current_time()
                with anyio.fail_after(5), pytest.raises(TransportClosed) as ended:
                    await route.receive()
                seen_after = anyio.current_time() - closed_at
                group.cancel_scope.cancel()
        finally:
            await route.aclose()
    assert seen_after < ABRUPT_BOUND, seen_after
    reason = close_reason(ended.value)
    assert not reason.clean
    assert "closed" in reason.description


@pytest.mark.parametrize("side", ["host", "replica"])
async def test_aclose_wakes_a_pending_receive_of_its_own_side(
    nats_server: NATSServer, side: str
) -> None:
    async with _route(side, nats_server.url) as route:
        if side == "replica":
            await route.receive()  # its provider's subscription, there from the start
        outcome: list[BaseException] = []

        async def receive() -> None:
            try:
                await route.receive()
            except BaseException as exc:
                outcome.append(exc)

        with anyio.fail_after(5):
            async with anyio.create_task_group() as group:
                group.start_soon(receive)
                await anyio.sleep(0.05)
                await route.aclose()
    assert len(outcome) == 1
    assert isinstance(outcome[0], anyio.ClosedResourceError)


@pytest.mark.parametrize("side", ["host", "replica"])
async def test_after_its_own_aclose_a_route_refuses_everything(
    nats_server: NATSServer, side: str
) -> None:
    async with _route(side, nats_server.url) as route:
        await route.aclose()
        await route.aclose()  # idempotent
        message = (
            protocol.encode_tool_call("1", "add", {"a": 1, "b": 2})
            if side == "host"
            else protocol.encode_context_update({"tools": {}})
        )
        with pytest.raises(anyio.ClosedResourceError):
            await route.send(message)
        with pytest.raises(anyio.ClosedResourceError):
            await route.receive()


@pytest.mark.parametrize("side", ["host", "replica"])
async def test_aclose_is_quiet_when_the_server_is_gone(nats_server: NATSServer, side: str) -> None:
    async with _route(side, nats_server.url) as route:
        nats_server.kill()
        with anyio.fail_after(5):
            await route.aclose()


@asynccontextmanager
async def _route(side: str, url: str) -> AsyncIterator[HostRoute | ReplicaRoute]:
    if side == "replica":
        async with replica_route(url) as replica:
            yield replica
        return
    async with nats_client(url) as client:
        route = HostRoute(client, SUBJECTS, liveness=3.0, context_timeout=5)
        await route.start()
        try:
            yield route
        finally:
            await route.aclose()


# -- many routes on one client: one looks at it for the idle ones ------------------------------


async def test_idle_routes_on_one_client_wait_while_one_looks_and_all_see_it_close(
    nats_server: NATSServer,
) -> None:
    """Of 50 idle host routes on one client, one ticks (the poller); the others wait with
    no timer (a parent of 1,000 frames would otherwise wake 10,000 times a second). The
    client closing still ends every route's stream within 100 ms."""
    from assistant_frames.nats.client_watch import client_watch

    async with nats_client(nats_server.url) as client:
        routes = [
            HostRoute(client, FrameSubjects(f"f{i}"), liveness=3.0, context_timeout=5)
            for i in range(50)
        ]
        for route in routes:
            await route.start()
        try:
            async with anyio.create_task_group() as group:
                for route in routes:
                    group.start_soon(route.watch)
                shared = client_watch(client)
                await wait_until(lambda: len(shared.waiting) == len(routes) - 1)
                assert shared.poller in routes
                assert shared.poller not in shared.waiting
                await client.close()
                closed_at = anyio.current_time()
                with anyio.fail_after(5):
                    for route in routes:
                        with pytest.raises(TransportClosed):
                            await route.receive()
                seen_after = anyio.current_time() - closed_at
                group.cancel_scope.cancel()
        finally:
            for route in routes:
                await route.aclose()
    assert seen_after < ABRUPT_BOUND, seen_after


async def test_a_route_leaving_hands_the_looking_on_and_a_call_wakes_a_waiting_route(
    nats_server: NATSServer,
) -> None:
    """When the poller's host ends, a waiting route takes over; a waiting route with a
    call in flight ticks again, and fails the call when no replica is heard from."""
    from assistant_frames.nats.client_watch import client_watch
    from assistant_frames.nats.errors import ReplicaLost

    async with nats_client(nats_server.url) as client:
        # A replica that takes the call and never answers nor beats: a queue subscriber.
        silent = await client.subscribe(FrameSubjects("b").call, queue=FrameSubjects("b").queue)
        a = HostRoute(client, FrameSubjects("a"), liveness=0.3, context_timeout=5)
        b = HostRoute(client, FrameSubjects("b"), liveness=0.3, context_timeout=5)
        for route in (a, b):
            await route.start()
        shared = client_watch(client)
        try:
            async with anyio.create_task_group() as group:
                watching_a = anyio.CancelScope()

                async def watch_a() -> None:
                    with watching_a:
                        await a.watch()

                group.start_soon(watch_a)
                await wait_until(lambda: shared.poller is a)
                group.start_soon(b.watch)
                await wait_until(lambda: b in shared.waiting)
                watching_a.cancel()  # a's host ends: b polls
                await wait_until(lambda: shared.poller is b)
                assert not shared.waiting
                await b.send(protocol.encode_tool_call("c1", "add", {"a": 1, "b": 2}))
                with anyio.fail_after(5):
                    failed = await b.receive()
                assert failed.id == "c1"
                assert isinstance(failed.error, ReplicaLost)
                group.cancel_scope.cancel()
        finally:
            await silent.unsubscribe()
            for route in (a, b):
                await route.aclose()
    assert shared.poller is None


async def test_host_routes_on_one_client_share_one_reply_subscription(
    nats_server: NATSServer,
) -> None:
    """Each host route subscribes to its frame's context subject only; replies come to
    inboxes under the client's one reply subscription, which the last route out drops.
    A late reply to a route that stopped is dropped; the others' go on."""
    async with (
        NATSFrameProvider(frame(), "calc", nats=nats_server.url),
        nats_client(nats_server.url) as client,
    ):
        before = len(client._subs)
        routes = [HostRoute(client, SUBJECTS, liveness=3.0, context_timeout=5) for _ in range(20)]
        for route in routes:
            await route.start()
        assert len(client._subs) == before + len(routes) + 1
        gone, *others = routes
        await gone.aclose()
        await client.publish(f"{gone._inbox}.1", b"a late reply")  # dropped, quietly
        sides = [HostSide(route) for route in others]
        async with anyio.create_task_group() as group:
            for side in sides:
                group.start_soon(side.read)
            for i, side in enumerate(sides):
                replies = await side.call("add", {"a": i, "b": 1})
                assert replies[-1]["result"] == i + 1
            group.cancel_scope.cancel()
        for route in others:
            await route.aclose()
        assert len(client._subs) == before


async def test_a_client_gone_takes_its_shared_state_with_it(nats_server: NATSServer) -> None:
    """The per-client state of host routes (who polls, the reply inbox) is held weakly:
    a parent that connects and drops many clients keeps none of them."""
    import gc
    import weakref

    from assistant_frames.nats.client_watch import client_watch
    from assistant_frames.nats.reply_inbox import reply_inbox

    async with nats_client(nats_server.url) as client:
        route = HostRoute(client, SUBJECTS, liveness=3.0, context_timeout=5)
        await route.start()
        client_watch(client)
        assert client in reply_inbox
        assert client in client_watch
        await route.aclose()
    gone = weakref.ref(client)
    del client, route
    gc.collect()
    assert gone() is None  # and with it, its entries in both


async def test_a_host_route_says_when_a_send_could_wait(nats_server: NATSServer) -> None:
    """``send_would_wait``: ``False`` while nats-py's buffer has room for a call of the
    largest size (the host then times calls out without a cancel scope each); ``True``
    for a client whose buffer is smaller than that (every publish may flush first)."""
    for pending_size, could_wait in ((None, False), (1024, True)):
        options = {} if pending_size is None else {"pending_size": pending_size}
        async with nats_client(nats_server.url, options) as client:
            route = HostRoute(client, SUBJECTS, liveness=3.0, context_timeout=5)
            await route.start()
            try:
                would_wait = route.extra(TransportAttribute.send_would_wait)
                assert would_wait() is could_wait
            finally:
                await route.aclose()


async def test_a_replica_route_says_whether_a_message_waits(nats_server: NATSServer) -> None:
    """``receive_ready``: whether a message has arrived that ``receive`` has not returned
    (a frame runs a call in the task that read it only when nothing waits behind it)."""
    async with replica_route(nats_server.url) as route:
        ready = route.extra(TransportAttribute.receive_ready)
        assert ready()  # the provider's own subscribe, queued first
        assert (await route.receive())["message"]["type"] == "model-context-subscribe"
        assert not ready()


async def test_an_idle_replica_does_not_tick_and_a_call_wakes_its_heartbeat(
    nats_server: NATSServer,
) -> None:
    """The replica's heartbeat loop waits, untimed, while no call runs (a process serving
    1,000 idle frames sleeps), and beats again once one does: a call held for 1 s lives
    through a host liveness of 0.2 s only on heartbeats."""
    release = anyio.Event()
    registry = ModelContextRegistry()

    @registry.tool
    async def hold() -> str:
        """Answer once released."""
        await release.wait()
        return "released"

    async with (
        NATSFrameProvider(registry, "calc", nats=nats_server.url, heartbeat=0.05) as replica,
        NATSFrameHost("calc", nats=nats_server.url, liveness=0.2) as host,
        anyio.create_task_group() as group,
    ):
        await host.wait_for_context(timeout=10)
        route = replica._route
        assert route is not None
        busy = anyio.Event()

        async def watch_busy() -> None:
            await route.wait_busy()
            busy.set()

        group.start_soon(watch_busy)
        with anyio.move_on_after(0.3):  # six heartbeat intervals, no call: it waits
            await busy.wait()
        assert not busy.is_set()

        async def release_later() -> None:
            await anyio.sleep(1.0)
            release.set()

        group.start_soon(release_later)
        with anyio.fail_after(10):
            assert await host.call_tool("hold", {}) == "released"
        assert busy.is_set()
