"""The dev page: a federation of frames and MCP servers shown live in one local web page.

:class:`DevPage` serves the page (``assistant-frames dev`` runs it): the members and
their state, the merged context (instructions, tools with their schemas, annotations,
visibility and owner), a form per tool generated from its JSON Schema, calls with their
progress, logs, results and typed errors, cancelling, and the context as the model
vendors' tool formats export it. :func:`describe_federation` is what the page is sent.
Needs the ``websockets`` extra; each module is imported on first use of one of its names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .page import DevPage, page_files
    from .snapshot import describe_federation

__all__ = ["DevPage", "describe_federation", "page_files"]

_LAZY = {
    "DevPage": ".page",
    "describe_federation": ".snapshot",
    "page_files": ".page",
}

__getattr__, __dir__ = lazy_exports(__name__, globals(), _LAZY)
