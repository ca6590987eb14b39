"""``AssistantFrameHost``: the host side of one frame connection.

The protocol's rules live in :class:`~assistant_frames.frames.host_machine.HostMachine`;
this is its anyio driver: one task reads the transport and feeds the machine, one
times calls out, and callers send what the machine gives them.
"""

from __future__ import annotations

import copy
import logging
import math
import secrets
from collections.abc import Callable
from contextlib import suppress
from typing import Any

import anyio
from anyio.abc import ObjectStream, TaskGroup

from .._anyio import clock, event_class, expire_calls
from .._driver import Driver
from .._logs import log_first_loudly
from .._text import without_repeated_command
from ..calls import PendingCall
from ..errors import ContextTimeout, FrameDisconnected, ToolArgumentsError
from ..registry.context import ModelContext, Subscribers, Unsubscribe
from ..registry.events import ToolEventCallback, ToolEventSubscribers, deliver_event
from ..registry.tool import Tool, ToolCallContext
from ..registry.waiting import WaitsForTools
from ..transports.contract import (
    CLOSED_ERRORS,
    TransportAttribute,
    close_reason,
    receiving_inline,
)
from . import protocol
from .host_machine import CallEvent, ContextChanged, HostMachine, HostState, Malformed
from .protocol import SerializedTool

__all__ = ["FRAME_LOAD_GRACE", "AssistantFrameHost"]

logger = logging.getLogger("assistant_frames.frames")

_CANCEL_SEND_TIMEOUT = 1.0
#: How long :meth:`AssistantFrameHost.frame_loaded` waits for the frame to answer before
#: it forgets the old document (the JS host's ``FRAME_LOAD_GRACE_MS``).
FRAME_LOAD_GRACE = 2.0

State = HostState


class AssistantFrameHost(Driver, WaitsForTools):
    """The host end of a connection to one frame; a :class:`ModelContextProvider`.

    Use it as an async context manager. On entry it starts reading the transport and
    asks the frame for its context; :meth:`wait_for_context` waits for the first one.
    The frame's tools appear in :meth:`get_model_context` with an ``execute`` that calls
    across the channel, so ``parent_registry.add_provider(host)`` federates the frame.

    ``timeout`` (seconds, ``None`` for none) bounds each call unless the call gives its
    own. When the transport breaks, pending calls fail at once with
    :class:`FrameDisconnected`, the frame's tools disappear and subscribers are told.
    The host owns ``transport`` and closes it on exit.

    Frames that send a ``documentId`` (``@assistant-ui/core`` 0.3.35, and this library's
    frames) are followed from document to document: a new one (a reloaded page, a
    restarted frame) replaces the context and fails the old one's pending calls with
    :class:`~assistant_frames.DocumentChanged`; ``provider-disposed`` fails them, and
    new calls until the next context, with :class:`~assistant_frames.ProviderDisposed`.
    """

    _noun = "host"

    def __init__(
        self,
        transport: ObjectStream[Any],
        *,
        timeout: float | None = 30.0,
        name: str | None = None,
    ) -> None:
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout must be positive or None, not {timeout!r}")
        self.timeout = timeout
        self.name = name or "frame"
        self._transport = transport
        self._machine = HostMachine(
            self._remote_tool, id_prefix=f"tool-{secrets.token_hex(3)}", frame=self.name
        )
        self._subscribers = Subscribers()
        #: Follow every call's progress and log events (while any do, every call asks).
        self._events = ToolEventSubscribers()
        self._waiting = ModelContext(waiting=(self.name,))
        self._ready: anyio.Event | None = None
        self._new_event: Callable[[], anyio.Event] = anyio.Event  # the backend's, once entered
        self._clock: Callable[[], float] = anyio.current_time  # the backend's, once entered
        self._init_lifecycle()
        self._task_group: TaskGroup | None = None
        self._load_scope: anyio.CancelScope | None = None  # frame_loaded's grace period
        self._load_timer: str | None = None  # the request id it runs for
        self._send_would_wait: Callable[[], bool] | None = None  # the transport's, once entered

    # -- lifecycle -----------------------------------------------------------------------

    async def __aenter__(self) -> AssistantFrameHost:
        if self._machine.state != "new":
            raise RuntimeError("An AssistantFrameHost can be entered only once")
        self._ready = anyio.Event()
        self._ended = anyio.Event()
        self._new_event = event_class()
        self._clock = clock()
        # Read now, not when made: a subclass may make its transport on entering (NATS).
        self._send_would_wait = self._transport.extra(TransportAttribute.send_would_wait, None)
        async with self._tasks.open() as group:
            self._task_group = group
            request = self._machine.open()
            group.start_soon(self._receive_loop)
            group.start_soon(expire_calls, self._machine.calls)
            try:
                await self._transport.send(request)
            except CLOSED_ERRORS:
                # The receive loop says why, when it can (a worker's exit code, a close
                # code): give it a moment before saying only that the transport closed.
                with anyio.move_on_after(_CANCEL_SEND_TIMEOUT):
                    await self._ended.wait()
                self._disconnect("The frame's transport was already closed")
        return self

    async def _stop(self) -> None:
        """Cancel pending calls (sending ``tool-cancel``), unsubscribe and close."""
        machine = self._machine
        if machine.state == "closed":
            return
        goodbye = machine.close(FrameDisconnected(f"The host of {self.name} was closed"))
        if goodbye:
            with anyio.CancelScope(shield=True), anyio.move_on_after(_CANCEL_SEND_TIMEOUT):
                for message in goodbye:
                    await self._try_send(message)
        if self._ended is not None:
            self._ended.set()
        if machine.clear_context():
            self._subscribers.notify()
        if self._task_group is not None:
            self._task_group.cancel_scope.cancel()
        with anyio.CancelScope(shield=True):
            await self._transport.aclose()

    @property
    def state(self) -> State:
        """``"new"``, ``"connected"``, ``"disconnected"`` (transport broke) or ``"closed"``."""
        return self._machine.state

    @property
    def connected(self) -> bool:
        """True while the transport is open."""
        return self._machine.state == "connected"

    @property
    def document_id(self) -> str | None:
        """The frame's current document (its ``documentId``), if it sends one."""
        return self._machine.document

    @property
    def has_context(self) -> bool:
        """True once the frame's context has arrived, while connected."""
        return self._machine.wire is not None

    @property
    def ignored_count(self) -> int:
        """How many received messages were dropped: not frame messages (another channel,
        not an envelope) or malformed ones. A peer that sends only these is not a frame."""
        return self._machine.ignored

    @property
    def ignored_samples(self) -> tuple[Any, ...]:
        """The first few dropped messages (see :attr:`ignored_count`), as received."""
        return tuple(self._machine.ignored_samples)

    async def wait_for_context(self, timeout: float | None = None) -> ModelContext:
        """Wait until the frame's first context has arrived and return the current one.

        Raises :class:`ContextTimeout` (a ``TimeoutError``) after ``timeout`` seconds
        (default: the host's) and :class:`FrameDisconnected` if the connection ends first.
        """
        if self._ready is None:
            raise RuntimeError("Enter the host (async with) before waiting for its context")
        limit = self.timeout if timeout is None else timeout
        with anyio.move_on_after(math.inf if limit is None else limit):
            await self._ready.wait()
        if not self._ready.is_set():
            raise ContextTimeout(
                f"No model context from {self.name} within {limit:g} s: is the other end an"
                " assistant-frames frame (AssistantFrameProvider.serve, serve_stdio, or"
                " @assistant-ui/core's AssistantFrameProvider)?",
                frame=self.name,
            )
        if self._machine.wire is None:
            raise self._not_connected()
        return self._machine.context

    # -- ModelContextProvider ------------------------------------------------------------

    def get_model_context(self) -> ModelContext:
        """The frame's latest context (empty before the first and after a disconnect).

        Before the first context, the empty context names this frame in ``waiting``, so a
        call to one of its tools says why the tool is missing.
        """
        machine = self._machine
        if machine.wire is None and machine.state in ("new", "connected"):
            return self._waiting
        return machine.context

    def subscribe(self, callback: Callable[[], None]) -> Unsubscribe:
        """Call ``callback()`` whenever the frame's context changes."""
        return self._subscribers.add(callback)

    def subscribe_tool_events(self, callback: ToolEventCallback) -> Unsubscribe:
        """Call ``callback(event)`` with the progress and log events of every call.

        While anyone is subscribed, every call asks the frame for its events.
        """
        return self._events.add(callback)

    # -- tool calls ----------------------------------------------------------------------

    async def call_tool(
        self,
        name: str,
        args: Any = None,
        *,
        timeout: float | None = None,
        tool_call_id: str | None = None,
        on_event: ToolEventCallback | None = None,
    ) -> Any:
        """Call the frame's tool ``name`` and return its result.

        ``on_event`` receives the call's :class:`~assistant_frames.ToolProgress` and
        :class:`~assistant_frames.ToolLog` events while it runs (the frame is asked to
        send them only then).

        Raises :class:`ToolCallError` with the frame's message when the tool fails,
        :class:`ToolCallTimeout` after ``timeout`` seconds (default: the host's; a
        ``tool-cancel`` is sent), and :class:`FrameDisconnected` when the connection is
        or goes away. Cancelling the caller also sends ``tool-cancel``.
        """
        machine = self._machine
        if machine.state != "connected":
            error = self._not_connected()
            error.tool_name = name
            raise error
        limit = self.timeout if timeout is None else timeout
        done = self._new_event()
        # The deadline covers the send: a peer that stopped reading makes it wait. When
        # the transport promises the send will not wait, the one timer task times the
        # call out (a cancel scope per call would cost a large share of it).
        timer = (
            limit is not None and self._send_would_wait is not None and not self._send_would_wait()
        )
        call, message = machine.start_call(
            name,
            args,
            call_id=tool_call_id,
            deadline=self._clock() + limit if timer else None,  # type: ignore[operator]
            wake=done.set,
            on_event=on_event,
            events=self._events.active,
        )
        try:
            if limit is None or timer:
                await self._send_call(message, call)
                await done.wait()
            else:
                with anyio.move_on_after(limit):
                    await self._send_call(message, call)
                    await done.wait()
                if not call.settled:
                    call.timed_out = True
        except BaseException:  # cancelled, or the arguments could not be sent
            await self._abandon(call)
            raise
        if call.timed_out:
            await self._abandon(call)
        return machine.outcome(call, limit)

    async def _send_call(self, message: dict[str, Any], call: PendingCall) -> None:
        try:
            await self._transport.send(message)
        except (TypeError, ValueError) as exc:
            raise ToolArgumentsError(
                f'Arguments for tool "{call.name}" cannot be sent: {exc}',
                tool_name=call.name,
                tool_call_id=call.id,
                frame=self.name,
            ) from None
        except CLOSED_ERRORS:
            self._disconnect("The frame's transport is closed")
        call.sent = True

    async def _abandon(self, call: PendingCall) -> None:
        cancel = self._machine.abandon(call)
        if cancel is not None:
            with anyio.CancelScope(shield=True), anyio.move_on_after(_CANCEL_SEND_TIMEOUT):
                await self._try_send(cancel)

    async def _try_send(self, message: dict[str, Any]) -> None:
        with suppress(*CLOSED_ERRORS):
            await self._transport.send(message)

    def _not_connected(self) -> FrameDisconnected:
        """A fresh error saying why this host cannot call (each caller gets its own)."""
        state = self._machine.state
        if state == "new":
            message = f"Enter the host of {self.name} (async with) first"
        elif state == "closed":
            message = f"The host of {self.name} was closed"
        elif self._machine.disconnected is not None:
            error = copy.copy(self._machine.disconnected)
            error.frame = self.name
            return error
        else:
            message = f"{self.name} is not connected"
        return FrameDisconnected(message, frame=self.name)

    # -- documents -----------------------------------------------------------------------

    def frame_loaded(self, grace: float = FRAME_LOAD_GRACE) -> None:
        """The frame (a browser iframe) has loaded, perhaps a new document: the JS host's
        ``frameLoaded()``, for code that knows when the frame reloads.

        Asks for the context with a fresh ``requestId``; if no answer, no context from
        another document and none without a document arrives within ``grace`` seconds,
        the old document's context is cleared and its pending calls fail with
        :class:`~assistant_frames.DocumentChanged`. The assistant-frames parent relay
        says when its iframe loads, and the host calls this itself.
        """
        if self._task_group is None:
            raise RuntimeError("Enter the host (async with) before telling it a frame loaded")
        self._send_soon(self._machine.frame_loaded(), grace)

    def _send_soon(
        self, sends: tuple[dict[str, Any], ...], grace: float = FRAME_LOAD_GRACE
    ) -> None:
        """Send what the machine returned without waiting, and time a frame load."""
        group = self._task_group
        if group is None:
            return
        if sends:
            group.start_soon(self._send_all, sends)
        timer = self._machine.load_timer
        if timer is not None and timer != self._load_timer:
            self._start_load_timer(group, timer, grace)

    def _start_load_timer(self, group: TaskGroup, request_id: str, grace: float) -> None:
        if self._load_scope is not None:
            self._load_scope.cancel()  # one grace period at a time: the newest load's
        scope = self._load_scope = anyio.CancelScope()
        self._load_timer = request_id

        async def expire() -> None:
            with scope:
                await anyio.sleep(grace)
                if self._machine.load_expired(request_id):
                    self._subscribers.notify()

        group.start_soon(expire)

    async def _send_all(self, messages: tuple[dict[str, Any], ...]) -> None:
        for message in messages:
            await self._try_send(message)

    # -- receiving -----------------------------------------------------------------------

    async def _receive_loop(self) -> None:
        receive = self._transport.receive
        handle = self._handle
        try:
            # In memory, the frame's sends are handled in its task (in this task's
            # context): no wake-up of this one. Over a WebSocket or a pipe on asyncio,
            # results are settled in the callback that read them.
            with receiving_inline(self._transport, self._handle_inline, self._settle_arriving):
                while True:
                    handle(await receive())
        except CLOSED_ERRORS as exc:  # a transport may say why (an exit code, a close code)
            reason = close_reason(exc)
            self._disconnect(
                f"{self.name} disconnected: "
                f"{without_repeated_command(self.name, reason.description)}"
                if reason.description
                else f"{self.name} closed the connection",
                returncode=reason.exit_code,
                stderr_tail=reason.stderr_tail,
            )
        except Exception as exc:  # a transport failing in its own way
            logger.warning("Transport of %s failed: %r", self.name, exc)
            self._disconnect(f"The transport of {self.name} failed: {exc!r}")

    def _handle(self, message: Any) -> None:
        """What a message from the frame does; never waits."""
        event = self._machine.receive(message)
        if event is None:
            return
        kind = type(event)
        if kind is Malformed:
            self._log_malformed(event)  # type: ignore[arg-type]
            return
        if kind is CallEvent:
            self._deliver(event)  # type: ignore[arg-type]
            return
        # Receiving never waits for a send. Started before waking whoever waits for the
        # context, so on asyncio the subscribe goes out before their call.
        self._send_soon(event.sends)
        if kind is ContextChanged:
            self._ready.set()  # type: ignore[union-attr]
            self._subscribers.notify()

    def _handle_inline(self, message: Any) -> bool:
        """:meth:`_handle`, run in the frame's task by a memory transport: it must not
        raise into the frame's send."""
        try:
            self._handle(message)
        except Exception as exc:  # as the receive loop would: this connection is done
            logger.warning("Handling a message from %s failed: %r", self.name, exc)
            self._disconnect(f"Handling a message from {self.name} failed: {exc!r}")
        return True

    def _settle_arriving(self, message: Any) -> bool:
        """A message as it arrives, in the event loop's callback (a WebSocket or stdio
        transport on asyncio): a result wakes its caller at once; anything else is left
        to the receive loop, in this host's task."""
        try:
            return self._machine.settle_result(message)
        except Exception:  # the receive loop meets it again, and deals with it
            return False

    def _log_malformed(self, event: Malformed) -> None:
        log_first_loudly(
            logger,
            event.first,
            "Host dropped a malformed message from %s (%s)",
            self.name,
            event.reason,
        )

    def _deliver(self, event: CallEvent) -> None:
        """A call's progress or log event: to its caller, and to every-call followers."""
        if event.on_event is not None:
            deliver_event(event.on_event, event.event)
        if self._events:
            self._events(event.event)

    def _remote_tool(self, name: str, spec: SerializedTool) -> Tool:
        call_tool = self.call_tool

        async def invoke(args: Any, context: ToolCallContext) -> Any:
            if context.wants_events:  # the frame's events become the caller's
                return await call_tool(name, args, on_event=context.send_event)
            return await call_tool(name, args)

        return Tool.from_parts(
            name, invoke, parameters=spec.get("parameters"), **protocol.tool_options(spec)
        )

    # -- disconnection -------------------------------------------------------------------

    def _disconnect(
        self, reason: str, *, returncode: int | None = None, stderr_tail: str | None = None
    ) -> None:
        error = FrameDisconnected(
            reason, returncode=returncode, stderr_tail=stderr_tail, frame=self.name
        )
        if not self._machine.connection_lost(error):
            return
        if self._ready is not None:
            self._ready.set()
        if self._ended is not None:
            self._ended.set()
        if self._machine.clear_context():
            self._subscribers.notify()

    def __repr__(self) -> str:
        tools = len(self._machine.context.tools)
        return f"<AssistantFrameHost {self.name!r} {self._machine.state} tools={tools}>"
