"""``NATSFrameProvider``: one replica of a frame, served as a NATS service.

The replica is an :class:`~assistant_frames.AssistantFrameProvider` serving one
"connection" that stands for every host on the bus (:class:`_Route`): tool calls come
in on the frame's call subject in a queue group, and each call's results, progress and
log messages go back to that call's own reply subject. The connection asked for the
context as patches: the replica publishes its first context whole on the frame's context
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

import itertools
import logging
import math
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from contextlib import AsyncExitStack, suppress
from typing import Any, cast

import anyio
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.micro import add_service
from nats.micro.request import Request
from nats.micro.service import Service

from .._driver import Driver
from ..frames import protocol
from ..frames.provider import AssistantFrameProvider
from ..registry.context import ModelContextProvider
from . import _wire
from ._route import Route, quietly
from .connection import NATSTarget, nats_client
from .subjects import DEFAULT_PREFIX, FrameSubjects

__all__ = ["NATSFrameProvider"]

logger = logging.getLogger("assistant_frames.nats")

# Calls received and not yet taken by the frame: more are refused ("busy"), never queued.
_MAX_QUEUED = 1024
# A new call's first heartbeat goes out this many seconds after it arrives, if it still
# runs: a quick call's result is its only reply (a beat on every call cost some 80 µs).
_FIRST_BEAT_AFTER = 0.005
# How long entering waits for the server to confirm the replica's subscriptions.
_FLUSH_TIMEOUT = 2  # seconds (nats-py takes an int)
# How long a context request waits for the provider's first context (a replica starting).
_FIRST_CONTEXT_TIMEOUT = 5.0
# How long leaving lets nats.micro's stop() take: it drains the service API's
# subscriptions, a round trip each, 10 s apiece against a server that hangs.
_STOP_TIMEOUT = 2.0


class _Running:
    """One call this replica runs: its caller's id, the request to reply to, and that
    request's reply subject (which, with the id, names the call for a cancel)."""

    __slots__ = ("caller_id", "reply", "request")

    def __init__(self, caller_id: str, request: Request, reply: str) -> None:
        self.caller_id = caller_id
        self.request = request
        self.reply = reply


class _Route(Route):
    """The frame's one connection: every caller's calls in, each reply to its caller.

    Calls get ids of this replica's own (``"1"``, ``"2"``...) on the way in, and their
    callers' ids back on the way out: two callers choosing the same id cannot cancel or
    answer each other's calls.
    """

    def __init__(
        self,
        client: Client,
        subjects: FrameSubjects,
        replica: str,
        heartbeat: float,
        published: Callable[[], None] = lambda: None,
    ) -> None:
        super().__init__(client)
        self._published = published  # called when this replica's tool names changed
        # The context as the provider last sent it (an own copy, its patches applied),
        # its number, and its whole form encoded (for requests; made on the first one).
        self.wire: dict[str, Any] | None = None
        self.seq = 0
        self._whole: bytes | None = None
        self._has_context = anyio.Event()
        # A context message nats-py refused (cut off, its buffer full): hosts miss a
        # change, so patches wait, and the whole context goes out once connected again.
        self._behind = False
        self._subjects = subjects
        self._headers = {_wire.REPLICA: replica}
        self._beat_headers = {**self._headers, _wire.HEARTBEAT: f"{heartbeat:g}"}
        send, receive = anyio.create_memory_object_stream[Any](_MAX_QUEUED)
        self._incoming_send = send
        self._incoming = receive
        self._ids = itertools.count(1)
        self.running: dict[str, _Running] = {}
        self._by_caller: dict[tuple[str, str], str] = {}  # (reply subject, caller id) -> id
        self.malformed = 0
        self._idle = anyio.Event()
        self._new: list[str] = []  # calls that have not had their first heartbeat
        self._arrived = anyio.Event()
        # The provider pushes the context to a subscribed connection: subscribe this one,
        # for patches (the first context comes whole, numbered 1; each change then
        # comes as a patch, numbered on).
        send.send_nowait(protocol.encode_context_subscribe(patches=True))

    # -- from NATS ------------------------------------------------------------------------

    async def on_call(self, request: Request) -> None:
        """A ``tool-call`` on the call subject (a ``nats.micro`` endpoint handler)."""
        # The caller's inbox for this call: nats.micro's Request has no public getter for it.
        reply = request._msg.reply  # noqa: SLF001
        try:
            message = _wire.decode(request.data)
        except ValueError:
            message = None
        body = _wire.inner(message)
        if body is None or body.get("type") != "tool-call" or not isinstance(body.get("id"), str):
            self._malformed("a call that is not a tool-call message")
            if reply:
                await request.respond_error("400", "Not a frame tool-call message")
            return
        if not reply:  # published, not requested: nobody to answer, so nothing to run
            self._malformed("a tool-call without a reply subject")
            return
        caller_id = body["id"]
        if (reply, caller_id) in self._by_caller:  # a retransmission of a live call
            return
        call_id = str(next(self._ids))
        routed = {**message, "message": {**body, "id": call_id}}
        try:
            self._incoming_send.send_nowait(routed)
        except anyio.WouldBlock:
            await request.respond_error("503", f"Frame {self._subjects.name!r} is busy")
            return
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            await request.respond_error("503", f"Frame {self._subjects.name!r} is stopping")
            return
        self.running[call_id] = _Running(caller_id, request, reply)
        self._by_caller[(reply, caller_id)] = call_id
        self._new.append(call_id)
        self._arrived.set()

    async def on_cancel(self, msg: Msg) -> None:
        """A ``tool-cancel`` on the cancel subject: for this replica only if it runs it."""
        body = _wire.inner(_safe_decode(msg.data))
        reply = (msg.headers or {}).get(_wire.REPLY)
        if body is None or body.get("type") != "tool-cancel" or not reply:
            self._malformed("a cancel that is not a tool-cancel message with its reply subject")
            return
        call_id = self._by_caller.get((reply, str(body.get("id"))))
        if call_id is None:
            return  # another replica's call, or finished
        self._finished(call_id)
        cancel = protocol.encode_tool_cancel(call_id)
        try:
            self._incoming_send.send_nowait(cancel)
        except anyio.WouldBlock:  # the queue is full: the call is still in it, drop it there
            logger.warning("Frame %r: a cancel found the call queue full", self._subjects.name)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass

    async def wait_idle(self) -> None:
        """Wait until no call runs here."""
        while self.running:
            self._idle = anyio.Event()
            await self._idle.wait()

    def _finished(self, call_id: str) -> _Running | None:
        running = self.running.pop(call_id, None)
        if running is not None:
            self._by_caller.pop((running.reply, running.caller_id), None)
        if not self.running:
            self._idle.set()
        return running

    async def first_beats(self) -> None:
        """Soon after a call arrives, tell its caller which replica runs it (and how
        often it beats), unless it has ended by then; runs until cancelled."""
        while True:
            await self._arrived.wait()
            await anyio.sleep(_FIRST_BEAT_AFTER)
            self._arrived = anyio.Event()
            new, self._new = self._new, []
            for call_id in new:
                running = self.running.get(call_id)
                if running is not None:
                    await self._beat(running.request)

    async def heartbeat(self) -> None:
        """Tell each running call's caller this replica is still at it."""
        for running in list(self.running.values()):
            await self._beat(running.request)

    async def _beat(self, request: Request) -> None:
        try:
            await request.respond(b"", headers=self._beat_headers)
        except Exception as exc:  # the connection is down: the caller will notice
            logger.debug("Frame %r: a heartbeat was not sent: %r", self._subjects.name, exc)

    def _malformed(self, what: str) -> None:
        self.malformed += 1
        log = logger.warning if self.malformed == 1 else logger.debug
        log("Frame %r: dropped %s on NATS", self._subjects.name, what)

    # -- from the frame -------------------------------------------------------------------

    async def send(self, item: Any) -> None:
        self._check_open()
        body = _wire.inner(item)
        kind = body.get("type") if body is not None else None
        try:
            if kind == "model-context-update" or kind == "model-context-patch":
                assert body is not None
                await self._context_message(item, body)
                return
            if body is None or not isinstance(body.get("id"), str):
                return
            call_id = body["id"]
            running = self.running.get(call_id)
            if running is None:
                return  # cancelled meanwhile: its caller no longer listens
            reply = {**item, "message": {**body, "id": running.caller_id}}
            payload = _wire.encode(reply, self._client.max_payload)
            if kind == "tool-result":
                self._finished(call_id)
            # No headers: the caller knows the replica from the first heartbeat, and a
            # message without headers is cheaper to send and to parse.
            await running.request.respond(payload)
        except (TypeError, ValueError):
            raise  # no JSON form: the provider answers with its error for that
        except Exception as exc:  # nats-py's own errors
            if self._client.is_closed:  # for good: so is the route
                raise anyio.BrokenResourceError(f"NATS: {exc!r}") from exc
            # Cut off, and nats-py's buffer is full: this message is lost, not the route
            # (raising would end the provider's progress messages for good). A lost
            # result leaves its call without heartbeats: the caller hears ReplicaLost.
            logger.debug("Frame %r: a reply was not sent: %r", self._subjects.name, exc)

    async def _context_message(self, item: Any, body: dict[str, Any]) -> None:
        """The provider's context, whole (its first) or a patch: kept, then published
        on the context subject, numbered, naming this replica."""
        seq = _wire.seq_of(body)
        if seq is None:
            return  # unnumbered: a provider disposing of the connection, closed by now
        if body["type"] == "model-context-update":
            self.wire = _wire.own_copy(body["context"])
            names_changed = True
            self._has_context.set()
        else:
            assert self.wire is not None  # a patch follows the first (whole) context
            names_changed = _wire.apply_patch(self.wire, body)
        self.seq, self._whole = seq, None
        try:
            if not self._behind:  # else the hosts missed a change: the whole goes out next
                payload = _wire.encode(item, self._client.max_payload)
                await self._publish_context(payload, seq)
        finally:
            if names_changed:
                self._published()

    async def publish(self, subject: str, payload: bytes, headers: dict[str, str]) -> None:
        await self._client.publish(subject, payload, headers=headers)

    def context_headers(self, seq: int) -> dict[str, str]:
        """The headers of a context message numbered ``seq`` from this replica."""
        return {**self._headers, _wire.SEQ: str(seq)}

    async def whole_context(self) -> tuple[bytes, int]:
        """This replica's context whole, as a ``model-context-update`` carrying its
        number, encoded; and the number. Waits for the provider's first context.
        ``MessageTooLarge`` past ``max_payload``."""
        await self._has_context.wait()
        assert self.wire is not None
        if self._whole is None:
            wire = cast(protocol.SerializedModelContext, self.wire)
            update = protocol.encode_context_update(wire, seq=self.seq)
            self._whole = _wire.encode(update, self._client.max_payload)
        return self._whole, self.seq

    async def _publish_context(self, payload: bytes, seq: int) -> None:
        try:
            await self._client.publish(
                self._subjects.context, payload, headers=self.context_headers(seq)
            )
        except Exception as exc:
            if self._client.is_closed:
                raise
            # Cut off, and nats-py's buffer is full. Raising would end the provider's
            # context updates for good: the whole context goes out once connected.
            self._behind = True
            logger.debug("Frame %r: the context waits for the server: %r", self._subjects.name, exc)

    async def resend_context(self) -> None:
        """Once connected again, publish the whole context if a change was refused
        while cut off (hosts take it; patches follow it again)."""
        if not self._behind or not self._client.is_connected:
            return
        try:
            payload, seq = await self.whole_context()
            await self._client.publish(
                self._subjects.context, payload, headers=self.context_headers(seq)
            )
        except Exception as exc:  # cut off again, closed, or too large: try again later
            logger.debug("Frame %r: the context was not sent: %r", self._subjects.name, exc)
            return
        if seq == self.seq:  # else a change came meanwhile: the newer whole goes next
            self._behind = False

    async def lose_running(self, why: str) -> None:
        """Tell the callers of every running call that this replica stops without them."""
        for running in list(self.running.values()):
            with suppress(Exception):  # the server may be gone: then so is the caller's reply
                await running.request.respond(b"", headers={**self._headers, _wire.LOST: why})
        self.running.clear()
        self._by_caller.clear()
        self._idle.set()

    # -- the stream ---------------------------------------------------------------------------

    async def receive(self) -> Any:
        return await self._incoming.receive()

    async def aclose(self) -> None:
        await super().aclose()
        self._incoming_send.close()
        self._incoming.close()


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


def _safe_decode(payload: bytes) -> Any:
    try:
        return _wire.decode(payload)
    except ValueError:
        return None


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
        self._route: _Route | None = None

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
            route = self._route = _Route(
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
            await anyio.sleep(self.heartbeat)
            await self._route.heartbeat()
            await self._route.resend_context()

    async def _on_peer_context(self, msg: Msg) -> None:
        """Another replica's context (whole, or a patch): report it once if its tools
        are not this one's."""
        replica = (msg.headers or {}).get(_wire.REPLICA)
        if replica is None or self._service is None or replica == str(self._service.id):
            return
        message = _safe_decode(msg.data)
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
