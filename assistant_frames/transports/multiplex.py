"""Several protocols over one transport: each received message goes to the protocol that
claims it.

A :class:`Multiplexer` owns one transport and one task that reads it. Each protocol
opens a sub-stream with a *claim*, a predicate on a received message
(:func:`frame_channel`, :func:`jsonrpc`, :func:`channel`); the first open sub-stream
whose claim matches gets the message, in order. A message no sub-stream claims is
dropped and logged (the first at WARNING, later ones at DEBUG). Every sub-stream is a
transport with the same contract as the one it shares: ``send`` goes straight to the
shared transport, the end of the transport reaches every sub-stream (as a copy of what the
transport raised, so ``close_reason`` reads the same reason from each), and the shared
transport's ``extra_attributes`` pass through, so ``AssistantFrameProvider.serve`` and
``AssistantFrameHost`` work on a sub-stream exactly as on the bare transport. Closing a
sub-stream leaves the others and the transport open, except that closing the last one
closes the transport (the transport conformance suite runs on a sub-stream too).

Backpressure: each sub-stream buffers at most ``max_buffer_size`` received messages.
While the sub-stream a message belongs to is full, the multiplexer stops reading the
shared transport until its consumer takes one (or closes it), as a bare transport whose
consumer stops reading does. Nothing is dropped and memory stays bounded, at the price
that one protocol whose consumer stops reading holds up the others behind it.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Mapping
from contextlib import suppress
from typing import Any

import anyio
from anyio.abc import ObjectStream

from .._anyio import event_class
from .._driver import Lifecycle
from .._logs import log_first_loudly
from .contract import TransportAttribute

__all__ = [
    "FRAME_CHANNEL",
    "RELAY_CHANNEL",
    "Claim",
    "MultiplexedStream",
    "Multiplexer",
    "channel",
    "frame_channel",
    "jsonrpc",
]

logger = logging.getLogger("assistant_frames.transports")

#: The frame protocol's channel (assistant-ui's Assistant Frames).
FRAME_CHANNEL = "assistant-ui-frame"
#: The channel the shipped browser relays use for their own control messages.
RELAY_CHANNEL = "assistant-frames-relay"
#: The default bound on the messages one sub-stream holds for its consumer.
DEFAULT_MAX_BUFFER_SIZE = 64

#: A predicate on a received message: ``True`` when the sub-stream it opens takes it.
Claim = Callable[[Any], bool]


def frame_channel(message: Any) -> bool:
    """Claims frame-protocol messages: objects whose ``"channel"`` is ``"assistant-ui-frame"``,
    and the parent relay's ``frame-loaded`` notice (the frame host acts on it)."""
    if not isinstance(message, dict):
        return False
    name = message.get("channel")
    if name == FRAME_CHANNEL:
        return True
    inner = message.get("message")
    return name == RELAY_CHANNEL and isinstance(inner, dict) and inner.get("type") == "frame-loaded"


def jsonrpc(message: Any) -> bool:
    """Claims JSON-RPC 2.0 messages (MCP, MCP Apps): objects whose ``"jsonrpc"`` is ``"2.0"``.

    Batches (arrays) are not claimed: MCP does not use them.
    """
    return isinstance(message, dict) and message.get("jsonrpc") == "2.0"


def channel(name: str) -> Claim:
    """A claim for the objects whose ``"channel"`` is ``name`` (e.g. :data:`RELAY_CHANNEL`)."""

    def claim(message: Any) -> bool:
        return isinstance(message, dict) and message.get("channel") == name

    claim.__name__ = claim.__qualname__ = f"channel({name!r})"
    return claim


def _describe(message: Any) -> str:
    """A short description of a message for the log, never its whole content."""
    if isinstance(message, dict):
        for key in ("channel", "jsonrpc", "type", "method"):
            value = message.get(key)
            if isinstance(value, str):
                return f"an object with {key}={value[:80]!r}"
        keys = ", ".join(repr(str(key)[:40]) for key in list(message)[:5])
        more = ", ..." if len(message) > 5 else ""
        return f"an object with keys [{keys}{more}]"
    return f"a value of type {type(message).__name__}"


def _duplicate(error: BaseException) -> BaseException:
    """A copy of ``error`` (same type, arguments and attributes, such as a
    ``TransportClosed``'s ``reason``) to raise in one more task.

    Raising one exception object in several tasks would mix their tracebacks. The copy
    is made without calling ``__init__``, whose signature may differ from ``args``.
    """
    cls = type(error)
    try:
        duplicate = cls.__new__(cls, *error.args)
        duplicate.__dict__.update(error.__dict__)
    except Exception:  # an exception class that cannot be copied: raise the original
        return error
    return duplicate


class MultiplexedStream(ObjectStream[Any]):
    """One protocol's share of a :class:`Multiplexer`'s transport (from :meth:`~Multiplexer.open`).

    :meth:`receive` returns only the messages this sub-stream's claim took, in order, then
    raises what the shared transport raised at its end (``anyio.EndOfStream`` with the
    peer's close reason, ``anyio.BrokenResourceError``...). :meth:`send` sends on the shared
    transport. :meth:`aclose` stops routing to this sub-stream (its later messages go to
    the next claim that matches, or are unclaimed) and leaves the transport and the
    other sub-streams open. ``extra_attributes`` are the shared transport's.
    """

    def __init__(self, mux: Multiplexer, claim: Claim, max_buffer_size: int, name: str) -> None:
        self._mux = mux
        self._transport = mux.transport
        self.claim = claim
        self.name = name
        self._max = max_buffer_size
        self._items: deque[Any] = deque()
        self._closed = False
        self._eof_sent = False
        self._waiter: anyio.Event | None = None  # the consumer, waiting for a message
        self._room: anyio.Event | None = None  # the reader, waiting for room
        attributes: dict[Any, Callable[[], Any]] = dict(self._transport.extra_attributes)
        self._inner_send_latest = self._transport.extra(TransportAttribute.send_latest, None)
        if self._inner_send_latest is not None:
            attributes[TransportAttribute.send_latest] = lambda: self._send_latest
        self._attributes: Mapping[Any, Callable[[], Any]] = attributes

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{len(self._items)} buffered"
        return f"<MultiplexedStream {self.name} ({state})>"

    @property
    def closed(self) -> bool:
        """Whether this sub-stream was closed (by itself or with its multiplexer)."""
        return self._closed

    async def send(self, item: Any) -> None:
        """Send ``item`` on the shared transport (safe from several tasks at once)."""
        if self._closed or self._eof_sent:
            raise anyio.ClosedResourceError
        await self._transport.send(item)

    async def _send_latest(self, key: str, item: Any) -> None:
        # Each sub-stream has its own keys, so protocols never replace each other's messages.
        if self._closed or self._eof_sent:
            raise anyio.ClosedResourceError
        assert self._inner_send_latest is not None
        await self._inner_send_latest(f"{id(self)}:{key}", item)

    async def receive(self) -> Any:
        """The next message this sub-stream claimed; at the end, what the transport raised."""
        while True:
            if self._closed:
                raise anyio.ClosedResourceError
            items = self._items
            if items:
                item = items.popleft()
                room = self._room
                if room is not None:
                    self._room = None
                    room.set()
                return item
            error = self._mux._error
            if error is not None:
                raise _duplicate(error) from None
            waiter = self._waiter
            if waiter is None:
                waiter = self._waiter = self._mux._new_event()
            await waiter.wait()

    async def send_eof(self) -> None:
        """Refuse further sends on this sub-stream; the shared transport stays open.

        There is no end-of-stream per protocol on the wire: the peer is not told.
        """
        self._eof_sent = True

    async def aclose(self) -> None:
        """Stop receiving this protocol's messages; the transport and the others stay open.

        Closing the last open sub-stream closes the multiplexer and so the transport: with
        no protocol left on it, the peer sees the end, as it would on a bare transport.
        """
        if self._closed:
            return
        self._closed = True
        self._mux._detach(self)
        self._items.clear()
        self._wake()
        if not self._mux._streams:
            await self._mux.aclose()

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        """The shared transport's attributes (``TransportAttribute``, WebSocket origin...),
        and ``receive_ready`` for this sub-stream's own messages."""
        items = self._items
        return {**self._attributes, TransportAttribute.receive_ready: lambda: lambda: bool(items)}

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None:
            waiter.set()
        room, self._room = self._room, None
        if room is not None:
            room.set()


class Multiplexer(Lifecycle):
    """Carries several protocols over one transport; use as an async context manager.

    Open a sub-stream per protocol with :meth:`open`, preferably *before* entering
    (messages that arrive before a protocol's sub-stream is open are unclaimed), then
    hand each sub-stream to its protocol::

        mux = Multiplexer(transport)
        frames = mux.open(frame_channel)
        rpc = mux.open(jsonrpc)
        async with mux, anyio.create_task_group() as tg:
            tg.start_soon(frame.serve, frames)
            tg.start_soon(serve_jsonrpc, rpc)

    Entering starts the one task that reads the transport; leaving (or :meth:`aclose`)
    stops it, closes every sub-stream and closes the transport. A sub-stream holds at
    most ``max_buffer_size`` messages (per :meth:`open` too); while the one a message
    belongs to is full, reading pauses (see the module's documentation).
    """

    def __init__(
        self, transport: ObjectStream[Any], *, max_buffer_size: int = DEFAULT_MAX_BUFFER_SIZE
    ) -> None:
        _check_size(max_buffer_size)
        self.transport = transport
        self.max_buffer_size = max_buffer_size
        self._streams: list[MultiplexedStream] = []
        self._error: BaseException | None = None  # how the transport ended
        self._closed = False
        self._entered = False
        self._unclaimed = 0
        self._claim_errors = 0
        self._reader_scope = anyio.CancelScope()
        self._init_lifecycle()
        self._new_event: Callable[[], anyio.Event] = anyio.Event

    @property
    def unclaimed(self) -> int:
        """How many received messages no sub-stream claimed (they were dropped)."""
        return self._unclaimed

    @property
    def streams(self) -> tuple[MultiplexedStream, ...]:
        """The open sub-streams, in the order their claims are tried."""
        return tuple(self._streams)

    def open(
        self,
        claim: Claim,
        *,
        max_buffer_size: int | None = None,
        name: str | None = None,
    ) -> MultiplexedStream:
        """A sub-stream for the messages ``claim`` takes (after the claims opened earlier).

        ``claim(message)`` is called in the reader task for each received message that
        no earlier sub-stream claimed; it must be quick and must not raise (one that does
        is logged and counts as not claiming). Raises ``anyio.ClosedResourceError`` once
        the multiplexer is closed.
        """
        if self._closed:
            raise anyio.ClosedResourceError
        size = self.max_buffer_size if max_buffer_size is None else max_buffer_size
        _check_size(size)
        label = name or getattr(claim, "__name__", None) or repr(claim)
        stream = MultiplexedStream(self, claim, size, label)
        self._streams.append(stream)
        return stream

    async def __aenter__(self) -> Multiplexer:
        if self._entered:
            raise RuntimeError("A Multiplexer can be entered only once")
        if self._closed:
            raise anyio.ClosedResourceError
        self._entered = True
        self._new_event = event_class()
        async with self._tasks.open() as group:
            group.start_soon(self._read)
        return self

    async def aclose(self) -> None:
        """Stop reading, close every sub-stream and close the transport (idempotent).

        Callable from any task; the ``async with`` block itself goes on.
        """
        await self._stop()

    async def _stop(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._reader_scope.cancel()
        for stream in list(self._streams):
            await stream.aclose()
        with anyio.CancelScope(shield=True):
            await self.transport.aclose()

    def _detach(self, stream: MultiplexedStream) -> None:
        with suppress(ValueError):
            self._streams.remove(stream)

    # -- the reader ----------------------------------------------------------------------

    async def _read(self) -> None:
        receive = self.transport.receive
        with self._reader_scope:
            try:
                while True:
                    message = await receive()
                    await self._route(message)
            except Exception as exc:  # the transport's end, as each sub-stream will raise it
                self._error = exc
                for stream in self._streams:
                    stream._wake()

    async def _route(self, message: Any) -> None:
        while True:
            target = None
            for stream in self._streams:
                if self._claims(stream, message):
                    target = stream
                    break
            if target is None:
                self._on_unclaimed(message)
                return
            if len(target._items) < target._max:
                target._items.append(message)
                waiter = target._waiter
                if waiter is not None:
                    target._waiter = None
                    waiter.set()
                return
            # Full: stop reading until its consumer takes one, then route again (it may
            # have been closed meanwhile, and the message then goes elsewhere).
            room = target._room = self._new_event()
            await room.wait()

    def _claims(self, stream: MultiplexedStream, message: Any) -> bool:
        try:
            return bool(stream.claim(message))
        except Exception:
            self._claim_errors += 1
            log_first_loudly(
                logger,
                self._claim_errors == 1,
                "The claim of sub-stream %s raised on %s; counted as not claiming it",
                stream.name,
                _describe(message),
                exc_info=True,
            )
            return False

    def _on_unclaimed(self, message: Any) -> None:
        self._unclaimed += 1
        if self._unclaimed == 1:
            logger.warning(
                "Dropped %s: no protocol on this transport claims it "
                "(further unclaimed messages are logged at DEBUG)",
                _describe(message),
            )
        else:
            logger.debug("Dropped %s: no protocol claims it", _describe(message))


def _check_size(size: int) -> None:
    if not (isinstance(size, int) and size >= 1):
        raise ValueError(f"max_buffer_size must be a positive integer, not {size!r}")
