"""The NATS route of a :class:`~assistant_frames.nats.NATSFrameHost`: the frame protocol
over the frame's subjects, with whichever replicas serve it.

- a ``tool-call`` is published on the call subject with a reply subject of its own, so
  it reaches exactly one replica (the queue group picks it) and everything that replica
  sends about it comes back there: heartbeats, progress and log messages, the result;
- a ``tool-cancel`` goes on the cancel subject, naming that reply subject: only the
  replica running the call acts on it;
- the context comes, on connecting, on request: every replica answers, the first answer
  is the context, and each shows that replica's tools (to report replicas that differ).
  Then the host follows the replica whose context it holds: each replica publishes its
  changes on the context subject as numbered patches, and the host applies that
  replica's, in order (the others' are the same changes). On a gap it asks that replica
  alone for its context; when that replica is gone (NATS says no one answers) or another
  replica's change is not matched, it asks again, and follows whoever answers.

The route settles a call itself, as a :class:`~assistant_frames.frames.host_machine.CallFailed`,
when NATS says no replica took it (:class:`NoResponders`, at once) or when the replica
running it falls silent (:class:`ReplicaLost`, after ``liveness`` seconds without a
heartbeat). Calls are never sent again: a tool may not be idempotent.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections import deque
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from typing import Any

import anyio
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from ..errors import FrameDisconnected, ToolCallError
from ..frames.host_machine import CallFailed
from ..transports.contract import CloseReason, TransportAttribute, TransportClosed
from . import _wire
from ._route import Route, quietly
from .client_watch import client_watch
from .errors import NoResponders, ReplicaLost
from .reply_inbox import reply_inbox
from .subjects import FrameSubjects

__all__ = ["HostRoute"]

logger = logging.getLogger("assistant_frames.nats")

# Values received and not yet read by the host: past this, they are dropped rather than
# held. Contexts never fill it: they wait in a queue of their own (one slot in this one).
_MAX_QUEUED = 4096
# Patches received and not yet read by the host: past this many, it reads too slowly to
# follow them; they are dropped, and the whole context asked for.
_MAX_PENDING = 1024
# Patches heard while a context request is answered, to apply after the answer.
_MAX_EARLY = 1024
# Another replica's change that the followed replica has not made within this many
# seconds: the host asks the followed replica whether it is still there, and current.
_MATCH_GRACE = 0.25
# Past this many such changes waiting to be matched, the host asks at once.
_MAX_UNMATCHED = 1024


class _Call:
    __slots__ = ("id", "liveness", "seen")

    def __init__(self, call_id: str, seen: float, liveness: float) -> None:
        self.id = call_id
        self.seen = seen  # when the replica was last heard about this call
        self.liveness = liveness


class _Ask:
    """A context request in flight: to every replica (``replica`` ``None``) or to one,
    which may answer "you hold my latest" when ``held`` is its number."""

    __slots__ = ("connecting", "deadline", "held", "number", "replica")

    def __init__(
        self,
        number: int,
        replica: str | None,
        held: int | None,
        deadline: float,
        connecting: bool,
    ) -> None:
        self.number = number
        self.replica = replica
        self.held = held
        self.deadline = deadline
        self.connecting = connecting  # the first: without an answer, the frame is not there


class HostRoute(Route):
    """The host's side of the frame protocol, carried over the frame's NATS subjects.

    Its host machine asked for patches (as on any connection), and gets them: the route
    hands it the followed replica's whole context and then that replica's patches, in
    order, numbered as the machine counts them (from its subscribe). ``held`` gives the
    context the host holds, in wire form, to tell another replica's change the host
    already has from one it has not.
    """

    def __init__(
        self,
        client: Client,
        subjects: FrameSubjects,
        *,
        liveness: float,
        context_timeout: float,
        held: Callable[[], Mapping[str, Any] | None] = lambda: None,
    ) -> None:
        super().__init__(client)
        self._subjects = subjects
        self.liveness = liveness
        self._context_timeout = context_timeout
        self._held = held
        self._shared = reply_inbox(client)
        self._inbox = self._shared.new_inbox()
        self._numbers = itertools.count(1)
        self._calls: dict[str, _Call] = {}  # reply subject -> call
        self._replies: dict[str, str] = {}  # call id -> reply subject
        self._tools = _wire.ReplicaTools()  # to report replicas that differ
        self.mismatch_reported = False
        send, receive = anyio.create_memory_object_stream[Any](_MAX_QUEUED)
        self._out, self._in = send, receive
        self._stack = AsyncExitStack()
        self.dropped = 0
        self.malformed = 0  # messages dropped as not what their subject carries
        #: The replica whose context the host holds, and whose patches it applies
        #: (``None``: none, before the first context or while it looks for one).
        self.following: str | None = None
        #: The number of the followed replica's context the host holds (once it has read
        #: the contexts queued for it).
        self.seq = 0
        #: Context requests after the first: a gap, a replica gone, a reconnection...
        self.resyncs = 0
        self._local = 0  # the host machine's number of its context
        # Contexts not yet read by the host, in order: (whole?, message). A whole one
        # replaces those before it; the marker in the queue above wakes the reader.
        self._pending: deque[tuple[bool, Any]] = deque()
        self._marked = False
        self._asked = False  # the host asked for the context (on connecting)
        self._ask: _Ask | None = None
        self._asks = itertools.count(1)
        self._answers = f"{self._inbox}.context-"  # + the ask's number: its reply subject
        self._early: list[tuple[str, int, Any]] = []  # patches heard while asking
        # What other replicas' patches changed that the host's context lacks, as they
        # last changed it: (part, tool name) -> (value, when heard). See _reflects.
        self._unmatched: dict[tuple[str, str], tuple[Any, float]] = {}
        self._reconnects = client.stats["reconnects"]
        self._idle: anyio.Event | None = None  # set to wake the watch waiting untimed
        self._on_arrival: Callable[[Any], bool] | None = None  # see receive_on_arrival
        self._queued = 0  # values pushed and not yet returned by receive
        self._contexts: Subscription  # the context subject's, once started

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        return {
            **super().extra_attributes,
            TransportAttribute.send_would_wait: lambda: self._send_would_wait,
        }

    def _send_would_wait(self) -> bool:
        """Whether publishing a call now could wait. nats-py's ``publish`` waits only to
        flush a buffer that would pass its ``pending_size`` (reconnecting, it buffers up
        to that, then raises), so no call of at most ``max_payload`` waits below it. Its
        buffer has no public getter: without one, every send could wait."""
        client = self._client
        limit = getattr(client, "_max_pending_size", None)
        pending = getattr(client, "_pending_data_size", None)
        if not isinstance(limit, int) or not isinstance(pending, int):
            return True
        return limit > 0 and pending + client.max_payload > limit

    @property
    def replica_tools(self) -> dict[str, set[str]]:
        """The tool names replicas published, by replica (to report a mismatch)."""
        return self._tools.tools

    async def start(self) -> None:
        """Subscribe to the replies (under the client's one inbox) and the context."""
        async with AsyncExitStack() as stack:
            await self._shared.open(self._inbox, self._on_reply)
            stack.push_async_callback(self._shared.close, self._inbox)
            contexts = await self._client.subscribe(self._subjects.context, cb=self._on_context)
            self._contexts = contexts
            # The subscription then, whichever it is (a test may renew it).
            stack.push_async_callback(quietly, lambda: self._contexts.unsubscribe())
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
                self.wake()
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
                if not self._asked:  # on connecting: every replica answers
                    self._asked = True
                    await self._request(None, connecting=True)
                else:  # the host could not use a patch: the whole context, again
                    await self._request(self.following)
            # model-context-subscribe / -unsubscribe: the context subject is always heard,
            # and its patches are what the host asked for.
        except (TypeError, ValueError):
            raise  # no JSON form: the host refuses the call, the route is fine
        except Exception as exc:  # nats-py's own errors
            if self._client.is_closed:  # for good: so is the route
                raise anyio.BrokenResourceError(f"NATS: {exc!r}") from exc
            # Cut off, and nats-py's buffer is full: a cancel is lost, not the route.
            logger.debug("Frame %r: not sent: %r", self._subjects.name, exc)

    async def _request(
        self, replica: str | None, held: int | None = None, *, connecting: bool = False
    ) -> None:
        """Ask every replica (``replica`` ``None``) or one for the context: the answers
        come to ``_on_answer``. ``held``: the number of that replica's context the host
        holds, which it answers with "you hold my latest" when it is still its own. One
        request at a time: one in flight to every replica, or to the same one (unless a
        whole context is wanted and it may answer without), will do.
        """
        ask = self._ask
        if ask is not None and (
            ask.replica is None
            or (ask.replica == replica and (ask.held is None or held is not None))
        ):
            return
        number = next(self._asks)
        deadline = anyio.current_time() + self._context_timeout
        self._ask = _Ask(number, replica, held, deadline, connecting)
        self.wake()
        if not connecting:
            self.resyncs += 1
        subject = self._subjects.context_get
        headers = None
        if replica is not None:
            subject = self._subjects.context_get_of(replica)
            if held is not None:
                headers = {_wire.SEQ: str(held)}
        try:
            await self._client.publish(
                subject, b"", reply=f"{self._answers}{number}", headers=headers
            )
        except Exception as exc:
            if connecting or self._client.is_closed:
                self._end(f"NATS: {exc!r}")
            # Cut off, and nats-py's buffer is full: the request's deadline asks again.

    async def _on_answer(self, msg: Msg) -> None:
        """An answer to a context request: the first answer to the one in flight is the
        context (the host follows its replica), every answer shows a replica's tools."""
        ask = self._ask
        current = ask is not None and msg.subject == f"{self._answers}{ask.number}"
        headers = msg.headers or {}
        error = headers.get(_wire.SERVICE_ERROR)
        if headers.get(_wire.STATUS) == _wire.NO_RESPONDERS or error is not None:
            if current:
                assert ask is not None
                await self._unanswered(
                    ask,
                    f"No replica of frame {self._subjects.name!r} answers on NATS"
                    if error is None
                    else f"Frame {self._subjects.name!r} could not send its context: {error}",
                )
            return
        if not msg.data:  # "you hold my latest": its number in AF-Seq
            if current:
                assert ask is not None
                self._ask = None
                if headers.get(_wire.SEQ) == str(self.seq):
                    await self._replay_early()
                else:  # not what the host holds (nor asked about): the whole, then
                    await self._request(ask.replica)
            return
        message = self._context_of(msg, "a context request's reply")
        if message is None:
            return
        body = message["message"]
        self._check_replicas(headers.get(_wire.REPLICA), body)
        if current:  # later answers are other replicas' of the same frame
            self._ask = None
            seq = _wire.seq_of(body)  # none: an older replica's, followed by no patches
            replica = _wire.replica_id(headers) if seq is not None else None
            await self._take_whole(message, replica, seq)

    async def _unanswered(self, ask: _Ask, why: str) -> None:
        """No answer to ``ask`` (no replica, an error, or none in time)."""
        self._ask = None
        if ask.connecting:
            self._end(why)
        elif ask.replica is not None:  # the replica followed is gone: any other will do
            self.following = None
            await self._request(None)
        else:  # no replica now: the context stays, the next one to publish is followed
            self.following = None

    # -- from the frame -------------------------------------------------------------------

    async def _on_reply(self, msg: Msg) -> None:
        call = self._calls.get(msg.subject)
        if call is None:
            if msg.subject.startswith(self._answers):
                await self._on_answer(msg)
            return  # finished, cancelled, or never ours
        headers = msg.headers
        # A replica's results and progress come without headers (the usual case, and
        # the fast one); heartbeats, endings and the server's own replies carry them.
        if headers and self._on_reply_headers(msg, call, headers):
            return
        call.seen = anyio.current_time()
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
            arrival = self._on_arrival
            if arrival is not None and not self._queued and not self._pending and arrival(message):
                return  # its caller is woken: the host's reading task is not
        self._push(message)

    def _on_reply_headers(self, msg: Msg, call: _Call, headers: dict[str, str]) -> bool:
        """What a reply's headers say of ``call``: whether that was all (a heartbeat, the
        server's "no responders", the replica lost or refusing); else it was heard from."""
        if headers.get(_wire.STATUS) == _wire.NO_RESPONDERS:
            self._forget(msg.subject, call)
            name = self._subjects.name
            self._push(
                CallFailed(call.id, NoResponders(f"No replica of frame {name!r} is running"))
            )
            return True
        call.seen = anyio.current_time()
        beat = headers.get(_wire.HEARTBEAT)
        if beat is not None:
            call.liveness = max(self.liveness, 4 * _seconds(beat))
            return True
        lost = headers.get(_wire.LOST)
        if lost is not None:
            self._forget(msg.subject, call)
            self._push(CallFailed(call.id, ReplicaLost(lost)))
            return True
        error = headers.get(_wire.SERVICE_ERROR)
        if error is not None:
            self._forget(msg.subject, call)
            why = f"Frame {self._subjects.name!r} refused the call: {error}"  # it never ran
            self._push(CallFailed(call.id, ToolCallError(why)))
            return True
        return False

    async def _on_context(self, msg: Msg) -> None:
        """A message on the context subject: a replica's whole context (its first, or
        after being cut off) or one of its patches."""
        try:
            message = _wire.decode(msg.data)
        except ValueError:
            message = None
        body = _wire.patch_body(message)
        whole = body is None
        if whole:
            if _wire.published_tools(message) is None:
                self._drop("the context subject")
                return
            body = message["message"]
        assert body is not None
        _wire.forget_document(body)
        headers = msg.headers or {}
        self._check_replicas(headers.get(_wire.REPLICA), body)
        replica, seq = _wire.replica_id(headers), _wire.seq_of(body)
        if whole:
            if replica is not None and seq is not None:
                if replica == self.following and seq <= self.seq and self._ask is None:
                    return  # one the host holds
            else:  # from a replica that numbers nothing (an older one): take it as it is
                replica = seq = None
            self._ask = None  # this answers any request
            await self._take_whole(message, replica, seq)
            return
        if replica is None or seq is None:
            self._drop("the context subject")  # a patch from no one to follow
            return
        if self._ask is not None:  # the answer decides which replica's patches apply
            self._keep_early(replica, seq, message)
        elif replica == self.following:
            if seq == self.seq + 1:
                self.seq = seq
                await self._queue_patch(message)
            elif seq > self.seq:  # missed some: ask this replica from what the host holds
                self._keep_early(replica, seq, message)
                await self._request(replica, self.seq)
        elif self.following is None:  # the host follows no one: ask every replica
            self._keep_early(replica, seq, message)
            if self._asked:  # else the host's own request, on connecting, comes next
                await self._request(None)
        else:
            # Another replica's change: the followed one makes the same, as a rule. What
            # the host lacks of it after _MATCH_GRACE, the watch asks its replica about
            # (which may be gone).
            await self._note_unmatched(body)

    async def _note_unmatched(self, body: dict[str, Any]) -> None:
        """Remember the parts of another replica's patch the host's context lacks."""
        changes = body["context"]
        parts: list[tuple[tuple[str, str], Any]] = [
            ((key, ""), changes[key]) for key in ("system", "uiResources") if key in changes
        ]
        parts += [(("tool", name), None) for name in body.get("removed") or ()]
        parts += [(("tool", name), spec) for name, spec in (changes.get("tools") or {}).items()]
        held, now, unmatched = self._held(), anyio.current_time(), self._unmatched
        for part, value in parts:
            if self._reflects(held, part, value):
                unmatched.pop(part, None)  # as the host holds it (its replica was first)
            else:
                unmatched[part] = (value, now)
                self.wake()
        if len(unmatched) > _MAX_UNMATCHED and self.following is not None:
            unmatched.clear()
            await self._request(self.following, self.seq)

    @staticmethod
    def _reflects(held: Mapping[str, Any] | None, part: tuple[str, str], value: Any) -> bool:
        """Whether the context ``held`` (wire form) has ``value`` as ``part``: ``system``,
        ``uiResources``, or a tool (``None``: none of that name)."""
        if held is None:
            return False
        key, name = part
        if key != "tool":
            return (value or None) == (held.get(key) or None)
        return bool((held.get("tools") or {}).get(name) == value)

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
        self._drop(where)
        return None

    def _drop(self, where: str) -> None:
        self.dropped += 1
        self.malformed += 1
        if self.malformed == 1:
            logger.warning(
                "Frame %r: dropped a message on %s that is no context", self._subjects.name, where
            )

    def _check_replicas(self, replica: str | None, body: dict[str, Any]) -> None:
        """Report replicas of this frame that publish different tool sets."""
        if not self._tools.heard(replica, body) or self.mismatch_reported:
            return
        if self._tools.differ():
            self.mismatch_reported = True
            sets = {r: sorted(t) for r, t in self._tools.tools.items()}
            logger.warning(
                "Replicas of frame %r publish different tools (each call may see other tools): %s",
                self._subjects.name,
                sets,
            )

    async def _take_whole(self, message: Any, replica: str | None, seq: int | None) -> None:
        """A whole context for the host: it replaces every context not yet read, and the
        host follows its replica (``None``: none) from its number on."""
        self.following, self.seq = replica, seq or 0
        self._unmatched.clear()
        self.dropped += len(self._pending)
        self._pending.clear()
        self._pending.append((True, message))
        self._mark()
        await self._replay_early()

    def _keep_early(self, replica: str, seq: int, message: Any) -> None:
        early = self._early
        early.append((replica, seq, message))
        if len(early) > _MAX_EARLY:
            del early[0]  # the oldest: applying the rest then finds a gap, and asks

    async def _replay_early(self) -> None:
        """Apply the followed replica's patches heard while asking, those that follow
        the context taken. The rest are dropped: as patches come in order, one that
        does not follow was forged, or its predecessor lost; the next real one shows
        a gap, and the host asks then (asking now could ask again without end)."""
        early, self._early = self._early, []
        if self.following is None:
            return
        mine = sorted((e for e in early if e[0] == self.following), key=lambda e: e[1])
        for _, seq, message in mine:
            if seq == self.seq + 1:
                self.seq = seq
                await self._queue_patch(message)

    async def _queue_patch(self, message: Any) -> None:
        self._pending.append((False, message))
        if len(self._pending) > _MAX_PENDING:
            # The host reads too slowly to follow patch by patch: the whole context.
            self.dropped += len(self._pending)
            self._pending.clear()
            logger.debug("Frame %r: the host reads too slowly to follow", self._subjects.name)
            await self._request(self.following)
        else:
            self._mark()

    def _mark(self) -> None:
        """Wake the reader for the contexts queued (a marker in the queue, if none is)."""
        if self._marked:
            return
        try:
            self._out.send_nowait(_CONTEXT)
            self._marked = True
        except anyio.WouldBlock:
            pass  # the reader is behind: it takes the contexts between other values
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass

    def _next_context(self) -> Any:
        """The next context for the host, numbered as its machine counts."""
        whole, message = self._pending.popleft()
        if not whole:
            self._local += 1
        message["message"]["seq"] = self._local
        return message

    def _push(self, value: Any) -> bool:
        try:
            self._out.send_nowait(value)
            self._queued += 1
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
        """Fail calls whose replica fell silent; runs until cancelled.

        With nothing to time (no call in flight, no request out, no change to match) it
        waits untimed while another route on the client looks at the client for it
        (:mod:`~assistant_frames.nats.client_watch`)."""
        # Often enough to see a closed client within 100 ms, as a transport would.
        tick = min(self.liveness / 4, 0.1)
        shared = client_watch(self._client)
        last = anyio.current_time()
        try:
            while True:
                if self._has_nothing_to_time() and shared.may_wait(self):
                    self._idle = wake = anyio.Event()
                    shared.waiting.add(self)
                    try:
                        await wake.wait()
                    finally:
                        self._idle = None
                        shared.waiting.discard(self)
                    now = last = anyio.current_time()  # nothing was timed meanwhile
                else:
                    # The poller looks twice as often: what it sees, every waiting route
                    # has still to act on within the 100 ms.
                    interval = tick / 2 if shared.poller is self else tick
                    await anyio.sleep(interval)
                    now = anyio.current_time()
                    # Woken late: this host's event loop was blocked (its replicas'
                    # heartbeats wait unread), and the time it did not listen is not their
                    # silence.
                    stalled, last = now - last - interval, now
                    if stalled > interval:
                        self._stalled(now, stalled)
                shared.look(self)
                if self._client.is_closed:  # for good (not reconnecting): so is this frame
                    self._end(f"The NATS connection to frame {self._subjects.name!r} was closed")
                    return
                await self._watch_context(now)
                self._fail_silent(now)
        finally:
            shared.leave(self)

    def wake(self) -> None:
        """Stop waiting untimed: there is something to time, or to look at."""
        if self._idle is not None:
            self._idle.set()

    def _has_nothing_to_time(self) -> bool:
        return not self._calls and self._ask is None and not self._unmatched

    def _stalled(self, now: float, stalled: float) -> None:
        """Push every deadline on by the ``stalled`` seconds the loop did not listen."""
        for call in self._calls.values():
            call.seen = min(now, call.seen + stalled)
        if self._ask is not None:  # its answers wait unread too
            self._ask.deadline += stalled
        for part, (value, heard) in list(self._unmatched.items()):
            self._unmatched[part] = (value, heard + stalled)

    def _fail_silent(self, now: float) -> None:
        """Fail the calls whose replica has not been heard for their ``liveness``."""
        for reply, call in list(self._calls.items()):
            if now - call.seen > call.liveness:
                self._forget(reply, call)
                why = (
                    f"The replica of frame {self._subjects.name!r} running the call went "
                    f"silent for {call.liveness:g} s (stopped, killed or cut off)"
                )
                self._push(CallFailed(call.id, ReplicaLost(why)))

    async def _watch_context(self, now: float) -> None:
        """Ask again when a request went unanswered, when another replica's change is
        not the host's after ``_MATCH_GRACE``, and once reconnected (patches may have
        gone by meanwhile)."""
        ask = self._ask
        if ask is not None and now > ask.deadline:
            await self._unanswered(
                ask,
                f"No replica of frame {self._subjects.name!r} sent its context within "
                f"{self._context_timeout:g} s",
            )
        if self._unmatched:
            held, lacking = self._held(), False
            for part, (value, heard) in list(self._unmatched.items()):
                if now - heard > _MATCH_GRACE:
                    del self._unmatched[part]
                    lacking = lacking or not self._reflects(held, part, value)
            if lacking and self.following is not None:
                await self._request(self.following, self.seq)
        reconnects = self._client.stats["reconnects"]
        if reconnects != self._reconnects and self._client.is_connected:
            self._reconnects = reconnects
            if self._asked and self._ask is None:
                await self._request(self.following, self.seq)

    # -- the stream ---------------------------------------------------------------------------

    async def receive(self) -> Any:
        while True:
            if self._pending and not self._marked:  # its marker was not queued
                return self._next_context()
            value = await self._in.receive()
            if value is _CONTEXT:
                self._marked = False
                if not self._pending:
                    continue  # taken already
                context = self._next_context()
                if self._pending:
                    self._mark()  # the rest after what is queued now
                return context
            self._queued -= 1
            if type(value) is _Ended:
                raise TransportClosed(CloseReason(value.why, clean=False))
            return value

    def receive_on_arrival(self, handler: Callable[[Any], bool] | None) -> None:
        """Offer ``handler(message)`` each call's result as it arrives, while nothing is
        queued before it; it returns whether it took the result, which is otherwise
        queued for :meth:`receive` (``None``: queue every result again), as a WebSocket
        transport does. ``handler`` runs in nats-py's subscription task: it may settle
        futures and set events, and must not raise or wait. A host uses it to wake the
        caller without waking its reading task first."""
        self._on_arrival = handler

    async def aclose(self) -> None:
        await super().aclose()
        self._out.close()
        self._in.close()
        with anyio.CancelScope(shield=True):
            await self._stack.aclose()


_CONTEXT = object()  # in the queue: read the route's next context there


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
