"""How an :class:`~.bridge.AppBridge` talks with its view: reading, writing, its requests.

The protocol's rules live in :class:`~assistant_frames.apps.bridge_machine.BridgeMachine`;
:class:`BridgeConnection` is its anyio driver. One task at a time reads the transport and
feeds the machine; when a request comes, that task serves it and another reader (an idle
one, or a new task) reads on, so a slow handler holds up no one. One task times out our
requests. A message goes straight to the transport when nothing is queued and the
transport promises not to wait; otherwise it is queued for a writer task, which keeps the
order (and receiving never waits for a send). What a request of the view gets, and what
its notifications do, is the bridge's to decide (through the callbacks).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from contextlib import suppress
from typing import Any, NoReturn, Protocol

import anyio
from anyio.abc import ObjectStream, TaskGroup

from .._anyio import UntilSuspended, event_class, expire_calls
from ..calls import PendingCall
from ..errors import FrameDisconnected, ToolCallError, ToolCallTimeout, error_from_jsonrpc
from ..transports.contract import CLOSED_ERRORS, close_reason
from ..transports.message_writer import MessageWriter
from . import protocol
from .bridge_machine import (
    BridgeMachine,
    Initialized,
    NotificationReceived,
    RequestReceived,
    Send,
)
from .errors import AppRequestError, AppTimeout
from .protocol import Notification, ProtocolError, Request

__all__ = ["BridgeConnection", "BridgeConnectionOwner"]

logger = logging.getLogger("assistant_frames.apps")

_SEND_BUFFER = 256  # messages waiting for the writer task before senders wait
_SHUTDOWN_SEND_TIMEOUT = 1.0
_IDLE_READERS = 4  # reader tasks kept waiting to read again, beyond them they end
_CLOSE_TIMEOUT = 5.0  # closing the transport of a view that does not read


class BridgeConnectionOwner(Protocol):
    """What a :class:`BridgeConnection` reads of its bridge: read when used, as it is then."""

    @property
    def name(self) -> str:
        """The view's name, in messages and errors."""

    @property
    def timeout(self) -> float | None:
        """The bound on each request sent to the view, and on waiting to send."""

    @property
    def extensions(self) -> Mapping[str, object]:
        """The requests outside MCP Apps the host answers, by method."""


class BridgeConnection:
    """The connection of the bridge ``owner`` to its view over ``transport``.

    ``dispatch(request)`` answers a request of the view (its result, or an exception
    said as an error); ``notification(note)`` takes a notification; ``initialized()`` is
    called once the view confirmed initialization and ``ended()`` once the connection
    ended (after what waited on it failed).
    """

    def __init__(
        self,
        owner: BridgeConnectionOwner,
        transport: ObjectStream[Any],
        machine: BridgeMachine,
        *,
        dispatch: Callable[[Request], Awaitable[Any]],
        notification: Callable[[Notification], Awaitable[None]],
        initialized: Callable[[], None],
        ended: Callable[[], None],
    ) -> None:
        self._owner = owner
        self._transport = transport
        self._machine = machine
        self._dispatch = dispatch
        self._notification = notification
        self._initialized = initialized
        self._on_ended = ended
        #: The view's requests being served, each cancelled by its scope.
        self.in_flight: dict[protocol.RequestId, anyio.CancelScope] = {}
        #: Why the connection ended (``None``: it has not).
        self.ended_reason: FrameDisconnected | None = None
        self._new_event: Callable[[], anyio.Event] = anyio.Event
        self.writer = MessageWriter(
            transport,
            on_closed=self._transport_ended,
            on_unsendable=self._unsendable,
            queue_size=_SEND_BUFFER,
        )
        self._followers: list[anyio.Event] = []  # idle readers, each waiting for its turn
        self._task_group: TaskGroup | None = None

    @property
    def name(self) -> str:
        """The bridge's ``name``."""
        return self._owner.name

    @property
    def timeout(self) -> float | None:
        """The bridge's ``timeout``."""
        return self._owner.timeout

    def open(self) -> None:
        """Get ready to send, on entering the bridge (before its tasks start)."""
        self._new_event = event_class()
        self.writer.open()

    def start(self, group: TaskGroup) -> None:
        """Start writing, reading and timing out our requests, in ``group``."""
        self._task_group = group
        group.start_soon(self.writer.run)
        group.start_soon(self._receive_loop)
        group.start_soon(expire_calls, self._machine.calls)

    async def send(self, messages: list[dict[str, Any]], *, bounded: bool = True) -> None:
        """Send in order, through the writer.

        ``bounded``: wait at most the bridge's ``timeout`` for room in the queue (else as long as
        it takes: the reader's own answers, so a view that does not read is not read).
        """
        if not messages:
            return
        if not self.writer.is_open:
            raise RuntimeError(f"Enter the bridge of {self.name} (async with) first")
        if self.ended_reason is not None:
            raise self.lost()
        await self.writer.send(messages, timeout=self.timeout if bounded else None)

    def send_soon(self, messages: list[dict[str, Any]]) -> None:
        """Send from a callback (no await): in order, by the writer task.

        Queued at once while there is room, so a call's progress goes before its answer
        (a task per message would race: trio runs new tasks in no set order). Only a
        full queue leaves the rest to a task.
        """
        if not messages or self.ended_reason is not None:
            return
        rest = self.writer.send_soon(messages)
        if rest and self._task_group is not None:
            self._task_group.start_soon(self._send_quietly, rest)

    async def _send_quietly(self, messages: list[dict[str, Any]]) -> None:
        """Send what the bridge owes the view (answers, notifications); a view that
        leaves no room for it within the bridge's ``timeout`` is disconnected, saying so."""
        try:
            await self.send(messages)
        except (*CLOSED_ERRORS, FrameDisconnected):
            pass  # the connection ended: its end says why
        except TimeoutError:
            await self._disconnect_slow_view()

    async def _disconnect_slow_view(self) -> None:
        if self.ended_reason is not None:
            return
        unanswered = len(self.in_flight)
        reason = (
            f"{self.name} read nothing for {self.timeout:g} s (the bridge's timeout): disconnected"
        )
        logger.warning(
            "%s; %d of its requests end unanswered, and the bridge's own requests fail",
            reason,
            unanswered,
        )
        self.lose(FrameDisconnected(reason, frame=self.name))
        with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_TIMEOUT):
            await self._transport.aclose()  # the view sees the end, not silence

    def _unsendable(self, exc: Exception) -> None:
        """A message (a handler's result) had no JSON form: the connection ends."""
        logger.warning("The bridge of %s could not send a message: %s", self.name, exc)
        self.lose(FrameDisconnected(f"The bridge of {self.name} failed to send: {exc}"))

    async def request(
        self, method: str, params: Any, timeout: float | None, tool: str | None = None
    ) -> Any:
        """Send our request to the view and return its typed result."""
        if self.ended_reason is not None or not self.writer.is_open:
            raise self.lost(tool)
        limit = self.timeout if timeout is None else timeout
        done = self._new_event()
        deadline = None if limit is None else anyio.current_time() + limit
        messages, call = self._machine.request(method, params, deadline=deadline, wake=done.set)
        try:
            try:
                await self.send(messages)
            except TimeoutError:  # no room to queue it within the bridge's timeout: unsent
                self._machine.calls.discard(call.id)
                return self._timed_out(call, limit, tool)
            await done.wait()
        except BaseException:
            self._machine.calls.discard(call.id)
            await self._cancel_request(call, "The host gave up")
            raise
        return self._outcome(call, limit, tool)

    def _timed_out(self, call: PendingCall, limit: float | None, tool: str | None) -> NoReturn:
        if tool:
            raise ToolCallTimeout(tool, limit or 0.0, frame=self.name)
        raise AppTimeout(call.name, limit or 0.0)

    def _outcome(self, call: PendingCall, limit: float | None, tool: str | None) -> Any:
        what = f'tool "{tool}"' if tool else call.name
        if call.timed_out:
            self.send_soon(self._cancel_message(call, "Timed out"))
            self._timed_out(call, limit, tool)
        error = call.error
        if isinstance(error, FrameDisconnected):
            raise self.lost(tool)
        if isinstance(error, protocol.ErrorResponse):
            if tool:
                failure = error_from_jsonrpc(error.code, error.message, tool)
                failure.frame = self.name
                raise failure
            raise AppRequestError(call.name, error.code, error.message, error.data)
        if isinstance(error, ProtocolError):
            if tool:
                raise ToolCallError(
                    f"The view {self.name} answered {what} badly: {error.message}",
                    tool_name=tool,
                    frame=self.name,
                )
            raise error
        return call.result

    def _cancel_message(self, call: PendingCall, reason: str) -> list[dict[str, Any]]:
        if self._machine.state != "initialized":
            return []
        params = {"requestId": call.id, "reason": reason}
        return [protocol.encode_notification("notifications/cancelled", params)]

    async def _cancel_request(self, call: PendingCall, reason: str) -> None:
        with (
            anyio.CancelScope(shield=True),
            anyio.move_on_after(_SHUTDOWN_SEND_TIMEOUT),
            suppress(*CLOSED_ERRORS, FrameDisconnected, TimeoutError, RuntimeError),
        ):
            await self.send(self._cancel_message(call, reason))

    async def _receive_loop(self) -> None:
        """Read the view's messages until one is a request, and serve that one here.

        Leader and followers: the task that read a request serves it itself, so its
        answer goes out without waiting for a task to be scheduled. Only if serving
        waits (most requests do not) is reading handed on first, to an idle reader (or
        a new one), so a slow request never stops reading; this one then waits, idle,
        to read again.
        """
        while True:
            admitted = await self._read_until_request()
            if admitted is None:  # the connection ended: the idle readers end too
                for follower in self._followers:
                    follower.set()
                self._followers.clear()
                return
            serving = UntilSuspended(self._serve(*admitted), self._pass_reading)
            await serving
            if not serving.suspended:
                continue  # still the reader
            if len(self._followers) >= _IDLE_READERS or self.ended_reason is not None:
                return
            turn = self._new_event()
            self._followers.append(turn)
            await turn.wait()
            if self.ended_reason is not None:
                return

    def _pass_reading(self) -> None:
        """Hand reading on to an idle reader, or a new one."""
        if self._followers:
            self._followers.pop().set()
        else:
            group = self._task_group
            assert group is not None
            group.start_soon(self._receive_loop)

    async def _read_until_request(self) -> tuple[Request, anyio.CancelScope] | None:
        """Feed the machine until a request is admitted (``None``: the connection ended)."""
        receive = self._transport.receive
        machine = self._machine
        try:
            while True:
                raw = await receive()
                extension = self._extension_request(raw)
                initializations = machine.initializations
                event = machine.receive(raw) if extension is None else machine.admit(extension)
                if isinstance(event, RequestReceived):
                    scope = self.in_flight[event.request.id] = anyio.CancelScope()
                    return event.request, scope
                if isinstance(event, Send):
                    # Sent by the reader itself, not a task per answer: a view flooding
                    # without reading then stops being read (backpressure).
                    await self.send(event.messages, bounded=False)
                    if machine.initializations > max(initializations, 1):
                        logger.info("The view %s sent ui/initialize again; answered", self.name)
                elif isinstance(event, Initialized):
                    await self.send(event.messages, bounded=False)
                    self._initialized()
                elif isinstance(event, NotificationReceived):
                    await self._notification(event.notification)
        except CLOSED_ERRORS as exc:
            self._transport_ended(exc)
        except FrameDisconnected:  # lost while answering: already said why
            pass
        except Exception as exc:  # a transport failing in its own way
            logger.warning("Transport of %s failed: %r", self.name, exc)
            self.lose(FrameDisconnected(f"The transport of {self.name} failed: {exc!r}"))
        return None

    def _extension_request(self, raw: object) -> Request | None:
        """``raw`` as a request for one of the bridge's ``extensions`` (``None``: any other).

        Checked before the machine, which knows MCP Apps methods only and would answer
        "method not found".
        """
        if not (isinstance(raw, dict) and self._owner.extensions and protocol.is_jsonrpc(raw)):
            return None
        method, request_id, params = raw.get("method"), raw.get("id"), raw.get("params")
        # A method that is not a string may be unhashable (a list): no dict lookup for it.
        if not isinstance(method, str) or method not in self._owner.extensions:
            return None
        if not isinstance(params, dict | None):
            return None
        if not isinstance(request_id, str | int) or isinstance(request_id, bool):
            return None
        return Request(request_id, method, params or {}, params)

    async def _serve(self, request: Request, scope: anyio.CancelScope) -> None:
        answer: dict[str, Any] | None = None
        try:
            with scope:
                try:
                    result = await self._dispatch(request)
                except Exception as exc:  # the view hears why, not us
                    if not isinstance(exc, ProtocolError):  # a handler failed
                        logger.debug("Handler of %s failed", request.method, exc_info=True)
                    answer = self._machine.fail(request.id, exc)
                else:
                    answer = self._machine.answer(request.id, result)
            if answer is not None and not scope.cancelled_caught:  # cancelled: no answer
                await self._send_quietly([answer])
        finally:
            # Counted until its answer is queued, so max_requests also bounds the answers
            # waiting for a view that does not read.
            self.in_flight.pop(request.id, None)
            self._machine.finished(request.id)

    def _transport_ended(self, exc: BaseException) -> None:
        reason = close_reason(exc)
        message = (
            f"{self.name} disconnected: {reason.description}"
            if reason.description
            else f"{self.name} closed the connection"
        )
        self.lose(FrameDisconnected(message, frame=self.name))

    def lose(self, error: FrameDisconnected) -> None:
        """The connection ended, ``error`` says why: what waits on it fails (idempotent)."""
        if self.ended_reason is not None:
            return
        error.frame = self.name
        self.ended_reason = error
        self.writer.stop()  # what is queued dies with the connection
        self._machine.calls.fail_all(error)
        for scope in self.in_flight.values():
            scope.cancel()
        self._on_ended()

    def lost(self, tool: str | None = None) -> FrameDisconnected:
        """The error for a use of the connection once it ended (``tool``: the one called)."""
        known = self.ended_reason
        message = known.message if known is not None else f"{self.name} is not connected"
        return FrameDisconnected(message, tool_name=tool, frame=self.name)
