"""How an :class:`~assistant_frames.mcp.MCPFrameHost` follows its server's lists.

A server says its tools (or resources, or prompts) changed in one of two ways: a
``subscriptions/listen`` stream (2026-07-28 servers) or a ``notifications/*/list_changed``
message (handshake-era servers). A server that can do neither is polled, when asked to
(``poll_interval``). An idle HTTP connection to a server that is gone looks like any
other until a request fails, so such a server is probed every ``keepalive`` seconds (a
ping, or a listing where there is no ping). :class:`ServerFollower` picks the ways and
runs them; what a change means is its frame host's to do, through the callbacks.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
from mcp import Client
from mcp.client.subscriptions import SubscriptionLost
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged, ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .targets import ServerKind, failure_reason

__all__ = ["ServerFollower"]

logger = logging.getLogger("assistant_frames.mcp")


class ServerFollower:
    """Follows the lists of the server of the frame host ``name``.

    ``stale()``: the tool list changed (list it again); ``lists_changed(*kinds)``: the
    resources, resource templates or prompts changed; ``gone(why)``: the server is
    gone; ``fetch()``: list the tools now (the keepalive's probe on 2026-07-28).
    """

    def __init__(
        self,
        name: str,
        *,
        stale: Callable[[], None],
        lists_changed: Callable[..., None],
        gone: Callable[[str], None],
        fetch: Callable[[], Awaitable[None]],
    ) -> None:
        self.name = name
        self._stale = stale
        self._lists_changed = lists_changed
        self._gone = gone
        self._fetch = fetch
        #: True while a ``subscriptions/listen`` stream is open.
        self.listening = False

    async def start(
        self,
        group: anyio.abc.TaskGroup,
        client: Client,
        *,
        kind: ServerKind,
        poll_interval: float | None,
        keepalive: float | None,
    ) -> None:
        """Start following, in ``group``: the change stream (once it is open), the
        poll and the keepalive, as the server needs."""
        capabilities = client.server_capabilities
        lists_tools = capabilities.tools is not None
        notifies = capabilities.tools is not None and bool(capabilities.tools.list_changed)
        changes = {
            "tools_list_changed": notifies,
            "resources_list_changed": bool(
                capabilities.resources and capabilities.resources.list_changed
            ),
            "prompts_list_changed": bool(
                capabilities.prompts and capabilities.prompts.list_changed
            ),
        }
        modern = client.protocol_version in MODERN_PROTOCOL_VERSIONS
        listening = False
        if any(changes.values()) and modern:
            listening = await group.start(self._listen, client, changes)
        # Handshake-era servers notify through on_message.
        if poll_interval is not None and lists_tools:
            group.start_soon(self._poll, poll_interval)
        # A subprocess's stdout ends with it, and a change stream with its server; but an
        # idle HTTP connection to a server that is gone looks like any other until a
        # request fails.
        if kind in ("http", "transport") and not listening and keepalive is not None:
            group.start_soon(self._keep_alive, client, keepalive, modern)

    def on_message(self, message: Any) -> None:
        """A message the client hands its host (handshake-era change notifications)."""
        if isinstance(message, types.ToolListChangedNotification):
            self._stale()
        elif self.listening:
            pass  # the change stream's events reach here too: _listen handles them
        elif isinstance(message, types.ResourceListChangedNotification):
            self._lists_changed("resources", "resource_templates")
        elif isinstance(message, types.PromptListChangedNotification):
            self._lists_changed("prompts")
        elif isinstance(message, Exception):
            logger.debug("MCP frame %s: transport error: %r", self.name, message)

    async def _listen(
        self,
        client: Client,
        changes: dict[str, bool],
        *,
        task_status: anyio.abc.TaskStatus[bool],
    ) -> None:
        listening = False
        try:
            listen = client.listen(
                tools_list_changed=changes["tools_list_changed"],
                resources_list_changed=changes["resources_list_changed"],
                prompts_list_changed=changes["prompts_list_changed"],
            )
            async with listen as subscription:
                listening = self.listening = True
                task_status.started(True)
                async for event in subscription:
                    if isinstance(event, ToolsListChanged):
                        self._stale()
                    elif isinstance(event, ResourcesListChanged):
                        self._lists_changed("resources", "resource_templates")
                    elif isinstance(event, PromptsListChanged):
                        self._lists_changed("prompts")
        except (SubscriptionLost, MCPError) as exc:
            if not listening:
                logger.warning(
                    "MCP frame %s: cannot follow its tool list (%s)", self.name, failure_reason(exc)
                )
                task_status.started(False)
                return
            # The stream is how this server reaches us; losing it means losing the server.
            self._gone(f"its change stream ended ({failure_reason(exc)})")

    async def _poll(self, interval: float) -> None:
        while True:
            await anyio.sleep(interval)
            self._stale()

    async def _keep_alive(self, client: Client, interval: float, modern: bool) -> None:
        while True:
            await anyio.sleep(interval)
            try:
                with anyio.fail_after(interval):
                    if modern:  # 2026-07-28 has no ping; a listing is as good a probe
                        await self._fetch()
                    else:  # the session's ping does not warn, the client's does
                        await client.session.send_ping()
            except Exception as exc:
                self._gone(f"it did not answer ({failure_reason(exc)})")
                return
