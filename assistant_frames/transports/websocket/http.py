"""Plain HTTP requests (no WebSocket upgrade) that reach a WebSocket server: the
types an ``http_handler`` takes and returns, and the answer from ``http_files``."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from urllib.parse import urlsplit

from websockets.datastructures import Headers
from websockets.http11 import Request, Response

__all__ = ["HttpHandler", "HttpRequest", "HttpResponse"]

logger = logging.getLogger("assistant_frames.transports")


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
