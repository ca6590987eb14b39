"""The frame side of the frame protocol as a sans-I/O state machine.

:class:`FrameMachine` holds what a frame knows about one connected host (is it
subscribed, was a context asked for, what was last sent, which calls are live) and
applies the protocol's rules: a request or a subscribe subscribes, a reused live id
cancels the older call, a cancelled call sends no result, a malformed call with an id is
answered, a call addressed to another document is refused, everything sent carries the
frame's document id, and a request's id is echoed. It never awaits: feed it what arrived
(:meth:`FrameMachine.receive`), act on the event it returns.
:class:`~assistant_frames.frames.AssistantFrameProvider` is its anyio driver.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from . import protocol
from .protocol import MalformedMessage, SerializedModelContext
from .serialization import context_changes

if TYPE_CHECKING:  # the message models: read from protocol when a message needs them
    from .protocol import ModelContextRequest, ModelContextSubscribe, ToolCall, ToolCancel
    from .wire_tools import WireTools

__all__ = [
    "CallCancelled",
    "CallRequested",
    "ContextWanted",
    "FrameEvent",
    "FrameMachine",
    "Malformed",
    "Refused",
]

H = TypeVar("H")

# Events, like the other machines' but not frozen: built per message on the call path,
# where a frozen dataclass's __init__ costs four times as much. Compared by identity.


@dataclass(slots=True, eq=False)
class CallRequested(Generic[H]):
    """A ``tool-call`` arrived: run it (and :meth:`FrameMachine.track` it).

    ``superseded`` is the live call that reused the same id, already forgotten: cancel it.
    ``events`` is True when the host asked for the call's progress and log messages.
    """

    id: str
    tool_name: str
    args: Any
    superseded: H | None
    events: bool


@dataclass(slots=True, eq=False)
class CallCancelled(Generic[H]):
    """A ``tool-cancel`` for a live call arrived: cancel ``handle``; send no result."""

    handle: H


@dataclass(slots=True, eq=False)
class ContextWanted:
    """The host asked for the context or subscribed: the context pusher should look."""


@dataclass(slots=True, eq=False)
class Malformed:
    """A message on the frame channel that does not validate.

    ``reply`` is the error ``tool-result`` to send for a malformed call that has an id;
    ``first`` is True for the connection's first one (log it louder).
    """

    reason: str
    reply: dict[str, Any] | None
    first: bool


@dataclass(slots=True, eq=False)
class Refused:
    """A ``tool-call`` the frame will not run (addressed to another document): send
    ``reply``, its error ``tool-result``."""

    reply: dict[str, Any]


FrameEvent = CallRequested[Any] | CallCancelled[Any] | ContextWanted | Malformed | Refused
_CONTEXT_WANTED = ContextWanted()


class FrameMachine(Generic[H]):
    """The rules of one frame-to-host connection, without I/O.

    ``H`` is whatever the driver uses to run a call (it hands it to :meth:`track`); the
    machine keeps the live ones in :attr:`calls` by id. ``document_id`` is the frame's
    document (``@assistant-ui/core`` 0.3.35: one per provider session), stamped on every
    message the machine builds; ``None`` sends none, as 0.3.20 frames did.
    """

    __slots__ = (
        "calls",
        "document_id",
        "force_context",
        "last_sent",
        "last_version",
        "malformed",
        "patches",
        "request_id",
        "seq",
        "subscribed",
    )

    def __init__(self, document_id: str | None = None) -> None:
        self.document_id = document_id
        self.calls: dict[str, H] = {}
        self.subscribed = False
        self.force_context = False  # a request waits for an answer, changed or not
        self.request_id: str | None = None  # the id that answer echoes, if the request had one
        self.last_sent: SerializedModelContext | None = None
        #: The version of the frame's :class:`~.wire_tools.WireTools` last sent (``None``:
        #: none, or contexts given without one).
        self.last_version: int | None = None
        self.malformed = 0
        #: The host asked for changes as patches (``model-context-subscribe`` with
        #: ``patches: true``); :attr:`seq` numbers what it was sent since.
        self.patches = False
        self.seq = 0

    # -- receiving -------------------------------------------------------------------------

    def receive(self, raw: Any) -> FrameEvent | None:
        """Apply one received value; the event for the driver, or ``None`` (nothing to do)."""
        fast = protocol.fast_tool_call(raw)
        if fast is not None:
            call_id, name, args, events, document = fast
            if document is not None and document != self.document_id:
                return self._refuse(call_id)
            return CallRequested(call_id, name, args, self.calls.pop(call_id, None), events)
        control = protocol.fast_host_message(raw)
        if control is not None:
            return self._control(*control)
        try:  # not on a fast path: the message models (and Pydantic) decide
            message = protocol.decode(raw)
        except MalformedMessage as exc:
            self.malformed += 1
            reply = None
            if exc.tool_call_id is not None:
                reply = protocol.encode_tool_error(
                    exc.tool_call_id,
                    f"Malformed tool-call: {exc.reason}",
                    document_id=self.document_id,
                )
            return Malformed(exc.reason, reply, self.malformed == 1)
        if message is None:
            return None
        kind = type(message)
        if kind is protocol.ToolCall:
            call = cast("ToolCall", message)
            if call.document_id is not None and call.document_id != self.document_id:
                return self._refuse(call.id)
            return CallRequested(
                call.id, call.tool_name, call.args, self.calls.pop(call.id, None), call.wants_events
            )
        if kind is protocol.ToolCancel:
            return self._control("tool-cancel", cast("ToolCancel", message).id)
        if kind is protocol.ModelContextRequest:
            request_id = cast("ModelContextRequest", message).request_id
            return self._control("model-context-request", request_id)
        if kind is protocol.ModelContextSubscribe:
            patches = cast("ModelContextSubscribe", message).wants_patches
            return self._control("model-context-subscribe", patches)
        if kind is protocol.ModelContextUnsubscribe:
            return self._control("model-context-unsubscribe", None)
        return None  # frame -> host types arriving at a frame: not for us

    def _control(self, kind: str, value: Any) -> FrameEvent | None:
        """Apply a host's context message or ``tool-cancel`` (see
        :func:`~.protocol.fast_host_message`, whose ``(type, value)`` this takes)."""
        if kind == "tool-cancel":
            handle = self.calls.pop(value, None)
            return None if handle is None else CallCancelled(handle)
        if kind == "model-context-request":
            self.subscribed = True
            self.force_context = True  # answered even if nothing changed
            if value is not None:  # a later request without an id still echoes this one
                self.request_id = value
            return _CONTEXT_WANTED
        if kind == "model-context-subscribe":
            self.subscribed = True
            if value and not self.patches:
                self.patches = True  # the next patch follows from what was last sent
                self.seq = 0
            return _CONTEXT_WANTED
        self.subscribed = self.patches = False  # model-context-unsubscribe
        return None

    def _refuse(self, call_id: str) -> Refused:
        """A call for another document (the host knew an earlier one): not run, as in
        the JS frame; a live call with the same id is left alone."""
        return Refused(
            protocol.encode_tool_error(
                call_id, protocol.DOCUMENT_CHANGED, document_id=self.document_id
            )
        )

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

    def context_update(
        self, wire: SerializedModelContext, tools: WireTools | None = None
    ) -> dict[str, Any] | None:
        """The context message to send for ``wire``, or ``None``.

        Sent to a subscribed host when it differs from what was last sent, and to a host
        that asked (a request) even when it does not: a ``model-context-update``, or to a
        host that asked for patches, a ``model-context-patch`` of what changed (answers
        to requests stay whole, numbered). ``tools`` is the frame's
        :class:`~.wire_tools.WireTools` when ``wire``'s tools are its live dict (changed
        in place later): patches are then made from its versions, and whole contexts
        carry its snapshot.
        """
        force, self.force_context = self.force_context, False
        if not (force or self.subscribed):
            return None
        last = self.last_sent
        version = None if tools is None else tools.version
        if self.patches and not force and last is not None:
            if wire is last and version == self.last_version:
                return None
            known = None
            if tools is not None and self.last_version is not None:
                known = tools.changes_since(self.last_version)
            if tools is None or known is not None:
                changes = context_changes(last, wire, known)
                self.last_sent, self.last_version = wire, version
                if changes is None:
                    return None
                self.seq += 1
                return protocol.encode_context_patch(
                    self.seq, changes, document_id=self.document_id
                )
            # Too far behind for the versions remembered: sent whole, numbered.
        if tools is not None and wire.get("tools") is tools.live:
            wire = {**wire, "tools": tools.snapshot()}
        if not force and last is not None and self._unchanged(last, wire, version):
            return None
        self.last_sent, self.last_version = wire, version
        request_id, self.request_id = self.request_id, None
        seq = None
        if self.patches:
            self.seq += 1
            seq = self.seq
        return protocol.encode_context_update(
            wire, document_id=self.document_id, request_id=request_id, seq=seq
        )

    def _unchanged(
        self, last: SerializedModelContext, wire: SerializedModelContext, version: int | None
    ) -> bool:
        """Whether ``wire`` (whole) is what was last sent. With versioned tools, the
        tools' version tells (``last``'s may be a live dict that has moved on since)."""
        if version is None:
            return wire is last or wire == last
        return (
            version == self.last_version
            and wire.get("system") == last.get("system")
            and wire.get("uiResources") == last.get("uiResources")
        )

    # -- stopping --------------------------------------------------------------------------

    def dispose(self) -> tuple[list[H], list[dict[str, Any]]]:
        """The frame stops serving a connection that is still open, as the JS
        ``AssistantFrameProvider.dispose()`` does.

        Returns the live calls (cancel them) and the messages to send: an empty context
        (when the host has a context from us), an error ``tool-result`` for each live
        call, and ``provider-disposed``. The calls are forgotten.
        """
        handles = list(self.calls.values())
        messages: list[dict[str, Any]] = []
        if self.last_sent:  # the host shows our tools: take them away
            self.last_sent, self.last_version = {}, None
            messages.append(protocol.encode_context_update({}, document_id=self.document_id))
        messages.extend(
            protocol.encode_tool_error(
                call_id, protocol.PROVIDER_DISPOSED, document_id=self.document_id
            )
            for call_id in self.calls
        )
        self.calls.clear()
        messages.append(protocol.encode_provider_disposed(self.document_id))
        return handles, messages
