"""The WebSocket server: :func:`websocket_listener` binds, :func:`websocket_server` serves
while a block runs; each accepted connection is handshaken and handed to a handler."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
from anyio.abc import ByteStream
from websockets.server import ServerProtocol
from websockets.typing import Origin

from ..._anyio import task_group
from ...errors import ConnectError
from .._streams import TcpServer, bind_tcp, descriptor_limit
from ..attributes import WebSocketAttribute
from ..contract import Listener, _renamed_limit
from ..serving import run_handler, without_token
from .connection import DEFAULT_MAX_MESSAGE_BYTES, WebSocketTransport
from .handshake import _server_handshake
from .http import HttpHandler, _check_http_files

__all__ = ["WebSocketListener", "WebSocketServer", "websocket_listener", "websocket_server"]

logger = logging.getLogger("assistant_frames.transports")

Handler = Callable[[WebSocketTransport], Awaitable[Any]]


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
        # The listener outlives the task group, so accept() is cancelled, not closed under.
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
