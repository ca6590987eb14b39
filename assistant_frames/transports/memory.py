"""A pair of connected in-memory transports, for frames in the same process and tests."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Mapping
from contextvars import copy_context
from typing import Any

import anyio
from anyio.abc import ObjectStream
from pydantic_core import PydanticSerializationError, to_jsonable_python

from .._anyio import event_class
from .._json import decode_json, encode_json
from .contract import (
    CloseReason,
    TransportAttribute,
    TransportClosed,
    UnsendableMessage,
    decode_message,
    encode_message,
)

__all__ = ["DEFAULT_MAX_BUFFER_SIZE", "MemoryTransport", "copy_json", "memory_pair"]


def copy_json(value: Any) -> Any:
    """A deep copy of ``value`` in its JSON form; :class:`UnsendableMessage` (a
    ``TypeError``) if it has none.

    Like ``postMessage``'s structured clone, the receiver gets its own copy, so neither
    side can change what the other holds. The copy is what JSON would carry: tuples and
    sets become lists, Pydantic models and dataclasses become objects, non-finite floats
    become ``None``. Runs in pydantic-core (Rust), several times faster than Python.
    What pydantic-core refuses (an object key holding a lone surrogate, very deep
    nesting) goes through JSON as the stream transports send it, so every transport
    keeps one rule.
    """
    try:
        return to_jsonable_python(value, inf_nan_mode="null")
    except (PydanticSerializationError, ValueError, RecursionError):
        pass
    try:
        return decode_json(encode_json(value))
    except TypeError as exc:  # encode_json says what has no JSON form
        raise UnsendableMessage(str(exc)) from None


def _limited_copy(limit: int) -> Callable[[Any], Any]:
    """A ``copy_json`` that also refuses messages over ``limit`` bytes of JSON."""

    def copy(value: Any) -> Any:
        return decode_message(encode_message(value, limit))

    return copy


#: How many messages wait, each way, for a peer that does not read, unless
#: ``memory_pair(max_buffer_size=...)`` says otherwise (``math.inf``: no bound).
DEFAULT_MAX_BUFFER_SIZE = 1024

_PEER_CLOSED = CloseReason()  # the peer closed: clean, and nothing more to say


class _Latest:
    """A message sent with ``send_latest``: replaced in place until it is received."""

    __slots__ = ("key", "value")

    def __init__(self, key: str, value: Any) -> None:
        self.key = key
        self.value = value


class _Direction:
    """The messages flowing one way, and who is waiting for them."""

    __slots__ = (
        "bounded",
        "eof",
        "items",
        "latest",
        "max_size",
        "receiver",
        "receiver_closed",
        "room",
        "waiter",
    )

    def __init__(self, max_size: float) -> None:
        self.items: deque[Any] = deque()
        self.max_size = max_size
        self.bounded = max_size != math.inf
        self.latest: dict[str, _Latest] = {}  # send_latest messages not received yet
        self.waiter: anyio.Event | None = None  # the receiver, waiting for a message
        self.room: anyio.Event | None = None  # senders, waiting for the buffer to drain
        self.eof = False  # the sender is done: the receiver drains, then gets EndOfStream
        self.receiver_closed = False  # sending now raises BrokenResourceError
        # MemoryTransport.receive_inline's handler: offered a message when none is queued.
        self.receiver: Callable[[Any], bool] | None = None

    def wake(self) -> None:
        waiter, self.waiter = self.waiter, None
        if waiter is not None:
            waiter.set()

    def wake_senders(self) -> None:
        room, self.room = self.room, None
        if room is not None:
            room.set()


class MemoryTransport(ObjectStream[Any]):
    """One end of :func:`memory_pair`: an anyio object stream of JSON messages.

    Like ``postMessage``, :meth:`send` does not block by default: the buffer is
    unbounded and sending only queues a copy and wakes the receiver. With a
    ``max_buffer_size``, :meth:`send` waits while that many messages are queued for the
    peer. :meth:`receive` waits only when nothing is queued.
    """

    def __init__(
        self, incoming: _Direction, outgoing: _Direction, max_message_bytes: int | None = None
    ) -> None:
        self._incoming = incoming
        self._outgoing = outgoing
        self._closed = False
        self._new_event: Callable[[], anyio.Event] | None = None
        self._max_message_bytes = max_message_bytes
        self._copy = copy_json if max_message_bytes is None else _limited_copy(max_message_bytes)

    async def send(self, item: Any) -> None:
        """Queue a copy of ``item`` for the peer.

        Raises :class:`~assistant_frames.transports.UnsendableMessage` (a ``TypeError``)
        if it is not JSON data, :class:`~assistant_frames.transports.MessageTooLarge` if
        it is larger than ``max_message_bytes``. Waits (cancellably) while the peer has
        ``max_buffer_size`` messages queued.
        """
        value = self._copy(item)
        outgoing = self._outgoing
        if self._stopped() or (outgoing.bounded and len(outgoing.items) >= outgoing.max_size):
            await self._put(value)  # raises, or waits for room
            return
        receiver = outgoing.receiver
        if receiver is not None and not outgoing.items and receiver(value):
            return  # the hottest path: the receiver took it at once
        outgoing.items.append(value)  # the hot path: queue and wake, no await
        outgoing.wake()

    @property
    def send_would_wait(self) -> bool:
        """Whether :meth:`send` could wait right now (never, unless bounded and full)."""
        return self._would_wait()

    def _would_wait(self) -> bool:
        outgoing = self._outgoing
        return len(outgoing.items) >= outgoing.max_size

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        """:class:`TransportAttribute` ``send_latest``, ``send_would_wait``,
        ``max_message_bytes`` and ``receive_ready``."""
        incoming = self._incoming
        return {
            TransportAttribute.send_latest: lambda: self.send_latest,
            TransportAttribute.send_would_wait: lambda: self._would_wait,
            TransportAttribute.max_message_bytes: lambda: self._max_message_bytes,
            TransportAttribute.receive_ready: lambda: lambda: bool(incoming.items),
        }

    async def send_latest(self, key: str, item: Any) -> None:
        """Like :meth:`send`, but replace a message sent earlier under the same ``key``
        that the peer has not received yet (it gets the newer one in its place).

        Frames send their context snapshots this way, so a peer that does not read
        holds one snapshot, not one per change.
        """
        value = self._copy(item)
        outgoing = self._outgoing
        waiting = outgoing.latest.get(key)
        if waiting is not None and not self._closed:
            waiting.value = value
            return
        receiver = outgoing.receiver
        if receiver is not None and not outgoing.items and not self._stopped() and receiver(value):
            return
        latest = _Latest(key, value)
        await self._put(latest)
        self._outgoing.latest[key] = latest

    def _stopped(self) -> bool:
        """Whether sending must raise (or wait): closed, done, or the receiver gone."""
        outgoing = self._outgoing
        return self._closed or outgoing.eof or outgoing.receiver_closed

    def receive_inline(self, handler: Callable[[Any], bool] | None) -> None:
        """Offer ``handler(message)`` each message the peer sends while none is queued,
        at once, in the peer's task; it returns whether it took the message, which is
        otherwise queued for :meth:`receive` (``None``: queue every message again).

        A host or frame whose handling of a message never waits uses it to skip the
        wake-up of its reading task. ``handler`` runs in a copy of the context
        (``contextvars``) this is called in, as if the task that calls it had read the
        message: tasks it starts see the receiver's variables, not the sender's.
        Messages that find others queued queue behind them, so the order holds;
        :meth:`receive` goes on returning those, the end of the stream and closing.
        ``handler`` must not raise, and must not wait: it runs inside the peer's
        ``send``.
        """
        if handler is None:
            self._incoming.receiver = None
            return
        run = copy_context().run
        self._incoming.receiver = lambda message: run(handler, message)

    async def _put(self, value: Any) -> None:
        """Queue ``value``, already the receiver's own copy, once there is room."""
        outgoing = self._outgoing
        while True:
            if self._closed or outgoing.eof:
                raise anyio.ClosedResourceError
            if outgoing.receiver_closed:
                raise anyio.BrokenResourceError
            if len(outgoing.items) < outgoing.max_size:
                break
            await self._wait_for_room()
        outgoing.items.append(value)
        outgoing.wake()

    async def _wait_for_room(self) -> None:
        outgoing = self._outgoing
        room = outgoing.room
        if room is None:
            room = outgoing.room = self._event()
        await room.wait()

    def _event(self) -> anyio.Event:
        if self._new_event is None:
            self._new_event = event_class()
        return self._new_event()

    async def receive(self) -> Any:
        """The next message; :class:`~assistant_frames.transports.TransportClosed` (an
        ``anyio.EndOfStream``) once the peer has closed and everything it sent is read."""
        incoming = self._incoming
        while True:
            if self._closed:
                raise anyio.ClosedResourceError
            if incoming.items:
                item = incoming.items.popleft()
                if incoming.room is not None:
                    incoming.wake_senders()
                if type(item) is _Latest:
                    del incoming.latest[item.key]
                    return item.value
                return item
            if incoming.eof:
                raise TransportClosed(_PEER_CLOSED)
            waiter = incoming.waiter
            if waiter is None:
                waiter = incoming.waiter = self._event()
            await waiter.wait()

    async def send_eof(self) -> None:
        """Close the sending direction; the peer's ``receive`` ends once it has drained."""
        self._outgoing.eof = True
        self._outgoing.wake()
        self._outgoing.wake_senders()

    async def aclose(self) -> None:
        """Close both directions (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._outgoing.eof = True
        self._outgoing.wake()
        self._outgoing.wake_senders()
        self._incoming.receiver_closed = True
        self._incoming.receiver = None
        self._incoming.items.clear()
        self._incoming.latest.clear()
        self._incoming.wake()
        self._incoming.wake_senders()


def memory_pair(
    max_buffer_size: float = DEFAULT_MAX_BUFFER_SIZE, *, max_message_bytes: int | None = None
) -> tuple[MemoryTransport, MemoryTransport]:
    """Two connected transports: what one sends, the other receives (as its own copy).

    ``max_buffer_size`` (:data:`DEFAULT_MAX_BUFFER_SIZE`, 1,024) bounds each
    direction, as every transport bounds what waits for a peer that does not read:
    ``send`` waits while that many messages are queued (frames keep at most one
    context snapshot waiting per peer on top, see :meth:`MemoryTransport.send_latest`).
    ``math.inf`` lifts the bound: sending then never waits, as with ``postMessage``,
    and a receiver that never reads grows memory without end.

    ``max_message_bytes`` makes ``send`` refuse messages larger than that as JSON
    (:class:`~assistant_frames.transports.MessageTooLarge`); by default there is no limit,
    and the copy is made without encoding to JSON. The peer of a memory transport can only
    go by closing it (``aclose``, as its owner does when it is cancelled or fails), so the
    end of the stream is always clean and seen at once.
    """
    if not max_buffer_size >= 1:
        raise ValueError(f"max_buffer_size must be at least 1, not {max_buffer_size!r}")
    if max_message_bytes is not None and max_message_bytes < 1:
        raise ValueError(f"max_message_bytes must be at least 1, not {max_message_bytes!r}")
    a_to_b, b_to_a = _Direction(max_buffer_size), _Direction(max_buffer_size)
    return (
        MemoryTransport(b_to_a, a_to_b, max_message_bytes),
        MemoryTransport(a_to_b, b_to_a, max_message_bytes),
    )
