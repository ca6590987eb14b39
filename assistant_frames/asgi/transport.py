"""One accepted ASGI WebSocket connection as a transport.

The ASGI server (uvicorn, say) owns the socket, the WebSocket
protocol, keep-alive pings and the closing handshake; this class turns its
``receive``/``send`` callables into the library's transport contract
(:mod:`assistant_frames.transports.contract`): an ``anyio.abc.ObjectStream`` of JSON
messages, one per text frame, with the same size limit, close reasons and attributes as
the transports of :func:`~assistant_frames.transports.websocket_server`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import anyio
from anyio import TypedAttributeSet, typed_attribute
from anyio.abc import ObjectStream, SocketAttribute
from starlette.types import Receive, Scope, Send

from .._logs import log_first_loudly
from ..transports import (
    CloseReason,
    TransportAttribute,
    TransportClosed,
    decode_message,
    encode_message,
)
from ..transports.attributes import WebSocketAttribute
from .scope import header

__all__ = ["ASGIAttribute", "ASGIWebSocketTransport"]

logger = logging.getLogger("assistant_frames.asgi")

_CLOSE_TIMEOUT = 2.0
_CLEAN_CODES = (1000, 1001)
_MESSAGE_TOO_BIG = 1009


class ASGIAttribute(TypedAttributeSet):
    """What an ASGI WebSocket transport knows beyond :class:`WebSocketAttribute`."""

    #: The connection's ASGI scope: headers, ``path_params`` of the route,
    #: ``state`` (what the application's lifespan yielded), ``app``...
    scope: Scope = typed_attribute()


class ASGIWebSocketTransport(ObjectStream[Any]):
    """An accepted ASGI WebSocket connection as an anyio object stream of JSON messages.

    Not built directly: :func:`~assistant_frames.asgi.frame_endpoint` accepts the
    connection and hands the transport to its handler. ``send`` writes one text frame of
    compact JSON; a message with no JSON form or larger than ``max_message_bytes`` is
    refused with :class:`~assistant_frames.transports.UnsendableMessage` before anything
    is sent. A message from the peer larger than ``max_message_bytes`` closes the
    connection with code 1009; frames that are not JSON are dropped (one WARNING per
    connection). The server answers pings and runs the closing handshake.

    The end of the connection is a :class:`~assistant_frames.transports.TransportClosed`
    with the close code the server reports (clean for 1000 and 1001 only). What code an
    abrupt end gets is the server's choice: uvicorn reports 1005 for a connection lost
    without a close frame (its ``websockets-sansio`` implementation, the default) or
    1006 (``--ws websockets``); either way ``clean`` is ``False``.
    """

    def __init__(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        *,
        max_message_bytes: int | None,
        path: str,
    ) -> None:
        self._asgi_receive = receive
        self._asgi_send = send
        self._max_message_bytes = max_message_bytes
        self._attributes = _attributes(scope, path)
        self._send_lock = anyio.Lock()
        self._receive_lock = anyio.Lock()
        self._receive_scope: anyio.CancelScope | None = None
        self._closed = False  # aclose() was called
        self._close_sent = False  # websocket.close went to the server
        self._ended: TransportClosed | None = None  # what receive raises at the end
        self._dropped = 0

    # -- ObjectStream ------------------------------------------------------------------------

    async def send(self, item: Any) -> None:
        """Send ``item`` as one text frame of JSON.

        Raises :class:`~assistant_frames.transports.UnsendableMessage` (a ``TypeError``)
        before anything is sent if it has no JSON form or is too large;
        ``anyio.ClosedResourceError`` after :meth:`aclose`; ``anyio.BrokenResourceError``
        once the connection has ended.
        """
        data = encode_message(item, self._max_message_bytes)
        if self._closed:
            raise anyio.ClosedResourceError
        async with self._send_lock:
            if self._closed:
                raise anyio.ClosedResourceError
            if self._close_sent or self._ended is not None:
                raise anyio.BrokenResourceError(self._end_description())
            try:
                await self._asgi_send({"type": "websocket.send", "text": data.decode()})
            except Exception as exc:  # ASGI: OSError once the client is gone; others vary
                if self._closed:
                    raise anyio.ClosedResourceError from None
                raise anyio.BrokenResourceError(f"WebSocket connection broke: {exc!r}") from exc

    async def receive(self) -> Any:
        """The next message; :class:`~assistant_frames.transports.TransportClosed` (an
        ``anyio.EndOfStream``, with the close code) once the connection has ended."""
        async with self._receive_lock:
            while True:
                if self._closed:
                    raise anyio.ClosedResourceError
                if self._ended is not None:
                    raise self._ended
                with anyio.CancelScope() as scope:
                    self._receive_scope = scope
                    try:
                        event = await self._asgi_receive()
                    finally:
                        self._receive_scope = None
                if scope.cancelled_caught or self._closed:
                    raise anyio.ClosedResourceError
                kind = event.get("type")
                if kind == "websocket.receive":
                    found, message = await self._message(event)
                    if found:
                        return message
                elif kind == "websocket.disconnect":
                    self._end_with(event.get("code", 1005), event.get("reason") or "")

    async def send_eof(self) -> None:
        """Close the WebSocket (code 1000); what the peer sends meanwhile is still read."""
        await self._close(1000, "")

    async def aclose(self) -> None:
        """Close the connection cleanly (code 1000), bounded in time; quiet when the
        peer is already gone. A pending :meth:`receive` raises
        ``anyio.ClosedResourceError``."""
        if self._closed:
            return
        self._closed = True
        if self._receive_scope is not None:
            self._receive_scope.cancel()
        await self._close(1000, "")

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        """:class:`WebSocketAttribute` ``origin`` and ``path``, :class:`ASGIAttribute`
        ``scope``, anyio's ``SocketAttribute`` addresses and ports (as the server
        reports them) and :class:`TransportAttribute` ``max_message_bytes``."""
        return {
            **self._attributes,
            TransportAttribute.max_message_bytes: lambda: self._max_message_bytes,
        }

    # -- internals ---------------------------------------------------------------------------

    async def _message(self, event: Mapping[str, Any]) -> tuple[bool, Any]:
        """``(True, message)`` for a frame holding JSON; ``(False, None)`` for one that was
        dropped, or too large (the connection is then closed with code 1009)."""
        text = event.get("text")
        data: bytes = text.encode() if text is not None else bytes(event.get("bytes") or b"")
        limit = self._max_message_bytes
        if limit is not None and len(data) > limit:
            reason = f"message of {len(data)} bytes exceeds limit of {limit} bytes"
            await self._close(_MESSAGE_TOO_BIG, reason)
            self._end_with(_MESSAGE_TOO_BIG, reason)
            return False, None
        try:
            return True, decode_message(data)
        except ValueError as exc:
            self._dropped += 1
            log_first_loudly(
                logger, self._dropped == 1, "Dropped a WebSocket frame that is not JSON: %s", exc
            )
            return False, None

    def _end_with(self, code: int, reason: str) -> None:
        if self._ended is None:
            code = int(code)
            suffix = f": {reason}" if reason else ""
            description = f"WebSocket connection closed with code {code}{suffix}"
            self._ended = TransportClosed(
                CloseReason(description, clean=code in _CLEAN_CODES, close_code=code)
            )

    def _end_description(self) -> str:
        if self._ended is not None:
            return str(self._ended)
        return "WebSocket connection closed by this side"

    async def _close(self, code: int, reason: str) -> None:
        """Send ``websocket.close`` once, unless the connection already ended; bounded,
        and quiet if the server refuses (the client is gone)."""
        if self._close_sent or self._ended is not None:
            return
        with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_TIMEOUT):
            async with self._send_lock:
                if self._close_sent:
                    return
                self._close_sent = True
                try:
                    await self._asgi_send(
                        {"type": "websocket.close", "code": code, "reason": reason}
                    )
                except Exception as exc:  # the client is gone: nothing to close
                    logger.debug("Closing an ASGI WebSocket failed: %r", exc)


def _attributes(scope: Scope, path: str) -> dict[Any, Callable[[], Any]]:
    """The typed attributes the scope tells (addresses only when the server gave them)."""
    origin = header(scope, b"origin")
    attributes: dict[Any, Callable[[], Any]] = {
        WebSocketAttribute.origin: lambda: origin,
        WebSocketAttribute.path: lambda: path,
        ASGIAttribute.scope: lambda: scope,
    }
    client, server = scope.get("client"), scope.get("server")
    if client:
        remote = (client[0], client[1])
        attributes[SocketAttribute.remote_address] = lambda: remote
        attributes[SocketAttribute.remote_port] = lambda: remote[1]
    if server and server[1] is not None:
        local = (server[0], server[1])
        attributes[SocketAttribute.local_address] = lambda: local
        attributes[SocketAttribute.local_port] = lambda: local[1]
    return attributes
