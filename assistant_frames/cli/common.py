"""What every part of the command line shares: its name, defaults, exit statuses,
:class:`CommandError`, one-line messages on stderr, ``--args`` JSON, and the lazy
WebSocket import."""

from __future__ import annotations

import contextlib
import json
import sys
from typing import Any

PROG = "assistant-frames"
DEFAULT_TIMEOUT = 10.0
TOKEN_ENV = "ASSISTANT_FRAMES_TOKEN"
LOOPBACK = ("127.0.0.1", "::1", "localhost")  # the host names that reach this machine only
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class CommandError(Exception):
    """A failure to report as one line on stderr, with the exit status to use."""

    def __init__(self, message: str, exit_code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


def usage_error(message: str) -> CommandError:
    return CommandError(message, EXIT_USAGE)


def print_error(message: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        print(f"{PROG}: error: {message}", file=sys.stderr, flush=True)


def note(message: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        print(f"{PROG}: {message}", file=sys.stderr, flush=True)


def parse_json_arguments(text: str) -> Any:
    """``--args``: JSON, ``-`` (read from stdin) or ``@FILE``; a usage error if unreadable."""
    source = "--args"
    if text == "-":
        text, source = sys.stdin.read(), "--args - (stdin)"
    elif text.startswith("@"):
        path = text[1:]
        try:
            with open(path, encoding="utf-8") as file:
                text = file.read()
        except OSError as exc:
            raise usage_error(f"cannot read --args {text}: {exc.strerror or exc}") from None
        source = f"--args {text}"
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise usage_error(f"{source} is not valid JSON: {exc}") from None


def websocket_module() -> Any:
    try:
        from ..transports import websocket
    except ImportError as exc:
        raise CommandError(str(exc)) from None
    return websocket
