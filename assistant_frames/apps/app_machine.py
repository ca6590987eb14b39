"""The view side of one MCP Apps connection as a sans-I/O state machine.

:class:`AppMachine` holds what a view knows about its host (the initialize result, the
host context merged change by change, the tool call it was opened for, the host's
requests in flight, its own requests awaiting answers) and applies the rules of
ext-apps' ``App``: what is malformed and how it is answered, which host requests are
admitted (at most ``max_requests`` in flight, no id reused while in flight), how a
host-context change merges (shallowly, bounded in keys), which answer settles which
request (through :class:`~assistant_frames.calls.PendingCalls`). It never awaits and
calls nothing back (but each pending call's ``wake``): feed it what arrived
(:meth:`AppMachine.receive`) and act on the event it returns; its commands return the
messages to send. :class:`~assistant_frames.apps.App` is its anyio driver.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

import mcp_types as mcp
from mcp_types.jsonrpc import INTERNAL_ERROR
from pydantic import BaseModel

from ..calls import PendingCall, PendingCalls
from . import protocol

__all__ = [
    "MAX_HOST_CONTEXT_KEYS",
    "AppEvent",
    "AppMachine",
    "CancelRequested",
    "Heard",
    "HeardKind",
    "HostError",
    "Rejected",
    "RequestReceived",
]

#: The keys of the host context a view keeps: the spec's 13, and room for a host's own.
MAX_HOST_CONTEXT_KEYS: Final = 256

HeardKind: TypeAlias = Literal[
    "tool_input", "tool_input_partial", "tool_result", "tool_cancelled", "host_context_changed"
]


# -- the events ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Rejected:
    """A message that could not be handled (counted in :attr:`AppMachine.rejected`):
    send ``reply`` if there is one (an error answer); ``first`` says to log it louder."""

    reason: str
    reply: dict[str, Any] | None
    first: bool


@dataclass(frozen=True, slots=True)
class RequestReceived:
    """A host request to answer: it holds a place in flight until
    :meth:`AppMachine.finished`; answer with :meth:`~AppMachine.answer` or
    :meth:`~AppMachine.fail` (or not at all, if the host cancelled it)."""

    request: protocol.Request


@dataclass(frozen=True, slots=True)
class Heard:
    """The host told the view something (``kind``), already applied to the machine's
    state; ``value`` is what the view's ``on_<kind>`` callback is given: the arguments,
    the ``CallToolResult``, the cancellation's reason, or the merged host context."""

    kind: HeardKind
    value: Any


@dataclass(frozen=True, slots=True)
class CancelRequested:
    """The host cancelled its request ``request_id`` (stop answering it, if it runs)."""

    request_id: protocol.RequestId


@dataclass(frozen=True, slots=True)
class HostError:
    """An error response without an id: the host reporting a failure of its own."""

    message: str
    first: bool


AppEvent: TypeAlias = Rejected | RequestReceived | Heard | CancelRequested | HostError


class AppMachine:
    """The rules of one view-to-host connection, without I/O.

    ``max_requests`` bounds the host's requests in flight; our own requests are tracked by
    :attr:`calls` (ids start with ``view-``).
    """

    __slots__ = (
        "_context_full",
        "_host_errors",
        "_running",
        "calls",
        "cancelled",
        "host_capabilities",
        "host_context",
        "host_info",
        "protocol_version",
        "rejected",
        "tool_cancelled",
        "tool_input",
        "tool_input_partial",
        "tool_result",
    )

    def __init__(self, *, max_requests: int = 64) -> None:
        self.calls = PendingCalls(id_prefix="view-")
        #: The host's ``hostInfo``, ``hostCapabilities`` and protocol version, once initialized.
        self.host_info: mcp.Implementation | None = None
        self.host_capabilities: protocol.HostCapabilities | None = None
        self.protocol_version: str | None = None
        #: The host context: the initialize result's, merged with each change.
        self.host_context = protocol.HostContext()
        #: The last tool input, partial input, result and cancellation (reason) heard.
        self.tool_input: dict[str, Any] | None = None
        self.tool_input_partial: dict[str, Any] | None = None
        self.tool_result: mcp.CallToolResult | None = None
        self.tool_cancelled: str | None = None
        #: True once the host said the tool call was cancelled.
        self.cancelled = False
        #: How many received messages could not be handled (answered with an error or dropped).
        self.rejected = 0
        self._host_errors = 0
        self._context_full = False  # a host-context change was dropped: reported once loud
        self._running = protocol.InFlight(max_requests)

    @property
    def max_requests(self) -> int:
        """The bound on the peer's requests in flight."""
        return self._running.limit

    @property
    def in_flight(self) -> int:
        """How many host requests are being answered (admitted, not yet finished)."""
        return len(self._running)

    # -- receiving ---------------------------------------------------------------------------

    def receive(self, raw: object) -> AppEvent | None:
        """Apply one received message; the event for the driver, or ``None`` when there is
        nothing to do (an answer that settled a request: its ``wake`` was called; another
        channel's message on a shared transport). Never raises for bad input."""
        if isinstance(raw, dict) and not protocol.is_jsonrpc(raw):
            return None  # another channel's message on a shared transport
        try:
            message = protocol.decode(raw)
        except protocol.ProtocolError as exc:
            if isinstance(raw, dict) and "method" not in raw:
                # A bad answer is never answered (JSON-RPC answers requests only); one
                # that answers a request of ours fails it now, rather than at its deadline.
                if exc.request_id is not None:
                    self.calls.resolve(str(exc.request_id), error=exc)
                return self._reject(f"an answer: {exc.message}", None)
            return self._reject(exc.message, exc.to_wire())
        if isinstance(message, protocol.Request):
            return self._admit(message)
        if isinstance(message, protocol.Response):
            self.calls.resolve(str(message.id), result=message.result)
            return None
        if isinstance(message, protocol.ErrorResponse):
            if message.id is not None:
                self.calls.resolve(str(message.id), error=message)
                return None
            self._host_errors += 1
            return HostError(message.message, self._host_errors == 1)
        return self._notification(message)

    def _reject(
        self, reason: str, reply: dict[str, Any] | None, *, quiet: bool = False
    ) -> Rejected:
        self.rejected += 1
        return Rejected(reason, reply, self.rejected == 1 and not quiet)

    def _admit(self, request: protocol.Request) -> Rejected | RequestReceived:
        reason = self._running.admit(request.id)
        if reason is None:
            return RequestReceived(request)
        return self._reject(reason, protocol.Refused(reason, request_id=request.id).to_wire())

    def _notification(self, note: protocol.Notification) -> AppEvent | None:
        method, params = note.method, note.params
        if method == protocol.TOOL_INPUT:
            self.tool_input = params.arguments or {}
            return Heard("tool_input", self.tool_input)
        if method == protocol.TOOL_INPUT_PARTIAL:
            self.tool_input_partial = params.arguments or {}
            return Heard("tool_input_partial", self.tool_input_partial)
        if method == protocol.TOOL_RESULT:
            self.tool_result = params
            return Heard("tool_result", params)
        if method == protocol.TOOL_CANCELLED:
            self.cancelled, self.tool_cancelled = True, params.reason
            return Heard("tool_cancelled", params.reason)
        if method == protocol.HOST_CONTEXT_CHANGED:
            return self._merge_host_context(note.raw_params or {})
        if method == "notifications/cancelled":
            return CancelRequested(params.request_id)
        if protocol.METHODS[method].sender == "view":
            return self._reject(f"{method}: a notification views send", None, quiet=True)
        return None

    def _merge_host_context(self, changes: Mapping[str, Any]) -> Heard | Rejected:
        # A shallow merge of the keys that changed, as ext-apps' App does; a change that
        # would take the context past MAX_HOST_CONTEXT_KEYS is dropped (the context is
        # open: a host adding keys for ever grew it, and each merge copied it whole).
        merged = {**protocol.to_wire(self.host_context), **changes}
        if len(merged) > MAX_HOST_CONTEXT_KEYS:
            was_full, self._context_full = self._context_full, True
            reason = (
                f"a host-context change: the context would have {len(merged)} keys"
                f" (at most {MAX_HOST_CONTEXT_KEYS})"
            )
            return self._reject(reason, None, quiet=was_full)
        self.host_context = protocol.HostContext.model_validate(merged)
        return Heard("host_context_changed", self.host_context)

    # -- the host's requests -----------------------------------------------------------------

    def answer(
        self, request_id: protocol.RequestId, result: BaseModel | Mapping[str, Any]
    ) -> dict[str, Any]:
        """The answer to the host's request ``request_id``."""
        return protocol.encode_result(request_id, result)

    def fail(self, request_id: protocol.RequestId, exc: Exception) -> dict[str, Any] | None:
        """The error answer to ``request_id`` for ``exc`` (``None``: nothing to send).

        A :class:`~.protocol.ProtocolError` is answered with its own code (and counted as
        rejected); anything else as an internal error.
        """
        if isinstance(exc, protocol.ProtocolError):
            exc.request_id = request_id
            self.rejected += 1
            return exc.to_wire()
        return protocol.encode_error(request_id, INTERNAL_ERROR, str(exc) or repr(exc))

    def finished(self, request_id: protocol.RequestId) -> None:
        """The host's request ``request_id`` is answered (or given up): its place frees."""
        self._running.finished(request_id)

    # -- our requests ------------------------------------------------------------------------

    def request(
        self,
        method: str,
        params: BaseModel | Mapping[str, Any] | None,
        *,
        wake: Callable[[], None],
    ) -> tuple[PendingCall, dict[str, Any]]:
        """Track a new request of ours (``wake`` is called once it is settled); the call
        and the message to send.

        Raises :class:`~.protocol.MethodNotFound` for a method MCP Apps defines as a
        notification (refused before the host acts on it).
        """
        spec = protocol.METHODS.get(method)
        if spec is not None and spec.result is None:
            raise protocol.MethodNotFound(
                f"{method} is a notification, not a request", method=method
            )
        call = self.calls.add(method, wake=wake)
        return call, protocol.encode_request(call.id, method, params)

    def abandon(self, call: PendingCall, reason: str) -> dict[str, Any] | None:
        """Stop waiting for ``call``; the ``notifications/cancelled`` to send, if the host
        has it (it was sent and is not settled yet)."""
        if self.calls.discard(call.id) is None or not call.sent:
            return None
        return protocol.encode_notification(
            "notifications/cancelled", {"requestId": call.id, "reason": reason}
        )

    def initialized(self, result: protocol.InitializeResult) -> dict[str, Any]:
        """Take the host's ``ui/initialize`` answer; the ``initialized`` notice to send."""
        self.protocol_version = result.protocol_version
        self.host_info = result.host_info
        self.host_capabilities = result.host_capabilities
        self.host_context = result.host_context
        return protocol.encode_notification(protocol.INITIALIZED)
