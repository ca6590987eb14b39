"""Typed attributes of WebSocket transports, apart from the WebSocket module.

:class:`WebSocketAttribute` is shared by every transport over a WebSocket: the ones
:func:`~assistant_frames.transports.websocket_server` and
:func:`~assistant_frames.transports.connect_websocket` make (which need the
``websockets`` package) and the one an ASGI server hands to
:mod:`assistant_frames.asgi` (which does not). A handler that reads them works
unchanged behind either.
"""

from __future__ import annotations

from anyio import TypedAttributeSet, typed_attribute

__all__ = ["WebSocketAttribute"]


class WebSocketAttribute(TypedAttributeSet):
    """What a WebSocket transport knows about its peer (``transport.extra(...)``)."""

    #: The ``Origin`` header of the handshake (browsers send it), or ``None``.
    origin: str | None = typed_attribute()
    #: The request path (with query string, less any ``access_token``) of the handshake.
    path: str = typed_attribute()
