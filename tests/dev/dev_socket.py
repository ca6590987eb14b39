"""The dev page's end of its WebSocket, for the tests of ``DevPage``: what a browser
page would receive (every message, kept), and waiting (bounded) for one that matches."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio

from assistant_frames.dev import DevPage
from assistant_frames.transports.websocket import WebSocketTransport, connect_websocket

WAIT = 15.0  # bound on waiting for one expected message

Matches = Callable[[dict[str, Any]], bool]


class Socket:
    """One connection to the page's server: ``/socket`` (the page's), or a view's."""

    def __init__(self, transport: WebSocketTransport) -> None:
        self.transport = transport
        self.received: list[dict[str, Any]] = []

    async def send(self, message: dict[str, Any]) -> None:
        await self.transport.send(message)

    async def until(self, matches: Matches) -> dict[str, Any]:
        """The next message that ``matches`` (the ones before it are kept too)."""
        with anyio.fail_after(WAIT):
            while True:
                message: dict[str, Any] = await self.transport.receive()
                self.received.append(message)
                if matches(message):
                    return message

    async def seen(self, matches: Matches) -> dict[str, Any]:
        """The first message received that ``matches``, waiting for it if none has yet."""
        for message in self.received:
            if matches(message):
                return message
        return await self.until(matches)

    async def state(self, matches: Matches) -> dict[str, Any]:
        """The next ``state`` that ``matches``."""
        return await self.until(lambda m: m["type"] == "state" and matches(m))

    async def call(self, call: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Send a call as the page's form does; its end (``result`` or ``error``)."""
        await self.send({"type": "call", "call": call, "tool": tool, "arguments": arguments})
        return await self.until(
            lambda m: m.get("call") == call and m["type"] in ("result", "error", "cancelled")
        )


@asynccontextmanager
async def page_socket(
    page: DevPage, path: str = "/socket", token: str | None = ""
) -> AsyncIterator[Socket]:
    """Connect to ``path`` of ``page``'s server with its token (or ``token``: ``None``
    sends none)."""
    url = page.origin.replace("http://", "ws://") + path
    async with connect_websocket(
        url, token=page.token if token == "" else token, open_timeout=WAIT
    ) as transport:
        yield Socket(transport)
