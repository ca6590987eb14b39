"""What the dev page shows of a :class:`~assistant_frames.Federation`, as plain JSON.

:func:`describe_federation` reads the federation as it is now: each member's status
and instructions, every tool of the merged context with its owner, and the context as
the model vendors' tool formats (:mod:`assistant_frames.formats.tools`) export it. The
page compares one snapshot with the next to highlight what changed. Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .._json import encode_json
from ..federation import Federation
from ..formats.tools import (
    to_anthropic_tools,
    to_mcp_tools,
    to_openai_chat_tools,
    to_openai_responses_tools,
)
from ..registry import ModelContext, Tool

__all__ = ["EXPORT_FORMATS", "describe_federation", "describe_tool", "jsonable"]

#: The tool formats of the model's view, by the key the page shows them under.
EXPORT_FORMATS = {
    "openai-chat": to_openai_chat_tools,
    "openai-responses": to_openai_responses_tools,
    "anthropic": to_anthropic_tools,
    "mcp": to_mcp_tools,
}


def jsonable(value: Any) -> Any:
    """``value`` as JSON data (what the wire codec makes of it: Pydantic models and
    dataclasses become objects); what has no JSON form becomes ``{"repr": ...}``."""
    try:
        return json.loads(encode_json(value))
    except (TypeError, ValueError):
        return {"repr": repr(value)[:10_000]}


def describe_tool(name: str, tool: Tool, owner: str | None) -> dict[str, Any]:
    """One tool as the page shows it: its fields in MCP's wire names, the member that
    owns it (``None``: this process's own registry), and who may see it."""
    ui = tool.ui
    return {
        "name": name,
        "owner": owner,
        "title": tool.title,
        "description": tool.description or "",
        "inputSchema": jsonable(tool.parameters),
        "outputSchema": None if tool.output_schema is None else jsonable(tool.output_schema),
        "annotations": None if tool.annotations is None else jsonable(tool.annotations.to_wire()),
        "meta": None if tool.meta is None else jsonable(tool.meta),
        "disabled": tool.disabled,
        "visibility": ["model", "app"] if ui is None else list(ui.visibility),
        "uiResource": None if ui is None else ui.resource_uri,
    }


def _owners(federation: Federation) -> tuple[dict[str, str], dict[str, ModelContext]]:
    """Each tool's member (by its name in the merged context), and each member's own
    (un-namespaced) context."""
    owners: dict[str, str] = {}
    contexts: dict[str, ModelContext] = {}
    for name in federation:
        try:
            context = federation.connection(name).get_model_context()
            prefix = f"{name}_" if federation.status(name).namespaced else ""
        except KeyError:  # removed meanwhile
            continue
        contexts[name] = context
        for tool in context.tools:
            owners[f"{prefix}{tool}"] = name
    return owners, contexts


def _exports(context: ModelContext) -> dict[str, Any]:
    exported: dict[str, Any] = {}
    for key, export in EXPORT_FORMATS.items():
        try:
            exported[key] = jsonable(export(context))
        except (TypeError, ValueError) as exc:  # not expected: strict=False leaves tools out
            exported[key] = {"error": str(exc)}
    return exported


def describe_federation(
    federation: Federation,
    *,
    exports: bool = True,
    targets: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The federation now: ``members`` (status, target, instructions, tool names),
    ``instructions`` (merged), ``tools`` (merged, in the context's order), ``waiting``,
    ``conflicts`` and, with ``exports``, the context in each of :data:`EXPORT_FORMATS`.
    ``targets`` describes members in other words than the federation's (by name: the
    ``MODULE:OBJECT`` a registry was loaded from, say)."""
    targets = targets or {}
    context = federation.get_model_context()
    owners, contexts = _owners(federation)
    members: list[dict[str, Any]] = []
    for status in federation.statuses():
        own = contexts.get(status.name)
        members.append(
            {
                "name": status.name,
                "target": targets.get(status.name, status.target),
                "state": status.state,
                "error": status.error,
                "connections": status.connections,
                "instructions": None if own is None else own.system,
                "tools": [f"{status.name}_{tool}" for tool in (own.tools if own else ())],
            }
        )
    snapshot: dict[str, Any] = {
        "members": members,
        "instructions": context.system,
        "tools": [
            describe_tool(name, tool, owners.get(name)) for name, tool in context.tools.items()
        ],
        "waiting": list(context.waiting),
        "conflicts": [_conflict(each.name, each.priority) for each in context.conflicts],
    }
    if exports:
        snapshot["exports"] = _exports(context)
    return snapshot


def _conflict(name: str, priority: int) -> Mapping[str, Any]:
    return {"name": name, "priority": priority}
