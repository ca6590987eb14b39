"""An :class:`~assistant_frames.mcp.MCPFrameHost`'s view of its server's resources and prompts.

MCP resources and prompts are the host's to use, not the model's: they are listed when
asked (every page), and a listing is kept until the server says it changed.
:class:`ServerListings` keeps them, reads and fills them in, and tells who subscribed
when they change; every request goes through its frame host (bounded by its timeout,
ended by the server leaving), and what a change means for the frame's tools is the
frame host's to do.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal, Protocol, TypeVar

import mcp_types as types
from mcp import Client

from ..registry.context import Subscribers, Unsubscribe
from .client import list_all

__all__ = ["ListingKind", "Request", "ServerListings"]

#: What a server lists besides its tools.
ListingKind = Literal["resources", "resource_templates", "prompts"]

_T = TypeVar("_T")


class Request(Protocol):
    """The frame host's way to ask its server: ``send()`` answered, ``what`` in errors."""

    def __call__(self, what: str, send: Callable[[], Awaitable[_T]]) -> Awaitable[_T]: ...


class ServerListings:
    """The resources, resource templates and prompts of ``client``'s server.

    ``request(what, send)`` sends each request (the frame host's); ``check_connected()``
    raises when the frame host is not connected; :meth:`changed` is the server saying a
    listing changed.
    """

    def __init__(
        self, client: Client, *, request: Request, check_connected: Callable[[], None]
    ) -> None:
        self._client = client
        self._request = request
        self._check_connected = check_connected
        self._kept: dict[ListingKind, list[Any]] = {}
        self._changes = 0  # a listing fetched across a change is not kept
        self._resource_subscribers = Subscribers()
        self._prompt_subscribers = Subscribers()

    async def listing(self, kind: ListingKind) -> list[Any]:
        """Every ``kind`` the server lists (a fresh list), kept until it changes."""
        self._check_connected()
        cached = self._kept.get(kind)
        if cached is not None:
            return list(cached)
        capabilities = self._client.server_capabilities
        if (capabilities.prompts if kind == "prompts" else capabilities.resources) is None:
            return []  # the server has none: nothing to ask
        changes = self._changes
        items = await self._request(kind.replace("_", " "), lambda: list_all(self._client, kind))
        if changes == self._changes:  # else it may be older than the change
            self._kept[kind] = items
        return list(items)

    async def read_resource(self, uri: str) -> types.ReadResourceResult:
        """``resources/read`` of ``uri``, never from the client's cache."""
        return await self._request(
            f"resources/read {uri}", lambda: self._client.read_resource(uri, cache_mode="bypass")
        )

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None
    ) -> types.GetPromptResult:
        """``prompts/get`` of ``name`` with (a copy of) ``arguments``."""
        args = dict(arguments) if arguments is not None else None
        return await self._request(
            f"prompts/get {name}", lambda: self._client.get_prompt(name, args)
        )

    def subscribe_resources(self, callback: Callable[[], None]) -> Unsubscribe:
        """``callback()`` on each change of the resources (or templates)."""
        return self._resource_subscribers.add(callback)

    def subscribe_prompts(self, callback: Callable[[], None]) -> Unsubscribe:
        """``callback()`` on each change of the prompts."""
        return self._prompt_subscribers.add(callback)

    def changed(self, *kinds: ListingKind) -> None:
        """The server says ``kinds`` changed: they are listed again, subscribers told."""
        self._changes += 1
        self.forget(*kinds)
        if "prompts" in kinds:
            self._prompt_subscribers.notify()
        else:
            self._resource_subscribers.notify()

    def forget(self, *kinds: ListingKind) -> None:
        """The next listing of ``kinds`` asks the server again."""
        for kind in kinds:
            self._kept.pop(kind, None)

    def clear(self) -> None:
        """Forget every listing (the server went away)."""
        self._kept.clear()
