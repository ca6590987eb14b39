"""The frame protocol: the sans-I/O wire format, the frame side and the host side."""

from . import protocol
from .connection import ConnectionState, FrameConnection
from .host import AssistantFrameHost
from .provider import AssistantFrameProvider
from .reconnect import Connector, ReconnectingHost

__all__ = [
    "AssistantFrameHost",
    "AssistantFrameProvider",
    "ConnectionState",
    "Connector",
    "FrameConnection",
    "ReconnectingHost",
    "protocol",
]
