"""Exceptions raised by assistant-frames.

Every exception the library raises on purpose derives from :class:`AssistantFramesError`,
so ``except AssistantFramesError`` catches all of them and nothing else.
"""

from __future__ import annotations

__all__ = [
    "AssistantFramesError",
    "ConnectError",
    "FrameDisconnected",
    "HandshakeRejected",
    "ToolArgumentsError",
    "ToolCallError",
    "ToolCallTimeout",
    "ToolConflictError",
    "ToolDisabledError",
    "ToolNotFoundError",
]


class AssistantFramesError(Exception):
    """Base class of every error assistant-frames raises."""


class ToolCallError(AssistantFramesError):
    """A tool call failed; :attr:`message` is the error the frame reported.

    Raised for errors reported across a frame boundary (a ``tool-result`` carrying an
    ``error``) and for local refusals (unknown tool, disabled tool, invalid arguments),
    so the caller handles both the same way.
    """

    def __init__(
        self, message: str, *, tool_name: str | None = None, tool_call_id: str | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.tool_name = tool_name
        self.tool_call_id = tool_call_id


class ToolNotFoundError(ToolCallError):
    """No tool of that name exists (wire message: ``Tool "<name>" not found``)."""

    def __init__(self, tool_name: str, *, tool_call_id: str | None = None) -> None:
        super().__init__(
            f'Tool "{tool_name}" not found', tool_name=tool_name, tool_call_id=tool_call_id
        )


class ToolDisabledError(ToolCallError):
    """The tool exists but is disabled and refuses calls."""

    def __init__(self, tool_name: str, *, tool_call_id: str | None = None) -> None:
        super().__init__(
            f'Tool "{tool_name}" is disabled', tool_name=tool_name, tool_call_id=tool_call_id
        )


class ToolArgumentsError(ToolCallError):
    """The arguments do not match the tool's parameter schema (or cannot be sent)."""


class ToolCallTimeout(AssistantFramesError, TimeoutError):
    """A tool call did not finish in time; the frame was sent a ``tool-cancel``."""

    def __init__(self, tool_name: str, timeout: float, *, tool_call_id: str | None = None) -> None:
        super().__init__(f'Tool call "{tool_name}" timed out after {timeout:g} s')
        self.tool_name = tool_name
        self.timeout = timeout
        self.tool_call_id = tool_call_id


class FrameDisconnected(AssistantFramesError, ConnectionError):
    """The connection to the frame is gone; pending and new calls fail with this.

    When the frame was a worker process that exited, :attr:`returncode` (negative: the
    signal that killed it) and :attr:`stderr_tail` (the end of its stderr) say why;
    otherwise both are ``None``.
    """

    def __init__(
        self,
        message: str,
        *,
        returncode: int | None = None,
        stderr_tail: str | None = None,
    ) -> None:
        super().__init__(message)
        self.returncode = returncode
        self.stderr_tail = stderr_tail

    def __copy__(self) -> FrameDisconnected:
        return type(self)(str(self), returncode=self.returncode, stderr_tail=self.stderr_tail)


class ToolConflictError(AssistantFramesError, ValueError):
    """Two tools of the same name at the same priority, in strict mode or on a local add."""

    def __init__(self, tool_name: str, message: str | None = None) -> None:
        super().__init__(
            message or f"A tool named {tool_name!r} is already registered at the same priority"
        )
        self.tool_name = tool_name


class ConnectError(AssistantFramesError, ConnectionError):
    """A connection to a frame (or a listening socket) could not be set up."""


class HandshakeRejected(ConnectError):
    """The server refused the WebSocket handshake, e.g. HTTP 401 for a bad token."""

    def __init__(self, status: int, body: str = "") -> None:
        detail = f": {body}" if body else ""
        super().__init__(f"The server refused the connection with HTTP {status}{detail}")
        self.status = status
        self.body = body
