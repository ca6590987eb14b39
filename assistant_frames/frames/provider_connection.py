"""What a frame keeps per connected host (:class:`ProviderConnection`), per tool call
(:class:`ProviderCall`), and the reading turn a worker hands on
(:class:`ReadingHandoff`): the state :class:`~assistant_frames.AssistantFrameProvider`'s
workers share, and the sending of calls' progress and log messages."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from typing import Any

import anyio
from anyio.abc import ObjectStream, TaskGroup

from .._anyio import event_class
from ..registry.events import ToolEvent, ToolEventCallback, ToolProgress
from ..registry.tool import ToolCallContext
from ..transports.contract import CLOSED_ERRORS, TransportAttribute
from . import protocol
from .frame_machine import FrameMachine
from .protocol import RESULT_NOT_SENDABLE

__all__ = ["ProviderCall", "ProviderConnection", "ReadingHandoff"]

logger = logging.getLogger("assistant_frames.frames")

_MAX_QUEUED_LOGS = 256  # per connection; the oldest go first when the host reads slowly


class ReadingHandoff:
    """A reading worker's turn, handed on once when called (unless no worker can take
    it); :meth:`settle` says whether the worker still reads, and counts it ready the
    first time it does not."""

    __slots__ = ("_connection", "_counted", "_pass_reading", "done")

    def __init__(
        self, pass_reading: Callable[[ProviderConnection], bool], connection: ProviderConnection
    ) -> None:
        self._pass_reading = pass_reading
        self._connection = connection
        self._counted = False
        self.done = False

    def __call__(self) -> None:
        if not self.done:
            self.done = self._pass_reading(self._connection)

    def settle(self) -> bool:
        if not self.done:
            return True
        if not self._counted:  # a follower from now on: ready once its call is done
            self._counted = True
            self._connection.ready += 1
        return False


class ProviderCall:
    """One tool call, queued or running (or a ready ``reply``, for a malformed call).

    Cancelling it flags its context (for sync tools in threads) and, while it runs,
    cancels the scope of the worker running it.
    """

    __slots__ = ("args", "context", "id", "name", "reply", "scope")

    def __init__(
        self, call_id: str, name: str, args: Any, on_event: ToolEventCallback | None = None
    ) -> None:
        self.id = call_id
        self.name = name
        self.args = args
        self.context = ToolCallContext(call_id, name, on_event)
        self.scope: anyio.CancelScope | None = None
        self.reply: dict[str, Any] | None = None

    def cancel(self) -> None:
        self.context.cancel()
        if self.scope is not None:
            self.scope.cancel()


class ProviderConnection:
    """What a frame knows about one connected host."""

    __slots__ = (
        "ended",
        "events_dropped",
        "events_wake",
        "idle",
        "logs",
        "machine",
        "new_event",
        "progress",
        "queue",
        "reading_turn",
        "ready",
        "receive_ready",
        "room",
        "task_group",
        "transport",
        "wake",
        "workers",
    )

    def __init__(
        self, transport: ObjectStream[Any], task_group: TaskGroup, document_id: str
    ) -> None:
        self.transport = transport
        self.task_group = task_group
        self.machine: FrameMachine[ProviderCall] = FrameMachine(document_id)
        self.queue: deque[ProviderCall] = deque()  # calls not yet picked up by a worker
        self.idle: list[anyio.Event] = []  # one per idle worker: set it to wake that one
        self.ready = 0  # workers neither reading nor running a call (see _worker)
        self.workers = 0  # worker tasks started and not yet ended
        self.reading_turn: anyio.Event | None = None  # the idle worker handed the turn
        self.room: anyio.Event | None = None  # the reader, waiting for the queue
        self.ended = anyio.Event()  # set by the reader that found the connection ended
        self.new_event = event_class()
        self.wake = self.new_event()
        # Asked once: a worker takes the reading turn once per call it runs itself.
        self.receive_ready: Callable[[], bool] | None = transport.extra(
            TransportAttribute.receive_ready, None
        )
        # Calls' progress and log messages not sent yet; the sender task starts with the
        # first. Progress keeps the latest per call, logs the newest _MAX_QUEUED_LOGS.
        self.progress: dict[str, dict[str, Any]] = {}
        self.logs: deque[dict[str, Any]] = deque()
        self.events_wake: anyio.Event | None = None
        self.events_dropped = 0

    def send_event(self, event: ToolEvent) -> None:
        """A running call's progress or log message: queue it for the sender task.

        Never waits, so a tool reporting in a tight loop is never held up; what the
        transport cannot take yet is coalesced (progress) or bounded (logs).
        """
        call_id = event.tool_call_id
        if call_id is None or call_id not in self.machine.calls:
            return  # finished or cancelled meanwhile: the host no longer listens
        message = protocol.encode_tool_event(call_id, event, document_id=self.machine.document_id)
        if type(event) is ToolProgress:
            self.progress[call_id] = message
        else:
            if len(self.logs) >= _MAX_QUEUED_LOGS:
                self.logs.popleft()
                self.events_dropped += 1
            self.logs.append(message)
        if self.events_wake is None:
            self.events_wake = self.new_event()
            self.task_group.start_soon(self._push_events)
        self.events_wake.set()

    async def _push_events(self) -> None:
        """The one task that sends this connection's progress and log messages."""
        while True:
            wake = self.events_wake
            assert wake is not None
            await wake.wait()
            self.events_wake = self.new_event()
            if not await self.flush_events():
                return

    async def flush_events(self) -> bool:
        """Send every queued progress and log message; False once the peer is gone."""
        send_latest = self.transport.extra(TransportAttribute.send_latest, None)
        if self.events_dropped:
            logger.warning(
                "Dropped %d tool log messages: the host reads them too slowly",
                self.events_dropped,
            )
            self.events_dropped = 0
        while self.logs or self.progress:
            try:
                if self.logs:
                    await self.transport.send(self.logs.popleft())
                    continue
                call_id = next(iter(self.progress))
                message = self.progress.pop(call_id)
                if send_latest is not None:  # a peer slow to read holds one per call
                    await send_latest(f"tool-progress:{call_id}", message)
                else:
                    await self.transport.send(message)
            except CLOSED_ERRORS:
                return False
            except (TypeError, ValueError) as exc:  # log data with no JSON form, say
                logger.warning("Could not send a tool's progress or log message: %s", exc)
        return True

    async def send_reply(self, call_id: str, reply: dict[str, Any]) -> None:
        """Send a ``tool-result``; a peer that is already gone is nothing to do.

        A result the transport cannot encode becomes the JS frame's error for that; an
        error that cannot be encoded either (its id has no JSON form) is dropped.
        """
        try:
            await self.transport.send(reply)
            return
        except CLOSED_ERRORS:
            return
        except (TypeError, ValueError) as exc:
            failure = exc
        if reply["message"].get("error") is None:
            try:
                await self.transport.send(
                    protocol.encode_tool_error(
                        call_id, RESULT_NOT_SENDABLE, document_id=self.machine.document_id
                    )
                )
                return
            except CLOSED_ERRORS:
                return
            except (TypeError, ValueError) as exc:
                failure = exc
        logger.warning("Dropped a tool-result that the transport cannot send: %s", failure)
