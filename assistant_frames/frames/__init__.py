"""The frame protocol: the sans-I/O wire format and state machines, the frame side and
the host side, and their connections."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import protocol
from .connection import ConnectionState, FrameConnection
from .host import AssistantFrameHost
from .provider import AssistantFrameProvider
from .reconnect import Connector, ReconnectingHost

if TYPE_CHECKING:
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


def __getattr__(name: str) -> Any:
    # The worker side pulls in the stdio transport; imported on first use, so that
    # ``import assistant_frames`` stays light.
    if name == "serve_stdio":
        from .worker import serve_stdio

        globals()[name] = serve_stdio
        return serve_stdio
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
