"""Exceptions raised by assistant-frames.

Every exception the library raises on purpose derives from :class:`AssistantFramesError`,
so ``except AssistantFramesError`` catches all of them and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, Final

__all__ = [
    "ERROR_KINDS",
    "AssistantFramesError",
    "ConnectError",
    "ContextTimeout",
    "DocumentChanged",
    "ErrorCode",
    "ErrorKind",
    "FrameDisconnected",
    "HandshakeRejected",
    "ProviderDisposed",
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
    DOCUMENT_CHANGED = "document_changed"
    PROVIDER_DISPOSED = "provider_disposed"


class AssistantFramesError(Exception):
    """Base class of every error assistant-frames raises."""

    #: The kind of failure (see :data:`ERROR_KINDS` for how each protocol says it).
    code: ClassVar[ErrorCode | None] = None


class ToolCallError(AssistantFramesError):
    """A tool call failed; :attr:`message` says why.

    Every way a call can fail is one of these, so ``except ToolCallError`` is the one
    clause a tool-calling loop needs: an error reported across a frame boundary (a
    ``tool-result`` carrying an ``error``), a local refusal (unknown tool, disabled tool,
    invalid arguments), a timeout (:class:`ToolCallTimeout`) and a lost frame
    (:class:`FrameDisconnected`). :attr:`tool_name` and :attr:`frame` say which tool of
    which frame, where known.
    """

    code: ClassVar[ErrorCode | None] = ErrorCode.TOOL_FAILED

    def __init__(
        self,
        message: str,
        *,
        tool_name: str | None = None,
        tool_call_id: str | None = None,
        frame: str | None = None,
    ) -> None:
        super().__init__(message)
        #: What went wrong, in words a model (or a person) can read.
        self.message = message
        #: The tool that was called, when the error belongs to one call.
        self.tool_name = tool_name
        #: The call's id on the wire, when it had one.
        self.tool_call_id = tool_call_id
        #: The name of the frame (host, MCP server, federation member) that failed the call.
        self.frame = frame

    def __str__(self) -> str:
        """:attr:`message`, led by the tool and the frame where known and not named in
        it already (``Tool "add" of calc: ...``): a log line says which call failed."""
        message = self.message
        named = self.tool_name and f'"{self.tool_name}"' in message  # as in Tool "x" ...
        tool = self.tool_name if self.tool_name and not named else None
        frame = self.frame if self.frame and self.frame not in message else None
        if tool and frame:
            return f'Tool "{tool}" of {frame}: {message}'
        if tool or frame:
            return f'Tool "{tool}": {message}' if tool else f"{frame}: {message}"
        return message


class ToolNotFoundError(ToolCallError):
    """No tool of that name exists (wire message: ``Tool "<name>" not found``)."""

    code = ErrorCode.TOOL_NOT_FOUND

    def __init__(
        self, tool_name: str, *, tool_call_id: str | None = None, waiting: tuple[str, ...] = ()
    ) -> None:
        message = f'Tool "{tool_name}" not found'
        if waiting:  # the likely cause: a frame's tools have not arrived yet
            names = ", ".join(repr(name) for name in waiting)
            message += (
                f" (no context from {names} yet: await its wait_for_context(), or connect"
                " with assistant_frames.connect(), which waits for it)"
            )
        super().__init__(message, tool_name=tool_name, tool_call_id=tool_call_id)


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


class ToolCallTimeout(ToolCallError, TimeoutError):
    """A tool call did not finish in time; the frame was sent a ``tool-cancel``.

    Also a ``TimeoutError``, so code written for the standard exception keeps working.
    """

    code = ErrorCode.TIMEOUT

    def __init__(
        self,
        tool_name: str,
        timeout: float,
        *,
        tool_call_id: str | None = None,
        frame: str | None = None,
    ) -> None:
        super().__init__(
            f'Tool call "{tool_name}" timed out after {timeout:g} s',
            tool_name=tool_name,
            tool_call_id=tool_call_id,
            frame=frame,
        )
        #: The limit that was exceeded, in seconds.
        self.timeout = timeout


class FrameDisconnected(ToolCallError, ConnectionError):
    """The connection to the frame is gone; pending and new calls fail with this.

    When the frame was a process that exited (a worker, a stdio MCP server),
    :attr:`returncode` (negative: the signal that killed it) and :attr:`stderr_tail`
    (the end of its stderr) say why; otherwise both are ``None``. Also a
    ``ConnectionError``, so code written for the standard exception keeps working.
    """

    code = ErrorCode.DISCONNECTED

    def __init__(
        self,
        message: str,
        *,
        returncode: int | None = None,
        stderr_tail: str | None = None,
        tool_name: str | None = None,
        tool_call_id: str | None = None,
        frame: str | None = None,
    ) -> None:
        super().__init__(message, tool_name=tool_name, tool_call_id=tool_call_id, frame=frame)
        self.returncode = returncode
        self.stderr_tail = stderr_tail

    def __copy__(self) -> FrameDisconnected:
        return type(self)(
            self.message,
            returncode=self.returncode,
            stderr_tail=self.stderr_tail,
            tool_name=self.tool_name,
            tool_call_id=self.tool_call_id,
            frame=self.frame,
        )


class DocumentChanged(FrameDisconnected):
    """The frame's document changed while the call was pending (a browser frame
    reloaded, a frame process was replaced): the call was lost with the old document.

    Its message is the JS text, ``"AssistantFrame document has changed"``; the connection
    stays, and the new document's tools are called as usual.
    """

    code = ErrorCode.DOCUMENT_CHANGED

    def __init__(self, message: str = "AssistantFrame document has changed", **kwargs: Any):
        super().__init__(message, **kwargs)


class ProviderDisposed(FrameDisconnected):
    """The frame stopped serving (its provider was disposed) while the call was
    pending, or before it was made; calls fail with this until it sends a context again.

    Its message is the JS text, ``"AssistantFrameProvider has been disposed"``.
    """

    code = ErrorCode.PROVIDER_DISPOSED

    def __init__(self, message: str = "AssistantFrameProvider has been disposed", **kwargs: Any):
        super().__init__(message, **kwargs)


class ToolConflictError(AssistantFramesError, ValueError):
    """Two tools of the same name at the same priority, in strict mode or on a local add."""

    def __init__(self, tool_name: str, message: str | None = None) -> None:
        super().__init__(
            message or f"A tool named {tool_name!r} is already registered at the same priority"
        )
        self.tool_name = tool_name


class ConnectError(AssistantFramesError, ConnectionError):
    """A connection to a frame (or a listening socket) could not be set up.

    When the frame was a process that exited while connecting, :attr:`returncode` and
    :attr:`stderr_tail` say why (as on :class:`FrameDisconnected`); otherwise ``None``.
    """

    def __init__(
        self, message: str, *, returncode: int | None = None, stderr_tail: str | None = None
    ) -> None:
        super().__init__(message)
        self.returncode = returncode
        self.stderr_tail = stderr_tail


class ContextTimeout(AssistantFramesError, TimeoutError):
    """No model context arrived in time from a frame (``wait_for_context``, ``connect``).

    :attr:`message` names the frame and says what, if anything, was received instead.
    """

    def __init__(self, message: str, *, frame: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        #: The name of the frame (or the target) that sent no context.
        self.frame = frame


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
#: The JS frame's error for a ``tool-call`` addressed to another document, and the JS
#: host's for calls pending when the frame's document changed (0.3.35).
DOCUMENT_CHANGED: Final = "AssistantFrame document has changed"
#: The error of calls pending (or made) once a frame's provider was disposed (0.3.35).
PROVIDER_DISPOSED: Final = "AssistantFrameProvider has been disposed"

ERROR_KINDS: Final[dict[ErrorCode, ErrorKind]] = {
    kind.code: kind
    for kind in (
        ErrorKind(ErrorCode.TOOL_FAILED, ToolCallError, None, -32603, True),
        ErrorKind(
            ErrorCode.TOOL_NOT_FOUND,
            ToolNotFoundError,
            'Tool "{name}" not found',
            -32602,
            False,
            prefix=True,
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
        # @assistant-ui/core 0.3.35's words for a frame whose document went away.
        ErrorKind(ErrorCode.DOCUMENT_CHANGED, DocumentChanged, DOCUMENT_CHANGED, -32000, True),
        ErrorKind(ErrorCode.PROVIDER_DISPOSED, ProviderDisposed, PROVIDER_DISPOSED, -32000, True),
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
        missing = ToolNotFoundError(tool_name, tool_call_id=tool_call_id)
        missing.message, missing.args = message, (message,)  # keep a frame's hint
        return missing
    if code is ErrorCode.TOOL_DISABLED:
        return ToolDisabledError(tool_name, tool_call_id=tool_call_id)
    if code is ErrorCode.INVALID_ARGUMENTS:
        return ToolArgumentsError(message, tool_name=tool_name, tool_call_id=tool_call_id)
    if code is ErrorCode.DOCUMENT_CHANGED:
        return DocumentChanged(message, tool_name=tool_name, tool_call_id=tool_call_id)
    if code is ErrorCode.PROVIDER_DISPOSED:
        return ProviderDisposed(message, tool_name=tool_name, tool_call_id=tool_call_id)
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
