"""What the host's and a replica's routes share.

A route is the stream a frame-protocol peer (a host, a replica's provider) runs on: it
carries the frame protocol over a frame's NATS subjects, keeps the transport contract
where it applies (``tests/nats/test_nats_route_contract.py``), and is closed by its own side
or when its client closes for good.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Generic, TypeVar

import anyio
from anyio.abc import ObjectStream
from nats.aio.client import Client

from ..transports.contract import TransportAttribute

logger = logging.getLogger("assistant_frames.nats")

T = TypeVar("T")


class Route(ObjectStream[Any]):
    """A stream over ``client``: refuses everything once closed, and its size limit is
    the server's ``max_payload``."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._closed = False

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        return {TransportAttribute.max_message_bytes: lambda: self._client.max_payload}

    def _check_open(self) -> None:
        if self._closed:
            raise anyio.ClosedResourceError

    async def send_eof(self) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        self._closed = True


async def quietly(undo: Callable[[], Awaitable[object]]) -> None:
    """Undo one piece of setup (unsubscribe, stop); the server may be gone already,
    which is fine here."""
    try:
        await undo()
    except Exception as exc:
        logger.debug("NATS: while stopping: %r", exc)


class PerClient(Generic[T]):
    """``per_client(client)``: the one ``make(client)`` of each client, made on first
    use and gone with the client (held weakly: what it makes must hold the client
    weakly too, or the client is never freed)."""

    def __init__(self, make: Callable[[Client], T]) -> None:
        self._make = make
        self._values: weakref.WeakKeyDictionary[Client, T] = weakref.WeakKeyDictionary()

    def __call__(self, client: Client) -> T:
        value = self._values.get(client)
        if value is None:
            value = self._values[client] = self._make(client)
        return value

    def __contains__(self, client: object) -> bool:
        return client in self._values
