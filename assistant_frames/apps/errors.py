"""Errors of an MCP Apps peer's own requests: refused, timed out, or cut off.

What a peer *receives* that it cannot handle is a
:class:`~assistant_frames.apps.protocol.ProtocolError`; these are what a caller of
:class:`~assistant_frames.apps.App` (or the bridge) gets back when a request it sent
fails. All derive from :class:`AppError`, itself an
:class:`~assistant_frames.errors.AssistantFramesError`.
"""

from __future__ import annotations

from typing import Any

from ..errors import AssistantFramesError

__all__ = ["AppDisconnected", "AppError", "AppRequestError", "AppTimeout"]


class AppError(AssistantFramesError):
    """A request between an app's view and its host failed; :attr:`method` says which."""

    def __init__(self, message: str, *, method: str | None = None) -> None:
        super().__init__(message)
        #: What went wrong, in words.
        self.message = message
        #: The JSON-RPC method of the request, when the error belongs to one.
        self.method = method


class AppRequestError(AppError):
    """The peer answered a request with a JSON-RPC error.

    :attr:`jsonrpc_code` is the JSON-RPC code (``-32601``: the peer does not handle the method,
    ``-32602``: it found the params invalid, ``-32000``: it refused), :attr:`message`
    the peer's message and :attr:`data` the error's ``data``, if any; ``str()`` of the
    error names the method and code too.
    """

    def __init__(self, method: str, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{method} failed ({code}): {message}", method=method)
        #: The JSON-RPC error code (``code`` is the library-wide kind, as on every error).
        self.jsonrpc_code = code
        #: The peer's own message.
        self.message = message
        #: The error's ``data``, as sent.
        self.data = data


class AppTimeout(AppError, TimeoutError):
    """No answer to a request (or to ``ui/initialize``) within the timeout."""

    def __init__(self, method: str, timeout: float) -> None:
        super().__init__(f"No answer to {method} within {timeout:g} s", method=method)
        #: The timeout that passed, in seconds.
        self.timeout = timeout


class AppDisconnected(AppError, ConnectionError):
    """The connection to the peer is gone (or was never opened); pending requests fail."""
