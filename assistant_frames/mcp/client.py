"""What every user of an ``mcp`` ``Client`` here needs: every page of a listing, and a
call's progress as :class:`~assistant_frames.ToolProgress` events.

``MCPFrameHost`` (its own client) and the MCP Apps bridge's ``ClientServer`` (a client the
user holds) both list and call through these.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Literal

from ..errors import ToolCallError
from ..registry.events import ToolProgress

if TYPE_CHECKING:
    from mcp import Client
    from mcp.client.caching import CacheMode
    from mcp.shared.dispatcher import ProgressFnT

__all__ = ["MAX_PAGES", "Listing", "check_arguments", "list_all", "progress_callback"]

MAX_PAGES: Final = 1000  # a server that keeps returning cursors is not followed forever

Listing = Literal["tools", "resources", "resource_templates", "prompts"]


async def list_all(client: Client, kind: Listing, *, cache_mode: CacheMode = "bypass") -> list[Any]:
    """Every ``kind`` the server lists, page after page (at most :data:`MAX_PAGES`)."""
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page: Any
        if kind == "tools":
            page = await client.list_tools(cursor=cursor, cache_mode=cache_mode)
            items.extend(page.tools)
        elif kind == "resources":
            page = await client.list_resources(cursor=cursor, cache_mode=cache_mode)
            items.extend(page.resources)
        elif kind == "resource_templates":
            page = await client.list_resource_templates(cursor=cursor, cache_mode=cache_mode)
            items.extend(page.resource_templates)
        else:
            page = await client.list_prompts(cursor=cursor, cache_mode=cache_mode)
            items.extend(page.prompts)
        cursor = page.next_cursor
        if not cursor:
            break
    return items


def progress_callback(
    call_id: str | None, name: str, deliver: Callable[[ToolProgress], None]
) -> ProgressFnT:
    """The SDK's ``progress_callback`` for a call of ``name``: each report as a
    :class:`~assistant_frames.ToolProgress` given to ``deliver``."""

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        deliver(ToolProgress(progress, total, message, call_id, name))

    return progress


def check_arguments(name: str, args: Any, frame: str | None = None) -> None:
    """MCP carries a tool's arguments as a JSON object (or none): else ``ToolCallError``."""
    if args is not None and not isinstance(args, dict):
        raise ToolCallError(
            f'Arguments for tool "{name}" must be a JSON object, not {type(args).__name__}',
            tool_name=name,
            frame=frame,
        )
