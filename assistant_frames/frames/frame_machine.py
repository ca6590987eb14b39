"""The frame side of the frame protocol as a sans-I/O state machine.

:class:`FrameMachine` holds what a frame knows about one connected host (is it
subscribed, was a context asked for, what was last sent, which calls are live) and
applies the protocol's rules: a request or a subscribe subscribes, a reused live id
cancels the older call, a cancelled call sends no result, a malformed call with an id is
answered. It never awaits: feed it what arrived (:meth:`FrameMachine.receive`), act on
the event it returns. :class:`~assistant_frames.frames.AssistantFrameProvider` is its
anyio driver.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar, cast

from . import protocol
from .protocol import (
    MalformedMessage,
    ModelContextRequest,
    ModelContextSubscribe,
    ModelContextUnsubscribe,
    SerializedModelContext,
    ToolCall,
    ToolCancel,
)

__all__ = [
    "CallCancelled",
    "CallRequested",
    "ContextWanted",
    "FrameEvent",
    "FrameMachine",
    "Malformed",
]

H = TypeVar("H")


class CallRequested(Generic[H]):
    """A ``tool-call`` arrived: run it (and :meth:`FrameMachine.track` it).

    ``superseded`` is the live call that reused the same id, already forgotten: cancel it.
    ``events`` is True when the host asked for the call's progress and log messages.
    """

    __slots__ = ("args", "events", "id", "superseded", "tool_name")

    def __init__(
        self, call_id: str, tool_name: str, args: Any, superseded: H | None, events: bool
    ) -> None:
        self.id = call_id
        self.tool_name = tool_name
        self.args = args
        self.superseded = superseded
        self.events = events


class CallCancelled(Generic[H]):
    """A ``tool-cancel`` for a live call arrived: cancel ``handle``; send no result."""

    __slots__ = ("handle",)

    def __init__(self, handle: H) -> None:
        self.handle = handle


class ContextWanted:
    """The host asked for the context or subscribed: the context pusher should look."""

    __slots__ = ()


class Malformed:
    """A message on the frame channel that does not validate.

    ``reply`` is the error ``tool-result`` to send for a malformed call that has an id;
    ``first`` is True for the connection's first one (log it louder).
    """

    __slots__ = ("first", "reason", "reply")

    def __init__(self, reason: str, reply: dict[str, Any] | None, first: bool) -> None:
        self.reason = reason
        self.reply = reply
        self.first = first


FrameEvent = CallRequested[Any] | CallCancelled[Any] | ContextWanted | Malformed
_CONTEXT_WANTED = ContextWanted()


class FrameMachine(Generic[H]):
    """The rules of one frame-to-host connection, without I/O.

    ``H`` is whatever the driver uses to run a call (it hands it to :meth:`track`); the
    machine keeps the live ones in :attr:`calls` by id.
    """

    __slots__ = ("calls", "force_context", "last_sent", "malformed", "subscribed")

    def __init__(self) -> None:
        self.calls: dict[str, H] = {}
        self.subscribed = False
        self.force_context = False  # a request waits for an answer, changed or not
        self.last_sent: SerializedModelContext | None = None
        self.malformed = 0

    # -- receiving -------------------------------------------------------------------------

    def receive(self, raw: Any) -> FrameEvent | None:
        """Apply one received value; the event for the driver, or ``None`` (nothing to do)."""
        fast = protocol.fast_tool_call(raw)
        if fast is not None:
            call_id, name, args, events = fast
            return CallRequested(call_id, name, args, self.calls.pop(call_id, None), events)
        try:
            message = protocol.decode(raw)
        except MalformedMessage as exc:
            self.malformed += 1
            reply = None
            if exc.tool_call_id is not None:
                reply = protocol.encode_tool_error(
                    exc.tool_call_id, f"Malformed tool-call: {exc.reason}"
                )
            return Malformed(exc.reason, reply, self.malformed == 1)
        if message is None:
            return None
        kind = type(message)
        if kind is ToolCall:
            call = cast(ToolCall, message)
            return CallRequested(
                call.id, call.tool_name, call.args, self.calls.pop(call.id, None), call.wants_events
            )
        if kind is ToolCancel:
            handle = self.calls.pop(cast(ToolCancel, message).id, None)
            return None if handle is None else CallCancelled(handle)
        if kind is ModelContextRequest:
            self.subscribed = True
            self.force_context = True  # answered even if nothing changed
            return _CONTEXT_WANTED
        if kind is ModelContextSubscribe:
            self.subscribed = True
            return _CONTEXT_WANTED
        if kind is ModelContextUnsubscribe:
            self.subscribed = False
        return None  # frame -> host types arriving at a frame: not for us

    # -- calls -----------------------------------------------------------------------------

    def track(self, call_id: str, handle: H) -> None:
        """``handle`` runs call ``call_id`` (after a :class:`CallRequested`)."""
        self.calls[call_id] = handle

    def finish(self, call_id: str, handle: H) -> bool:
        """Call ``call_id`` is done: whether its result may be sent (not cancelled or
        superseded meanwhile)."""
        if self.calls.get(call_id) is not handle:
            return False
        del self.calls[call_id]
        return True

    def is_live(self, call_id: str, handle: H) -> bool:
        """Whether ``handle`` still runs call ``call_id`` (not cancelled or superseded)."""
        return self.calls.get(call_id) is handle

    # -- context ---------------------------------------------------------------------------

    def context_update(self, wire: SerializedModelContext) -> dict[str, Any] | None:
        """The ``model-context-update`` to send for ``wire``, or ``None``.

        Sent to a subscribed host when it differs from what was last sent, and to a host
        that asked (a request) even when it does not.
        """
        force, self.force_context = self.force_context, False
        if not (force or self.subscribed):
            return None
        last = self.last_sent
        if not force and (wire is last or wire == last):
            return None
        self.last_sent = wire
        return protocol.encode_context_update(wire)
