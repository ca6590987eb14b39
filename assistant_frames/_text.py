"""Plain-text tables, for the CLI and the demo."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

__all__ = ["format_table"]


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
