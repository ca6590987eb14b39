"""``frame_endpoint``: a WebSocket endpoint of the user's ASGI application.

Each accepted connection becomes an :class:`~.transport.ASGIWebSocketTransport` handed
to a handler: ``provider.serve`` to serve a frame to every host that connects, or any
``async def handler(transport)`` (to host the frames that dial in, say). The handshake
passes the checks of :mod:`.checks` first, as with
:func:`~assistant_frames.transports.websocket_server`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from starlette.types import Receive, Scope, Send

from ..frames import AssistantFrameProvider
from ..registry import ModelContextProvider
from ..transports.serving import run_handler, without_token
from .checks import HandshakeChecks, refuse, token_ok
from .scope import request_path
from .transport import ASGIWebSocketTransport

if TYPE_CHECKING:
    from starlette.websockets import WebSocket

__all__ = ["DEFAULT_MAX_MESSAGE_BYTES", "FrameEndpoint", "Handler", "frame_endpoint"]

logger = logging.getLogger("assistant_frames.asgi")

#: ``max_message_bytes`` unless told otherwise: 4 MiB, as for ``websocket_server``.
DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024

Handler: TypeAlias = Callable[[ASGIWebSocketTransport], Awaitable[Any]]
"""What runs for each accepted connection: ``await handler(transport)``."""


class FrameEndpoint:
    """An ASGI application that runs a handler for each WebSocket it accepts.

    Made by :func:`frame_endpoint`. Route WebSockets to it with a Starlette
    ``WebSocketRoute(path, endpoint)``, ``app.router.add_websocket_route(path,
    endpoint)`` (Starlette, FastAPI) or ``app.mount(path, endpoint)``; from a FastAPI
    ``@app.websocket`` function, ``await endpoint.serve_websocket(websocket)``.
    A plain HTTP request gets ``426 Upgrade Required`` (``401`` first when a token is
    set).
    """

    def __init__(
        self,
        handler: Handler,
        *,
        checks: HandshakeChecks,
        max_message_bytes: int | None,
        provider: AssistantFrameProvider | None = None,
    ) -> None:
        self.handler = handler
        self.checks = checks
        self.max_message_bytes = max_message_bytes
        #: The frame served, when the endpoint was made for one.
        self.provider = provider

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI application."""
        kind = scope["type"]
        if kind == "websocket":
            await serve_connection(
                scope, receive, send, self.handler, self.checks, self.max_message_bytes
            )
        elif kind == "http":
            await _plain_http(scope, send, self.checks.token)
        elif kind == "lifespan":  # served as the whole application: nothing to start
            await _lifespan(receive, send)

    async def serve_websocket(self, websocket: WebSocket) -> None:
        """Serve a Starlette/FastAPI ``WebSocket`` that has not been accepted yet (from
        an ``@app.websocket`` function): checks, accept, handler, close."""
        await self(websocket.scope, websocket.receive, websocket.send)


def frame_endpoint(
    target: AssistantFrameProvider | ModelContextProvider | Handler,
    *,
    token: str | None = None,
    allowed_origins: Sequence[str] | None = None,
    same_origin: bool = False,
    max_message_bytes: int | None = DEFAULT_MAX_MESSAGE_BYTES,
) -> FrameEndpoint:
    """A WebSocket endpoint serving ``target`` to every client it accepts.

    ``target`` is an :class:`~assistant_frames.AssistantFrameProvider` (each connection
    is served as a frame: hosts connect to it), a ``ModelContextProvider`` such as a
    registry (served through an ``AssistantFrameProvider`` made for it), or an
    ``async def handler(transport)`` run for each connection (to host the frames that
    dial in, for one); the transport is closed when the handler returns, and a handler
    that raises is logged and affects no other connection.

    The same refusals as :func:`~assistant_frames.transports.websocket_server`: with
    ``token``, a client without ``Authorization: Bearer <token>`` (or, for browsers,
    ``?access_token=<token>``) gets HTTP 401; with ``allowed_origins``, a browser from
    another origin gets HTTP 403; both never reach the handler. ``same_origin=True``
    allows (or, alone, only allows) the browsers whose ``Origin`` is the host the
    request was sent to (its ``Host`` header): the pages of the same application.
    Clients that send no ``Origin`` (programs, not browsers) pass the origin check
    either way. (On a server without
    the ASGI ``websocket.http.response`` extension, both are a close before accepting,
    which the server answers with HTTP 403.) A message larger than
    ``max_message_bytes`` (4 MiB; ``None``: no limit) is refused by ``send`` and, from
    the client, closes the connection with code 1009. The ASGI server's own limit
    (uvicorn's ``ws_max_size``, 16 MiB by default) applies first: keep it at least as
    large. Keep-alive pings and handshake timeouts are the server's.
    """
    provider: AssistantFrameProvider | None = None
    if isinstance(target, AssistantFrameProvider):
        provider = target
    elif isinstance(target, ModelContextProvider):
        provider = AssistantFrameProvider(target)
    elif not callable(target):
        raise TypeError(
            "frame_endpoint() takes an AssistantFrameProvider, a ModelContextProvider "
            f"(a registry...) or an async handler(transport); not {target!r}"
        )
    handler: Handler = provider.serve if provider is not None else target  # type: ignore[assignment]
    checks = HandshakeChecks.build(token, allowed_origins, same_origin=same_origin)
    return FrameEndpoint(
        handler, checks=checks, max_message_bytes=max_message_bytes, provider=provider
    )


async def serve_connection(
    scope: Scope,
    receive: Receive,
    send: Send,
    handler: Handler,
    checks: HandshakeChecks,
    max_message_bytes: int | None,
) -> None:
    """Check the handshake, accept, run ``handler`` and close when it returns."""
    event = await receive()
    if event.get("type") != "websocket.connect":
        return  # gone before the handshake reached us
    refusal = checks.refusal(scope)
    try:
        if refusal is not None:
            await refuse(scope, send, refusal)
            return
        await send({"type": "websocket.accept"})
    except OSError as exc:  # the client left during the handshake: ASGI servers say so
        logger.info("WebSocket client gone during the handshake: %r", exc)
        return
    transport = ASGIWebSocketTransport(
        scope,
        receive,
        send,
        max_message_bytes=max_message_bytes,
        path=without_token(request_path(scope)),
    )
    try:
        await run_handler(handler, transport)
    finally:
        await transport.aclose()


async def _plain_http(scope: Scope, send: Send, token: str | None) -> None:
    if token is not None and not token_ok(scope, token):
        status, body = 401, b"Missing or invalid bearer token\n"
        extra = [(b"www-authenticate", b"Bearer")]
    else:
        status, body = 426, b"Upgrade Required: this is a WebSocket endpoint\n"
        extra = [(b"upgrade", b"websocket"), (b"connection", b"Upgrade")]
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        *extra,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        event = await receive()
        if event["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif event["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
