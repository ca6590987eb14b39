"""What every WebSocket server of the library does the same way, whoever accepts the
connection (our own server, or an ASGI server through ``assistant_frames.asgi``)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import anyio

from .._anyio import cancelled_here

__all__ = ["run_handler", "without_token"]

logger = logging.getLogger("assistant_frames.transports")


def without_token(path: str) -> str:
    """The request path with any ``access_token`` query parameter removed."""
    parts = urlsplit(path)
    if "access_token" not in parts.query:
        return path
    query = [
        (key, value)
        for key, value in parse_qsl(parts.query, keep_blank_values=True)
        if key != "access_token"
    ]
    return urlunsplit(parts._replace(query=urlencode(query)))


async def run_handler(handler: Callable[[Any], Awaitable[Any]], transport: Any) -> None:
    """``await handler(transport)``: a connection that ends under it is no error, and a
    handler's bug is logged and ends its connection, never the server (the caller
    closes the transport)."""
    try:
        await handler(transport)
    except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass  # the connection ended under the handler: nothing went wrong here
    except Exception:
        logger.exception("WebSocket connection handler raised")
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # a handler's bug ends its connection, not the server
        if isinstance(exc, anyio.get_cancelled_exc_class()) and cancelled_here():
            raise
        logger.error("WebSocket connection handler raised %r", exc, exc_info=exc)
