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

Modules: :mod:`.connection` (the transport: one connection, either side),
:mod:`.client` (:func:`connect_websocket`), :mod:`.server` (:func:`websocket_server`,
:func:`websocket_listener`), :mod:`.handshake` (the server's opening handshake: token
and Origin checks) and :mod:`.http` (plain HTTP requests: static files and
``http_handler``).
"""

from __future__ import annotations

try:
    import websockets  # noqa: F401 - the optional dependency, checked before the modules
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "WebSocket transports need the 'websockets' package: "
        "pip install 'assistant-frames[websockets]'"
    ) from exc

from ..attributes import WebSocketAttribute
from .client import connect_websocket
from .connection import DEFAULT_MAX_MESSAGE_BYTES, WebSocketTransport
from .http import HttpHandler, HttpRequest, HttpResponse
from .server import Handler as Handler  # the handler type, as the single module had it
from .server import WebSocketListener, WebSocketServer, websocket_listener, websocket_server

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
