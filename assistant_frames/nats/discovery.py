"""``NATSDiscovery``: every frame on the bus in one registry, as frames come and go.

Each replica of a frame is a NATS service named after the frame (the NATS service API,
``nats.micro``), with the prefix in its metadata. Discovery asks ``$SRV.INFO`` every
``interval`` seconds, collects the answers for up to ``window`` seconds, and keeps a
:class:`~assistant_frames.Federation` in step: a frame seen for the first time joins it
(its tools as ``<frame>_<tool>``), and a frame no replica answered for in ``missed``
rounds in a row leaves it. Nothing restarts: frames started after the parent appear on
their own.

A round ends before ``window`` once every frame already in the federation has answered,
at least one frame has, and no answer came for ``quiet`` seconds: answers come in one
burst, so waiting longer finds nothing more. A round in which a known frame is silent,
or no frame answers at all, lasts the whole ``window``: that silence is what removes a
frame, so a slow answer must not be mistaken for it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from typing import Any

import anyio
from nats.aio.client import Client
from nats.aio.msg import Msg

from .._driver import Driver
from ..errors import ToolNotFoundError
from ..federation.members import Federation
from ..frames.connection import ConnectionState
from ..frames.reconnect import ReconnectingHost
from ..registry import ModelContext, ModelContextRegistry
from ..registry.context import Unsubscribe
from ..registry.events import ToolEventCallback, ToolEventSubscribers
from ..registry.waiting import WaitsForTools
from . import _wire
from .connection import NATSTarget, nats_client
from .subjects import DEFAULT_PREFIX, check_frame_name, check_prefix
from .targets import NATSFrameTarget

__all__ = ["NATSDiscovery"]

logger = logging.getLogger("assistant_frames.nats")

_INFO = "$SRV.INFO"


class NATSDiscovery(Driver, WaitsForTools):
    """Finds the frames under ``prefix`` on NATS and keeps them in one registry.

    An async context manager and a ``FrameConnection`` (so ``connect("nats://host:4222")``
    yields one, and it can join a parent registry or a ``Federation``). Entering
    connects (``nats``, ``nats_options`` as for the other NATS pieces), runs a first
    round and waits (up to ``connect_timeout``) for the frames found to send their
    context; then a round runs every ``interval`` seconds. ``federation`` is where the
    frames live (:attr:`registry` their merged tools, namespaced by frame), each a
    :class:`~assistant_frames.nats.NATSFrameHost` sharing this one NATS client.
    ``timeout`` bounds each call and ``liveness`` each silent replica, as on a host.

    A round collects answers for at most ``window`` seconds, and ends sooner once every
    frame in the federation has answered and then ``quiet`` seconds passed with no
    answer (at least one frame must have answered: an empty round lasts ``window``). A
    ``quiet`` of ``window`` or more makes every round last ``window``.
    """

    _noun = "NATSDiscovery"

    def __init__(
        self,
        registry: ModelContextRegistry | None = None,
        *,
        nats: NATSTarget,
        nats_options: Mapping[str, Any] | None = None,
        prefix: str = DEFAULT_PREFIX,
        interval: float = 1.0,
        window: float = 0.25,
        quiet: float = 0.025,
        missed: int = 3,
        timeout: float | None = 30.0,
        connect_timeout: float = 10.0,
        liveness: float = 3.0,
        name: str = "nats",
    ) -> None:
        if not interval > 0 or not 0 < window <= interval:
            raise ValueError("interval must be positive, and window in (0, interval]")
        if not quiet > 0:
            raise ValueError(f"quiet must be positive, not {quiet!r}")
        if missed < 1:
            raise ValueError(f"missed must be at least 1, not {missed!r}")
        self.name = name
        self.prefix = check_prefix(prefix)
        self.interval = interval
        self.window = window
        self.quiet = quiet
        self.missed = missed
        self.liveness = liveness
        self.federation = Federation(registry, timeout=timeout, connect_timeout=connect_timeout)
        self._target = nats
        self._options = nats_options
        self._client: Client | None = None
        self._stack: AsyncExitStack | None = None
        self._init_lifecycle()
        self._absent: dict[str, int] = {}  # frame -> rounds in a row it did not answer
        self._state: ConnectionState = "new"
        self._ready = anyio.Event()
        self._ended = anyio.Event()  # nats-py runs on asyncio only: made here, not on entry
        self._round = anyio.Event()
        self._applying = anyio.Lock()  # one round at a time changes the federation
        self._joined: dict[str, float] = {}  # when each frame joined
        self._events = ToolEventSubscribers()
        self._forwarding: dict[str, Unsubscribe] = {}  # frame -> its events, to ours

    # -- what was found ------------------------------------------------------------------

    @property
    def registry(self) -> ModelContextRegistry:
        """The merged context of every frame found."""
        return self.federation.registry

    @property
    def frames(self) -> list[str]:
        """The names of the frames in the registry now, sorted (as ``discover()``'s)."""
        return sorted(self.federation)

    async def wait_for(self, *names: str, timeout: float = 10.0) -> None:
        """Wait until every frame of ``names`` has joined and sent its context."""
        with anyio.fail_after(timeout):
            while not all(self._has_context(name) for name in names):
                await self._round.wait()  # set, and replaced, at the end of each round

    def _has_context(self, name: str) -> bool:
        if name not in self.federation:
            return False
        connection = self.federation.connection(name)
        # Connected comes first; the context a moment later (until then it is "waiting").
        return connection.connected and not connection.get_model_context().waiting

    async def _first_contexts(self, names: list[str]) -> None:
        """Wait (up to ``connect_timeout``) until the frames ``names`` sent their context."""
        changed = anyio.Event()

        def wake() -> None:
            changed.set()

        unsubscribe = self.federation.subscribe(wake)
        try:
            with anyio.move_on_after(self.federation.connect_timeout):
                while not all(self._has_context(n) for n in names if n in self.federation):
                    await changed.wait()
                    changed = anyio.Event()
        finally:
            unsubscribe()

    # -- lifecycle -------------------------------------------------------------------------

    async def __aenter__(self) -> NATSDiscovery:
        async with AsyncExitStack() as stack:
            self._client = await stack.enter_async_context(
                nats_client(self._target, self._options, name=f"discovery {self.prefix}")
            )
            await stack.enter_async_context(self.federation)
            self._state = "connecting"
            found = await self.discover()
            await self._first_contexts(found)
            async with self._tasks.open() as group:
                group.start_soon(self._rounds)
            self._state = "connected"
            self._ready.set()
            self._stack = stack.pop_all()
        return self

    async def _stop(self) -> None:
        """Nothing before the rounds end; then every frame's host and the NATS client
        close (:meth:`_stopped`)."""

    async def _stopped(self) -> None:
        stack, self._stack = self._stack, None
        self._state = "closed"
        if self._ended is not None:
            self._ended.set()
        if stack is not None:
            await stack.aclose()  # the federation's members, then the client

    # -- rounds ------------------------------------------------------------------------------

    async def _rounds(self) -> None:
        client = self._client_or_fail()
        while True:
            await anyio.sleep(self.interval)
            if client.is_closed:  # for good (not reconnecting): no round can run again
                logger.warning("NATS discovery: the NATS connection was closed")
                self._state = "disconnected"
                if self._ended is not None:
                    self._ended.set()
                return
            try:
                await self.discover()
            except Exception as exc:  # the server may be restarting: the next round retries
                logger.warning("NATS discovery: a round failed: %r", exc)

    async def discover(self) -> list[str]:
        """Run one round now: ask, add the new frames, remove the long-silent ones.

        Returns the names of the frames that answered.
        """
        try:
            asked = anyio.current_time()
            answered = await self._ask()
            if not self._client_or_fail().is_connected:
                return sorted(answered)  # cut off (reconnecting): silence proves nothing
            async with self._applying:  # rounds may overlap: discover() beside the periodic
                await self._apply(answered, asked)
            return sorted(answered)
        finally:
            done, self._round = self._round, anyio.Event()
            done.set()

    async def _apply(self, answered: set[str], asked: float) -> None:
        """Add the frames that answered and are new; remove the long-silent ones.

        ``asked``: when this round asked. A frame that joined since (through another
        round) may have started after it, so its silence in this round proves nothing.
        """
        for name in answered:
            self._absent.pop(name, None)
            if name not in self.federation:
                target = NATSFrameTarget(
                    name, self._client_or_fail(), self.prefix, None, self.liveness
                )
                self._joined[name] = anyio.current_time()
                await self.federation.add(name, target, wait=False)
                if self._events:
                    self._forward(name)
                logger.info("NATS discovery: frame %r joined", name)
        for name in self.federation:
            if name in answered or self._joined.get(name, asked) > asked:
                continue
            self._absent[name] = self._absent.get(name, 0) + 1
            if self._absent[name] >= self.missed:
                del self._absent[name]
                self._joined.pop(name, None)
                stop = self._forwarding.pop(name, None)
                if stop is not None:
                    stop()
                await self.federation.remove(name)
                logger.info("NATS discovery: frame %r left", name)

    def _client_or_fail(self) -> Client:
        if self._client is None:
            raise RuntimeError("Enter the discovery (async with) first")
        return self._client

    async def _ask(self) -> set[str]:
        """The frames whose replicas answer ``$SRV.INFO`` within the window.

        Returns once the window is over, or sooner: once every frame in the federation
        when asking has answered, one at least, and no answer (of any service: they come
        in one burst) came for ``quiet`` seconds. A frame joined by another round since
        is not waited for (its silence here counts for nothing, see :meth:`_apply`).
        """
        client = self._client_or_fail()
        found: set[str] = set()
        expected = set(self.federation)  # whose silence would count: wait for each
        last = 0.0  # when the latest answer came
        heard = anyio.Event()  # set by an answer, replaced before each wait

        async def collect(msg: Msg) -> None:
            nonlocal last
            last = anyio.current_time()
            name = _frame_of(msg.data, self.prefix)
            if name is not None:
                found.add(name)
            heard.set()

        inbox = client.new_inbox()
        subscription = await client.subscribe(inbox, cb=collect)
        try:
            await client.publish(_INFO, b"", reply=inbox)
            deadline = anyio.current_time() + self.window
            while True:
                now = anyio.current_time()
                wake = deadline
                if found and expected <= found:  # all in: until answers go quiet
                    wake = min(deadline, last + self.quiet)
                if now >= wake:
                    break
                heard = anyio.Event()
                with anyio.move_on_after(wake - now):
                    await heard.wait()
        finally:
            try:
                await subscription.unsubscribe()
            except Exception as exc:
                logger.debug("NATS discovery: unsubscribing: %r", exc)
        return found

    # -- FrameConnection ---------------------------------------------------------------------

    @property
    def state(self) -> ConnectionState:
        """Where discovery is (``"connected"`` while its NATS client is)."""
        return self._state

    @property
    def connected(self) -> bool:
        """True while discovery's NATS client is connected."""
        return self._state == "connected"

    def get_model_context(self) -> ModelContext:
        """Every discovered frame's tools, namespaced by frame (the federation's)."""
        return self.federation.get_model_context()

    def subscribe(self, callback: Callable[[], None]) -> Unsubscribe:
        """Call ``callback()`` whenever the merged context changes."""
        return self.federation.subscribe(callback)

    async def wait_for_context(self, timeout: float | None = None) -> ModelContext:
        """Wait until the first round has run and its frames' contexts are in."""
        with anyio.fail_after(timeout):
            await self._ready.wait()
        return self.get_model_context()

    async def call_tool(
        self,
        name: str,
        args: Any = None,
        *,
        timeout: float | None = None,
        on_event: ToolEventCallback | None = None,
    ) -> Any:
        """Call the tool ``name`` (``<frame>_<tool>``) on the frame it belongs to."""
        # The frame whose namespace it is: frames "a" and "a_b" both prefix "a_b_x". If both
        # have a tool of that name, the one the registry shows (the model's) takes it.
        shown = self.get_model_context().tools.get(name)
        first: tuple[str, ReconnectingHost] | None = None  # the longest frame name first
        for frame in sorted(self.federation, key=len, reverse=True):
            tool = name.removeprefix(f"{frame}_")
            connection = self.federation.connection(frame)
            theirs = connection.get_model_context().tools.get(tool) if tool != name else None
            if theirs is None:
                continue
            if shown is not None and theirs.execute is shown.execute:
                first = (tool, connection)
                break
            first = first or (tool, connection)
        if first is None:
            raise ToolNotFoundError(name)
        tool, connection = first
        return await connection.call_tool(tool, args, timeout=timeout, on_event=on_event)

    def subscribe_tool_events(self, callback: ToolEventCallback) -> Unsubscribe:
        """Call ``callback(event)`` with the progress and log events of every frame's calls.

        Frames forward their events only while someone listens: a call asks its frame
        for them only then.
        """
        remove = self._events.add(callback)
        for frame in self.federation:
            if frame not in self._forwarding:
                self._forward(frame)

        def unsubscribe() -> None:
            remove()
            if not self._events:
                for stop in self._forwarding.values():
                    stop()
                self._forwarding.clear()

        return unsubscribe

    def _forward(self, frame: str) -> None:
        connection = self.federation.connection(frame)
        self._forwarding[frame] = connection.subscribe_tool_events(self._events)


def _frame_of(payload: bytes, prefix: str) -> str | None:
    """The frame an ``$SRV.INFO`` answer is from, if it is a frame under ``prefix``."""
    try:
        info = json.loads(payload)
    except ValueError:
        return None
    if not isinstance(info, dict):
        return None
    metadata = info.get("metadata")
    if not isinstance(metadata, dict) or metadata.get(_wire.META_KIND) != _wire.KIND:
        return None
    if metadata.get(_wire.META_PREFIX) != prefix:
        return None  # another tenant's
    name = info.get("name")
    try:
        return check_frame_name(name) if isinstance(name, str) else None
    except ValueError:
        return None
