"""The NATS route of a :class:`~assistant_frames.nats.NATSFrameProvider` replica: the one
"connection" that stands for every host on the bus.

Tool calls come in on the frame's call subject in a queue group, and each call's
results, progress and log messages go back to that call's own reply subject; while a
call runs, a heartbeat goes there every ``heartbeat`` seconds. The context goes out on
the frame's context subject: the first whole, then each change as a numbered
``model-context-patch``, both naming the replica and the number in headers; the route
keeps the context as sent, to answer context requests whole with its number, or, to a
host following it that holds the latest, with nothing.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Mapping
from contextlib import suppress
from typing import Any, cast

import anyio
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.micro.request import Request

from ..frames import protocol
from ..transports.contract import TransportAttribute
from . import _wire
from ._route import Route
from .subjects import FrameSubjects

__all__ = ["ReplicaRoute"]

logger = logging.getLogger("assistant_frames.nats")

# Calls received and not yet taken by the frame: more are refused ("busy"), never queued.
_MAX_QUEUED = 1024
# A new call's first heartbeat goes out this many seconds after it arrives, if it still
# runs: a quick call's result is its only reply (a beat on every call cost some 80 µs).
_FIRST_BEAT_AFTER = 0.005


class _Running:
    """One call this replica runs: its caller's id, the request to reply to, and that
    request's reply subject (which, with the id, names the call for a cancel)."""

    __slots__ = ("caller_id", "reply", "request")

    def __init__(self, caller_id: str, request: Request, reply: str) -> None:
        self.caller_id = caller_id
        self.request = request
        self.reply = reply


class ReplicaRoute(Route):
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
        self._busy: anyio.Event | None = None  # set to wake wait_busy
        self._new: list[str] = []  # calls that have not had their first heartbeat
        self._arrived = anyio.Event()
        # The provider pushes the context to a subscribed connection: subscribe this one,
        # for patches (the first context comes whole, numbered 1; each change then
        # comes as a patch, numbered on).
        send.send_nowait(protocol.encode_context_subscribe(patches=True))
        self._queued = 1  # messages queued that receive has not returned
        # receive_inline's handler: offered a call when nothing is queued before it.
        self._inline: Callable[[Any], bool] | None = None

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
        inline = self._inline
        try:
            # Taken at once only by an open route with nothing queued before it (a
            # closed one refuses below, as its stream is closed).
            if inline is None or self._queued or self._closed or not inline(routed):
                self._incoming_send.send_nowait(routed)
                self._queued += 1
        except anyio.WouldBlock:
            await request.respond_error("503", f"Frame {self._subjects.name!r} is busy")
            return
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            await request.respond_error("503", f"Frame {self._subjects.name!r} is stopping")
            return
        self.running[call_id] = _Running(caller_id, request, reply)
        self._by_caller[(reply, caller_id)] = call_id
        self._new.append(call_id)
        self._arrived.set()  # the periodic beats wait for the first: most calls end before it

    async def on_cancel(self, msg: Msg) -> None:
        """A ``tool-cancel`` on the cancel subject: for this replica only if it runs it."""
        body = _wire.inner(_wire.decode_or_none(msg.data))
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
            self._queued += 1
        except anyio.WouldBlock:  # the queue is full: the call is still in it, drop it there
            logger.warning("Frame %r: a cancel found the call queue full", self._subjects.name)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass

    async def wait_idle(self) -> None:
        """Wait until no call runs here."""
        while self.running:
            self._idle = anyio.Event()
            await self._idle.wait()

    async def wait_busy(self) -> None:
        """Wait until there is something to beat for: a call running here past its
        first heartbeat, or a context change still to publish (refused while cut off)."""
        while not self.running and not self._behind:
            if self._busy is None:  # one event for every waiter
                self._busy = anyio.Event()
            await self._busy.wait()

    def _wake_busy(self) -> None:
        if self._busy is not None:
            self._busy.set()
            self._busy = None

    def _finished(self, call_id: str) -> _Running | None:
        running = self.running.pop(call_id, None)
        if running is not None:
            self._by_caller.pop((running.reply, running.caller_id), None)
        if not self.running:
            self._idle.set()
        return running

    async def first_beats(self) -> None:
        """Soon after a call arrives, tell its caller which replica runs it (and how
        often it beats), unless it has ended by then; runs until cancelled.

        Only a call still running then wakes the periodic beats (``wait_busy``): a quick
        call, most of them, costs no wake-up of that task.
        """
        while True:
            await self._arrived.wait()
            await anyio.sleep(_FIRST_BEAT_AFTER)
            self._arrived = anyio.Event()
            new, self._new = self._new, []
            still_running = False
            for call_id in new:
                running = self.running.get(call_id)
                if running is not None:
                    still_running = True
                    await self._beat(running.request)
            if still_running:
                self._wake_busy()

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
            self._wake_busy()
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
        message = await self._incoming.receive()
        self._queued -= 1
        return message

    def receive_inline(self, handler: Callable[[Any], bool] | None) -> None:
        """Offer ``handler(message)`` each call that arrives while nothing is queued, at
        once, in nats-py's task; it returns whether it took the call, which is otherwise
        queued for :meth:`receive` (``None``: queue every call again).

        As :meth:`MemoryTransport.receive_inline
        <assistant_frames.transports.memory.MemoryTransport.receive_inline>`: the
        provider takes a call there and hands it to a worker, without waking its reading
        task first. ``handler`` must neither raise nor wait. nats-py's task for the call
        subject was started where the frame was entered, so what ``handler`` starts sees
        the variables set there (the provider's workers set its thread limit themselves).
        """
        self._inline = handler

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        # receive_ready: the provider runs a call in the task that read it when nothing
        # waits behind it (else it hands it to another worker: one more wake-up a call).
        return {
            **super().extra_attributes,
            TransportAttribute.receive_ready: lambda: self._receive_ready,
        }

    def _receive_ready(self) -> bool:
        return self._queued > 0

    async def aclose(self) -> None:
        await super().aclose()
        self._incoming_send.close()
        self._incoming.close()
