"""``NATSFrameHost``: the host of one named frame on NATS, whichever replicas serve it.

It is an :class:`~assistant_frames.AssistantFrameHost` (so a ``FrameConnection`` and a
``ModelContextProvider``, with the same timeouts, cancellation, typed errors and
progress events) over a :class:`~assistant_frames.nats.host_route.HostRoute`, which
carries the frame protocol over the frame's subjects (see that module).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from contextlib import AsyncExitStack
from typing import Any

import anyio
from anyio.abc import ObjectStream

from ..frames.host import AssistantFrameHost
from .connection import NATSTarget, nats_client
from .host_route import HostRoute
from .subjects import DEFAULT_PREFIX, FrameSubjects

__all__ = ["NATSFrameHost"]


class NATSFrameHost(AssistantFrameHost):
    """The host of the frame ``name`` on NATS; a ``FrameConnection`` like any other.

    ``nats`` is a server URL, several, or a connected client (shared, left open);
    ``nats_options`` go to ``nats.connect``. ``prefix`` is the tenant's subject prefix.
    ``timeout`` bounds each call, as for every host; ``liveness`` is how long a call's
    replica may stay silent before the call fails with :class:`ReplicaLost` (at least
    four of the replica's heartbeats); ``context_timeout`` bounds the wait for the
    frame's context when connecting. With no replica running when connecting, the
    connection ends at once (calls fail at once with ``FrameDisconnected`` saying no
    replica answers); once connected, a call that no replica takes fails at once with
    :class:`NoResponders`, and the connection stays.

    Needs asyncio (``nats-py`` does).
    """

    def __init__(
        self,
        name: str,
        *,
        nats: NATSTarget,
        nats_options: Mapping[str, Any] | None = None,
        prefix: str = DEFAULT_PREFIX,
        timeout: float | None = 30.0,
        liveness: float = 3.0,
        context_timeout: float = 5.0,
    ) -> None:
        if not liveness > 0 or not math.isfinite(liveness):
            raise ValueError(f"liveness must be a positive number of seconds, not {liveness!r}")
        self.subjects = FrameSubjects(name, prefix)
        self.liveness = liveness
        self.context_timeout = context_timeout
        self._target = nats
        self._options = nats_options
        self._client_stack: AsyncExitStack | None = None
        self._route: HostRoute | None = None
        # The transport is made on entering, once the client is connected.
        super().__init__(_Unopened(), timeout=timeout, name=name)

    @property
    def route(self) -> HostRoute:
        """The connection's NATS route, while connected (``RuntimeError`` if not)."""
        if self._route is None:
            raise RuntimeError("The host is not connected")
        return self._route

    async def __aenter__(self) -> NATSFrameHost:
        async with AsyncExitStack() as stack:
            client = await stack.enter_async_context(
                nats_client(self._target, self._options, name=f"host of {self.name}")
            )
            machine = self._machine
            route = HostRoute(
                client,
                self.subjects,
                liveness=self.liveness,
                context_timeout=self.context_timeout,
                held=lambda: machine.wire,
            )
            await route.start()
            stack.push_async_callback(route.aclose)
            self._route = route
            self._transport = route
            await super().__aenter__()
            tasks = self._tasks.group
            assert tasks is not None  # open: the host was entered
            tasks.start_soon(route.watch)  # ends with the host's tasks
            self._client_stack = stack.pop_all()
        return self

    async def _stopped(self) -> None:
        stack, self._client_stack = self._client_stack, None
        if stack is not None:
            with anyio.CancelScope(shield=True):
                await stack.aclose()  # unsubscribe, then the client (no task group in it)


class _Unopened(ObjectStream[Any]):
    """Stands for the route until the host connects."""

    async def receive(self) -> Any:
        raise anyio.ClosedResourceError

    async def send(self, item: Any) -> None:
        raise anyio.ClosedResourceError

    async def send_eof(self) -> None:
        pass

    async def aclose(self) -> None:
        pass
