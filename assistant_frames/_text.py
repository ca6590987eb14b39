"""Plain text for people: tables for the CLI and the demo, validation errors in a line."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic_core import ValidationError

__all__ = [
    "command_text",
    "describe_validation_error",
    "format_table",
    "host_port",
    "without_credentials",
    "without_repeated_command",
]

_COMMAND_SHOWN = 120  # characters of a command shown in a message


def format_table(
    rows: Sequence[Sequence[str]], *, indent: int = 2, width: int | None = None
) -> str:
    """Left-aligned columns separated by two spaces; the last column is wrapped to
    ``width`` (if given) under itself. The first row is usually a header."""
    if not rows:
        return ""
    columns = max(len(row) for row in rows)
    padded = [[*row, *([""] * (columns - len(row)))] for row in rows]
    widths = [max(len(row[i]) for row in padded) for i in range(columns - 1)]
    lead = " " * indent
    start = indent + sum(w + 2 for w in widths)
    room = None if width is None else max(width - 1 - start, 24)
    lines = []
    for row in padded:
        head = lead + "".join(cell.ljust(w + 2) for cell, w in zip(row, widths, strict=False))
        last = row[-1]
        if room is None or len(last) <= room:
            lines.append((head + last).rstrip())
            continue
        wrapped = textwrap.wrap(last, room, break_on_hyphens=False) or [""]
        lines.append((head + wrapped[0]).rstrip())
        lines += [" " * start + more for more in wrapped[1:]]
    return "\n".join(lines)


def describe_validation_error(exc: ValidationError) -> str:
    """The first three problems of a pydantic ``ValidationError``, as ``loc: msg; ...``."""
    parts = []
    for error in exc.errors(include_url=False)[:3]:
        loc = ".".join(str(p) for p in error["loc"])
        parts.append(f"{loc}: {error['msg']}" if loc else error["msg"])
    return "; ".join(parts)


def host_port(host: str, port: int) -> str:
    """``host:port`` as a URL writes it: an IPv6 address in brackets (``[::1]:8765``)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def without_credentials(url: str) -> str:
    """``url`` without the ``user:password@`` or ``token@`` in it, to show people."""
    from urllib.parse import urlsplit, urlunsplit  # here: a worker's start need not import it

    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def command_text(command: Sequence[str]) -> str:
    """A command as a person reads it: the program's name without its directory (an
    interpreter's full path is long and says little), shortened past 120 characters."""
    if not command:
        return ""
    import shlex  # here: a worker's start need not import it

    program, *args = command
    shown = shlex.join([os.path.basename(program) or program, *args])
    if len(shown) > _COMMAND_SHOWN:
        shown = shown[: _COMMAND_SHOWN - 3] + "..."
    return shown


def without_repeated_command(name: str, description: str) -> str:
    """``description`` less a `` (`command`)`` that ``name`` shows already, so a message
    that starts with a frame's name does not write its command twice."""
    start = description.find(" (`")
    end = description.find("`)", start + 3)
    if start < 0 or end < 0:
        return description
    if description[start + 2 : end + 1] in name:
        return description[:start] + description[end + 2 :]
    return description
