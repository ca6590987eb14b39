"""The host side of one MCP Apps view connection as a sans-I/O state machine.

:class:`BridgeMachine` applies the rules of the ext-apps ``AppBridge`` without awaiting
anything: it answers ``ui/initialize``, holds what the host sends until the view says
it is initialized, keeps the host context and tells the view only what changed, admits
the view's requests (at most ``max_requests`` in flight, no id reused while in flight),
and correlates the answers to its own requests through
:class:`~assistant_frames.calls.PendingCalls`. Feed it what arrived
(:meth:`BridgeMachine.receive`) and act on the event it returns; requests that need the
host's decision (``ui/message``, ``tools/call``...) come back to the driver, unanswered.
It never awaits and calls nothing back (but each pending call's ``wake``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import mcp_types as mcp
from mcp_types.jsonrpc import INTERNAL_ERROR
from pydantic import BaseModel

from ..calls import PendingCall, PendingCalls
from . import protocol
from .display import as_host_context
from .protocol import (
    HostCapabilities,
    HostContext,
    InitializeParams,
    Notification,
    ProtocolError,
    Request,
)

__all__ = [
    "BridgeEvent",
    "BridgeMachine",
    "BridgeState",
    "Initialized",
    "NotificationReceived",
    "RequestReceived",
    "Send",
    "Settled",
]

BridgeState = Literal["new", "initializing", "initialized"]
"""``new``: no ``ui/initialize`` yet; ``initializing``: answered, awaiting the view's
``initialized``; ``initialized``: what the host sends goes out at once."""

_SAMPLES = 3  # ignored messages kept for diagnosis


def _nothing() -> None:
    pass


# -- the events ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Send:
    """Send ``messages`` (an answer the machine gave itself: ``ui/initialize``'s, an error
    for a malformed request, a refusal)."""

    messages: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Initialized:
    """The view said it is initialized: send ``messages`` (what was held for it) first."""

    messages: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class RequestReceived:
    """A view request the host answers itself (:meth:`BridgeMachine.answer`,
    :meth:`~BridgeMachine.fail`); it holds a place in flight until
    :meth:`BridgeMachine.finished`."""

    request: Request


@dataclass(frozen=True, slots=True)
class NotificationReceived:
    """A view notification for the driver (``size-changed``, ``request-teardown``, logs,
    cancellations...)."""

    notification: Notification


@dataclass(frozen=True, slots=True)
class Settled:
    """One of our requests got its answer (its ``wake`` was called)."""

    call: PendingCall


BridgeEvent = Send | Initialized | RequestReceived | NotificationReceived | Settled


class BridgeMachine:
    """The rules of one host-to-view connection, without I/O.

    ``host_info``, ``host_capabilities`` and ``host_context`` are what the
    ``ui/initialize`` answer tells the view. Our requests are tracked by :attr:`calls`
    (ids start with ``id_prefix``).
    """

    __slots__ = (
        "_input_sent",
        "_queue",
        "_running",
        "app_capabilities",
        "app_info",
        "calls",
        "host_capabilities",
        "host_context",
        "host_info",
        "ignored",
        "ignored_samples",
        "initializations",
        "malformed",
        "on_initialize",
        "protocol_version",
        "state",
    )

    def __init__(
        self,
        host_info: mcp.Implementation,
        *,
        host_capabilities: HostCapabilities | None = None,
        host_context: HostContext | None = None,
        id_prefix: str = "host-",
        max_requests: int = 64,
    ) -> None:
        self.host_info = host_info
        self.host_capabilities = host_capabilities or HostCapabilities()
        self.host_context = host_context or HostContext()
        self.calls = PendingCalls(id_prefix)
        self.state: BridgeState = "new"
        #: The view's ``ui/initialize`` params (``None``: not initialized yet).
        self.app_info: mcp.Implementation | None = None
        self.app_capabilities: protocol.AppCapabilities | None = None
        #: The version agreed on in the last ``ui/initialize`` answer.
        self.protocol_version: str | None = None
        #: ``ui/initialize`` requests answered; more than one is tolerated, worth a log.
        self.initializations = 0
        self.malformed = 0  # messages answered or dropped as malformed
        #: Messages dropped without an answer (unknown response ids, host-only
        #: notifications, ``initialized`` before ``initialize``...), the first few kept.
        self.ignored = 0
        self.ignored_samples: list[Any] = []
        self._queue: list[dict[str, Any]] = []
        self._input_sent = False
        self._running = protocol.InFlight(max_requests)  # the view's requests in flight
        #: Called with the view's ``ui/initialize`` params before it is answered; a
        #: host context it returns replaces :attr:`host_context` (display modes that
        #: depend on what the view declared...).
        self.on_initialize: Callable[[InitializeParams], HostContext | None] | None = None

    # -- receiving -------------------------------------------------------------------------

    def receive(self, raw: object) -> BridgeEvent | None:
        """Apply one received message; the event for the driver, or ``None`` when there is
        nothing to do (a message dropped). Never raises for bad input."""
        try:
            message = protocol.decode(raw)
        except ProtocolError as exc:
            self.malformed += 1
            if isinstance(raw, dict) and "method" not in raw:
                # A bad response is never answered: two peers doing so would bounce errors
                # back and forth for ever (JSON-RPC answers requests only). One that
                # answers a request of ours fails it now, rather than at its deadline.
                known = exc.request_id
                call = self.calls.get(known) if isinstance(known, str) else None
                if call is None:
                    return None
                self.calls.resolve(call.id, error=exc)
                return Settled(call)
            answer = exc.to_wire()
            return None if answer is None else Send([answer])
        if isinstance(message, Request):
            return self._request(message)
        if isinstance(message, Notification):
            return self._notification(message, raw)
        return self._response(message, raw)

    def _request(self, request: Request) -> BridgeEvent:
        if request.method == protocol.INITIALIZE:
            return Send([self._initialize(request)])
        if protocol.METHODS[request.method].sender == "host":  # ours to send, not the view's
            self.malformed += 1
            reason = f"Method not found: {request.method} (not sent by a view)"
            return Send([protocol.encode_error(request.id, protocol.METHOD_NOT_FOUND, reason)])
        return self.admit(request)

    def admit(self, request: Request) -> RequestReceived | Send:
        """Give ``request`` a place in flight, or refuse it (the cap, an id in flight).

        :meth:`receive` admits the view's MCP Apps requests itself; a driver admits the
        requests of its own extensions, which the machine does not know, with this.
        """
        reason = self._running.admit(request.id)
        if reason is None:
            return RequestReceived(request)
        return Send([protocol.encode_error(request.id, protocol.REFUSED, reason)])

    def answer(
        self, request_id: protocol.RequestId, result: BaseModel | Mapping[str, Any]
    ) -> dict[str, Any]:
        """The answer to the view's request ``request_id``."""
        return protocol.encode_result(request_id, result)

    def fail(self, request_id: protocol.RequestId, exc: Exception) -> dict[str, Any]:
        """The error answer to ``request_id`` for ``exc``: a
        :class:`~.protocol.ProtocolError` with its own code, anything else (a host handler
        that failed) as an internal error saying why."""
        if isinstance(exc, ProtocolError):
            return protocol.encode_error(request_id, exc.jsonrpc_code, exc.message)
        return protocol.encode_error(request_id, INTERNAL_ERROR, str(exc) or type(exc).__name__)

    @property
    def max_requests(self) -> int:
        """The bound on the peer's requests in flight."""
        return self._running.limit

    def finished(self, request_id: protocol.RequestId) -> None:
        """The view's request ``request_id`` is answered (or given up): its place frees."""
        self._running.finished(request_id)

    @property
    def in_flight(self) -> int:
        """How many of the view's requests hold a place (admitted, not finished)."""
        return len(self._running)

    def _initialize(self, request: Request) -> dict[str, Any]:
        params: InitializeParams = request.params
        self.initializations += 1
        self.app_info = params.app_info
        self.app_capabilities = params.app_capabilities
        version = params.protocol_version
        if version not in protocol.SUPPORTED_PROTOCOL_VERSIONS:
            version = protocol.PROTOCOL_VERSION
        self.protocol_version = version
        if self.on_initialize is not None:
            self.host_context = self.on_initialize(params) or self.host_context
        if self.state == "new":
            self.state = "initializing"
        result = protocol.InitializeResult(
            protocol_version=version,
            host_info=self.host_info,
            host_capabilities=self.host_capabilities,
            host_context=self.host_context,
        )
        return protocol.encode_result(request.id, result)

    def _notification(self, note: Notification, raw: object) -> BridgeEvent | None:
        if note.method == protocol.INITIALIZED:
            if self.state == "new":  # initialized before initialize: the view broke order
                self._ignore(raw)
            elif self.state == "initializing":
                self.state = "initialized"
                held, self._queue = self._queue, []
                return Initialized(held)
            return None
        if protocol.METHODS[note.method].sender == "host":
            self._ignore(raw)
            return None
        return NotificationReceived(note)

    def _response(
        self, message: protocol.Response | protocol.ErrorResponse, raw: object
    ) -> Settled | None:
        call = self.calls.get(message.id) if isinstance(message.id, str) else None
        if call is None:
            self._ignore(raw)
            return None
        if isinstance(message, protocol.ErrorResponse):
            if (
                message.code == protocol.METHOD_NOT_FOUND
                and call.name == protocol.RESOURCE_TEARDOWN
            ):
                # A view without a teardown handler answers so: nothing to wait for.
                self.calls.resolve(call.id, {})
            else:
                self.calls.resolve(call.id, error=message)
        else:
            try:
                result = protocol.parse_result(call.name, message.result)
            except ProtocolError as exc:
                self.malformed += 1
                self.calls.resolve(call.id, error=exc)
            else:
                self.calls.resolve(call.id, result)
        return Settled(call)

    def _ignore(self, raw: object) -> None:
        self.ignored += 1
        if len(self.ignored_samples) < _SAMPLES:
            self.ignored_samples.append(raw)

    # -- sending ---------------------------------------------------------------------------

    def _emit(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        """``[message]`` once the view is initialized; queued (``[]``) before."""
        if self.state == "initialized":
            return [message]
        self._queue.append(message)
        return []

    @property
    def queued(self) -> int:
        """Messages held until the view is initialized."""
        return len(self._queue)

    def send_tool_input(self, arguments: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        """The tool call's complete arguments (``tool-input``)."""
        self._input_sent = True
        params = protocol.ToolInputParams(arguments=dict(arguments or {}))
        return self._emit(protocol.encode_notification(protocol.TOOL_INPUT, params))

    def send_tool_input_partial(self, arguments: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Arguments still streaming in (``tool-input-partial``).

        ``RuntimeError`` once the complete input went: a partial one after it would
        make the view show stale arguments.
        """
        if self._input_sent:
            raise RuntimeError("Cannot send partial tool input after the complete input")
        params = protocol.ToolInputParams(arguments=dict(arguments))
        return self._emit(protocol.encode_notification(protocol.TOOL_INPUT_PARTIAL, params))

    def send_tool_result(
        self, result: mcp.CallToolResult | Mapping[str, Any]
    ) -> list[dict[str, Any]]:
        """The tool call's result (``tool-result``); a mapping is validated first."""
        if not isinstance(result, mcp.CallToolResult):
            mcp.CallToolResult.model_validate(result)  # ValidationError: not a result
        return self._emit(protocol.encode_notification(protocol.TOOL_RESULT, result))

    def send_tool_cancelled(self, reason: str | None = None) -> list[dict[str, Any]]:
        """The tool call was cancelled (``tool-cancelled``), perhaps saying why."""
        params = protocol.ToolCancelledParams(reason=reason)
        return self._emit(protocol.encode_notification(protocol.TOOL_CANCELLED, params))

    def set_host_context(self, context: HostContext | Mapping[str, Any]) -> list[dict[str, Any]]:
        """Replace the host context; tell the view the keys whose values changed.

        Nothing is sent when nothing changed, nor before ``ui/initialize`` (its answer
        carries the whole context). A key that is dropped is not announced: the
        notification can only carry values, as in the ext-apps ``AppBridge``.
        """
        context = as_host_context(context)
        old, new = protocol.to_wire(self.host_context), protocol.to_wire(context)
        self.host_context = context
        changed = {key: value for key, value in new.items() if old.get(key) != value}
        if not changed or self.state == "new":
            return []
        return self._emit(protocol.encode_notification(protocol.HOST_CONTEXT_CHANGED, changed))

    def request_teardown(
        self, deadline: float | None = None, wake: Callable[[], None] | None = None
    ) -> tuple[list[dict[str, Any]], PendingCall]:
        """Ask the view to tear down (``ui/resource-teardown``): what to send, and the call.

        A ``-32601`` answer (a view without a teardown handler) settles the call as done.
        """
        return self.request(protocol.RESOURCE_TEARDOWN, {}, deadline=deadline, wake=wake)

    def request(
        self,
        method: str,
        params: BaseModel | Mapping[str, Any] | None = None,
        *,
        deadline: float | None = None,
        wake: Callable[[], None] | None = None,
    ) -> tuple[list[dict[str, Any]], PendingCall]:
        """A request of ours to the view (``tools/list``, ``tools/call``...), tracked.

        Returns what to send (``[]`` while queued) and the call, which settles with the
        typed result (:func:`~.protocol.parse_result`), an
        :class:`~.protocol.ErrorResponse` or a :class:`~.protocol.ProtocolError`.
        ``deadline`` is on the driver's clock (see :class:`PendingCalls`); ``wake`` is
        called once the call settles.
        """
        if method not in protocol.METHODS or protocol.METHODS[method].sender == "view":
            raise ValueError(f"{method!r} is not a request a host sends")
        call = self.calls.add(method, deadline=deadline, wake=wake or _nothing)
        return self._emit(protocol.encode_request(call.id, method, params)), call

    def notify(
        self, method: str, params: BaseModel | Mapping[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """A notification of ours to the view (list changes...): what to send, or queued."""
        return self._emit(protocol.encode_notification(method, params))

    # -- policy ----------------------------------------------------------------------------

    @staticmethod
    def may_call(tool: mcp.Tool | Mapping[str, Any] | None) -> bool:
        """True when a view may call the tool: ``"app"`` is in its visibility.

        ``tool`` is the tool or its ``_meta`` (``None``: no ``_meta``, visible to both).
        """
        meta = tool.meta if isinstance(tool, mcp.Tool) else tool
        return "app" in protocol.visibility(meta)
