"""Whole messages sent over one transport in order, from tasks and from plain callbacks.

A driver that must send both from tasks (answers, its own requests) and from code that
cannot await (a callback reporting a call's progress, a server announcing a change)
needs one order for both: :class:`MessageWriter` keeps it. Messages go straight to the
transport when nothing is queued ahead of them and the transport says it will not wait
(``TransportAttribute.send_would_wait``); otherwise they wait in a bounded queue for the
one writer task (:meth:`MessageWriter.run`, in the driver's task group). So:

* :meth:`~MessageWriter.send_soon` never waits: what fits in the queue is queued at
  once, in order (a call's progress goes before its answer), and the rest is returned
  to the caller, who may send it from a task;
* :meth:`~MessageWriter.send` waits for room (at most ``timeout`` seconds: a peer that
  reads nothing is found out, not waited for forever);
* a write that fails ends the connection through the driver's callbacks, never the
  sender: ``on_closed`` for a transport that is gone (or, with ``send_timeout``, a peer
  that took no message for that long), ``on_unsendable`` for a message with no JSON
  form. Once :meth:`~MessageWriter.stop` is called, queued messages are
  dropped (they die with the connection).

:class:`ConnectionWriter` is one connection with a writer of its own that can be hung
up on: what a server of many pages (the app page, the dev page) keeps per page.

Byte-stream transports queue their bytes in :mod:`~assistant_frames.transports._outbox`;
this is the same discipline one level up, for drivers that speak to any transport.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .contract import CLOSED_ERRORS, TransportAttribute

__all__ = ["DEFAULT_QUEUE", "ConnectionWriter", "MessageWriter"]

DEFAULT_QUEUE = 256  # messages waiting for the writer task before senders wait
_CLOSE_TIMEOUT = 5.0  # how long closing a hung-up connection may take


class MessageWriter:
    """Ordered, bounded sending of whole messages over ``transport``.

    ``on_closed(exc)`` is called when the transport is gone (one of ``CLOSED_ERRORS``),
    or with a ``TimeoutError`` when one message waited ``send_timeout`` seconds to be
    taken (``None``: no bound here); ``on_unsendable(exc)`` when a message could not be
    encoded (``TypeError`` or ``ValueError``). Call :meth:`open` on the running event
    loop, then run :meth:`run` in a task.
    """

    __slots__ = (
        "_in",
        "_out",
        "_queued",
        "_send",
        "_stopped",
        "_would_wait",
        "_writing",
        "on_closed",
        "on_unsendable",
        "queue_size",
        "send_timeout",
    )

    def __init__(
        self,
        transport: Any,
        *,
        on_closed: Callable[[BaseException], None],
        on_unsendable: Callable[[Exception], None],
        queue_size: int = DEFAULT_QUEUE,
        send_timeout: float | None = None,
    ) -> None:
        self._send: Callable[[Any], Awaitable[None]] = transport.send
        self._would_wait: Callable[[], bool] | None = transport.extra(
            TransportAttribute.send_would_wait, None
        )
        self.on_closed = on_closed
        self.on_unsendable = on_unsendable
        self.queue_size = queue_size
        self.send_timeout = send_timeout
        self._queued = 0  # messages in the queue or being written by the writer task
        self._writing = anyio.Lock(fast_acquire=True)  # who is in transport.send
        self._stopped = False
        self._in: MemoryObjectSendStream[Any] | None = None
        self._out: MemoryObjectReceiveStream[Any] | None = None

    @property
    def is_open(self) -> bool:
        """Whether :meth:`open` was called (sending is possible)."""
        return self._in is not None

    @property
    def waiting(self) -> int:
        """How many messages wait in the queue for the writer task (at most
        ``queue_size``)."""
        return 0 if self._in is None else self._in.statistics().current_buffer_used

    def open(self) -> None:
        """Make the queue (on the running event loop's backend)."""
        self._in, self._out = anyio.create_memory_object_stream[Any](self.queue_size)

    def stop(self) -> None:
        """The connection ended: what is queued is dropped, nothing more is written."""
        self._stopped = True

    async def run(self) -> None:
        """The writer task: write what was queued, in order, until cancelled."""
        assert self._out is not None, "open() the writer first"
        async for message in self._out:
            try:
                async with self._writing:
                    await self._write(message)
            finally:
                self._queued -= 1

    async def send(self, messages: list[Any], *, timeout: float | None = None) -> None:
        """Send ``messages`` in order, after what is queued; wait at most ``timeout``
        seconds for room in the queue (``TimeoutError``; ``None``: as long as it takes)."""
        if not messages:
            return
        assert self._in is not None, "open() the writer first"
        would_wait = self._would_wait
        if (
            self._queued == 0
            and would_wait is not None
            and not self._writing.locked()
            and not would_wait()
        ):
            # The common case, without the writer task's hop: nothing is ahead of these
            # messages and the transport has room. The lock orders a writer that starts
            # meanwhile (its messages were queued after these); it is free, so taken
            # without a checkpoint.
            self._writing.acquire_nowait()
            try:
                await self._write(messages[0])
            finally:
                self._writing.release()
            messages = messages[1:]
        rest = self.send_soon(messages)
        if rest:
            with anyio.fail_after(math.inf if timeout is None else timeout):
                for message in rest:
                    self._queued += 1  # counted before the writer can take it
                    try:
                        await self._in.send(message)
                    except BaseException:
                        self._queued -= 1
                        raise

    def send_soon(self, messages: list[Any]) -> list[Any]:
        """Queue for the writer, without waiting, what fits; the rest (the queue is full,
        or the writer is gone: nothing of it was queued)."""
        queue = self._in
        if queue is None:
            return messages
        for index, message in enumerate(messages):
            try:
                queue.send_nowait(message)
            except (anyio.WouldBlock, *CLOSED_ERRORS):
                return messages[index:]
            self._queued += 1
        return []

    async def _write(self, message: Any) -> None:
        """Send one message; a transport that fails ends the connection (not the caller)."""
        if self._stopped:
            return  # what was queued dies with the connection
        try:
            if self.send_timeout is None:  # no cancel scope per message when unbounded
                await self._send(message)
            else:
                with anyio.fail_after(self.send_timeout):
                    await self._send(message)
        except (*CLOSED_ERRORS, TimeoutError) as exc:  # gone, or reads nothing
            self.on_closed(exc)
        except (TypeError, ValueError) as exc:  # a message with no JSON form
            self.on_unsendable(exc)


class ConnectionWriter:
    """One connection with a :class:`MessageWriter` of its own (``writer``), which can be
    hung up on: :meth:`hang_up` stops sending and has the connection closed.

    ``on_ended(exc)`` hears why the writer stopped (as ``MessageWriter``'s ``on_closed``:
    the peer went, or took nothing for ``send_timeout``), just before the hang-up. Run
    :meth:`run` beside the task that reads the connection, or :meth:`serve`, which does both.
    """

    def __init__(
        self,
        transport: Any,
        *,
        on_ended: Callable[[BaseException], None],
        on_unsendable: Callable[[Exception], None],
        queue_size: int = DEFAULT_QUEUE,
        send_timeout: float | None = None,
    ) -> None:
        self.transport = transport
        self._on_ended = on_ended
        self.writer = MessageWriter(
            transport,
            on_closed=self._ended,
            on_unsendable=on_unsendable,
            queue_size=queue_size,
            send_timeout=send_timeout,
        )
        self.writer.open()
        self.hung_up = anyio.Event()

    def hang_up(self) -> None:
        """Stop sending and have the connection closed (its reader then ends)."""
        self.writer.stop()
        self.hung_up.set()

    async def run(self) -> None:
        """Write what is sent until hung up, then close the connection (bounded, and
        shielded: a closing that is cancelled would leave the reader waiting)."""
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self.writer.run)
            await self.hung_up.wait()
            with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_TIMEOUT):
                await self.transport.aclose()
            tasks.cancel_scope.cancel()

    async def serve(self, handle: Callable[[dict[str, Any]], Awaitable[object]]) -> None:
        """Run :meth:`run` beside reading the connection, until the connection ends (a
        hang-up closes it): each message that is a JSON object goes to ``handle``
        (awaited, so a handler that waits holds the reading back), the others are
        ignored. Then hang up."""
        try:
            async with anyio.create_task_group() as own:
                own.start_soon(self.run)
                with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                    async for message in self.transport:
                        if isinstance(message, dict):
                            await handle(message)
                own.cancel_scope.cancel()
        finally:
            self.hang_up()

    def _ended(self, exc: BaseException) -> None:
        self._on_ended(exc)
        self.hang_up()
