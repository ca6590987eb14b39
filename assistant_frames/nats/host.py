"""``NATSFrameHost``: the host of one named frame on NATS, whichever replicas serve it.

It is an :class:`~assistant_frames.AssistantFrameHost` (so a ``FrameConnection`` and a
``ModelContextProvider``, with the same timeouts, cancellation, typed errors and
progress events) over :class:`_Route`, which carries the frame protocol over the
frame's subjects:

- a ``tool-call`` is published on the call subject with a reply subject of its own, so
  it reaches exactly one replica (the queue group picks it) and everything that replica
  sends about it comes back there: heartbeats, progress and log messages, the result;
- a ``tool-cancel`` goes on the cancel subject, naming that reply subject: only the
  replica running the call acts on it;
- the context comes from the context subject (every replica publishes its changes) and,
  on connecting, on request: every replica answers, the first answer is the context,
  and each shows that replica's tools (to report replicas that differ).

The route settles a call itself, as a :class:`~assistant_frames.frames.host_machine.CallFailed`,
when NATS says no replica took it (:class:`NoResponders`, at once) or when the replica
running it falls silent (:class:`ReplicaLost`, after ``liveness`` seconds without a
heartbeat). Calls are never sent again: a tool may not be idempotent.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Mapping
from contextlib import AsyncExitStack
from typing import Any

import anyio
from anyio.abc import ObjectStream
from nats.aio.client import Client
from nats.aio.msg import Msg

from ..errors import FrameDisconnected, ToolCallError
from ..frames.host import AssistantFrameHost
from ..frames.host_machine import CallFailed
from ..transports.contract import CloseReason, TransportClosed
from . import _wire
from ._route import Route, quietly
from .connection import NATSTarget, nats_client
from .errors import NoResponders, ReplicaLost
from .subjects import DEFAULT_PREFIX, FrameSubjects

__all__ = ["NATSFrameHost"]

logger = logging.getLogger("assistant_frames.nats")

# Values received and not yet read by the host: past this, they are dropped rather than
# held. Contexts never fill it: however many come, one slot holds the latest.
_MAX_QUEUED = 4096


class _Call:
    __slots__ = ("id", "liveness", "seen")

    def __init__(self, call_id: str, seen: float, liveness: float) -> None:
        self.id = call_id
        self.seen = seen  # when the replica was last heard about this call
        self.liveness = liveness


class _Route(Route):
    """The host's side of the frame protocol, carried over the frame's NATS subjects."""

    def __init__(
        self, client: Client, subjects: FrameSubjects, *, liveness: float, context_timeout: float
    ) -> None:
        super().__init__(client)
        self._subjects = subjects
        self.liveness = liveness
        self._context_timeout = context_timeout
        self._inbox = client.new_inbox()
        self._numbers = itertools.count(1)
        self._calls: dict[str, _Call] = {}  # reply subject -> call
        self._replies: dict[str, str] = {}  # call id -> reply subject
        #: The tool sets replicas published, by replica (to report a mismatch).
        self.replica_tools: dict[str, frozenset[str]] = {}
        self.mismatch_reported = False
        send, receive = anyio.create_memory_object_stream[Any](_MAX_QUEUED)
        self._out, self._in = send, receive
        self._stack = AsyncExitStack()
        self.dropped = 0
        self._context: Any = None  # the latest context not yet read, when one is queued
        self.malformed = 0  # messages dropped as not what their subject carries
        # Every replica answers a context request (each is its own queue group there):
        # the first answer is the context, every answer shows that replica's tools.
        self._context_reply = f"{self._inbox}.context"
        self._context_deadline: float | None = None  # while the context is awaited

    async def start(self) -> None:
        """Subscribe to the replies and the context."""
        async with AsyncExitStack() as stack:
            replies = await self._client.subscribe(f"{self._inbox}.*", cb=self._on_reply)
            stack.push_async_callback(quietly, replies.unsubscribe)
            contexts = await self._client.subscribe(self._subjects.context, cb=self._on_context)
            stack.push_async_callback(quietly, contexts.unsubscribe)
            self._stack = stack.pop_all()

    # -- to the frame ---------------------------------------------------------------------

    async def send(self, item: Any) -> None:
        self._check_open()
        body = _wire.inner(item)
        kind = body.get("type") if body is not None else None
        try:
            if kind == "tool-call":
                assert body is not None
                payload = _wire.encode(item, self._client.max_payload)  # may refuse it
                reply = f"{self._inbox}.{next(self._numbers)}"
                call = _Call(body["id"], anyio.current_time(), self.liveness)
                self._calls[reply] = call
                self._replies[call.id] = reply
                try:
                    await self._client.publish(self._subjects.call, payload, reply=reply)
                except Exception as exc:
                    if self._client.is_closed:
                        raise
                    # Cut off, and nats-py's buffer is full: this call fails, not the route.
                    self._forget(reply, call)
                    why = f"Not sent to frame {self._subjects.name!r}: NATS is cut off ({exc!r})"
                    self._push(CallFailed(call.id, FrameDisconnected(why)))
            elif kind == "tool-cancel":
                assert body is not None
                reply = self._replies.pop(str(body.get("id")), "")
                if self._calls.pop(reply, None) is not None:
                    await self._client.publish(
                        self._subjects.cancel,
                        _wire.encode(item, self._client.max_payload),
                        headers={_wire.REPLY: reply},
                    )
            elif kind == "model-context-request":
                await self._fetch_context()  # sent once, on connecting
            # model-context-subscribe / -unsubscribe: the context subject is always heard.
        except (TypeError, ValueError):
            raise  # no JSON form: the host refuses the call, the route is fine
        except Exception as exc:  # nats-py's own errors
            if self._client.is_closed:  # for good: so is the route
                raise anyio.BrokenResourceError(f"NATS: {exc!r}") from exc
            # Cut off, and nats-py's buffer is full: a cancel is lost, not the route.
            logger.debug("Frame %r: not sent: %r", self._subjects.name, exc)

    async def _fetch_context(self) -> None:
        """Ask every replica for the context; the answers come to ``_on_context_answer``
        (and :meth:`watch` ends the stream if none comes within ``context_timeout``)."""
        self._context_deadline = anyio.current_time() + self._context_timeout
        try:
            await self._client.publish(self._subjects.context_get, b"", reply=self._context_reply)
        except Exception as exc:
            self._end(f"NATS: {exc!r}")

    def _on_context_answer(self, msg: Msg) -> None:
        first = self._context_deadline is not None
        if (msg.headers or {}).get(_wire.STATUS) == _wire.NO_RESPONDERS:
            if first:
                self._context_deadline = None
                self._end(f"No replica of frame {self._subjects.name!r} answers on NATS")
            return
        error = (msg.headers or {}).get(_wire.SERVICE_ERROR)
        if error is not None:
            if first:
                self._context_deadline = None
                self._end(f"Frame {self._subjects.name!r} could not send its context: {error}")
            return
        message = self._context_of(msg, "a context request's reply")
        if message is None:
            return
        self._check_replicas(msg, message)
        if first:  # later answers are other replicas' of the same frame
            self._context_deadline = None
            self._push_context(message)

    # -- from the frame -------------------------------------------------------------------

    async def _on_reply(self, msg: Msg) -> None:
        call = self._calls.get(msg.subject)
        if call is None:
            if msg.subject == self._context_reply:
                self._on_context_answer(msg)
            return  # finished, cancelled, or never ours
        headers = msg.headers or {}
        if headers.get(_wire.STATUS) == _wire.NO_RESPONDERS:
            self._forget(msg.subject, call)
            name = self._subjects.name
            self._push(
                CallFailed(call.id, NoResponders(f"No replica of frame {name!r} is running"))
            )
            return
        call.seen = anyio.current_time()
        beat = headers.get(_wire.HEARTBEAT)
        if beat is not None:
            call.liveness = max(self.liveness, 4 * _seconds(beat))
            return
        lost = headers.get(_wire.LOST)
        if lost is not None:
            self._forget(msg.subject, call)
            self._push(CallFailed(call.id, ReplicaLost(lost)))
            return
        error = headers.get(_wire.SERVICE_ERROR)
        if error is not None:
            self._forget(msg.subject, call)
            why = f"Frame {self._subjects.name!r} refused the call: {error}"  # it never ran
            self._push(CallFailed(call.id, ToolCallError(why)))
            return
        try:
            message = _wire.decode(msg.data)
        except ValueError:
            return
        body = _wire.inner(message)
        if body is None or body.get("id") != call.id:
            return  # a reply about another call than this subject's: not believed
        _wire.forget_document(body)
        if body.get("type") == "tool-result":
            self._forget(msg.subject, call)
        self._push(message)

    async def _on_context(self, msg: Msg) -> None:
        message = self._context_of(msg, "the context subject")
        if message is not None:
            self._check_replicas(msg, message)
            self._push_context(message)

    def _context_of(self, msg: Msg, where: str) -> Any:
        """The ``model-context-update`` ``msg`` carries, or ``None`` (dropped): anyone
        may publish there, and a call's result there must not settle the call."""
        try:
            message = _wire.decode(msg.data)
        except ValueError:
            message = None
        if _wire.published_tools(message) is not None:
            _wire.forget_document(message["message"])
            return message
        self.dropped += 1
        self.malformed += 1
        if self.malformed == 1:
            logger.warning(
                "Frame %r: dropped a message on %s that is no context", self._subjects.name, where
            )
        return None

    def _check_replicas(self, msg: Msg, message: Any) -> None:
        """Report replicas of this frame that publish different tool sets."""
        replica = (msg.headers or {}).get(_wire.REPLICA)
        tools = _wire.published_tools(message)
        if replica is None or tools is None:
            return
        _wire.remember(self.replica_tools, replica, tools)
        if len(set(self.replica_tools.values())) > 1 and not self.mismatch_reported:
            self.mismatch_reported = True
            sets = {r: sorted(t) for r, t in self.replica_tools.items()}
            logger.warning(
                "Replicas of frame %r publish different tools (each call may see other tools): %s",
                self._subjects.name,
                sets,
            )

    def _push_context(self, message: Any) -> None:
        """Queue a context: a newer one replaces one still queued (each is whole), so a
        flood of them takes one slot and never crowds out a call's result."""
        if self._context is not None:
            self._context = message
            self.dropped += 1
        elif self._push(_LATEST_CONTEXT):
            self._context = message

    def _push(self, value: Any) -> bool:
        try:
            self._out.send_nowait(value)
            return True
        except anyio.WouldBlock:
            self.dropped += 1
            if self.dropped == 1:
                logger.warning("Frame %r: the host reads too slowly; dropped", self._subjects.name)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        return False

    def _forget(self, reply: str, call: _Call) -> None:
        self._calls.pop(reply, None)
        self._replies.pop(call.id, None)

    def _end(self, why: str) -> None:
        """The frame cannot be reached: end the stream, saying why."""
        self._push(_Ended(why))

    async def watch(self) -> None:
        """Fail calls whose replica fell silent; runs until cancelled."""
        # Often enough to see a closed client within 100 ms, as a transport would.
        tick = min(self.liveness / 4, 0.1)
        last = anyio.current_time()
        while True:
            await anyio.sleep(tick)
            if self._client.is_closed:  # for good (not reconnecting): so is this frame
                self._end(f"The NATS connection to frame {self._subjects.name!r} was closed")
                return
            now = anyio.current_time()
            # Woken late: this host's event loop was blocked (its replicas' heartbeats
            # wait unread), and the time it did not listen is not their silence.
            stalled, last = now - last - tick, now
            if stalled > tick:
                for call in self._calls.values():
                    call.seen = min(now, call.seen + stalled)
                if self._context_deadline is not None:  # its answers wait unread too
                    self._context_deadline += stalled
            if self._context_deadline is not None and now > self._context_deadline:
                self._context_deadline = None
                self._end(
                    f"No replica of frame {self._subjects.name!r} sent its context within "
                    f"{self._context_timeout:g} s"
                )
            for reply, call in list(self._calls.items()):
                if now - call.seen > call.liveness:
                    self._forget(reply, call)
                    why = (
                        f"The replica of frame {self._subjects.name!r} running the call went "
                        f"silent for {call.liveness:g} s (stopped, killed or cut off)"
                    )
                    self._push(CallFailed(call.id, ReplicaLost(why)))

    # -- the stream ---------------------------------------------------------------------------

    async def receive(self) -> Any:
        value = await self._in.receive()
        if value is _LATEST_CONTEXT:
            value, self._context = self._context, None
        elif type(value) is _Ended:
            raise TransportClosed(CloseReason(value.why, clean=False))
        return value

    async def aclose(self) -> None:
        await super().aclose()
        self._out.close()
        self._in.close()
        with anyio.CancelScope(shield=True):
            await self._stack.aclose()


_LATEST_CONTEXT = object()  # in the queue: read the route's latest context there


class _Ended:
    __slots__ = ("why",)

    def __init__(self, why: str) -> None:
        self.why = why


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        return 0.0
    return value if math.isfinite(value) and value > 0 else 0.0


class NATSFrameHost(AssistantFrameHost):
    """The host of the frame ``name`` on NATS; a ``FrameConnection`` like any other.

    ``nats`` is a server URL, several, or a connected client (shared, left open);
    ``nats_options`` go to ``nats.connect``. ``prefix`` is the tenant's subject prefix.
    ``timeout`` bounds each call, as for every host; ``liveness`` is how long a call's
    replica may stay silent before the call fails with :class:`ReplicaLost` (at least
    four of the replica's heartbeats); ``context_timeout`` bounds the wait for the
    frame's context when connecting. With no replica running when connecting, the
    connection ends at once (calls fail at once with ``FrameDisconnected`` saying no
    replica answers); once connected, a call that no replica takes fails at once with
    :class:`NoResponders`, and the connection stays.

    Needs asyncio (``nats-py`` does).
    """

    def __init__(
        self,
        name: str,
        *,
        nats: NATSTarget,
        nats_options: Mapping[str, Any] | None = None,
        prefix: str = DEFAULT_PREFIX,
        timeout: float | None = 30.0,
        liveness: float = 3.0,
        context_timeout: float = 5.0,
    ) -> None:
        if not liveness > 0 or not math.isfinite(liveness):
            raise ValueError(f"liveness must be a positive number of seconds, not {liveness!r}")
        self.subjects = FrameSubjects(name, prefix)
        self.liveness = liveness
        self.context_timeout = context_timeout
        self._target = nats
        self._options = nats_options
        self._client_stack: AsyncExitStack | None = None
        self._route: _Route | None = None
        # The transport is made on entering, once the client is connected.
        super().__init__(_Unopened(), timeout=timeout, name=name)

    @property
    def route(self) -> _Route:
        if self._route is None:
            raise RuntimeError("The host is not connected")
        return self._route

    async def __aenter__(self) -> NATSFrameHost:
        async with AsyncExitStack() as stack:
            client = await stack.enter_async_context(
                nats_client(self._target, self._options, name=f"host of {self.name}")
            )
            route = _Route(
                client,
                self.subjects,
                liveness=self.liveness,
                context_timeout=self.context_timeout,
            )
            await route.start()
            stack.push_async_callback(route.aclose)
            self._route = route
            self._transport = route
            await super().__aenter__()
            tasks = self._tasks.group
            assert tasks is not None  # open: the host was entered
            tasks.start_soon(route.watch)  # ends with the host's tasks
            self._client_stack = stack.pop_all()
        return self

    async def _stopped(self) -> None:
        stack, self._client_stack = self._client_stack, None
        if stack is not None:
            with anyio.CancelScope(shield=True):
                await stack.aclose()  # unsubscribe, then the client (no task group in it)


class _Unopened(ObjectStream[Any]):
    """Stands for the route until the host connects."""

    async def receive(self) -> Any:
        raise anyio.ClosedResourceError

    async def send(self, item: Any) -> None:
        raise anyio.ClosedResourceError

    async def send_eof(self) -> None:
        pass

    async def aclose(self) -> None:
        pass
