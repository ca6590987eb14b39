"""The frame protocol: the sans-I/O wire format and state machines, the frame side and
the host side, and their connections."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from . import protocol
    from .connection import ConnectionState, FrameConnection
    from .host import AssistantFrameHost
    from .provider import AssistantFrameProvider
    from .reconnect import Connector, ReconnectingHost
    from .worker import serve_stdio

__all__ = [
    "AssistantFrameHost",
    "AssistantFrameProvider",
    "ConnectionState",
    "Connector",
    "FrameConnection",
    "ReconnectingHost",
    "protocol",
    "serve_stdio",
]

# Imported on first use (PEP 562): a worker needs the frame side and serve_stdio, not the
# host side; a host needs no stdio transport.
_LAZY = {
    "AssistantFrameHost": ".host",
    "AssistantFrameProvider": ".provider",
    "ConnectionState": ".connection",
    "Connector": ".reconnect",
    "FrameConnection": ".connection",
    "ReconnectingHost": ".reconnect",
    "protocol": "",  # the module itself
    "serve_stdio": ".worker",
}


__getattr__, __dir__ = lazy_exports(__name__, globals(), _LAZY)
