"""``StdioTransport``: newline-delimited JSON over a pair of byte streams, one message
per line (a worker's stdin and stdout, or any pipe)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel
from anyio.abc import ByteReceiveStream, ByteSendStream, ObjectStream

from ._ndjson import LineDecoder, encode_line
from ._outbox import (
    DEFAULT_HIGH_WATER,
    outbox_attributes,
    outbox_for,
)
from ._streams import offer_arrived
from .contract import (
    CloseReason,
    TransportClosed,
    _renamed_limit,
)

__all__ = ["DEFAULT_MAX_LINE_BYTES", "DEFAULT_MAX_MESSAGE_BYTES", "StdioTransport"]

DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_LINE_BYTES = DEFAULT_MAX_MESSAGE_BYTES  # its name before max_message_bytes
_READ_SIZE = 65536
_CLOSE_TIMEOUT = 2.0  # how long aclose waits for queued lines to be written


class StdioTransport(ObjectStream[Any]):
    """Newline-delimited JSON over a byte stream pair, one message per line.

    ``send`` refuses a message longer than ``max_message_bytes`` as JSON
    (:class:`~assistant_frames.transports.MessageTooLarge`; ``None``: no limit).
    Lines that are not JSON, and lines longer than ``max_message_bytes`` (which are
    skipped up to their end), are dropped with one WARNING per transport; a partial
    last line at the end of the stream is dropped too. ``max_line_bytes`` is the
    deprecated name of ``max_message_bytes``.

    While :meth:`run` writes for it (:func:`spawn_worker` and :func:`serve_stdio` run
    it), ``send`` queues whole lines and waits only while more than ``high_water``
    bytes are queued, so a cancelled send never leaves half a line in the pipe.
    Without it, ``send`` writes inline.
    """

    def __init__(
        self,
        receive_stream: ByteReceiveStream,
        send_stream: ByteSendStream,
        *,
        max_message_bytes: int | None = DEFAULT_MAX_MESSAGE_BYTES,
        high_water: int = DEFAULT_HIGH_WATER,
        max_line_bytes: int | None = None,
    ) -> None:
        limit = _renamed_limit(
            max_message_bytes, DEFAULT_MAX_MESSAGE_BYTES, max_line_bytes, "max_line_bytes"
        )
        self._receive_stream = receive_stream
        self._send_stream = send_stream
        self._max_message_bytes = limit
        self._lines = LineDecoder(limit)
        self._messages = self._lines.messages
        self._outbox = outbox_for(send_stream, send_stream.send, high_water=high_water)
        self._ended: BaseException | None = None
        self._closed = False
        self._on_arrival: Callable[[Any], bool] | None = None

    async def send(self, item: Any) -> None:
        """Write ``item`` as one line of JSON.

        Raises :class:`~assistant_frames.transports.UnsendableMessage` (a ``TypeError``)
        if it has no JSON form or is larger than ``max_message_bytes``, before anything
        is written.
        """
        line = (encode_line(item, self._max_message_bytes),)
        if self._closed:
            raise anyio.ClosedResourceError
        self._check_peer()
        try:
            await self._outbox.put(lambda: line)
        except anyio.BrokenResourceError as exc:
            raise anyio.BrokenResourceError(await self._describe_end(exc.__cause__)) from None

    def _check_peer(self) -> None:
        """Raise ``anyio.BrokenResourceError`` if the peer is known to be gone (a
        subclass knows more: a worker that has exited)."""

    @property
    def dropped_count(self) -> int:
        """How many received lines were dropped (not JSON, too long, cut off)."""
        return self._lines.dropped

    @property
    def dropped_samples(self) -> tuple[str, ...]:
        """The first few dropped lines (up to 80 characters each), for diagnosis: a peer
        whose every line is dropped is not speaking newline-delimited JSON."""
        return tuple(self._lines.dropped_samples)

    @property
    def send_would_wait(self) -> bool:
        """Whether :meth:`send` could wait right now (its queue is full, or no writer)."""
        return self._outbox.would_wait

    async def run(self) -> None:
        """Write queued lines until cancelled; run it in the task group that owns the
        transport."""
        await self._outbox.run()

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        """:class:`TransportAttribute` ``send_would_wait``, ``max_message_bytes`` and
        ``receive_ready``."""
        return outbox_attributes(self._outbox, self._messages, self._max_message_bytes)

    async def receive(self) -> Any:
        """The next message; :class:`~assistant_frames.transports.TransportClosed` (an
        ``anyio.EndOfStream`` saying why) once the peer is gone."""
        while not self._messages:
            if self._closed:
                raise anyio.ClosedResourceError
            if self._ended is not None:
                raise self._ended
            try:
                chunk = await self._receive_stream.receive(_READ_SIZE)
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError) as exc:
                self._lines.end()
                self._ended = await self._end_of_stream(exc)
                continue
            self._lines.feed(chunk)  # b"": woken after receive_on_arrival's handler declined
        return self._messages.popleft()

    def receive_on_arrival(self, handler: Callable[[Any], bool] | None) -> None:
        """Offer ``handler(message)`` each message as it arrives, while none is queued;
        it returns whether it took the message, which is otherwise queued for
        :meth:`receive` (``None``: queue every message again). Only where the stream
        read is one of asyncio's pipes or sockets (elsewhere this does nothing).

        ``handler`` runs in the event loop's callback, outside any task: it may settle
        futures and set events, nothing more (no anyio call), and must not raise.
        """
        on_data = getattr(self._receive_stream, "on_data", None)
        if on_data is None:  # anyio's streams (trio): no callback to take data in
            return
        self._on_arrival = handler
        on_data(None if handler is None else self._data_arrived)

    def _data_arrived(self) -> bool:
        """Data that just arrived, taken in the event loop's callback: messages go to
        the handler while it takes them. Whether nothing is left for ``receive``."""
        messages = self._messages
        queued = bool(messages)  # new messages queue behind these: the order holds
        self._lines.feed(self._receive_stream.take_arrived())  # type: ignore[attr-defined]
        if not queued:
            offer_arrived(messages, self._on_arrival)
        return not messages

    async def send_eof(self) -> None:
        """Close the sending direction (the peer's stdin sees end of file)."""
        await self._send_stream.aclose()

    async def aclose(self) -> None:
        """Close both directions, after writing what is queued (waiting at most 2 s for
        a peer that does not read); idempotent."""
        if self._closed:
            return
        self._closed = True
        self.receive_on_arrival(None)
        self._outbox.close()
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(_CLOSE_TIMEOUT):
                await self._outbox.drain()
            await self._send_stream.aclose()
            await self._receive_stream.aclose()

    async def _end_of_stream(self, exc: BaseException | None) -> anyio.EndOfStream:
        """What ``receive`` raises once the peer is gone: ``exc`` is what reading raised
        (``anyio.EndOfStream`` when the peer closed its end)."""
        clean = exc is None or isinstance(exc, anyio.EndOfStream)
        return TransportClosed(CloseReason(await self._describe_end(exc), clean=clean))

    async def _describe_end(self, exc: BaseException | None) -> str:
        """Why the peer is gone; subclasses know more (an exit code...)."""
        if exc is None or isinstance(exc, anyio.EndOfStream):
            return "the peer closed the channel"
        return f"the channel broke: {exc!r}"
