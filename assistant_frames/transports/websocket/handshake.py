"""The server's side of the opening handshake: which requests become WebSocket
connections (a bearer token, and the Origin allowlist that websockets' protocol checks)
and which get a plain HTTP answer (:mod:`.http`)."""

from __future__ import annotations

import hmac
import logging
from collections.abc import Mapping
from urllib.parse import parse_qs, urlsplit

import anyio
from anyio.abc import ByteStream
from websockets.http11 import Request
from websockets.server import ServerProtocol

from ...errors import ConnectError
from .connection import _READ_SIZE
from .http import HttpHandler, _is_upgrade, _plain_response

logger = logging.getLogger("assistant_frames.transports")


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


def _token_ok(request: Request, token: str) -> bool:
    offered = ""
    authorization = request.headers.get("Authorization", "")
    if authorization.startswith("Bearer "):
        offered = authorization[len("Bearer ") :]
    else:
        query = parse_qs(urlsplit(request.path).query)
        offered = (query.get("access_token") or [""])[0]
    return hmac.compare_digest(offered.encode(), token.encode())
