"""One reply subscription per NATS client, shared by the host routes on it.

Everything a replica sends a host about a call (heartbeats, progress, the result) and
every answer to its context requests comes to a reply subject of the host's own. Each
route gets an inbox under the client's one ``_INBOX.<id>.>`` subscription (as nats-py's
own ``request()`` shares one), so a host costs one subscription, its frame's context
subject, and a parent holding 1,000 frames through one client holds 1,001 subscriptions
(and nats-py tasks), not 2,000.

The subscription is made by the first route to start and dropped when the last one
stops; a message to a route that has stopped (a late reply) is dropped.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Awaitable, Callable

import anyio
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from ._route import PerClient, quietly

__all__ = ["ReplyInbox", "reply_inbox"]

OnReply = Callable[[Msg], Awaitable[None]]


class ReplyInbox:
    """The routes' inboxes on one client, under one subscription."""

    def __init__(self, client: Client) -> None:
        # Weakly: the registry below holds this for as long as the client lives.
        self._client = weakref.ref(client)
        self._prefix = client.new_inbox()
        self._routes: dict[str, OnReply] = {}
        self._tokens = itertools.count(1)
        self._subscription: Subscription | None = None
        self._lock: anyio.Lock | None = None  # made in the event loop, on first use

    def new_inbox(self) -> str:
        """A new inbox's subject, for :meth:`open`."""
        return f"{self._prefix}.{next(self._tokens)}"

    async def open(self, inbox: str, on_reply: OnReply) -> None:
        """Deliver the messages to ``inbox`` (``<inbox>.<anything>``) to ``on_reply``,
        subscribed to once this returns; :meth:`close` it when done."""
        self._routes[inbox] = on_reply
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:  # the first routes to start share one subscribe
            client = self._client()
            if self._subscription is None and client is not None:  # a caller holds it
                try:
                    self._subscription = await client.subscribe(
                        f"{self._prefix}.>", cb=self._on_message
                    )
                except BaseException:
                    del self._routes[inbox]
                    raise

    async def close(self, inbox: str) -> None:
        """Stop delivering to ``inbox``; the last one out unsubscribes."""
        self._routes.pop(inbox, None)
        if self._lock is None:
            return  # never opened
        async with self._lock:
            subscription = self._subscription
            if not self._routes and subscription is not None:
                self._subscription = None
                await quietly(subscription.unsubscribe)

    async def _on_message(self, msg: Msg) -> None:
        subject = msg.subject
        end = subject.find(".", len(self._prefix) + 1)
        on_reply = self._routes.get(subject[:end] if end > 0 else subject)
        if on_reply is not None:
            await on_reply(msg)


#: The one :class:`ReplyInbox` of a client (made on first use, gone with it).
reply_inbox = PerClient(ReplyInbox)
