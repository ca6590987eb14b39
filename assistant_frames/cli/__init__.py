"""The ``assistant-frames`` command line: serve, inspect and call frames, run the demo.

::

    assistant-frames demo
    assistant-frames serve --ws :8765 --token s3cret myapp.tools:registry
    assistant-frames inspect ws://127.0.0.1:8765 --token s3cret
    assistant-frames call add --args '{"a": 2, "b": 3}' -- python worker.py
    assistant-frames apps preview -- python examples/weather_app.py
    assistant-frames dev myapp.tools:registry worker.py

Also runnable as ``python -m assistant_frames``. Exit status: 0 success, 1 the tool or
the frame failed (a tool error, a timeout, an unreachable or refusing frame), 2 a usage
error (bad arguments, bad ``--args`` JSON, a ``MODULE:OBJECT`` that cannot be loaded),
130 interrupted. Errors are one line on stderr, never a traceback (``-v`` adds it).

This package imports nothing WebSocket-related until a command needs it. Its modules:
:mod:`.parser` (the commands, options and help), :mod:`.report` (a failure as one line
and an exit status), :mod:`.loading` (``MODULE:OBJECT``), :mod:`.targets` (a ws:// URL
or a worker command to talk to), :mod:`.render` (a context as text), one ``*_command``
module per command (``dev_command`` also adds its own parser), and :mod:`.common` (what
they share).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence

from .common import DEFAULT_TIMEOUT, EXIT_USAGE, PROG, TOKEN_ENV, CommandError, usage_error
from .common import EXIT_FAILED as EXIT_FAILED
from .common import EXIT_INTERRUPTED as EXIT_INTERRUPTED
from .common import EXIT_OK as EXIT_OK
from .loading import load_frame
from .parser import build_parser, parse_listen_address
from .render import describe_type, format_table, parameter_rows, render_context
from .report import report

__all__ = [
    "DEFAULT_TIMEOUT",
    "TOKEN_ENV",
    "CommandError",
    "build_parser",
    "describe_type",
    "format_table",
    "load_frame",
    "main",
    "parameter_rows",
    "parse_listen_address",
    "render_context",
]

_logger = logging.getLogger("assistant_frames.cli")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    words = list(sys.argv[1:] if argv is None else argv)
    worker_command: list[str] | None = None
    if "--" in words:
        at = words.index("--")
        words, worker_command = words[:at], words[at + 1 :]
    parser = build_parser()
    try:
        options = parser.parse_args(words)
    except SystemExit as exc:  # --help, --version, or a usage error already reported
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    _configure_logging(options.verbose)
    if options.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    options.worker_command = worker_command
    try:
        handler: Callable[[argparse.Namespace], int] = options.handler
        if worker_command is not None and options.command not in (
            "inspect",
            "call",
            "apps",
            "dev",
        ):
            raise usage_error(
                f"'-- COMMAND' is for inspect, call, dev and apps preview, not {options.command}"
            )
        return handler(options)
    except BaseException as exc:  # every failure becomes one line
        return report(exc, verbose=options.verbose)


def _configure_logging(verbosity: int) -> None:
    level = logging.WARNING if verbosity == 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_LogFormatter(f"{PROG}: %(levelname)s: %(message)s"))
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(handler)
    root.setLevel(level)


class _LogFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        record.levelname = record.levelname.lower()
        return super().format(record)
