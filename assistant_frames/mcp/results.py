"""Tool results between assistant-frames (any JSON value) and MCP (``CallToolResult``).

Both directions, so that a value survives a round trip through an MCP server and an
MCP-backed frame wherever MCP can carry it:

- a string is one text block; ``None`` is no content;
- an object is ``structuredContent``, with its JSON as the text block that older
  clients read; other JSON values (lists, numbers, booleans) are ``structuredContent``
  only on 2026-07-28 connections, where the spec allows any JSON there, and their
  JSON text otherwise;
- an error is ``isError: true`` with the message as the text;
- a :class:`~assistant_frames.ToolResult` is its three tiers: ``content``,
  ``structuredContent`` and ``_meta`` (for the view only).
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

from ..errors import ERROR_KINDS, AssistantFramesError, ToolCallError, error_from_wire
from ..frames.protocol import RESULT_NOT_SENDABLE, NotJSONSerializable, to_json_value
from ..registry.ui import ToolResult

__all__ = ["error_result", "failure", "from_call_result", "tool_result"]


_PROTOCOL_META = "io.modelcontextprotocol/"


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def error_result(message: str) -> dict[str, Any]:
    """A ``CallToolResult`` (wire form) reporting a failed call to the model."""
    return {"content": [_text(message)], "isError": True, "resultType": "complete"}


def failure(exc: Exception) -> tuple[int | None, str]:
    """How MCP says a failed call, as the error table says: ``(code, message)`` for a
    JSON-RPC error, ``(None, message)`` for an ``isError`` result the model can read."""
    if isinstance(exc, AssistantFramesError):
        message = exc.message if isinstance(exc, ToolCallError) else str(exc)
        kind = ERROR_KINDS.get(exc.code) if exc.code is not None else None
        if kind is not None and not kind.mcp_is_error:
            return kind.jsonrpc_code, message
        return None, message
    return None, str(exc) or type(exc).__name__


def tool_result(value: Any, *, modern: bool) -> dict[str, Any]:
    """The ``CallToolResult`` (wire form) for a tool's return value."""
    if isinstance(value, ToolResult):
        return _three_tiers(value, modern=modern)
    try:
        value = to_json_value(value)
    except NotJSONSerializable:
        return error_result(RESULT_NOT_SENDABLE)
    # ``resultType`` is required on 2026-07-28; the SDK strips it for older sessions.
    if value is None:
        return {"content": [], "resultType": "complete"}
    if isinstance(value, str):
        return {"content": [_text(value)], "resultType": "complete"}
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if isinstance(value, dict) or modern:
        return {"content": [_text(text)], "structuredContent": value, "resultType": "complete"}
    return {"content": [_text(text)], "resultType": "complete"}


def _three_tiers(value: ToolResult, *, modern: bool) -> dict[str, Any]:
    try:
        wire: dict[str, Any] = {"content": to_json_value(value.content_blocks())}
        structured = to_json_value(value.structured_content)
        meta = to_json_value(value.meta)
    except NotJSONSerializable:
        return error_result(RESULT_NOT_SENDABLE)
    # Before 2026-07-28 structuredContent must be an object: other values stay as text.
    if structured is not None and (modern or isinstance(structured, dict)):
        wire["structuredContent"] = structured
    if meta is not None:
        wire["_meta"] = meta
    wire["resultType"] = "complete"
    return wire


def from_call_result(result: types.CallToolResult, tool_name: str) -> Any:
    """A tool's value from an MCP ``CallToolResult``; raises ``ToolCallError`` for errors.

    ``structuredContent`` wins over text; a lone text block is its string; no content
    is ``None``; anything else (images, several blocks...) is the list of content
    blocks in their JSON form. A result with ``_meta`` (for an app's view) is a
    :class:`~assistant_frames.ToolResult`, so the view's tier survives the trip.
    """
    if result.is_error:
        texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
        message = "\n".join(texts) or f'Tool "{tool_name}" failed'
        raise error_from_wire(message, tool_name)  # typed when it says a known kind
    # Keys under the protocol's own prefix (the server's info...) are not the tool's.
    meta = {k: v for k, v in (result.meta or {}).items() if not k.startswith(_PROTOCOL_META)}
    if meta:
        return ToolResult(
            content=[
                block.model_dump(mode="json", by_alias=True, exclude_none=True)
                for block in result.content
            ],
            structured_content=result.structured_content,
            meta=meta,
        )
    if result.structured_content is not None:
        return result.structured_content
    content = result.content
    if not content:
        return None
    if len(content) == 1 and isinstance(content[0], types.TextContent):
        return content[0].text
    return [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in content]
