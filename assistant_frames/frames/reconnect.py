"""``ReconnectingHost``: a frame host that comes back after its connection drops."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, suppress
from typing import Any

import anyio

from .._driver import Driver
from ..errors import AssistantFramesError, ContextTimeout, FrameDisconnected, HandshakeRejected
from ..registry.context import ModelContext, Subscribers, Unsubscribe
from ..registry.events import ToolEventCallback, ToolEventSubscribers
from ..registry.waiting import WaitsForTools
from ..transports.contract import Connector
from .connection import ConnectionState, FrameConnection
from .host import AssistantFrameHost

__all__ = ["Connector", "ReconnectingHost"]

logger = logging.getLogger("assistant_frames.frames")


_EMPTY = ModelContext()


class ReconnectingHost(Driver, WaitsForTools):
    """Keeps a connection to a frame up, reconnecting with bounded backoff.

    ``connect`` opens one connection per call: an async context manager that yields a
    transport (served by an :class:`AssistantFrameHost`), or a :class:`FrameConnection`
    itself (``lambda: MCPFrameHost(url)``). While connected this behaves like that
    connection; when the connection drops, pending calls fail at once
    with :class:`FrameDisconnected`, the frame's tools disappear (subscribers are
    told), and it reconnects after ``initial_delay`` seconds, doubling up to
    ``max_delay``; once connected again it requests the context and the tools come
    back. An attempt counts as failed when it does not connect or ends before the
    frame's context arrived (a worker that exits at start), so such attempts back off
    too; ``max_attempts`` consecutive failed attempts (``None``: never give up) end it,
    as does a server refusing the token or origin (HTTP 401/403) or ``connect`` raising
    anything but a connection error. :attr:`last_error` says why the last connection
    ended or the last attempt failed.
    """

    _noun = "host"

    def __init__(
        self,
        connect: Connector | Callable[[], AbstractAsyncContextManager[FrameConnection]],
        *,
        name: str | None = None,
        timeout: float | None = 30.0,
        initial_delay: float = 0.1,
        max_delay: float = 5.0,
        max_attempts: int | None = None,
    ) -> None:
        if initial_delay <= 0 or max_delay < initial_delay:
            raise ValueError("need 0 < initial_delay <= max_delay")
        self.name = name or "frame"
        self.timeout = timeout
        self._connect = connect
        self._initial_delay = initial_delay
        self._max_delay = max_delay
        self._max_attempts = max_attempts
        self._host: FrameConnection | None = None
        self._subscribers = Subscribers()
        self._events = ToolEventSubscribers()
        self._event_unsubscribes: list[Unsubscribe] = []  # the current connection's
        self._state: ConnectionState = "new"
        self._changed: anyio.Event | None = None
        self._last_error: BaseException | None = None
        self.connections = 0  # how many times it has connected
        self._init_lifecycle()

    async def __aenter__(self) -> ReconnectingHost:
        self._changed = anyio.Event()
        async with self._tasks.open() as tasks:
            self._state = "connecting"
            tasks.start_soon(self._run)
        return self

    async def _stop(self) -> None:
        """Stop reconnecting; the current connection closes with the tasks."""
        self._state = "closed"
        self._signal()

    async def _stopped(self) -> None:
        self._subscribers.notify()  # whatever the frame offered is gone

    @property
    def state(self) -> ConnectionState:
        """``"connecting"``, ``"connected"``, ``"failed"`` (gave up) or ``"closed"``."""
        return self._state

    @property
    def connected(self) -> bool:
        """True while the current connection is live."""
        host = self._host
        return host is not None and host.connected

    @property
    def last_error(self) -> BaseException | None:
        """Why the last connection ended or attempt failed (``None`` until one has)."""
        return self._last_error

    @property
    def host(self) -> FrameConnection | None:
        """The current connection (an :class:`AssistantFrameHost` for a transport)."""
        return self._host

    async def wait_disconnected(self) -> None:
        """Wait until it has given up (``"failed"``) or been closed."""
        if self._changed is None:
            raise RuntimeError("Enter the host (async with) before waiting on it")
        while self._state not in ("failed", "closed"):
            await self._changed.wait()

    # -- ModelContextProvider ------------------------------------------------------------

    def get_model_context(self) -> ModelContext:
        """The frame's context while connected; empty while it is gone."""
        host = self._host
        return host.get_model_context() if host is not None else _EMPTY

    def subscribe(self, callback: Callable[[], None]) -> Unsubscribe:
        """Call ``callback()`` on every change, including tools vanishing and returning."""
        return self._subscribers.add(callback)

    # -- calls ---------------------------------------------------------------------------

    async def call_tool(
        self,
        name: str,
        args: Any = None,
        *,
        timeout: float | None = None,
        on_event: ToolEventCallback | None = None,
    ) -> Any:
        """Call a tool over the current connection; ``FrameDisconnected`` if there is none.

        ``on_event`` receives the call's progress and log events.
        """
        host = self._host
        if host is None or not host.connected:
            raise FrameDisconnected(
                f"{self.name} is not connected ({self._state})", tool_name=name, frame=self.name
            )
        return await host.call_tool(name, args, timeout=timeout, on_event=on_event)

    def subscribe_tool_events(self, callback: ToolEventCallback) -> Unsubscribe:
        """Call ``callback(event)`` with the progress and log events of every call, over
        this connection and every later one."""
        unsubscribe = self._events.add(callback)
        self._resubscribe_events(self._host)  # later connections subscribe in _run

        def unsubscribe_all() -> None:
            unsubscribe()
            self._resubscribe_events(self._host)

        return unsubscribe_all

    def _resubscribe_events(self, host: FrameConnection | None) -> None:
        """Subscribe ``host`` (the current connection) to exactly our subscribers."""
        for undo in self._event_unsubscribes:
            undo()
        self._event_unsubscribes = []
        if host is not None:
            self._event_unsubscribes = [
                host.subscribe_tool_events(callback) for callback in self._events.callbacks()
            ]

    async def wait_for_context(self, timeout: float | None = None) -> ModelContext:
        """Wait until connected with a context.

        Raises :class:`ContextTimeout` (a ``TimeoutError``, saying what the last attempt
        ran into) after ``timeout``, and :class:`FrameDisconnected` once it gave up.
        """
        if self._changed is None:
            raise RuntimeError("Enter the host (async with) before waiting for its context")
        limit = self.timeout if timeout is None else timeout
        with anyio.move_on_after(math.inf if limit is None else limit):
            while True:
                host = self._host
                if host is not None and host.connected:
                    with suppress(FrameDisconnected):  # it went: wait for the next one
                        return await host.wait_for_context(math.inf)
                if self._state in ("failed", "closed"):
                    raise FrameDisconnected(
                        f"{self.name} is {self._state}", frame=self.name
                    ) from self._last_error
                await self._changed.wait()
        last = f" (last attempt: {self._last_error})" if self._last_error is not None else ""
        raise ContextTimeout(
            f"No model context from {self.name} within {limit:g} s, {self._state}{last}",
            frame=self.name,
        ) from self._last_error

    # -- the connection loop -------------------------------------------------------------

    def _signal(self) -> None:
        changed, self._changed = self._changed, anyio.Event()
        if changed is not None:
            changed.set()

    def _notify(self) -> None:
        host = self._host
        if host is not None and not host.connected and self._state == "connected":
            self._state = "connecting"  # say so before subscribers hear the tools are gone
        self._signal()
        self._subscribers.notify()

    async def _run(self) -> None:
        delay = self._initial_delay
        failures = 0  # consecutive attempts that did not connect
        while True:
            served = False  # this attempt connected and the frame's context arrived
            try:
                async with AsyncExitStack() as stack:
                    opened: Any = await stack.enter_async_context(self._connect())
                    if isinstance(opened, FrameConnection):
                        host: FrameConnection = opened
                    else:  # a transport
                        host = AssistantFrameHost(opened, timeout=self.timeout, name=self.name)
                        await stack.enter_async_context(host)

                    def changed(host: FrameConnection = host) -> None:
                        nonlocal served
                        served = served or host.connected
                        self._notify()

                    # A host made from a transport gets its context later; an MCPFrameHost
                    # has it once entered.
                    served = bool(getattr(host, "has_context", True))
                    unsubscribe = host.subscribe(changed)
                    self._resubscribe_events(host)
                    self._host = host
                    self._state = "connected"
                    self.connections += 1
                    # An MCPFrameHost's tools are there already: subscribers must hear of them.
                    self._notify()
                    try:
                        await host.wait_disconnected()
                        if not self._closing():
                            self._last_error = await _why_ended(host)
                    finally:
                        unsubscribe()
                        self._resubscribe_events(None)
                        self._host = None
            except HandshakeRejected as exc:
                if exc.status in (401, 403):  # retrying cannot fix a refused token or origin
                    self._give_up(exc, f"the server refused it ({exc})")
                    return
                self._last_error = exc
                logger.info("%s: connection failed: %s", self.name, exc)
            except (AssistantFramesError, OSError, anyio.BrokenResourceError) as exc:
                self._last_error = exc
                logger.info("%s: connection failed: %s", self.name, exc)
            except Exception as exc:  # a bad URL, a bug in connect(): not worth retrying
                self._give_up(exc, f"connect() raised {exc!r}")
                return
            if self._state == "closed":
                return
            if served:
                failures, delay = 0, self._initial_delay
            self._state = "connecting"
            self._notify()  # the tools are gone until the next connection
            if not served:
                failures += 1
                if self._max_attempts is not None and failures >= self._max_attempts:
                    self._give_up(self._last_error, f"{failures} failed attempts")
                    return
            await anyio.sleep(delay)
            delay = min(delay * 2, self._max_delay)

    def _closing(self) -> bool:
        return self._state == "closed"  # a method: mypy narrowed the state to "connected"

    def _give_up(self, exc: BaseException | None, why: str) -> None:
        self._last_error = exc
        self._state = "failed"
        self._notify()
        logger.warning("%s: giving up: %s", self.name, why)


async def _why_ended(host: FrameConnection) -> BaseException | None:
    """The error a connection that has ended gives (its ``FrameDisconnected``)."""
    try:
        with anyio.move_on_after(1.0):  # it has ended: this does not wait
            await host.wait_for_context(math.inf)
    except FrameDisconnected as exc:
        return exc
    return None
