"""The argparse pieces every command shares: the parser class, how a command is added,
its usage lines, and the option types and options more than one command takes."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

from .common import DEFAULT_TIMEOUT, EXIT_USAGE, PROG

FORMATTER = argparse.RawDescriptionHelpFormatter
N = TypeVar("N", int, float)


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line: ``assistant-frames: error: ...``."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{PROG}: error: {message} (see '{self.prog} --help')\n")


def add_command(
    commands: Any,
    name: str,
    parents: list[argparse.ArgumentParser],
    *,
    help: str,
    description: str,
    epilog: str,
    usage: tuple[str, str] | None = None,
) -> argparse.ArgumentParser:
    """Add the command ``name`` to ``commands`` (a parser's subparsers), its help as written.

    ``usage`` is the usage's two lines after ``PROG name`` (options, then operands), the
    second lined up under the first; without it argparse writes the usage.
    """
    parser: argparse.ArgumentParser = commands.add_parser(
        name,
        parents=parents,
        help=help,
        description=description,
        epilog=epilog,
        formatter_class=FORMATTER,
    )
    if usage is not None:
        options, operands = usage
        parser.usage = f"{parser.prog} {options}\n{' ' * len(f'usage: {parser.prog} ')}{operands}"
    return parser


def positive_seconds(text: str) -> float:
    """An option's value that is a finite number of seconds above 0."""
    value = _parse(text, float, "a number")
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text!r}")
    return value


def at_least_one(text: str) -> int:
    """An option's value that is a whole number of 1 or more."""
    value = _parse(text, int, "a whole number")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _parse(text: str, kind: Callable[[str], N], what: str) -> N:
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not {what}: {text!r}") from None


def add_timeout(parser: argparse.ArgumentParser, help: str) -> None:
    """``--timeout SECONDS``, ``help`` followed by its default."""
    parser.add_argument(
        "--timeout",
        type=positive_seconds,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"{help} (default: {DEFAULT_TIMEOUT:g})",
    )


def add_page_address(parser: argparse.ArgumentParser, port_help: str) -> None:
    """``--port`` of a local page (``--host`` is hidden: tests may bind elsewhere)."""
    parser.add_argument("--port", type=int, default=0, help=port_help)
    parser.add_argument("--host", default="127.0.0.1", help=argparse.SUPPRESS)
