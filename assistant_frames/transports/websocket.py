"""WebSocket transports: websockets' sans-I/O protocol driven by anyio TCP streams.

One JSON message per text frame. The same code runs under asyncio and trio, because
the I/O is anyio's and the protocol (handshake, framing, masking, close handshake,
size limits) is the ``websockets`` package's sans-I/O core.

* :func:`connect_websocket` dials a ``ws://`` (or ``wss://``) URL and returns a
  transport, e.g. for an :class:`~assistant_frames.AssistantFrameHost`.
* :func:`websocket_server` listens (on 127.0.0.1 unless told otherwise) and runs a
  handler per accepted connection, e.g. ``provider.serve`` to serve a frame to every
  host that connects, or a function that hosts frames dialling in.
* :func:`websocket_listener` is the same server as a
  :class:`~assistant_frames.transports.Listener`: bound first, serving while its
  ``serve(handler)`` runs.

Security: an optional bearer token checked during the handshake (a refused client gets
HTTP 401 and no frame traffic), an Origin allowlist for browser clients (HTTP 403), a
maximum message size (the connection closes with code 1009), keep-alive pings while a
connection is idle (code 1011 when unanswered) and a handshake timeout.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import ssl
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.abc
from anyio.abc import ByteStream, ObjectStream

from .._anyio import task_group
from .._json import decode_json
from ..errors import ConnectError, HandshakeRejected
from ._outbox import DEFAULT_HIGH_WATER, outbox_for
from ._streams import TcpServer, bind_tcp, connect_tcp, descriptor_limit
from .attributes import WebSocketAttribute
from .contract import (
    CloseReason,
    Listener,
    TransportAttribute,
    TransportClosed,
    _renamed_limit,
    encode_message,
)
from .serving import run_handler, without_token

try:
    from websockets.client import ClientProtocol
    from websockets.datastructures import Headers
    from websockets.exceptions import InvalidStatus
    from websockets.frames import CloseCode, Frame, Opcode
    from websockets.http11 import Request, Response
    from websockets.protocol import Protocol, Side, State
    from websockets.server import ServerProtocol
    from websockets.typing import Origin
    from websockets.uri import parse_uri
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "WebSocket transports need the 'websockets' package: "
        "pip install 'assistant-frames[websockets]'"
    ) from exc

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "HttpHandler",
    "HttpRequest",
    "HttpResponse",
    "WebSocketAttribute",
    "WebSocketListener",
    "WebSocketServer",
    "WebSocketTransport",
    "connect_websocket",
    "websocket_listener",
    "websocket_server",
]

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
        self._receive_lock = anyio.Lock(fast_acquire=True)
        self._closed = False
        self._ended: BaseException | None = None  # what receive raises once drained
        self._invalid: str | None = None  # a protocol error found while reading frames
        self._dropped = 0
        self._last_seen = time.monotonic()
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
            protocol.send_text(data)
            return protocol.data_to_send()

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
            async with self._receive_lock:
                if not self._messages and self._ended is None:
                    await self._read()

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
        :class:`TransportAttribute` ``send_would_wait`` and ``max_message_bytes``."""
        outbox = self._outbox
        return {
            **self._stream.extra_attributes,
            **self._attributes,
            TransportAttribute.send_would_wait: lambda: lambda: outbox.would_wait,
            TransportAttribute.max_message_bytes: lambda: self._max_message_bytes,
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
        if self._protocol.state is not State.CLOSING or self._receive_lock.locked():
            return
        protocol = self._protocol
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
        self._last_seen = time.monotonic()
        self._protocol.receive_data(data)
        for event in self._protocol.events_received():
            if isinstance(event, Frame):
                self._on_frame(event)
        self._after_frames()

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
            try:
                self._messages.append(decode_json(payload))
            except UnicodeDecodeError:
                if self._fragment_opcode is Opcode.TEXT:
                    self._invalid = "invalid UTF-8 in a text frame"
                else:
                    self._drop("a binary WebSocket frame that is not JSON (nor UTF-8)")
            except ValueError as exc:
                self._drop(f"a WebSocket frame that is not JSON: {exc}")

    def _drop(self, what: str) -> None:
        self._dropped += 1
        level = logging.WARNING if self._dropped == 1 else logging.DEBUG
        logger.log(level, "Dropped %s", what)

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


# -- client --------------------------------------------------------------------------------


@asynccontextmanager
async def connect_websocket(
    url: str,
    *,
    token: str | None = None,
    origin: str | None = None,
    headers: Mapping[str, str] | None = None,
    max_message_bytes: int | None = DEFAULT_MAX_MESSAGE_BYTES,
    ping_interval: float | None = 20.0,
    ping_timeout: float = 20.0,
    open_timeout: float = 10.0,
    ssl_context: ssl.SSLContext | None = None,
    max_message_size: int | None = None,
) -> AsyncIterator[WebSocketTransport]:
    """Connect to a WebSocket server; the transport is open inside the block::

        async with connect_websocket(url, token=token) as transport:
            async with AssistantFrameHost(transport) as host:
                ...

    ``token`` is sent as ``Authorization: Bearer <token>``. While the block runs, the
    idle connection is pinged every ``ping_interval`` seconds (``None``: never). Raises
    :class:`~assistant_frames.ConnectError` when the server cannot be reached in
    ``open_timeout`` seconds and :class:`~assistant_frames.HandshakeRejected` (with the
    HTTP status) when it refuses the handshake. ``max_message_bytes`` (4 MiB; ``None``:
    no limit) bounds the messages sent and received: ``send`` refuses a larger one
    (:class:`~assistant_frames.transports.MessageTooLarge`), and a server that sends
    one has the connection closed with code 1009 (``max_message_size`` is its
    deprecated name).
    """
    limit = _renamed_limit(
        max_message_bytes, DEFAULT_MAX_MESSAGE_BYTES, max_message_size, "max_message_size"
    )
    try:
        uri = parse_uri(url)
    except Exception as exc:
        raise ValueError(f"Not a WebSocket URL: {url!r} ({exc})") from None
    protocol = ClientProtocol(uri, origin=Origin(origin) if origin else None, max_size=limit)
    try:
        with anyio.fail_after(open_timeout):
            stream = await connect_tcp(uri.host, uri.port, tls=uri.secure, ssl_context=ssl_context)
            try:
                early_events = await _client_handshake(stream, protocol, token, headers)
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await stream.aclose()
                raise
    except TimeoutError:
        raise ConnectError(f"Cannot connect to {url}: no answer in {open_timeout:g} s") from None
    except ConnectError:
        raise
    except OSError as exc:
        raise ConnectError(f"Cannot connect to {url}: {exc.strerror or exc}") from None
    transport = WebSocketTransport(
        stream,
        protocol,
        ping_interval=ping_interval,
        ping_timeout=ping_timeout,
        early_events=early_events,
        attributes={WebSocketAttribute.path: lambda: uri.resource_name},
        max_message_bytes=limit,
    )
    async with task_group() as tasks:
        tasks.start_soon(transport.run)
        try:
            yield transport
        finally:
            await transport.aclose()  # while the writer still runs, to send the close
            tasks.cancel_scope.cancel()


async def _client_handshake(
    stream: ByteStream,
    protocol: ClientProtocol,
    token: str | None,
    headers: Mapping[str, str] | None,
) -> list[object]:
    request = protocol.connect()
    for name, value in (headers or {}).items():
        request.headers[name] = value
    if token is not None:
        request.headers["Authorization"] = f"Bearer {token}"
    protocol.send_request(request)
    for data in protocol.data_to_send():
        await stream.send(data)
    while True:
        try:
            data = await stream.receive(_READ_SIZE)
        except anyio.EndOfStream:
            protocol.receive_eof()
            raise ConnectError("The server closed the connection during the handshake") from None
        protocol.receive_data(data)
        events = protocol.events_received()
        if events:
            break
    exc = protocol.handshake_exc
    if exc is not None:
        if isinstance(exc, InvalidStatus):
            response = exc.response
            body = bytes(response.body).decode("utf-8", "replace").strip()
            raise HandshakeRejected(response.status_code, body)
        raise ConnectError(f"WebSocket handshake failed: {exc}")
    return list(events[1:])  # frames that came in the same read as the response


# -- server --------------------------------------------------------------------------------

Handler = Callable[[WebSocketTransport], Awaitable[Any]]


@dataclass(frozen=True)
class HttpRequest:
    """A plain HTTP ``GET`` (no WebSocket upgrade) that reached a WebSocket server."""

    #: The URL path, without the query string (``"/view/1"``).
    path: str
    #: The query string, without the ``?`` (``""`` when there is none).
    query: str
    #: The request's headers (names are case-insensitive).
    headers: Mapping[str, str]


@dataclass(frozen=True)
class HttpResponse:
    """What an :data:`HttpHandler` answers: a whole body (no streaming) and its headers.

    ``headers`` are added to the server's own (``Content-Type``, ``Content-Length``,
    ``Cache-Control: no-store``, ``X-Content-Type-Options: nosniff``,
    ``Connection: close``); they may replace ``Cache-Control`` but not the others.
    """

    status: int = 200
    body: bytes = b""
    content_type: str = "text/plain; charset=utf-8"
    headers: Mapping[str, str] = field(default_factory=dict)


#: Answers a plain HTTP ``GET``: a response, or ``None`` to fall back to ``http_files``.
HttpHandler = Callable[[HttpRequest], Awaitable[HttpResponse | None]]


def _default_max_connections() -> int:
    """At most 1,000, and a quarter of the descriptor limit left for everything else."""
    limit = descriptor_limit()
    if limit is None:
        return 1000
    return max(1, min(1000, limit * 3 // 4))


class WebSocketServer:
    """A running :func:`websocket_server`: where it listens."""

    def __init__(self, server: TcpServer) -> None:
        self._server = server

    @property
    def host(self) -> str:
        """The address it is bound to."""
        return self._server.host

    @property
    def port(self) -> int:
        """The port it is bound to (useful with ``port=0``)."""
        return self._server.port

    @property
    def connections(self) -> int:
        """How many connections are being served now."""
        return self._server.connections

    @property
    def refused(self) -> int:
        """How many connections were closed at once because ``max_connections`` were served."""
        return self._server.refused

    @property
    def url(self) -> str:
        """``ws://host:port`` to give clients."""
        host = self.host
        return f"ws://[{host}]:{self.port}" if ":" in host else f"ws://{host}:{self.port}"


@dataclass(frozen=True)
class _ServerOptions:
    """How a WebSocket server treats each connection."""

    token: str | None
    origins: list[Origin | None] | None
    max_message_bytes: int | None
    ping_interval: float | None
    ping_timeout: float
    handshake_timeout: float
    files: dict[str, tuple[bytes, str]] | None
    http_handler: HttpHandler | None = None


class WebSocketListener(WebSocketServer):
    """A bound WebSocket server that serves while :meth:`serve` runs: a
    :class:`~assistant_frames.transports.Listener`, from :func:`websocket_listener`.

    Clients that connect before :meth:`serve` runs wait for it. Use it as an async
    context manager (or call :meth:`aclose`) to stop listening.
    """

    def __init__(self, server: TcpServer, options: _ServerOptions) -> None:
        super().__init__(server)
        self._options = options

    async def serve(
        self,
        handler: Handler,
        task_group: anyio.abc.TaskGroup | None = None,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Run ``await handler(transport)`` for each client, in a task of its own (in
        ``task_group`` when given), until cancelled or closed.

        The transport is closed when ``handler`` returns; a handler that raises is
        logged and affects no other connection.
        """
        options = self._options

        async def serve_connection(stream: ByteStream) -> None:
            await _serve_connection(stream, handler, options)

        await self._server.serve(serve_connection, task_group, task_status=task_status)

    async def aclose(self) -> None:
        """Stop listening (and make :meth:`serve` return); connections being served are
        not affected."""
        await self._server.aclose()

    async def __aenter__(self) -> WebSocketListener:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


async def websocket_listener(
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    token: str | None = None,
    allowed_origins: Sequence[str] | None = None,
    max_message_bytes: int | None = DEFAULT_MAX_MESSAGE_BYTES,
    ping_interval: float | None = 20.0,
    ping_timeout: float = 20.0,
    handshake_timeout: float = 10.0,
    http_files: Mapping[str, tuple[bytes, str]] | None = None,
    max_connections: int | None = None,
    http_handler: HttpHandler | None = None,
) -> WebSocketListener:
    """Listen for WebSocket clients; serve them with :meth:`WebSocketListener.serve`::

        async with await websocket_listener(port=8765) as listener:
            await listener.serve(provider.serve)

    The options are :func:`websocket_server`'s. Raises
    :class:`~assistant_frames.ConnectError` when it cannot listen.
    """
    files = _check_http_files(http_files)
    origins: list[Origin | None] | None = None
    if allowed_origins is not None:
        origins = [Origin(o) for o in allowed_origins] + [None]
    options = _ServerOptions(
        token=token,
        origins=origins,
        max_message_bytes=max_message_bytes,
        ping_interval=ping_interval,
        ping_timeout=ping_timeout,
        handshake_timeout=handshake_timeout,
        files=files,
        http_handler=http_handler,
    )
    if max_connections is None:
        max_connections = _default_max_connections()
    try:
        server = await bind_tcp(host, port, max_connections=max_connections)
    except OSError as exc:
        raise ConnectError(f"Cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return WebSocketListener(server, options)


if TYPE_CHECKING:

    def _is_a_listener(listener: WebSocketListener) -> Listener:
        return listener  # mypy checks that WebSocketListener keeps the contract


@asynccontextmanager
async def websocket_server(
    handler: Handler,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    token: str | None = None,
    allowed_origins: Sequence[str] | None = None,
    max_message_bytes: int | None = DEFAULT_MAX_MESSAGE_BYTES,
    ping_interval: float | None = 20.0,
    ping_timeout: float = 20.0,
    handshake_timeout: float = 10.0,
    http_files: Mapping[str, tuple[bytes, str]] | None = None,
    max_connections: int | None = None,
    max_message_size: int | None = None,
    http_handler: HttpHandler | None = None,
) -> AsyncIterator[WebSocketServer]:
    """Listen for WebSocket clients, running ``await handler(transport)`` for each.

    ``port=0`` picks a free port (see ``server.port``/``server.url``). With ``token``,
    clients must send ``Authorization: Bearer <token>`` (or ``?access_token=<token>``
    in the URL, for browsers, which cannot set headers): others get HTTP 401 and never
    reach ``handler``. With ``allowed_origins``, browser clients from any other origin
    get HTTP 403; clients that send no ``Origin`` (programs, not browsers) are allowed.
    The transport is closed when ``handler`` returns; a handler that raises is logged
    and affects no other connection. Leaving the block stops the server and every
    connection.

    ``max_message_bytes`` (4 MiB; ``None``: no limit) bounds the messages each
    transport sends and receives: ``send`` refuses a larger one
    (:class:`~assistant_frames.transports.MessageTooLarge`), and a client that sends
    one has its connection closed with code 1009. ``max_message_size`` is its
    deprecated name.

    ``http_files`` maps URL paths (``"/assistant-frames/parent-relay.js"``) to
    ``(content, content_type)``. A plain HTTP ``GET`` (no WebSocket upgrade) for one of
    those paths (the query string is ignored) gets ``200`` with the content; any other
    plain request gets ``404``. Files need no token: serve only public files, such as
    :func:`assistant_frames.browser.relay_files`. Without ``http_files`` a plain request
    gets ``426 Upgrade Required`` (``401`` first when a token is set). WebSocket
    upgrades are checked the same way either way.

    ``http_handler`` answers plain ``GET`` requests that need more than a static file
    (a page built per request, extra headers such as ``Content-Security-Policy``):
    ``await http_handler(HttpRequest(...))`` returns an :class:`HttpResponse`, or
    ``None`` to fall back to ``http_files`` (then ``404``). It runs within the
    handshake timeout and, like ``http_files``, before any token check: a handler that
    serves anything private checks the request itself. A handler that raises gets the
    client a ``500`` and is logged.

    At most ``max_connections`` connections (handshaking or upgraded, idle or busy) are
    served at once; beyond that a new connection is closed as soon as it is accepted
    (``server.refused`` counts them). The default leaves room under the process's file
    descriptor limit: a quarter of it kept free, at most 1,000 connections. Running out
    of descriptors anyway pauses accepting briefly; it never stops the server.

    :func:`websocket_listener` is the same server as a
    :class:`~assistant_frames.transports.Listener`.
    """
    limit = _renamed_limit(
        max_message_bytes, DEFAULT_MAX_MESSAGE_BYTES, max_message_size, "max_message_size"
    )
    listener = await websocket_listener(
        host,
        port,
        token=token,
        allowed_origins=allowed_origins,
        max_message_bytes=limit,
        ping_interval=ping_interval,
        ping_timeout=ping_timeout,
        handshake_timeout=handshake_timeout,
        http_files=http_files,
        max_connections=max_connections,
        http_handler=http_handler,
    )
    try:
        async with task_group() as tasks:
            await tasks.start(listener.serve, handler)
            try:
                yield listener
            finally:
                tasks.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await listener.aclose()


async def _serve_connection(stream: ByteStream, handler: Handler, options: _ServerOptions) -> None:
    """Handshake, then run ``handler`` on the transport and close it when it returns."""
    protocol = ServerProtocol(origins=options.origins, max_size=options.max_message_bytes)
    try:
        with anyio.fail_after(options.handshake_timeout):
            request, early_events = await _server_handshake(
                stream, protocol, options.token, options.files, options.http_handler
            )
    except (TimeoutError, ConnectError, OSError, anyio.BrokenResourceError) as exc:
        logger.info("WebSocket handshake failed: %s", exc)
        with anyio.CancelScope(shield=True):
            await stream.aclose()
        return
    except BaseException:  # cancelled mid-handshake (the server is closing): hang up too
        with anyio.CancelScope(shield=True):
            await stream.aclose()
        raise
    if request is None:  # refused: the response has been sent
        with anyio.CancelScope(shield=True):
            await stream.aclose()
        return
    origin = request.headers.get("Origin")
    path = without_token(request.path)
    transport = WebSocketTransport(
        stream,
        protocol,
        ping_interval=options.ping_interval,
        ping_timeout=options.ping_timeout,
        early_events=early_events,
        attributes={
            WebSocketAttribute.origin: lambda: origin,
            WebSocketAttribute.path: lambda: path,
        },
        max_message_bytes=options.max_message_bytes,
    )
    async with anyio.create_task_group() as connection_tasks:
        connection_tasks.start_soon(transport.run)
        try:
            await run_handler(handler, transport)
        finally:
            await transport.aclose()  # while the writer still runs, to send the close
            connection_tasks.cancel_scope.cancel()


async def _server_handshake(
    stream: ByteStream,
    protocol: ServerProtocol,
    token: str | None,
    files: Mapping[str, tuple[bytes, str]] | None = None,
    http_handler: HttpHandler | None = None,
) -> tuple[Request | None, list[object]]:
    """Read the request and answer it; ``(None, [])`` when it was refused or was a plain
    HTTP request (answered by ``http_handler`` or from ``files``)."""
    while True:
        try:
            data = await stream.receive(_READ_SIZE)
        except anyio.EndOfStream:
            raise ConnectError("The client closed the connection during the handshake") from None
        protocol.receive_data(data)
        events = protocol.events_received()
        if events:
            break
        if protocol.handshake_exc is not None:  # not HTTP at all: answer and hang up
            for data in protocol.data_to_send():
                if data:
                    await stream.send(data)
            raise ConnectError(f"Invalid WebSocket handshake: {protocol.handshake_exc}")
    request = events[0]
    if not isinstance(request, Request):
        raise ConnectError(f"Invalid WebSocket handshake: {protocol.handshake_exc}")
    if (files is not None or http_handler is not None) and not _is_upgrade(request):
        response = await _plain_response(request, files or {}, http_handler)
        protocol.send_response(response)
        for data in protocol.data_to_send():
            if data:
                await stream.send(data)
        logger.debug("HTTP GET %s: %d", urlsplit(request.path).path, response.status_code)
        return None, []
    if token is not None and not _token_ok(request, token):
        response = protocol.reject(401, "Missing or invalid bearer token\n")
        response.headers["WWW-Authenticate"] = "Bearer"
    else:
        response = protocol.accept(request)
    protocol.send_response(response)
    for data in protocol.data_to_send():
        if data:
            await stream.send(data)
    if response.status_code != 101:
        logger.info(
            "Refused a WebSocket client: HTTP %d %s",
            response.status_code,
            response.reason_phrase,
        )
        return None, []
    return request, list(events[1:])


def _check_http_files(
    files: Mapping[str, tuple[bytes, str]] | None,
) -> dict[str, tuple[bytes, str]] | None:
    """Validate ``http_files`` once, up front: absolute paths to (bytes, content type)."""
    if files is None:
        return None
    checked: dict[str, tuple[bytes, str]] = {}
    for path, entry in files.items():
        if not isinstance(path, str) or not path.startswith("/"):
            raise ValueError(f"http_files paths must start with '/': {path!r}")
        content, content_type = entry
        if not isinstance(content, bytes | bytearray | memoryview):
            raise TypeError(f"http_files[{path!r}] content must be bytes")
        checked[path] = (bytes(content), str(content_type))
    return checked


def _is_upgrade(request: Request) -> bool:
    """Whether the request asks for a WebSocket (``Upgrade: websocket``)."""
    upgrade = ",".join(request.headers.get_all("Upgrade"))
    return any(value.strip().lower() == "websocket" for value in upgrade.split(","))


_FIXED_HEADERS = frozenset({"content-type", "content-length", "connection"})


async def _plain_response(
    request: Request,
    files: Mapping[str, tuple[bytes, str]],
    http_handler: HttpHandler | None,
) -> Response:
    """The handler's answer if it gives one, else the file at the request's path (query
    ignored), else ``404``."""
    parts = urlsplit(request.path)
    if http_handler is not None:
        try:
            answer = await http_handler(HttpRequest(parts.path, parts.query, request.headers))
            if answer is not None:
                return _response(answer)
        except Exception:
            logger.exception("HTTP handler raised for %s", parts.path)
            return _response(HttpResponse(500, b"Internal server error\n"))
    entry = files.get(parts.path)
    if entry is None:
        return _response(HttpResponse(404, b"Not found\n"))
    body, content_type = entry
    return _response(HttpResponse(200, body, content_type))


def _response(answer: HttpResponse) -> Response:
    """The wire response; ``ValueError`` for a header that could split the response or
    that the server owns."""
    headers = Headers(
        [
            ("Content-Type", answer.content_type),
            ("Content-Length", str(len(answer.body))),
            ("Cache-Control", "no-store"),
            ("X-Content-Type-Options", "nosniff"),
            ("Connection", "close"),
        ]
    )
    for name, value in answer.headers.items():
        if any(c in f"{name}{value}" for c in "\r\n\0") or not name or ":" in name:
            raise ValueError(f"Invalid HTTP header {name!r}: {value!r}")
        if name.lower() in _FIXED_HEADERS:
            raise ValueError(f"HTTP header {name!r} is the server's to set")
        if name in headers:  # replaces (Cache-Control, say) rather than repeats
            del headers[name]
        headers[name] = value
    try:
        reason = HTTPStatus(answer.status).phrase
    except ValueError:
        reason = "Unknown"
    return Response(answer.status, reason, headers, bytes(answer.body))


def _token_ok(request: Request, token: str) -> bool:
    offered = ""
    authorization = request.headers.get("Authorization", "")
    if authorization.startswith("Bearer "):
        offered = authorization[len("Bearer ") :]
    else:
        query = parse_qs(urlsplit(request.path).query)
        offered = (query.get("access_token") or [""])[0]
    return hmac.compare_digest(offered.encode(), token.encode())
