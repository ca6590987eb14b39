"""Turning any failure of a command into one line on stderr and an exit status."""

from __future__ import annotations

import contextlib
import os
import sys
import traceback

from ..errors import (
    AssistantFramesError,
    FrameDisconnected,
    HandshakeRejected,
    ToolArgumentsError,
    ToolCallError,
    ToolCallTimeout,
    ToolDisabledError,
    ToolNotFoundError,
)
from .common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    CommandError,
    note,
    print_error,
)

__all__ = ["report"]


def _leaf(exc: BaseException) -> BaseException:
    """The exception that matters inside (nested) exception groups from task groups."""
    while isinstance(exc, BaseExceptionGroup):
        inner = list(exc.exceptions)
        interrupts = [e for e in inner if isinstance(e, KeyboardInterrupt)]
        errors = [e for e in inner if isinstance(e, Exception)]  # not cancellations
        exc = (interrupts or errors or inner)[0]
    return exc


def report(exc: BaseException, *, verbose: int) -> int:
    """Print ``exc`` as one line on stderr; return the exit status it calls for."""
    exc = _leaf(exc)
    if isinstance(exc, SystemExit):
        return exc.code if isinstance(exc.code, int) else EXIT_FAILED
    if isinstance(exc, KeyboardInterrupt):
        note("interrupted")
        return EXIT_INTERRUPTED
    if isinstance(exc, BrokenPipeError):  # e.g. `assistant-frames inspect ... | head`
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FAILED
    code = EXIT_FAILED
    if isinstance(exc, CommandError):
        message, code = exc.message, exc.exit_code
    elif isinstance(exc, HandshakeRejected):
        message = str(exc)
        if exc.status == 401:
            message += " (give the right --token)"
    elif isinstance(exc, (ToolNotFoundError, ToolDisabledError, ToolArgumentsError)):
        message = exc.message
    elif isinstance(exc, (ToolCallTimeout, FrameDisconnected)):
        message = exc.message  # says what happened; "tool X failed:" would not fit
    elif isinstance(exc, ToolCallError):
        where = f'tool "{exc.tool_name}" failed: ' if exc.tool_name else "the tool failed: "
        message = where + exc.message
    elif isinstance(exc, AssistantFramesError):
        message = str(exc) or type(exc).__name__
    elif isinstance(exc, TimeoutError):
        message = f"timed out{': ' + str(exc) if str(exc) else ''}"
    elif isinstance(exc, OSError):
        message = exc.strerror or str(exc) or type(exc).__name__
        if exc.filename is not None:
            message = f"{exc.filename}: {message}"
    elif isinstance(exc, ValueError):
        message, code = str(exc), EXIT_USAGE
    else:
        message = f"unexpected {type(exc).__name__}: {exc}"
        if verbose:
            traceback.print_exception(exc, file=sys.stderr)
        else:
            message += " (run with -v for the traceback)"
    print_error(_one_line(message))
    return code


def _one_line(message: str) -> str:
    """The first line of a message; a worker's stderr tail has passed through already."""
    lines = message.strip().splitlines() or ["(no message)"]
    first = lines[0].rstrip()
    if len(lines) > 1:
        trimmed = first.removesuffix("; the end of its stderr:")
        first = f"{trimmed} (its stderr is above)" if trimmed != first else first.rstrip(":")
    return first
