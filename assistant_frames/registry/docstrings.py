"""Split a docstring into a tool description and per-parameter descriptions.

Understands Google style (an ``Args:`` section of ``name: text`` or ``name (type): text``
entries) and reST fields (``:param name: text``), which covers what people write in
practice without a parser dependency.
"""

from __future__ import annotations

import inspect
import re

__all__ = ["parse_docstring"]

_ARGS_SECTION = re.compile(r"^(Args|Arguments|Parameters|Params|Keyword Args|Kwargs):$")
_SECTION = re.compile(r"^[A-Z][A-Za-z ]*:$")
_GOOGLE_ITEM = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_REST_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?(\w+):\s*(.*)$")
_REST_FIELD = re.compile(r"^:\w+")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def parse_docstring(doc: str | None) -> tuple[str | None, dict[str, str]]:
    """Return ``(description, {parameter: description})`` for a docstring."""
    if not doc:
        return None, {}
    description: list[str] = []
    params: dict[str, str] = {}
    current: str | None = None
    mode = "text"  # "text", "args" (Google section), "field" (reST), "other"
    item_indent: int | None = None
    for line in inspect.cleandoc(doc).splitlines():
        stripped = line.strip()
        top_level = _indent(line) == 0
        if top_level and _ARGS_SECTION.match(stripped):
            mode, current, item_indent = "args", None, None
            continue
        if top_level and _SECTION.match(stripped):
            mode, current = "other", None
            continue
        field = _REST_PARAM.match(stripped)
        if top_level and field:
            mode, current = "field", field.group(1)
            params[current] = field.group(2)
            continue
        if top_level and _REST_FIELD.match(stripped):
            mode, current = "other", None
            continue
        if mode == "text":
            description.append(line)
        elif mode == "args" and stripped:
            item = _GOOGLE_ITEM.match(stripped)
            if item_indent is None:
                item_indent = _indent(line)
            if item and _indent(line) <= item_indent:
                current = item.group(1)
                params[current] = item.group(2)
            elif current:
                params[current] = f"{params[current]} {stripped}"
        elif mode == "field" and stripped and current:
            params[current] = f"{params[current]} {stripped}"
    text = "\n".join(description).strip()
    return (text or None), {k: v.strip() for k, v in params.items() if v.strip()}
