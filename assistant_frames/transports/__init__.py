"""Transports: anyio object streams of JSON-compatible messages.

What a transport is, and what every transport promises, is stated in
:mod:`assistant_frames.transports.contract`. Shipped: :func:`memory_pair` (in-process),
WebSockets (:func:`connect_websocket`, :func:`websocket_server`,
:func:`websocket_listener`; needs the ``websockets`` extra) and worker subprocesses
over stdio (:func:`spawn_worker`; the worker's side, ``serve_stdio``, serves a frame and
is in :mod:`assistant_frames.frames`).
:class:`Multiplexer` carries several protocols over one transport (the frame channel,
JSON-RPC 2.0...), each on a sub-stream that is a transport in its own right.
Every name is imported on first use (PEP 562): a worker that starts often loads its stdio
transport, not the others.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .attributes import WebSocketAttribute
    from .contract import (
        CloseReason,
        Connector,
        Listener,
        MessageTooLarge,
        Transport,
        TransportAttribute,
        TransportClosed,
        UnsendableMessage,
        close_reason,
        decode_message,
        encode_message,
    )
    from .memory import MemoryTransport, copy_json, memory_pair
    from .multiplex import MultiplexedStream, Multiplexer, channel, frame_channel, jsonrpc
    from .stdio import StdioTransport, WorkerTransport, own_stdio, spawn_worker
    from .websocket import (
        HttpHandler,
        HttpRequest,
        HttpResponse,
        WebSocketListener,
        WebSocketServer,
        WebSocketTransport,
        connect_websocket,
        websocket_listener,
        websocket_server,
    )

__all__ = [
    "CloseReason",
    "Connector",
    "HttpHandler",
    "HttpRequest",
    "HttpResponse",
    "Listener",
    "MessageTooLarge",
    "Transport",
    "TransportClosed",
    "UnsendableMessage",
    "close_reason",
    "decode_message",
    "encode_message",
    "MemoryTransport",
    "MultiplexedStream",
    "Multiplexer",
    "StdioTransport",
    "TransportAttribute",
    "WebSocketAttribute",
    "WebSocketListener",
    "WebSocketServer",
    "WebSocketTransport",
    "WorkerTransport",
    "channel",
    "connect_websocket",
    "copy_json",
    "frame_channel",
    "jsonrpc",
    "memory_pair",
    "own_stdio",
    "serve_stdio",
    "spawn_worker",
    "websocket_listener",
    "websocket_server",
]

# Every name is imported on first use (PEP 562): a worker needs its stdio transport, not
# the memory transport or the multiplexer.
_LAZY = {
    "CloseReason": ".contract",
    "Connector": ".contract",
    "Listener": ".contract",
    "MessageTooLarge": ".contract",
    "Transport": ".contract",
    "TransportAttribute": ".contract",
    "TransportClosed": ".contract",
    "UnsendableMessage": ".contract",
    "close_reason": ".contract",
    "decode_message": ".contract",
    "encode_message": ".contract",
    "MemoryTransport": ".memory",
    "copy_json": ".memory",
    "memory_pair": ".memory",
    "MultiplexedStream": ".multiplex",
    "Multiplexer": ".multiplex",
    "channel": ".multiplex",
    "frame_channel": ".multiplex",
    "jsonrpc": ".multiplex",
    "StdioTransport": ".stdio",
    "WorkerTransport": ".stdio",
    "own_stdio": ".stdio",
    "spawn_worker": ".stdio",
    "HttpHandler": ".websocket",
    "HttpRequest": ".websocket",
    "HttpResponse": ".websocket",
    "WebSocketAttribute": ".attributes",
    "WebSocketListener": ".websocket",
    "WebSocketServer": ".websocket",
    "WebSocketTransport": ".websocket",
    "connect_websocket": ".websocket",
    "websocket_listener": ".websocket",
    "websocket_server": ".websocket",
}


_load, __dir__ = lazy_exports(__name__, globals(), _LAZY)


def __getattr__(name: str) -> Any:
    if name == "serve_stdio":
        return _deprecated_serve_stdio()
    return _load(name)


def _deprecated_serve_stdio() -> Any:
    """``serve_stdio``'s former home: it serves a frame, so it is in ``frames``, which
    transports do not import; kept for one minor release, warning on each use."""
    warnings.warn(
        "assistant_frames.transports.serve_stdio is deprecated: "
        "import serve_stdio from assistant_frames.frames instead",
        DeprecationWarning,
        stacklevel=3,
    )
    from ..frames.worker import serve_stdio

    return serve_stdio
