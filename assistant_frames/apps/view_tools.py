"""The tools a view offers its host, as the host admits them into its model context.

A view (an MCP App) may list tools of its own (host-to-view ``tools/list``). The host
admits them by rule, not trust: a valid MCP tool name, the first tool of each name, at
most ``max_view_tools`` of them; every other is left out and logged once (bounded, so a
view listing hostile names for ever cannot flood the log). What the view last told the
model (``ui/update-model-context``) becomes the context's ``system`` text.
"""

from __future__ import annotations

import json
import logging
import re

import mcp_types as mcp

from . import protocol

__all__ = ["VIEW_TOOL_NAME", "ViewToolAdmission", "render_model_context"]

logger = logging.getLogger("assistant_frames.apps")

#: A valid MCP tool name, as a view's tools must have.
VIEW_TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")
_MAX_REPORTED = 256  # refused view tool names logged, per view


class ViewToolAdmission:
    """Which of one view's listed tools join the context; what was refused, logged once."""

    __slots__ = ("_over_reported", "_refused")

    def __init__(self) -> None:
        self._refused: set[str] = set()  # each logged once (bounded)
        self._over_reported = False  # more than max_view_tools, logged once

    def admit(self, tools: list[mcp.Tool], view: str, max_view_tools: int) -> list[mcp.Tool]:
        """The tools of the view ``view`` that may join the context: valid names, first of
        each name, at most ``max_view_tools``; the others are logged (once each)."""
        admitted: dict[str, mcp.Tool] = {}
        over = 0
        for tool in tools:
            if not VIEW_TOOL_NAME.fullmatch(tool.name):
                self._refuse(tool.name, view, "its name is not a valid MCP tool name")
            elif tool.name in admitted:
                self._refuse(tool.name, view, "the view lists that name twice")
            elif len(admitted) >= max_view_tools:
                over += 1
            else:
                admitted[tool.name] = tool
        if over and not self._over_reported:
            self._over_reported = True
            logger.warning(
                "The view %s lists %d tools; the %d after the first %d (max_view_tools) "
                "are left out",
                view,
                len(tools),
                over,
                max_view_tools,
            )
        return list(admitted.values())

    def _refuse(self, name: str, view: str, why: str) -> None:
        refused = self._refused
        if len(refused) < _MAX_REPORTED and name not in refused:
            refused.add(name)
            logger.warning("Left out the tool %.80r of the view %s: %s", name, view, why)


def render_model_context(update: protocol.UpdateModelContextParams | None) -> str | None:
    """What the view last told the model, as text: its text blocks, then its structured
    content as JSON (other blocks as their JSON)."""
    if update is None:
        return None
    parts: list[str] = []
    for block in update.content or ():
        if isinstance(block, mcp.TextContent):
            parts.append(block.text)
        else:
            parts.append(
                json.dumps(block.model_dump(mode="json", by_alias=True, exclude_none=True))
            )
    if update.structured_content is not None:
        parts.append(json.dumps(update.structured_content, ensure_ascii=False))
    return "\n".join(parts) or None
