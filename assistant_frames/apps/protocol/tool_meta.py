"""What a tool's ``_meta.ui`` says: who may see it, and its ``ui://`` resource."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, Final

import mcp_types as mcp
from mcp.server.apps import Visibility

__all__ = ["RESOURCE_URI_META_KEY", "model_visible", "resource_uri", "visibility"]

#: The deprecated flat ``_meta`` key for a tool's UI resource (hosts must check both forms).
RESOURCE_URI_META_KEY: Final = "ui/resourceUri"

# -- tool metadata -----------------------------------------------------------------------------

_DEFAULT_VISIBILITY: Final[tuple[Visibility, ...]] = ("model", "app")


def _ui_meta(meta: Mapping[str, Any] | None) -> Mapping[str, Any]:
    ui = meta.get("ui") if meta else None
    return ui if isinstance(ui, Mapping) else {}


def visibility(meta: Mapping[str, Any] | None) -> tuple[Visibility, ...]:
    """Who may see a tool, from its ``_meta``: ``_meta.ui.visibility``, default both.

    Unknown strings in the list are dropped (a later spec may add audiences). A
    malformed value (not a list, or a list with something other than strings) fails
    closed: the tool is model-only, never callable by a view, and the declaration is
    logged once at WARNING.
    """
    value = _ui_meta(meta).get("visibility")
    if value is None:
        return _DEFAULT_VISIBILITY
    if not isinstance(value, list) or not all(isinstance(entry, str) for entry in value):
        _report_malformed_visibility(value)
        return _MALFORMED_VISIBILITY
    seen: list[Visibility] = []
    for entry in value:
        if entry == "model" and "model" not in seen:
            seen.append("model")
        elif entry == "app" and "app" not in seen:
            seen.append("app")
    return tuple(seen)


_MALFORMED_VISIBILITY: Final[tuple[Visibility, ...]] = ("model",)
_reported_visibilities: set[str] = set()  # each malformed value logged once (bounded)


def _report_malformed_visibility(value: object) -> None:
    shown = repr(value)[:200]
    if shown not in _reported_visibilities and len(_reported_visibilities) < 256:
        _reported_visibilities.add(shown)
        logging.getLogger("assistant_frames.apps").warning(
            "A tool declares _meta.ui.visibility %s, which is not a list of strings: "
            "the tool is model-only (no view may call it)",
            shown,
        )


def model_visible(tools: Iterable[mcp.Tool]) -> list[mcp.Tool]:
    """The tools of a server's listing that a model may be offered: those whose
    visibility includes ``"model"`` (the default); app-only tools are left out."""
    return [tool for tool in tools if "model" in visibility(tool.meta)]


def resource_uri(meta: Mapping[str, Any] | None) -> str | None:
    """A tool's ``ui://`` resource, from ``_meta.ui.resourceUri`` or the legacy flat key."""
    uri = _ui_meta(meta).get("resourceUri")
    if uri is None and meta:
        uri = meta.get(RESOURCE_URI_META_KEY)
    return uri if isinstance(uri, str) and uri.startswith("ui://") else None
