"""``NATSFrameProvider``: one replica of a frame, served as a NATS service.

The replica is an :class:`~assistant_frames.AssistantFrameProvider` serving one
"connection" that stands for every host on the bus
(:class:`~assistant_frames.nats.replica_route.ReplicaRoute`): tool calls come in on
the frame's call subject in a queue group, and each call's results, progress and log
messages go back to that call's own reply subject. The connection asked for the context
as patches: the replica publishes its first context whole on the frame's context
subject, then each change (coalesced as on any connection) as a numbered
``model-context-patch``, both naming the replica and the number in headers; it keeps
the context as sent, to answer context requests whole with its number, or, to a host
following it that holds the latest, with nothing. So calls, cancellation, progress,
backpressure and bad input are handled by the same code as everywhere else, and only
the routing is NATS'.

While a call runs, the replica sends a heartbeat on its reply subject every
``heartbeat`` seconds (the first a few milliseconds after the call arrives, so a quick
call costs no more than its result): a host that hears none for a while knows the
replica is gone (killed, cut off) and fails the call at once, instead of waiting for
its timeout.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from contextlib import AsyncExitStack, suppress
from typing import Any

import anyio
from nats.aio.msg import Msg
from nats.micro import add_service
from nats.micro.request import Request
from nats.micro.service import Service

from .._driver import Driver
from ..frames.provider import AssistantFrameProvider
from ..registry.context import ModelContextProvider
from . import _wire
from ._route import quietly
from .connection import NATSTarget, nats_client
from .replica_route import ReplicaRoute
from .subjects import DEFAULT_PREFIX, FrameSubjects

__all__ = ["NATSFrameProvider"]

logger = logging.getLogger("assistant_frames.nats")

# How long entering waits for the server to confirm the replica's subscriptions.
_FLUSH_TIMEOUT = 2  # seconds (nats-py takes an int)
# How long a context request waits for the provider's first context (a replica starting).
_FIRST_CONTEXT_TIMEOUT = 5.0
# How long leaving lets nats.micro's stop() take: it drains the service API's
# subscriptions, a round trip each, 10 s apiece against a server that hangs.
_STOP_TIMEOUT = 2.0


async def _drain_endpoint(service: Service, subject: str) -> None:
    """Stop taking requests on the endpoint for ``subject``, handling those already
    received: ``nats.micro``'s ``stop()`` unsubscribes, which drops them (calls that
    would then never run, their callers told only after ``liveness``).

    Reaches into ``nats.micro``'s endpoints (it has no public drain); if they ever look
    otherwise, this does nothing and ``stop()`` behaves as it does.
    """
    for endpoint in getattr(service, "_endpoints", ()):
        subscription = getattr(endpoint, "_subscription", None)
        if getattr(endpoint, "_subject", None) != subject or subscription is None:
            continue
        try:
            await subscription.drain()  # unsubscribes at the server, then handles the rest
        finally:
            # Drained, or given up on (out of time, cut off): unsubscribing it again is
            # refused, which would end stop() before the endpoints after it.
            endpoint._subscription = _Drained()  # noqa: SLF001 - no public drain (docstring)


class _Drained:
    """A drained subscription: unsubscribing it again has nothing left to do."""

    async def unsubscribe(self, limit: int = 0) -> None:
        pass


class NATSFrameProvider(Driver):
    """Serves ``provider`` (a registry, or any ``ModelContextProvider``) as the frame
    ``name`` on NATS: one replica. Run as many replicas of one name as you like, in
    this process or others; each call goes to exactly one of them.

    Use it as an async context manager: entering connects (``nats``: a URL, URLs, or a
    connected client, with ``nats_options`` for ``nats.connect``), starts the service
    and publishes the context; leaving stops taking calls, waits up to
    ``drain_timeout`` seconds for the running ones, then tells the callers of any still
    running that the replica is gone, and disconnects.

    ``prefix`` puts the frame's subjects under a tenant's own prefix; ``version`` and
    ``description`` are what the NATS service API shows. ``heartbeat`` (seconds) is how
    often a running call's caller hears that the replica is alive.
    """

    _noun = "NATSFrameProvider"

    def __init__(
        self,
        provider: ModelContextProvider,
        name: str,
        *,
        nats: NATSTarget,
        nats_options: Mapping[str, Any] | None = None,
        prefix: str = DEFAULT_PREFIX,
        version: str = "0.1.0",
        description: str | None = None,
        heartbeat: float = 0.5,
        drain_timeout: float = 5.0,
    ) -> None:
        if not heartbeat > 0 or not math.isfinite(heartbeat):
            raise ValueError(f"heartbeat must be a positive number of seconds, not {heartbeat!r}")
        self.subjects = FrameSubjects(name, prefix)
        self.name = name
        self.provider = (
            provider
            if isinstance(provider, AssistantFrameProvider)
            else AssistantFrameProvider(provider)
        )
        self.version = version
        self.description = description
        self.heartbeat = heartbeat
        self.drain_timeout = drain_timeout
        self._target = nats
        self._options = nats_options
        self._init_lifecycle()
        self._stopping = False
        self._stack: AsyncExitStack | None = None
        #: Other replicas of this frame seen publishing other tools, and theirs.
        self.mismatches: dict[str, list[str]] = {}
        self._peers = _wire.ReplicaTools()  # other replicas' tools, matching or not
        self._service: Service | None = None
        self._route: ReplicaRoute | None = None

    @property
    def replica(self) -> str:
        """This replica's id (its NATS service instance id)."""
        if self._service is None:
            raise RuntimeError("The service is not running")
        return str(self._service.id)

    @property
    def running_calls(self) -> int:
        """How many calls this replica runs now."""
        return 0 if self._route is None else len(self._route.running)

    async def __aenter__(self) -> NATSFrameProvider:
        self._ended = anyio.Event()
        async with AsyncExitStack() as stack:
            client = await stack.enter_async_context(
                nats_client(self._target, self._options, name=f"frame {self.name}")
            )
            service = await add_service(
                client,
                name=self.name,
                version=self.version,
                description=self.description or "",
                metadata={_wire.META_KIND: _wire.KIND, _wire.META_PREFIX: self.subjects.prefix},
            )
            self._service = service
            stack.push_async_callback(quietly, service.stop)
            route = self._route = ReplicaRoute(
                client, self.subjects, str(service.id), self.heartbeat, self._compare_all
            )
            await service.add_endpoint(
                name="call",
                subject=self.subjects.call,
                queue_group=self.subjects.queue,
                handler=route.on_call,
            )
            await service.add_endpoint(
                name="context",
                subject=self.subjects.context_get,
                # A queue group of its own: every replica answers, so a host connecting
                # (or a replica starting) hears every replica's tools.
                queue_group=f"{self.subjects.queue}.{service.id}",
                handler=self._on_context_get,
            )
            # A host following this replica asks it alone (and hears at once, from the
            # server, when it is gone).
            asks = await client.subscribe(
                self.subjects.context_get_of(str(service.id)), cb=self._on_context_ask
            )
            stack.push_async_callback(quietly, asks.unsubscribe)
            cancels = await client.subscribe(self.subjects.cancel, cb=route.on_cancel)
            stack.push_async_callback(quietly, cancels.unsubscribe)
            peers = await client.subscribe(self.subjects.context, cb=self._on_peer_context)
            stack.push_async_callback(quietly, peers.unsubscribe)
            # The replicas already running: their answers show their tools.
            answers = await client.subscribe(client.new_inbox(), cb=self._on_peer_context)
            stack.push_async_callback(quietly, answers.unsubscribe)
            await client.publish(self.subjects.context_get, b"", reply=answers.subject)
            # A round trip: once entered, the server holds every subscription above, so a
            # host or a discovery round started now finds this replica. Two: nats-py (2.16)
            # writes a flush's PING at once, ahead of the commands its flusher task has yet
            # to write; by the second one's turn, they went.
            try:
                await client.flush(timeout=_FLUSH_TIMEOUT)
                await client.flush(timeout=_FLUSH_TIMEOUT)
            except Exception as exc:  # cut off (reconnecting): its subscriptions come back
                logger.debug("Frame %r: starting while cut off: %r", self.name, exc)
            async with self._tasks.open() as group:
                group.start_soon(self.provider.serve, route)
                group.start_soon(self._beat)
                group.start_soon(route.first_beats)
            self._stack = stack.pop_all()
        return self

    async def _stop(self) -> None:
        """Drain the calls running (bounded), stop the service, end the provider's
        connection; once the tasks ended, the subscriptions and the client close."""
        route, service = self._route, self._service
        if route is None or service is None or self._stopping:
            return  # never entered, or closed already
        self._stopping = True
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(self.drain_timeout):
                await quietly(lambda: _drain_endpoint(service, self.subjects.call))
            with anyio.move_on_after(_STOP_TIMEOUT):  # a round trip per subscription
                await quietly(service.stop)  # no new calls (nor discovery) from here on
            with anyio.move_on_after(self.drain_timeout):
                await route.wait_idle()
            await route.lose_running(f"The replica of frame {self.name!r} stopped")
            await route.aclose()  # the provider's connection ends: its calls are cancelled

    async def _stopped(self) -> None:
        if self._ended is not None:
            self._ended.set()
        stack, self._stack = self._stack, None
        if stack is not None:
            with anyio.CancelScope(shield=True):
                await stack.aclose()  # the cancel subscription, then the client

    async def _beat(self) -> None:
        assert self._route is not None
        while True:
            # Idle, nothing ticks: a process serving 1,000 idle frames sleeps.
            await self._route.wait_busy()
            await anyio.sleep(self.heartbeat)
            await self._route.heartbeat()
            await self._route.resend_context()

    async def _on_peer_context(self, msg: Msg) -> None:
        """Another replica's context (whole, or a patch): report it once if its tools
        are not this one's."""
        replica = (msg.headers or {}).get(_wire.REPLICA)
        if replica is None or self._service is None or replica == str(self._service.id):
            return
        message = _wire.decode_or_none(msg.data)
        body = _wire.inner(message)
        if body is None or (
            body.get("type") == "model-context-patch" and _wire.patch_body(message) is None
        ):
            return
        if self._peers.heard(replica, body):
            self._compare(replica, self._peers.tools[replica], self._tools())

    def _compare_all(self) -> None:
        """This replica's tools changed: compare them with every other replica's again."""
        if not self._peers:
            return  # alone (or no peer published yet): nothing to compare, nor to build
        ours = self._tools()
        for replica, theirs in list(self._peers.tools.items()):
            self._compare(replica, theirs, ours)

    def _tools(self) -> frozenset[str]:
        return frozenset(self.provider.get_model_context().tools)

    def _compare(self, replica: str, theirs: AbstractSet[str], ours: AbstractSet[str]) -> None:
        if theirs == ours:
            self.mismatches.pop(replica, None)
            return
        if replica not in self.mismatches:
            logger.warning(
                "Frame %r: replica %s publishes other tools than this one (%s): %s; each "
                "call may go to either",
                self.name,
                replica,
                sorted(ours),
                sorted(theirs),
            )
        _wire.remember(self.mismatches, replica, sorted(theirs))

    async def _on_context_get(self, request: Request) -> None:
        """A context request (a host connecting, a replica starting): this replica's
        whole context, numbered."""
        assert self._route is not None
        try:
            with anyio.fail_after(_FIRST_CONTEXT_TIMEOUT):  # the provider's first one
                payload, seq = await self._route.whole_context()
        except (TypeError, ValueError, TimeoutError) as exc:  # too large, or none yet
            await request.respond_error("500", str(exc) or "The frame has no context yet")
            return
        await request.respond(payload, headers=self._route.context_headers(seq))

    async def _on_context_ask(self, msg: Msg) -> None:
        """A host following this replica asks for its context (on this replica's own
        subject): "you hold the latest" (no payload) when the number it holds, in
        ``AF-Seq``, is the current one, else the whole context."""
        route = self._route
        if route is None or not msg.reply:
            return
        held = (msg.headers or {}).get(_wire.SEQ)
        headers: dict[str, str]
        try:
            if held is not None and held == str(route.seq) and route.wire is not None:
                payload, headers = b"", route.context_headers(route.seq)
            else:
                with anyio.fail_after(_FIRST_CONTEXT_TIMEOUT):
                    payload, seq = await route.whole_context()
                headers = route.context_headers(seq)
        except (TypeError, ValueError, TimeoutError) as exc:
            payload = b""
            headers = {_wire.SERVICE_ERROR: str(exc) or "The frame has no context yet"}
            headers[_wire.SERVICE_ERROR_CODE] = "500"
        with suppress(Exception):  # cut off or closed: the asker tries again, or another
            await route.publish(msg.reply, payload, headers)
