"""One WebSocket connection as a transport: websockets' sans-I/O protocol driven by an
anyio byte stream, the same on the client and the server side."""

from __future__ import annotations

import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio
from anyio.abc import ByteStream, ObjectStream
from websockets.frames import CloseCode, Frame, Opcode
from websockets.protocol import Protocol, Side, State

from ..._json import decode_json
from ..._logs import log_first_loudly
from .._outbox import DEFAULT_HIGH_WATER, outbox_attributes, outbox_for
from .._streams import offer_arrived
from ..contract import CloseReason, TransportClosed, encode_message
from .framing import FIN_BINARY, FIN_TEXT, at_frame_start, encode_text, read_head, unmasked_payload

__all__ = ["DEFAULT_MAX_MESSAGE_BYTES", "WebSocketTransport"]

logger = logging.getLogger("assistant_frames.transports")

DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024
_READ_SIZE = 65536
_CLOSE_TIMEOUT = 2.0
_BROKEN = (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)
_CLEAN_CODES = (CloseCode.NORMAL_CLOSURE, CloseCode.GOING_AWAY)


class WebSocketTransport(ObjectStream[Any]):
    """One WebSocket connection as an anyio object stream of JSON messages.

    Not built directly: use :func:`connect_websocket` or :func:`websocket_server`,
    which run its writer and keep-alive task (:meth:`run`). ``receive`` answers the
    peer's pings (keep a task receiving, as frames and hosts always do) and never waits
    for a sender: what it owes the peer is queued ahead of data. ``send`` queues a
    whole frame and waits only while more than ``high_water`` bytes are queued, so a
    cancelled send never leaves half a frame on the wire. Frames that are not JSON are
    dropped (one WARNING per connection); a text frame that is not UTF-8 closes the
    connection with code 1007, as RFC 6455 asks.

    The end of the connection is a :class:`~assistant_frames.transports.TransportClosed`
    whose reason has the close code: clean for 1000 and 1001; 1006 (and not clean) when
    the connection ended or broke without a closing handshake.
    """

    def __init__(
        self,
        stream: ByteStream,
        protocol: Protocol,
        *,
        ping_interval: float | None,
        ping_timeout: float,
        attributes: Mapping[Any, Callable[[], Any]] | None = None,
        early_events: Sequence[object] = (),
        high_water: int = DEFAULT_HIGH_WATER,
        max_message_bytes: int | None = None,
    ) -> None:
        self._stream = stream
        self._max_message_bytes = max_message_bytes
        self._protocol = protocol
        self._ping_interval = ping_interval
        self._ping_timeout = ping_timeout
        self._attributes = dict(attributes or {})
        self._messages: deque[Any] = deque()
        self._fragments: list[bytes] = []
        self._fragment_opcode = Opcode.TEXT
        self._outbox = outbox_for(stream, self._write, high_water=high_water)
        self._reading = False  # a task reads the socket; others wait for _read_done
        self._read_done: anyio.Event | None = None
        self._closed = False
        self._ended: BaseException | None = None  # what receive raises once drained
        self._invalid: str | None = None  # a protocol error found while reading frames
        self._dropped = 0
        self._last_seen = time.monotonic()
        self._on_arrival: Callable[[Any], bool] | None = None
        # Whole data frames are read here (framing.py) while the protocol's parser is
        # at a frame's start; bytes of a frame not all arrived wait in _pending.
        self._masked_in = protocol.side is Side.SERVER  # a client masks, a server not
        # Extensions are settled by the handshake, debug logging when the protocol is
        # made: with either, every frame goes through the protocol.
        self._frames_here = not protocol.extensions and not protocol.debug
        self._frame_limit = _frame_limit(protocol)
        self._synced = False
        self._pending = bytearray()
        self._pending_end = 0  # the length _pending needs for its first frame
        for event in early_events:  # parsed in the same read as the handshake
            if isinstance(event, Frame):
                self._on_frame(event)
        self._after_frames()  # e.g. a close that came with the handshake: answer it

    # -- ObjectStream ----------------------------------------------------------------------

    async def send(self, item: Any) -> None:
        """Send ``item`` as one text frame of JSON.

        Raises :class:`~assistant_frames.transports.UnsendableMessage` (a ``TypeError``)
        if it has no JSON form or is larger than ``max_message_bytes``, before anything
        is sent.
        """
        data = encode_message(item, self._max_message_bytes)
        if self._closed:
            raise anyio.ClosedResourceError
        protocol = self._protocol

        def frame() -> list[bytes]:
            if protocol.state is not State.OPEN:
                raise anyio.BrokenResourceError(self._close_description())
            if not self._frames_here or protocol.expect_continuation_frame or protocol.writes:
                protocol.send_text(data)
                return protocol.data_to_send()
            return [encode_text(data, mask=protocol.side is Side.CLIENT)]

        try:
            await self._outbox.put(frame)
        except anyio.BrokenResourceError:
            raise anyio.BrokenResourceError(self._broken_description()) from None

    @property
    def send_would_wait(self) -> bool:
        """Whether :meth:`send` could wait right now (its queue is full)."""
        return self._outbox.would_wait

    async def receive(self) -> Any:
        """The next message; :class:`~assistant_frames.transports.TransportClosed` (an
        ``anyio.EndOfStream``, with the close code) at the end."""
        while True:
            if self._messages:
                return self._messages.popleft()
            if self._closed:
                raise anyio.ClosedResourceError
            if self._ended is not None:
                raise self._ended
            if self._reading:  # another task reads: wait for it, then look again
                if self._read_done is None:
                    self._read_done = anyio.Event()
                await self._read_done.wait()
                continue
            self._reading = True  # a flag, not a lock: one read rarely has company
            try:
                await self._read()
            finally:
                self._reading = False
                done, self._read_done = self._read_done, None
                if done is not None:
                    done.set()

    def receive_on_arrival(self, handler: Callable[[Any], bool] | None) -> None:
        """Offer ``handler(message)`` each message as it arrives, while none is queued;
        it returns whether it took the message, which is otherwise queued for
        :meth:`receive` (``None``: queue every message again). On asyncio only (on
        other backends this does nothing).

        ``handler`` runs in the event loop's callback, outside any task: it may settle
        futures and set events, nothing more (no anyio call), and must not raise. A
        host uses it to wake the caller a result answers without waking its reading
        task first.
        """
        on_data = getattr(self._stream, "on_data", None)
        if on_data is None:  # anyio's streams (trio): no callback to take data in
            return
        self._on_arrival = handler
        on_data(None if handler is None else self._data_arrived)

    async def send_eof(self) -> None:
        """Start the closing handshake (code 1000)."""
        self._send_close(CloseCode.NORMAL_CLOSURE, "")
        with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_TIMEOUT):
            await self._outbox.drain()

    async def aclose(self) -> None:
        """Close the connection cleanly (code 1000), bounded in time; quiet when the
        peer is already gone."""
        if self._closed:
            return
        self._closed = True
        self.receive_on_arrival(None)  # the closing handshake is read here, below
        self._send_close(CloseCode.NORMAL_CLOSURE, "")
        self._outbox.close()
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(_CLOSE_TIMEOUT):
                await self._outbox.drain()
                await self._await_close_reply()
            with contextlib.suppress(Exception):
                await self._stream.aclose()

    async def run(self) -> None:
        """Write queued frames and keep the connection alive, until cancelled.

        :func:`connect_websocket` and :func:`websocket_server` run it in the
        connection's task group.
        """
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._keep_alive)
            await self._outbox.run()
            tasks.cancel_scope.cancel()

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        """The socket's attributes, :class:`WebSocketAttribute` and
        :class:`TransportAttribute` ``send_would_wait``, ``max_message_bytes`` and
        ``receive_ready``."""
        return {
            **self._stream.extra_attributes,
            **self._attributes,
            **outbox_attributes(self._outbox, self._messages, self._max_message_bytes),
        }

    # -- internals -----------------------------------------------------------------------

    async def _write(self, data: bytes) -> None:
        if data:
            await self._stream.send(data)
        else:  # the protocol asks to half-close the TCP connection
            await self._stream.send_eof()

    def _send_close(self, code: int, reason: str) -> None:
        """Queue a close frame after the data already queued (nothing if not open)."""
        if self._protocol.state is State.OPEN and self._outbox.error is None:
            self._protocol.send_close(code, reason)
            self._outbox.put_nowait(self._protocol.data_to_send())

    async def _await_close_reply(self) -> None:
        """Read until the peer answers our close frame, as RFC 6455 asks (the caller
        bounds the time): a client then waits for the server to close the TCP
        connection; a server, which closes it first, is done."""
        if self._protocol.state is not State.CLOSING or self._reading:
            return
        protocol = self._protocol
        if self._pending:  # the start of a frame read here: the protocol reads on from it
            pending, self._pending = self._pending, bytearray()
            self._feed(pending)
        while protocol.state is State.CLOSING:
            if protocol.side is Side.SERVER and protocol.close_rcvd is not None:
                return
            try:
                data = await self._stream.receive(_READ_SIZE)
            except (anyio.EndOfStream, *_BROKEN):
                self._protocol.receive_eof()
                return
            self._protocol.receive_data(data)
            self._protocol.events_received()
            output = self._protocol.data_to_send()  # the server's EOF once answered
            if output:
                self._outbox.put_urgent(output)
                await self._outbox.drain()

    async def _read(self) -> None:
        """Read once from the socket and process it; never waits for a sender."""
        try:
            data = await self._stream.receive(_READ_SIZE)
        except anyio.EndOfStream:
            self._protocol.receive_eof()
            self._end(TransportClosed(self._close_reason()))
            return
        except _BROKEN as exc:
            self._protocol.receive_eof()  # so that sending now fails at once
            description = f"WebSocket connection broke: {exc!r}"
            self._end(TransportClosed(CloseReason(description, clean=False, close_code=1006)))
            return
        if data:  # b"": woken after receive_on_arrival's handler declined a message
            self._process(data)

    def _data_arrived(self) -> bool:
        """Data that just arrived, taken in the event loop's callback (receive_on_arrival):
        messages go to the handler while it takes them. Whether nothing is left for
        ``receive`` (which is otherwise woken)."""
        messages = self._messages
        queued = bool(messages)  # new messages queue behind these: the order holds
        self._process(self._stream.take_arrived())  # type: ignore[attr-defined]
        if not queued:
            offer_arrived(messages, self._on_arrival)
        return not messages and self._ended is None

    def _process(self, data: bytes) -> None:
        """Queue the messages ``data`` completes: whole data frames read here, every
        other frame through the protocol."""
        self._last_seen = time.monotonic()
        buffer: bytes | bytearray = data
        if self._pending:
            self._pending += data
            if len(self._pending) < self._pending_end:
                return  # the frame is still coming
            buffer, self._pending = self._pending, bytearray()
        position = self._read_frames(buffer)
        if position < len(buffer):
            self._synced = False
            self._feed(buffer[position:] if position else buffer)
        self._after_frames()

    def _read_frames(self, data: bytes | bytearray) -> int:
        """Take the whole frames at the start of ``data`` while the protocol's parser is
        at a frame's start; where the rest (for the protocol) begins."""
        protocol = self._protocol
        position, size = 0, len(data)
        if not self._synced:
            self._synced = self._frames_here and at_frame_start(protocol)
        while self._synced and position < size:
            if protocol.state is not State.OPEN:
                break
            head = read_head(data, position)
            if head is None or head.end > size:
                if head is not None and head.end - head.start > self._frame_limit:
                    break  # too large: the protocol refuses it
                self._pending = bytearray(data[position:])
                self._pending_end = size - position + 1 if head is None else head.end - position
                return size
            first = head.first
            if (
                first in (FIN_TEXT, FIN_BINARY)
                and head.masked is self._masked_in
                and not self._fragments
                and head.end - head.start <= self._frame_limit
            ):
                self._on_data(unmasked_payload(data, head), first == FIN_TEXT)
            else:  # a control frame, a fragment, or one the protocol refuses
                self._feed(data[position : head.end])
            position = head.end
        return position

    def _feed(self, data: bytes | bytearray) -> None:
        """Hand ``data`` to the protocol and take the frames it parses."""
        self._protocol.receive_data(data)
        for event in self._protocol.events_received():
            if isinstance(event, Frame):
                self._on_frame(event)

    def _after_frames(self) -> None:
        """Queue what the frames just read call for, and end if the connection closes."""
        if self._invalid is not None:
            self._fail(CloseCode.INVALID_DATA, self._invalid)
            return
        output = self._protocol.data_to_send()  # pongs, the reply to a close...
        if output:
            self._outbox.put_urgent(output)
        if self._protocol.state is not State.OPEN:  # closing: deliver what came, then end
            self._end(TransportClosed(self._close_reason()))

    async def _keep_alive(self) -> None:
        """Ping the peer whenever the connection has been idle for ``ping_interval``.

        A peer that answers nothing within ``ping_timeout`` gets the connection closed
        with code 1011, and ``receive`` then raises. A task rather than a deadline on
        every read keeps timers off the hot path.
        """
        interval = self._ping_interval
        if interval is None:
            return
        while self._ended is None and not self._closed:
            idle = time.monotonic() - self._last_seen
            if idle < interval:
                await anyio.sleep(interval - idle)
                continue
            if self._protocol.state is not State.OPEN:
                return
            pinged_at = time.monotonic()
            self._protocol.send_ping(b"keepalive")
            self._outbox.put_urgent(self._protocol.data_to_send())
            await anyio.sleep(self._ping_timeout)
            if self._last_seen < pinged_at and self._ended is None and not self._closed:
                self._fail(CloseCode.INTERNAL_ERROR, "keepalive ping timeout")
                with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_TIMEOUT):
                    await self._outbox.drain()
                await self._stream.aclose()  # wakes a receive waiting on the socket
                return

    def _fail(self, code: int, reason: str) -> None:
        """Fail the connection (a close frame, then EOF) and make ``receive`` raise."""
        description = f"WebSocket connection failed: {reason}"
        self._end(TransportClosed(CloseReason(description, clean=False, close_code=code)))
        if self._protocol.state is State.OPEN:
            self._protocol.fail(code, reason)
            self._outbox.put_urgent(self._protocol.data_to_send())

    def _on_frame(self, frame: Frame) -> None:
        if frame.opcode in (Opcode.TEXT, Opcode.BINARY):
            self._fragments = [bytes(frame.data)]
            self._fragment_opcode = frame.opcode
        elif frame.opcode is Opcode.CONT:
            self._fragments.append(bytes(frame.data))
        else:
            return  # pings are answered by the protocol; pongs just prove liveness
        if frame.fin:
            payload = b"".join(self._fragments)
            self._fragments = []
            self._on_data(payload, self._fragment_opcode is Opcode.TEXT)

    def _on_data(self, payload: bytes, text: bool) -> None:
        """Queue the message of a whole text (or binary) frame's ``payload``."""
        try:
            self._messages.append(decode_json(payload))
        except UnicodeDecodeError:
            if text:
                self._invalid = "invalid UTF-8 in a text frame"
            else:
                self._drop("a binary WebSocket frame that is not JSON (nor UTF-8)")
        except ValueError as exc:
            self._drop(f"a WebSocket frame that is not JSON: {exc}")

    def _drop(self, what: str) -> None:
        self._dropped += 1
        log_first_loudly(logger, self._dropped == 1, "Dropped %s", what)

    def _end(self, exc: BaseException) -> None:
        if self._ended is None:
            self._ended = exc

    def _broken_description(self) -> str:
        error = self._outbox.error
        if error is not None:
            return f"WebSocket connection broke: {error!r}"
        return self._close_description()

    def _close_reason(self) -> CloseReason:
        """Why the connection ended: the close code received (or sent), else 1006."""
        close = self._protocol.close_rcvd or self._protocol.close_sent
        code = CloseCode.ABNORMAL_CLOSURE if close is None else close.code
        return CloseReason(
            self._close_description(), clean=code in _CLEAN_CODES, close_code=int(code)
        )

    def _close_description(self) -> str:
        close = self._protocol.close_rcvd or self._protocol.close_sent
        if close is None:
            return "WebSocket connection closed without a closing handshake"
        reason = f": {close.reason}" if close.reason else ""
        return f"WebSocket connection closed with code {close.code}{reason}"


def _frame_limit(protocol: Protocol) -> float:
    """The largest payload the protocol takes in one frame (``max_size``, which newer
    websockets split into a message and a fragment limit)."""
    limits = [
        getattr(protocol, name, None)
        for name in ("max_message_size", "max_fragment_size", "max_size")
    ]
    return min((limit for limit in limits if isinstance(limit, int)), default=float("inf"))
