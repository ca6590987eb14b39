"""Exceptions raised by assistant-frames.

Every exception the library raises on purpose derives from :class:`AssistantFramesError`,
so ``except AssistantFramesError`` catches all of them and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar, Final

__all__ = [
    "ERROR_KINDS",
    "AssistantFramesError",
    "ConnectError",
    "ErrorCode",
    "ErrorKind",
    "FrameDisconnected",
    "HandshakeRejected",
    "ToolArgumentsError",
    "ToolCallError",
    "ToolCallTimeout",
    "ToolConflictError",
    "ToolDisabledError",
    "ToolNotFoundError",
    "error_from_jsonrpc",
    "error_from_wire",
]


class ErrorCode(StrEnum):
    """What kind of failure an error is, whichever protocol reported it."""

    TOOL_FAILED = "tool_failed"
    TOOL_NOT_FOUND = "tool_not_found"
    TOOL_DISABLED = "tool_disabled"
    INVALID_ARGUMENTS = "invalid_arguments"
    RESULT_NOT_SENDABLE = "result_not_sendable"
    MALFORMED_CALL = "malformed_call"
    TIMEOUT = "timeout"
    DISCONNECTED = "disconnected"


class AssistantFramesError(Exception):
    """Base class of every error assistant-frames raises."""

    #: The kind of failure (see :data:`ERROR_KINDS` for how each protocol says it).
    code: ClassVar[ErrorCode | None] = None


class ToolCallError(AssistantFramesError):
    """A tool call failed; :attr:`message` is the error the frame reported.

    Raised for errors reported across a frame boundary (a ``tool-result`` carrying an
    ``error``) and for local refusals (unknown tool, disabled tool, invalid arguments),
    so the caller handles both the same way.
    """

    code: ClassVar[ErrorCode | None] = ErrorCode.TOOL_FAILED

    def __init__(
        self, message: str, *, tool_name: str | None = None, tool_call_id: str | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.tool_name = tool_name
        self.tool_call_id = tool_call_id


class ToolNotFoundError(ToolCallError):
    """No tool of that name exists (wire message: ``Tool "<name>" not found``)."""

    code = ErrorCode.TOOL_NOT_FOUND

    def __init__(self, tool_name: str, *, tool_call_id: str | None = None) -> None:
        super().__init__(
            f'Tool "{tool_name}" not found', tool_name=tool_name, tool_call_id=tool_call_id
        )


class ToolDisabledError(ToolCallError):
    """The tool exists but is disabled and refuses calls."""

    code = ErrorCode.TOOL_DISABLED

    def __init__(self, tool_name: str, *, tool_call_id: str | None = None) -> None:
        super().__init__(
            f'Tool "{tool_name}" is disabled', tool_name=tool_name, tool_call_id=tool_call_id
        )


class ToolArgumentsError(ToolCallError):
    """The arguments do not match the tool's parameter schema (or cannot be sent)."""

    code = ErrorCode.INVALID_ARGUMENTS


class ToolCallTimeout(AssistantFramesError, TimeoutError):
    """A tool call did not finish in time; the frame was sent a ``tool-cancel``."""

    code = ErrorCode.TIMEOUT

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

    code = ErrorCode.DISCONNECTED

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


# -- one table: each kind of error, as every protocol says it ---------------------------


@dataclass(frozen=True)
class ErrorKind:
    """How one :class:`ErrorCode` is said on each wire.

    ``wire_message`` is the frame wire's error string (``{name}`` is the tool's name;
    ``None``: the message is free text), matched as a prefix when ``prefix`` is set.
    ``jsonrpc_code`` is the JSON-RPC 2.0 error code. ``mcp_is_error`` says whether an
    MCP server reports it as a ``tools/call`` result with ``isError: true`` (what a
    model can read and correct) rather than as a JSON-RPC error.
    """

    code: ErrorCode
    exception: type[AssistantFramesError]
    wire_message: str | None
    jsonrpc_code: int
    mcp_is_error: bool
    prefix: bool = False


RESULT_NOT_SENDABLE: Final = "Tool result could not be sent across the frame boundary"

ERROR_KINDS: Final[dict[ErrorCode, ErrorKind]] = {
    kind.code: kind
    for kind in (
        ErrorKind(ErrorCode.TOOL_FAILED, ToolCallError, None, -32603, True),
        ErrorKind(
            ErrorCode.TOOL_NOT_FOUND, ToolNotFoundError, 'Tool "{name}" not found', -32602, False
        ),
        ErrorKind(
            ErrorCode.TOOL_DISABLED, ToolDisabledError, 'Tool "{name}" is disabled', -32602, True
        ),
        ErrorKind(
            ErrorCode.INVALID_ARGUMENTS,
            ToolArgumentsError,
            'Invalid arguments for tool "{name}"',
            -32602,
            True,
            prefix=True,
        ),
        ErrorKind(ErrorCode.RESULT_NOT_SENDABLE, ToolCallError, RESULT_NOT_SENDABLE, -32603, True),
        ErrorKind(
            ErrorCode.MALFORMED_CALL,
            ToolCallError,
            "Malformed tool-call",
            -32600,
            True,
            prefix=True,
        ),
        # The codes the MCP TypeScript SDK uses for a request timeout and a closed
        # connection; a server reports a federated tool's timeout or lost frame as a
        # result the model can read, as it would any failed call.
        ErrorKind(ErrorCode.TIMEOUT, ToolCallTimeout, None, -32001, True),
        ErrorKind(ErrorCode.DISCONNECTED, FrameDisconnected, None, -32000, True),
    )
}

# Frame-wire messages that name a kind, most specific first (free text: TOOL_FAILED).
_WIRE_KINDS: Final = tuple(kind for kind in ERROR_KINDS.values() if kind.wire_message is not None)


def _wire_code(message: str, tool_name: str) -> ErrorCode:
    for kind in _WIRE_KINDS:
        expected = kind.wire_message.format(name=tool_name)  # type: ignore[union-attr]
        if message == expected or (kind.prefix and message.startswith(expected)):
            return kind.code
    return ErrorCode.TOOL_FAILED


def _tool_error(
    code: ErrorCode, message: str, tool_name: str, tool_call_id: str | None
) -> ToolCallError:
    if code is ErrorCode.TOOL_NOT_FOUND:
        return ToolNotFoundError(tool_name, tool_call_id=tool_call_id)
    if code is ErrorCode.TOOL_DISABLED:
        return ToolDisabledError(tool_name, tool_call_id=tool_call_id)
    if code is ErrorCode.INVALID_ARGUMENTS:
        return ToolArgumentsError(message, tool_name=tool_name, tool_call_id=tool_call_id)
    error = ToolCallError(message, tool_name=tool_name, tool_call_id=tool_call_id)
    if code is not ErrorCode.TOOL_FAILED:
        error.code = code  # type: ignore[misc]
    return error


def error_from_wire(message: str, tool_name: str, tool_call_id: str | None = None) -> ToolCallError:
    """The typed error for a failed frame-wire ``tool-result`` carrying ``message``."""
    return _tool_error(_wire_code(message, tool_name), message, tool_name, tool_call_id)


def error_from_jsonrpc(
    jsonrpc_code: int, message: str, tool_name: str, tool_call_id: str | None = None
) -> ToolCallError:
    """The typed error for a JSON-RPC error answering a call of ``tool_name``.

    ``-32602`` (invalid params) is a missing or disabled tool, or invalid arguments,
    when the message says so in the frame wire's words; any other JSON-RPC error (or a
    message in other words: servers phrase these freely) is a failed call.
    """
    code = ErrorCode.TOOL_FAILED
    if jsonrpc_code == ERROR_KINDS[ErrorCode.INVALID_ARGUMENTS].jsonrpc_code:
        code = _wire_code(message, tool_name)
    return _tool_error(code, message, tool_name, tool_call_id)
