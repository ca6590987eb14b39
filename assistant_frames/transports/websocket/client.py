"""The WebSocket client: :func:`connect_websocket` dials a ``ws://`` (or ``wss://``) URL."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

import anyio
from anyio.abc import ByteStream
from websockets.client import ClientProtocol
from websockets.exceptions import InvalidStatus
from websockets.typing import Origin
from websockets.uri import parse_uri

from ..._anyio import task_group
from ...errors import ConnectError, HandshakeRejected
from .._streams import connect_tcp
from ..attributes import WebSocketAttribute
from ..contract import _renamed_limit
from .connection import _READ_SIZE, DEFAULT_MAX_MESSAGE_BYTES, WebSocketTransport

__all__ = ["connect_websocket"]


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
