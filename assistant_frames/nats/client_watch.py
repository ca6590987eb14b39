"""Who looks at a NATS client for the host routes on it that have nothing to time.

A host route ticks (every 0.1 s at most) to fail the calls whose replica fell silent and
to ask again for a context that did not come; it also has to see its client close for
good, or reconnect (patches may have gone by meanwhile). A route with no call in flight,
no request out and no change to match has only those two to see, and they are the
client's, the same for every route on it. So one route on the client ticks and looks
(the *poller*); the others wait, without a timer, until they have something to time or
the poller sees the client close or reconnect. A parent holding 1,000 frames through one
client (a discovery) then wakes one task ten times a second, not a thousand.

Every task here is a route's own ``watch``, owned by its host: when the poller's host
ends, the poller hands the looking on to a waiting route.
"""

from __future__ import annotations

import weakref
from typing import Protocol

from nats.aio.client import Client

from ._route import PerClient

__all__ = ["ClientWatch", "client_watch"]


class _Waiter(Protocol):
    def wake(self) -> None:
        """Stop waiting: there is something to look at."""


class ClientWatch:
    """The routes on one client: which one polls it, and which wait."""

    __slots__ = ("_client", "_reconnects", "poller", "waiting")

    def __init__(self, client: Client) -> None:
        # Weakly: the registry below holds this for as long as the client lives.
        self._client = weakref.ref(client)
        self._reconnects = client.stats["reconnects"]
        #: The route that ticks and looks at the client for the others (``None``: none).
        self.poller: object | None = None
        #: The routes waiting with nothing to time.
        self.waiting: set[_Waiter] = set()

    def may_wait(self, route: object) -> bool:
        """Whether ``route`` may wait untimed: another route polls. If none does,
        ``route`` becomes the poller."""
        if self.poller is None:
            self.poller = route
        return self.poller is not route

    def look(self, route: object) -> None:
        """The poller's look, each tick: wake every waiting route when the client closed
        for good or reconnected."""
        if route is not self.poller:
            return
        client = self._client()
        if client is None:
            return
        reconnects = client.stats["reconnects"]
        # A reconnection counts once the client is connected again: what the routes ask
        # then can be sent.
        if client.is_closed or (reconnects != self._reconnects and client.is_connected):
            self._reconnects = reconnects
            self._wake_all()

    def leave(self, route: object) -> None:
        """``route`` stops watching: if it polled, a waiting route takes over."""
        if self.poller is not route:
            return
        self.poller = None
        for waiter in self.waiting:  # any one will do: it finds no poller, and polls
            waiter.wake()
            break

    def _wake_all(self) -> None:
        for waiter in list(self.waiting):
            waiter.wake()


#: The one :class:`ClientWatch` of a client (made on first use, gone with it).
client_watch = PerClient(ClientWatch)
