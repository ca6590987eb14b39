"""A pair of connected in-memory transports, for frames in the same process and tests."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

import anyio
from anyio.abc import ObjectStream
from pydantic_core import PydanticSerializationError, to_jsonable_python

from .._anyio import event_class

__all__ = ["MemoryTransport", "copy_json", "memory_pair"]


def copy_json(value: Any) -> Any:
    """A deep copy of ``value`` in its JSON form; ``TypeError`` if it has none.

    Like ``postMessage``'s structured clone, the receiver gets its own copy, so neither
    side can change what the other holds. The copy is what JSON would carry: tuples and
    sets become lists, Pydantic models and dataclasses become objects, non-finite floats
    become ``None``. Runs in pydantic-core (Rust), several times faster than Python.
    """
    try:
        return to_jsonable_python(value, inf_nan_mode="null")
    except (PydanticSerializationError, ValueError, RecursionError) as exc:
        raise TypeError(f"Cannot send a value that has no JSON form: {exc}") from None


class _Direction:
    """The messages flowing one way, and who is waiting for them."""

    __slots__ = ("eof", "items", "receiver_closed", "waiter")

    def __init__(self) -> None:
        self.items: deque[Any] = deque()
        self.waiter: anyio.Event | None = None
        self.eof = False  # the sender is done: the receiver drains, then gets EndOfStream
        self.receiver_closed = False  # sending now raises BrokenResourceError

    def wake(self) -> None:
        waiter, self.waiter = self.waiter, None
        if waiter is not None:
            waiter.set()


class MemoryTransport(ObjectStream[Any]):
    """One end of :func:`memory_pair`: an anyio object stream of JSON messages.

    Like ``postMessage``, :meth:`send` never blocks: the buffer is unbounded and
    sending only queues a copy and wakes the receiver. :meth:`receive` waits only when
    nothing is queued.
    """

    def __init__(self, incoming: _Direction, outgoing: _Direction) -> None:
        self._incoming = incoming
        self._outgoing = outgoing
        self._closed = False
        self._new_event: Callable[[], anyio.Event] | None = None

    async def send(self, item: Any) -> None:
        """Queue a copy of ``item`` for the peer; ``TypeError`` if it is not JSON data."""
        outgoing = self._outgoing
        if self._closed or outgoing.eof:
            raise anyio.ClosedResourceError
        if outgoing.receiver_closed:
            raise anyio.BrokenResourceError
        outgoing.items.append(copy_json(item))
        outgoing.wake()

    async def receive(self) -> Any:
        """The next message; ``anyio.EndOfStream`` once the peer has closed."""
        incoming = self._incoming
        while True:
            if self._closed:
                raise anyio.ClosedResourceError
            if incoming.items:
                return incoming.items.popleft()
            if incoming.eof:
                raise anyio.EndOfStream
            waiter = incoming.waiter
            if waiter is None:
                if self._new_event is None:
                    self._new_event = event_class()
                waiter = incoming.waiter = self._new_event()
            await waiter.wait()

    async def send_eof(self) -> None:
        """Close the sending direction; the peer's ``receive`` ends once it has drained."""
        self._outgoing.eof = True
        self._outgoing.wake()

    async def aclose(self) -> None:
        """Close both directions (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._outgoing.eof = True
        self._outgoing.wake()
        self._incoming.receiver_closed = True
        self._incoming.items.clear()
        self._incoming.wake()


def memory_pair() -> tuple[MemoryTransport, MemoryTransport]:
    """Two connected transports: what one sends, the other receives (as its own copy)."""
    a_to_b, b_to_a = _Direction(), _Direction()
    return MemoryTransport(b_to_a, a_to_b), MemoryTransport(a_to_b, b_to_a)
