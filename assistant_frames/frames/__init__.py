"""The frame protocol: the sans-I/O wire format and state machines, the frame side and
the host side, and their connections."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if not module:
        return importlib.import_module(f".{name}", __name__)
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
