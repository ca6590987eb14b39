"""The bytes a stream transport has to write, and the one task that writes them.

Senders queue whole messages and return; a writer task (:meth:`Outbox.run`, in the
transport's task group) writes them in order. So:

* receiving never waits for a sender: replies the protocol owes the peer (WebSocket
  pongs, the answer to a close) are queued ahead of data with :meth:`put_urgent`;
* a sender cancelled while it waits for room has queued nothing, and a queued message
  is written whole, so cancelling a send can never cut a message in two;
* memory is bounded: :meth:`put` waits (first come, first served) while more than
  ``high_water`` bytes are queued, which also slows a sender whose peer stopped reading.

A transport built by hand without a writer task still works: :meth:`put` then writes
inline, as a lock-protected send would. A stream that can write without waiting
(``try_write``: a non-blocking pipe; off asyncio, a plain socket) takes a message at
once while nothing is queued, so the writer task only writes what the stream could not
take: a message goes out in the task that sent it, and a cancellation still cannot cut
it (no await in between).

asyncio's transports already buffer whole writes in order and never block on them, so
for those (:class:`BufferedWriter`) :class:`DirectOutbox` hands every message over at
once and skips the writer task and its task switch per message.
"""

from __future__ import annotations

import socket
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sized
from typing import Any, Protocol, runtime_checkable

import anyio
import anyio.abc

from .._anyio import running_asyncio
from .contract import TransportAttribute

__all__ = [
    "DEFAULT_HIGH_WATER",
    "BufferedWriter",
    "DirectOutbox",
    "Outbox",
    "outbox_attributes",
    "outbox_for",
]

DEFAULT_HIGH_WATER = 1024 * 1024
_BATCH_BYTES = 256 * 1024  # small messages are joined into writes of up to this size


class _OutboxBase:
    """What both outboxes share: first come first served ``put``s, closing, failure."""

    __slots__ = ("_closed", "_error", "_lock")

    def __init__(self) -> None:
        self._lock = anyio.Lock(fast_acquire=True)  # first come, first served
        self._closed = False
        self._error: BaseException | None = None

    @property
    def error(self) -> BaseException | None:
        """Why writing failed (the stream broke), or ``None``."""
        return self._error

    def close(self) -> None:
        """Refuse further ``put`` (queued output is still written, and the closing
        handshake may still queue its frames)."""
        self._closed = True

    def _check(self) -> None:
        if self._error is not None:
            raise anyio.BrokenResourceError(str(self._error)) from self._error
        if self._closed:
            raise anyio.ClosedResourceError


class Outbox(_OutboxBase):
    """Queued output for one byte stream; ``write(b"")`` means half-close (EOF)."""

    __slots__ = (
        "_data",
        "_high_water",
        "_progress",
        "_running",
        "_size",
        "_try_write",
        "_urgent",
        "_wake",
        "_write",
        "_writing",
    )

    def __init__(
        self,
        write: Callable[[bytes], Awaitable[None]],
        *,
        high_water: int = DEFAULT_HIGH_WATER,
        try_write: Callable[[bytes], int] | None = None,
    ) -> None:
        super().__init__()
        self._write = write
        self._try_write = try_write  # bytes written now, without waiting (0: none)
        self._high_water = high_water
        self._data: deque[bytes] = deque()
        self._urgent: deque[bytes] = deque()
        self._size = 0
        self._wake: anyio.Event | None = None  # the writer, waiting for output
        self._progress: anyio.Event | None = None  # senders, waiting for room or a drain
        self._running = False
        self._writing = False  # a batch is being written (no longer counted in _size)

    @property
    def would_wait(self) -> bool:
        """Whether a :meth:`put` now could wait (for room, or to write inline)."""
        return not self._running or self._size > self._high_water or self._lock.locked()

    async def put(self, produce: Callable[[], Iterable[bytes]]) -> None:
        """Once there is room, queue what ``produce()`` returns (called right then, so
        whatever it serialises is queued in the same order).

        Raises ``anyio.BrokenResourceError`` (from the write error) once writing has
        failed and ``anyio.ClosedResourceError`` once closed.
        """
        if self._running and self._size <= self._high_water and not self._lock.locked():
            self._queue(produce())  # nothing to wait for: no await, so no lock needed
            return
        async with self._lock:
            while self._running and self._size > self._high_water:
                self._check()
                await self._wait_progress()
            self._queue(produce())
            if not self._running:  # no writer task: write inline
                await self.drain()
                self._check()

    def _queue(self, chunks: Iterable[bytes]) -> None:
        """Write ``chunks`` at once if the stream takes them, else queue them for the
        writer (the caller checked there is room)."""
        self._check()
        if self._try_write is not None and self._running and self._idle():
            chunks = self._write_now(chunks)
            self._check()  # the stream broke as we wrote
        for data in chunks:
            self._data.append(data)
            self._size += len(data)
        if chunks and self._running:  # left for the writer (all written: nothing to wake it for)
            self._wake_writer()

    def put_urgent(self, chunks: Iterable[bytes]) -> None:
        """Queue ``chunks`` ahead of queued data, without waiting (control replies)."""
        self._put_now(self._urgent, chunks)

    def put_nowait(self, chunks: Iterable[bytes]) -> None:
        """Queue ``chunks`` after queued data, without waiting for room (a close)."""
        self._put_now(self._data, chunks)

    async def drain(self) -> None:
        """Wait until everything queued is written, or writing has failed (never raises).

        With no writer task running (it has been cancelled, as when the task group that
        owns the connection is shutting down), write what is left inline.
        """
        while (self._size or self._writing) and self._error is None:
            if self._running or self._writing:  # another task writes: wait for it
                await self._wait_progress()
                continue
            batch = self._next_batch()
            if batch is None:
                return
            self._size -= len(batch)
            self._writing = True
            try:
                await self._write(batch)
            except Exception as exc:  # put() raises it; drain() only stops
                self._fail(exc)
            finally:
                self._writing = False
                self._wake_progress()

    def close(self) -> None:
        super().close()
        self._wake_progress()  # senders waiting for room learn it

    async def run(self) -> None:
        """Write queued output until cancelled or the stream fails.

        Run it in the task group that owns the stream; a write error is kept in
        :attr:`error` and raised to senders as ``anyio.BrokenResourceError``.
        """
        if self._running:
            raise RuntimeError("this outbox already has a writer")
        self._running = True
        try:
            while self._error is None:
                if self._writing:  # a put that came first still writes inline: after it
                    await self._wait_progress()
                    continue
                batch = self._next_batch()
                if batch is None:
                    wake = self._wake = anyio.Event()
                    await wake.wait()
                    continue
                self._size -= len(batch)
                self._writing = True
                try:
                    await self._write(batch)
                except Exception as exc:  # the stream broke: senders learn it from us
                    self._fail(exc)
                    return
                finally:
                    self._writing = False
                self._wake_progress()
        finally:
            self._running = False
            self._wake_progress()

    # -- internals -------------------------------------------------------------------------

    def _idle(self) -> bool:
        """Nothing queued or being written: a message may go straight to the stream."""
        return not (self._size or self._writing or self._urgent or self._data)

    def _write_now(self, chunks: Iterable[bytes]) -> list[bytes]:
        """Write ``chunks`` while the stream takes them whole; the rest, to queue (from
        the first the stream took in part, or an EOF). A stream that fails fails the
        outbox, as it would fail the writer task."""
        assert self._try_write is not None
        rest: list[bytes] = []
        for data in chunks:
            if rest or not data:
                rest.append(data)
                continue
            try:
                written = self._try_write(data)
            except Exception as exc:
                self._fail(exc)
                return []
            if written < len(data):
                rest.append(data[written:])
        return rest

    def _put_now(self, queue: deque[bytes], chunks: Iterable[bytes]) -> None:
        if self._error is not None:  # after close() too: the closing handshake needs it
            return
        for data in chunks:
            queue.append(data)
            self._size += len(data)
        self._wake_writer()

    def _next_batch(self) -> bytes | None:
        """The next write: urgent output first; small messages joined (never an EOF)."""
        for queue in (self._urgent, self._data):
            if not queue:
                continue
            first = queue.popleft()
            if not first or len(first) >= _BATCH_BYTES or not queue or not queue[0]:
                return first
            parts = [first]
            size = len(first)
            while queue and queue[0] and size + len(queue[0]) <= _BATCH_BYTES:
                data = queue.popleft()
                parts.append(data)
                size += len(data)
            return b"".join(parts)
        return None

    def _fail(self, exc: BaseException) -> None:
        self._error = exc
        self._urgent.clear()
        self._data.clear()
        self._size = 0
        self._wake_progress()

    async def _wait_progress(self) -> None:
        progress = self._progress
        if progress is None:
            progress = self._progress = anyio.Event()
        await progress.wait()

    def _wake_progress(self) -> None:
        progress, self._progress = self._progress, None
        if progress is not None:
            progress.set()

    def _wake_writer(self) -> None:
        wake, self._wake = self._wake, None
        if wake is not None:
            wake.set()


@runtime_checkable
class BufferedWriter(Protocol):
    """A byte stream that takes whole writes at once and in order (asyncio's)."""

    def write_now(self, data: bytes) -> None: ...

    @property
    def write_paused(self) -> bool: ...

    async def wait_drained(self) -> None: ...


class DirectOutbox(_OutboxBase):
    """:class:`Outbox`'s interface for a :class:`BufferedWriter`: no queue of its own.

    ``put`` waits (first come, first served) while the stream's buffer is over its
    high-water mark, then hands the message over whole; urgent output is handed over at
    once. Nothing written can be cut by a cancellation, so no writer task is needed.
    """

    __slots__ = ("_stream",)

    def __init__(self, stream: BufferedWriter) -> None:
        super().__init__()
        self._stream = stream

    @property
    def would_wait(self) -> bool:
        """Whether a :meth:`put` now could wait (for the stream's buffer to drain)."""
        return self._lock.locked() or self._stream.write_paused

    async def put(self, produce: Callable[[], Iterable[bytes]]) -> None:
        """As :meth:`Outbox.put`."""
        if not self.would_wait:
            # Nobody waits ahead (a released lock passes straight to its next waiter)
            # and the buffer has room: hand it over without the lock's checkpoint, as
            # a memory transport's send does.
            self._hand_over(produce)
            return
        async with self._lock:
            while self._stream.write_paused:
                self._check()
                await self._stream.wait_drained()
            self._hand_over(produce)

    def _hand_over(self, produce: Callable[[], Iterable[bytes]]) -> None:
        self._check()
        self._write(produce())
        self._check()  # the stream broke as we wrote

    def put_urgent(self, chunks: Iterable[bytes]) -> None:
        """Hand ``chunks`` over now (after what the stream already holds)."""
        if self._error is None:  # after close() too: the closing handshake needs it
            self._write(chunks)

    put_nowait = put_urgent

    async def drain(self) -> None:
        """Nothing to wait for: closing an asyncio transport flushes its buffer."""

    async def run(self) -> None:
        """No writer is needed; waits until cancelled, like :meth:`Outbox.run`."""
        await anyio.sleep_forever()

    def _write(self, chunks: Iterable[bytes]) -> None:
        try:
            for data in chunks:
                self._stream.write_now(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            self._error = exc


def outbox_for(
    stream: object, write: Callable[[bytes], Awaitable[None]], *, high_water: int
) -> Outbox | DirectOutbox:
    """A :class:`DirectOutbox` for a :class:`BufferedWriter`, else an :class:`Outbox`
    (writing at once through the stream's ``try_write``, if it has one)."""
    if isinstance(stream, BufferedWriter):
        return DirectOutbox(stream)
    try_write = getattr(stream, "try_write", None)
    if try_write is None and isinstance(stream, anyio.abc.SocketStream):
        try_write = _socket_try_write(stream)
    return Outbox(write, high_water=high_water, try_write=try_write)


def _socket_try_write(stream: anyio.abc.SocketStream) -> Callable[[bytes], int] | None:
    """``try_write`` for a plain socket stream (not TLS: that is not a ``SocketStream``)
    whose socket does not block, off asyncio (trio's streams): a message is written in the
    sending task while nothing is queued, instead of waking the writer task for each one.
    The outbox never writes from two places at once, so the stream's own send (which the
    writer task still uses for what the socket did not take) cannot interleave with it."""
    if running_asyncio():
        return None  # asyncio's transports buffer writes of their own: never around them
    sock = stream.extra(anyio.abc.SocketAttribute.raw_socket, None)
    if type(sock) is not socket.socket or sock.type != socket.SOCK_STREAM:
        return None
    if sock.gettimeout() != 0.0:  # a blocking socket would block the event loop
        return None
    send = sock.send

    def try_write(data: bytes) -> int:
        try:
            return send(data)
        except BlockingIOError:
            return 0
        except OSError as exc:  # reset, broken pipe: what the stream's send would raise
            raise anyio.BrokenResourceError(str(exc)) from exc

    return try_write


def outbox_attributes(
    outbox: Outbox | DirectOutbox, received: Sized, max_message_bytes: int | None
) -> dict[Any, Callable[[], Any]]:
    """The :class:`TransportAttribute` entries of a stream transport that writes through
    ``outbox`` and keeps what it received, not yet taken, in ``received``:
    ``send_would_wait``, ``max_message_bytes`` and ``receive_ready``."""
    return {
        TransportAttribute.send_would_wait: lambda: lambda: outbox.would_wait,
        TransportAttribute.max_message_bytes: lambda: max_message_bytes,
        TransportAttribute.receive_ready: lambda: lambda: bool(received),
    }
