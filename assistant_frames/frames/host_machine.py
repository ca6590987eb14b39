"""The host side of the frame protocol as a sans-I/O state machine.

:class:`HostMachine` holds everything a host knows about one connection (its state, the
frame's context, the calls awaiting results) and applies the protocol's rules: what to
send on opening and closing, when to subscribe, which context replaces which, which
result settles which call, what a failed result means, and (``@assistant-ui/core``
0.3.35) which document of the frame is current: a new document replaces the old one's
context and fails its calls, a disposed provider fails every call until it sends a
context again, and a frame that reloaded is asked for its context with a fresh
``requestId``, its old document forgotten if nothing answers. It never awaits and calls
nothing back (but each pending call's ``wake``): feed it what arrived
(:meth:`HostMachine.receive`) and act on the event it returns; its commands return the
messages to send.
:class:`~assistant_frames.frames.AssistantFrameHost` is its anyio driver.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast

from ..calls import PendingCall, PendingCalls
from ..errors import (
    DocumentChanged,
    FrameDisconnected,
    ProviderDisposed,
    ToolCallError,
    ToolCallTimeout,
    error_from_wire,
)
from ..registry.context import ModelContext
from ..registry.events import ToolEvent, ToolEventCallback
from ..registry.tool import Tool
from ..registry.tool_map import ToolMap
from . import protocol
from .protocol import FastPatch, MalformedMessage, SerializedTool

if TYPE_CHECKING:  # the models load on the first message off the fast paths
    from .protocol import ModelContextPatch, ToolResult

__all__ = [
    "EMPTY_CONTEXT",
    "FRAME_LOADED",
    "CallEvent",
    "CallFailed",
    "ContextChanged",
    "HostEvent",
    "HostMachine",
    "HostState",
    "MakeTool",
    "Malformed",
    "Send",
    "is_frame_loaded",
]

HostState = Literal["new", "connected", "disconnected", "closed"]
MakeTool = Callable[[str, SerializedTool], Tool]
"""Builds the local stand-in for a frame's tool (its ``execute`` calls across)."""

EMPTY_CONTEXT = ModelContext()
_NO_SENDS: tuple[()] = ()
_SAMPLES = 3  # ignored messages kept for diagnosis
_MAX_OLD_DOCUMENTS = 64  # earlier documents whose stray messages are still recognised

#: What the assistant-frames parent relay sends a Python host over its WebSocket when
#: the browser frame it embeds (re)loads: the host then does what the JS host's
#: ``frameLoaded()`` does (:meth:`HostMachine.frame_loaded`).
FRAME_LOADED: dict[str, Any] = {
    "channel": "assistant-frames-relay",
    "message": {"type": "frame-loaded"},
}


def is_frame_loaded(raw: Any) -> bool:
    """Whether ``raw`` is the relay's :data:`FRAME_LOADED` notice."""
    return (
        type(raw) is dict
        and raw.get("channel") == "assistant-frames-relay"
        and isinstance(raw.get("message"), dict)
        and raw["message"].get("type") == "frame-loaded"
    )


@dataclass(slots=True, eq=False)
class CallFailed:
    """Not a wire message: a routing transport's word that one call failed on the way.

    A transport that routes calls through a broker (NATS) hands this to the host as a
    received value when a call cannot reach any frame, or when the frame running it is
    lost; the call ends with ``error`` (a fresh copy per caller), the connection stays.
    """

    id: str
    error: ToolCallError


@dataclass(slots=True, eq=False)
class ContextChanged:
    """The frame's context changed: send ``sends`` (if any) first, then tell subscribers."""

    sends: tuple[dict[str, Any], ...] = ()


@dataclass(slots=True, eq=False)
class Send:
    """Nothing changed for subscribers; send ``sends`` (never waiting on the receiver)."""

    sends: tuple[dict[str, Any], ...]


@dataclass(slots=True, eq=False)
class CallEvent:
    """A pending call's progress or log ``event``: hand it to the call's ``on_event``
    (``None``: the caller did not ask) and to whoever follows every call's events."""

    event: ToolEvent
    on_event: ToolEventCallback | None
    sends: tuple[dict[str, Any], ...] = field(default=_NO_SENDS, init=False)


@dataclass(slots=True, eq=False)
class Malformed:
    """A message on the frame channel that does not validate, or a context that cannot be
    used (the last good one is kept): dropped. ``first``: the connection's first (log it
    louder)."""

    reason: str
    first: bool
    sends: tuple[dict[str, Any], ...] = field(default=_NO_SENDS, init=False)


HostEvent = ContextChanged | Send | CallEvent | Malformed


class HostMachine:
    """The rules of one host-to-frame connection, without I/O.

    ``make_tool(name, spec)`` builds the :class:`Tool` that stands for a frame's tool.
    Calls are tracked by :attr:`calls` (ids start with ``id_prefix``).
    """

    __slots__ = (
        "_load_document",
        "_make_tool",
        "_own_specs",
        "calls",
        "context",
        "disconnected",
        "document",
        "frame",
        "ignored",
        "ignored_samples",
        "load_request",
        "load_timer",
        "malformed",
        "old_documents",
        "patch_seq",
        "refusal",
        "resyncing",
        "state",
        "subscribed",
        "wire",
    )

    def __init__(
        self, make_tool: MakeTool, *, id_prefix: str = "tool-", frame: str | None = None
    ) -> None:
        self._make_tool = make_tool
        #: The frame's name, set on the errors calls end with.
        self.frame = frame
        self.calls = PendingCalls(id_prefix)
        self.state: HostState = "new"
        self.context = EMPTY_CONTEXT
        #: The frame's last context as it came over the wire (``None``: none yet).
        self.wire: Mapping[str, Any] | None = None
        # The tools of ``wire`` once a patch made them: this machine's own dict, changed
        # in place by later patches (what came over the wire may be the frame's own).
        self._own_specs: dict[str, Any] | None = None
        self.subscribed = False
        #: The number of the context held, once subscribed with patches (``None``: not
        #: numbered); a patch applies only to the one before it.
        self.patch_seq: int | None = None
        self.resyncing = False  # asked for a snapshot: a patch did not fit
        self.malformed = 0  # messages dropped as malformed
        #: Messages that were not frame messages, or malformed ones, and the first few
        #: of them: what tells a peer that is not a frame from a silent one.
        self.ignored = 0
        self.ignored_samples: list[Any] = []
        self.disconnected: FrameDisconnected | None = None
        #: The frame's current document (0.3.35's ``documentId``; ``None``: not known),
        #: stamped on every ``tool-call``; messages of :attr:`old_documents` are ignored.
        self.document: str | None = None
        self.old_documents: dict[str, None] = {}  # insertion-ordered, bounded
        #: What new calls fail with until the frame's next context (its provider was
        #: disposed, or its document went), else ``None``.
        self.refusal: FrameDisconnected | None = None
        #: The ``requestId`` of the last :meth:`frame_loaded` request, and the one whose
        #: grace period runs (the driver calls :meth:`load_expired` when it ends).
        self.load_request: str | None = None
        self.load_timer: str | None = None
        self._load_document: str | None = None

    # -- opening and closing ---------------------------------------------------------------

    def open(self) -> dict[str, Any]:
        """The connection is up: the message to send first (a context request)."""
        if self.state != "new":
            raise RuntimeError(f"Cannot open a connection that is {self.state}")
        self.state = "connected"
        return protocol.encode_context_request()

    def close(self, error: FrameDisconnected) -> list[dict[str, Any]]:
        """The host closes: the messages to send (cancels, unsubscribe), best effort.

        Every pending call fails with ``error``; the context stays until
        :meth:`clear_context`.
        """
        if self.state == "closed":
            return []
        messages: list[dict[str, Any]] = []
        if self.state == "connected":
            messages = [protocol.encode_tool_cancel(call.id) for call in self.calls if call.sent]
            if self.subscribed:
                messages.append(protocol.encode_context_unsubscribe())
        self.state = "closed"
        self.calls.fail_all(error)
        return messages

    def connection_lost(self, error: FrameDisconnected) -> bool:
        """The transport ended: fail every call with ``error``; False if already ended."""
        if self.state != "connected":
            return False
        self.state = "disconnected"
        self.disconnected = error
        self.calls.fail_all(error)
        return True

    def clear_context(self) -> bool:
        """Forget the frame's context; whether there was one (subscribers must hear)."""
        had_context = self.wire is not None
        self.wire = None
        self.context = EMPTY_CONTEXT
        return had_context

    # -- calls -----------------------------------------------------------------------------

    def start_call(
        self,
        name: str,
        args: Any,
        *,
        call_id: str | None = None,
        deadline: float | None = None,
        wake: Callable[[], None],
        on_event: ToolEventCallback | None = None,
        events: bool = False,
    ) -> tuple[PendingCall, dict[str, Any]]:
        """Track a new call; returns it and the ``tool-call`` to send.

        The call asks for progress and log messages when ``on_event`` or ``events``
        (someone follows every call's events) will take them, and is addressed to the
        frame's current document. While the frame refuses calls (:attr:`refusal`) it
        raises that error.
        """
        if self.refusal is not None:
            refused = copy.copy(self.refusal)
            refused.tool_name, refused.frame = name, self.frame
            raise refused
        call = self.calls.add(name, call_id=call_id, deadline=deadline, wake=wake)
        if on_event is None and not events:
            return call, protocol.encode_tool_call(call.id, name, args, document_id=self.document)
        call.on_event = on_event
        return call, protocol.encode_tool_call(
            call.id, name, args, events=True, document_id=self.document
        )

    def abandon(self, call: PendingCall) -> dict[str, Any] | None:
        """The caller gave up on ``call``: the ``tool-cancel`` to send, if one must go."""
        self.calls.discard(call.id)
        if call.sent and self.state == "connected" and (call.timed_out or not call.settled):
            return protocol.encode_tool_cancel(call.id)
        return None

    def outcome(self, call: PendingCall, timeout: float | None) -> Any:
        """A settled call's value, or the typed error it ended with."""
        error = call.error
        if error is None:
            if call.timed_out:
                raise ToolCallTimeout(
                    call.name, timeout or 0.0, tool_call_id=call.id, frame=self.frame
                )
            return call.result
        if isinstance(error, str):
            failure = error_from_wire(error, call.name, call.id)
        else:
            failure = copy.copy(error)  # a fresh exception per caller, same details
            if isinstance(failure, ToolCallError):
                failure.tool_name, failure.tool_call_id = call.name, call.id
        if isinstance(failure, ToolCallError):
            failure.frame = self.frame
        raise failure

    # -- receiving -------------------------------------------------------------------------

    def settle_result(self, raw: Any) -> bool:
        """Settle the call ``raw`` answers when it is a plain ``tool-result`` of this
        document (waking its caller), and say so; ``False`` for anything else, which
        :meth:`receive` then looks at. Touches nothing but the call."""
        fast = protocol.fast_tool_result(raw)
        if fast is None:
            return False
        call_id, result, error, document = fast
        if document is not None and document != self.document:
            return False
        self.calls.resolve(call_id, result, error if isinstance(error, str) else None)
        return True

    def receive(self, raw: Any) -> HostEvent | None:
        """Apply one received value; the event for the driver, or ``None`` (nothing to do).

        Results settle their calls (waking their callers); results for unknown ids are
        ignored, and so is anything from an earlier document. The events:
        :class:`ContextChanged` (tell subscribers), :class:`Send` (the subscribe that
        follows the first context, the cancels of calls a disposed provider dropped, a
        repeated load request), :class:`CallEvent` and :class:`Malformed`.
        """
        if type(raw) is CallFailed:
            self.calls.resolve(raw.id, None, raw.error)
            return None
        if self.settle_result(raw):
            return None
        message: Any = protocol.fast_frame_message(raw)
        if message is None:
            try:
                message = protocol.decode(raw)
            except MalformedMessage as exc:
                self._ignore(raw)
                return self._malformed(exc.reason)
        if message is None:
            if is_frame_loaded(raw):
                return Send(self.frame_loaded())
            self._ignore(raw)
            return None
        kind: str = message.type
        document = message.document_id
        update = kind == "model-context-update" or kind == "model-context-response"
        sends: tuple[dict[str, Any], ...] = _NO_SENDS
        if self.load_request is not None and update:
            if message.request_id == self.load_request:
                self.old_documents.pop(document, None)
            elif document is not None and document == self._load_document:
                # The old document still speaks: the request may have reached it rather
                # than the new one. Ask again (as the JS host does).
                sends = (protocol.encode_context_request(request_id=self.load_request),)
        if document is not None and document in self.old_documents:
            return Send(sends) if sends else None
        if self.load_request is not None and (
            (update and message.request_id == self.load_request)
            or (document is not None and document != self._load_document)
            or (update and document is None)
        ):
            self.load_request = self.load_timer = None  # answered: the grace period ends
        changed = False
        if document is not None and document != self.document:
            if self.document is None:  # the first one known: calls sent without one stand
                self.document = document
            else:
                changed = self._replace_document(document)
        if kind == "tool-result":
            result = cast("ToolResult", message)
            error = result.error
            self.calls.resolve(result.id, result.value(), error if isinstance(error, str) else None)
        elif update:
            seq = message.seq if kind == "model-context-update" else None
            try:
                changed |= self._apply(message.context)
            except ValueError as exc:
                self.patch_seq = None  # what follows cannot apply to a context not held
                malformed = self._malformed(f"unusable context, kept the last good one: {exc}")
                return ContextChanged(sends) if changed else malformed  # a document went
            if seq is not None:
                self.patch_seq, self.resyncing = seq, False
            self.refusal = None
            if not self.subscribed and self.state == "connected":
                self.subscribed = True
                self.patch_seq = 0  # the context held; a frame that patches counts from it
                sends = (*sends, protocol.encode_context_subscribe(patches=True))
        elif kind == "model-context-patch":
            patch = cast("ModelContextPatch | FastPatch", message)
            held = self.patch_seq
            if held is None or self.wire is None or patch.seq != held + 1:
                if self.resyncing or self.state != "connected":
                    return Send(sends) if sends else None
                self.resyncing, self.patch_seq = True, None
                return Send((*sends, protocol.encode_context_request()))
            try:
                self._apply_patch(patch)
            except ValueError as exc:
                self.patch_seq = None
                return self._malformed(f"unusable context patch, kept the last good one: {exc}")
            self.patch_seq = patch.seq
            changed = True
        elif kind == "provider-disposed":
            sends += self._provider_disposed()
        elif kind == "tool-progress" or kind == "tool-log":
            call = self.calls.get(message.id)
            if call is not None:  # else finished, or never ours: ignored like a result
                return CallEvent(message.event(call.id, call.name), call.on_event)
        # (host -> frame types arriving at a host are not for us: nothing to do)
        if changed:
            return ContextChanged(sends)
        return Send(sends) if sends else None

    def _malformed(self, reason: str) -> Malformed:
        self.malformed += 1
        return Malformed(reason, self.malformed == 1)

    # -- documents (0.3.35) ----------------------------------------------------------------

    def frame_loaded(self, request_id: str | None = None) -> tuple[dict[str, Any], ...]:
        """The frame (re)loaded, as far as its relay knows: the JS host's ``frameLoaded()``.

        Returns the ``model-context-request`` carrying ``request_id`` (a fresh random one
        when ``None``) to send, and starts its grace period (:attr:`load_timer`): unless an
        answer, a context from another document or one without a document comes first,
        :meth:`load_expired` forgets the current document.
        """
        if self.state != "connected":
            return _NO_SENDS
        if request_id is None:
            request_id = os.urandom(16).hex()
        self.load_request = self.load_timer = request_id
        self._load_document = self.document
        return (protocol.encode_context_request(request_id=request_id),)

    def load_expired(self, request_id: str) -> bool:
        """The grace period of :meth:`frame_loaded`'s ``request_id`` ended. If nothing
        answered, the old document is gone: its context and calls with it. Whether the
        context changed (tell subscribers)."""
        if self.load_timer != request_id:
            return False  # answered, or a newer load took over
        self.load_timer = None
        if self.document is not None:
            self._remember(self.document)
        self.document = None
        return self._clear_document()

    def _replace_document(self, document: str) -> bool:
        """A message from another document: the frame has a new one."""
        assert self.document is not None
        self._remember(self.document)
        self.document = document
        return self._clear_document()

    def _remember(self, document: str) -> None:
        old = self.old_documents
        old[document] = None
        if len(old) > _MAX_OLD_DOCUMENTS:
            del old[next(iter(old))]

    def _clear_document(self) -> bool:
        """The current document went: its context, its calls (failed at once), and new
        calls until its successor's context. Whether there was a context to clear."""
        self.refusal = DocumentChanged(frame=self.frame)
        self.calls.fail_all(self.refusal)
        # Its successor is subscribed afresh (and asked for patches) after its context.
        self.subscribed, self.patch_seq, self.resyncing = False, None, False
        return self.clear_context()

    def _provider_disposed(self) -> tuple[dict[str, Any], ...]:
        """``provider-disposed``: every pending call fails (a cancel goes to each, as
        from the JS host), and new ones until the next context."""
        self.refusal = ProviderDisposed(frame=self.frame)
        cancels = tuple(protocol.encode_tool_cancel(call.id) for call in self.calls if call.sent)
        self.calls.fail_all(self.refusal)
        return cancels

    def _ignore(self, raw: Any) -> None:
        self.ignored += 1
        if len(self.ignored_samples) < _SAMPLES:
            self.ignored_samples.append(raw)

    def _apply(self, wire: Mapping[str, Any]) -> bool:
        """Take ``wire`` as the frame's context; whether it changed. ``ValueError`` (the
        last good context kept) when it cannot be used."""
        self.context, changed = self._build_context(wire)
        self.wire = wire
        return changed

    def _apply_patch(self, patch: ModelContextPatch | FastPatch) -> None:
        """Apply ``patch`` to the context held (its successor); ``ValueError`` (nothing
        changed) when a part of it cannot be used. Only what changed is built."""
        held = self.context
        wire = dict(self.wire or {})
        changes = patch.context
        system = held.system
        if "system" in changes:
            system = wire["system"] = changes.get("system")
        ui_resources = held.ui_resources
        if "uiResources" in changes:
            ui_wire = changes.get("uiResources")
            ui_resources = protocol.decode_ui_resources(ui_wire)
            wire["uiResources"] = ui_wire
        tools = held.tools
        specs = protocol.check_tools(changes.get("tools"))
        if specs or patch.removed:
            make_tool = self._make_tool
            put = {
                name: make_tool(name, protocol.check_tool(name, spec))
                for name, spec in specs.items()
            }
            # A map that knows its steps: who namespaces it follows only what changed.
            tools = ToolMap.derived(tools, tuple(patch.removed), put)
            if patch.order is not None:
                tools = _reordered(tools, patch.order)
            # Nothing raises from here on: the specs can change in place, once they are
            # this machine's own (a copy of the first that came over the wire). They are
            # looked up and compared as a whole, never walked in order: a new order is
            # the tools' alone.
            tool_specs: dict[str, Any] = wire.get("tools") or {}
            if tool_specs is not self._own_specs:
                tool_specs = dict(tool_specs)
            for name in patch.removed:
                tool_specs.pop(name, None)
            tool_specs.update(specs)
            wire["tools"] = self._own_specs = tool_specs
        self.context = ModelContext(system=system, tools=tools, ui_resources=ui_resources)
        self.wire = wire

    def _build_context(self, wire: Mapping[str, Any]) -> tuple[ModelContext, bool]:
        """The context for ``wire``, reusing unchanged tools; and whether anything changed.

        One pass over the tools: a frame may hold thousands, and every change resends all.
        """
        previous = self.wire or {}
        previous_tools = self.context.tools
        previous_specs = previous.get("tools") or {}
        specs = protocol.check_tools(wire.get("tools"))
        system = wire.get("system")  # a string or None: decoding checked it
        system_changed = self.wire is None or system != previous.get("system")
        ui_wire = wire.get("uiResources")  # MCP Apps' resources: rare, and few
        resources_changed = self.wire is None or ui_wire != previous.get("uiResources")
        ui_resources = (
            protocol.decode_ui_resources(ui_wire)
            if resources_changed
            else self.context.ui_resources
        )
        if self.wire is not None and specs == previous_specs:  # one C-level pass
            if not system_changed and not resources_changed:
                return self.context, False
            return ModelContext(
                system=system, tools=previous_tools, ui_resources=ui_resources
            ), True
        changed = system_changed or resources_changed or len(specs) != len(previous_specs)
        tools = ToolMap()
        make_tool = self._make_tool
        for name, spec in specs.items():
            old = previous_tools.get(name)
            if old is not None and previous_specs.get(name) == spec:
                tools[name] = old  # unchanged: keep the same object
            else:
                tools[name] = make_tool(name, protocol.check_tool(name, spec))
                changed = True
        return ModelContext(system=system, tools=tools, ui_resources=ui_resources), changed


def _reordered(tools: ToolMap, order: list[str]) -> ToolMap:
    """``tools`` in ``order``; ``ValueError`` unless ``order`` names each of them once.

    Built at C speed: a name ``tools`` lacks fails the lookup, and a name given twice
    leaves the map shorter than ``order``.
    """
    ordered = None
    if len(order) == len(tools):
        with suppress(KeyError):
            ordered = ToolMap(zip(order, map(tools.__getitem__, order), strict=True))
    if ordered is None or len(ordered) != len(order):
        raise ValueError("its order does not name every tool once")
    return ordered
