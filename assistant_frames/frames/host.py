"""``AssistantFrameHost``: the host side of one frame connection."""

from __future__ import annotations

import copy
import itertools
import logging
import math
import secrets
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack, suppress
from types import TracebackType
from typing import Any, Literal

import anyio
from anyio.abc import ObjectStream, TaskGroup

from .._anyio import Deadlines, event_class, task_group
from ..errors import (
    FrameDisconnected,
    ToolArgumentsError,
    ToolCallError,
    ToolCallTimeout,
    ToolDisabledError,
    ToolNotFoundError,
)
from ..registry.context import ModelContext, Unsubscribe
from ..registry.registry import _Subscribers
from ..registry.tool import Tool, ToolCallContext
from ..transports.contract import TransportAttribute, close_reason
from . import protocol
from .protocol import (
    MalformedMessage,
    ModelContextResponse,
    ModelContextUpdate,
    SerializedTool,
    ToolResult,
)

__all__ = ["AssistantFrameHost"]

logger = logging.getLogger("assistant_frames.frames")

_CLOSED = (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError)
_EMPTY_CONTEXT = ModelContext()
_CANCEL_SEND_TIMEOUT = 1.0

State = Literal["new", "connected", "disconnected", "closed"]


def _remote_error(message: str, name: str, call_id: str) -> ToolCallError:
    """The error for a failed ``tool-result``, typed when the message is a known refusal."""
    if message == f'Tool "{name}" not found':
        return ToolNotFoundError(name, tool_call_id=call_id)
    if message == f'Tool "{name}" is disabled':
        return ToolDisabledError(name, tool_call_id=call_id)
    if message.startswith(f'Invalid arguments for tool "{name}"'):
        return ToolArgumentsError(message, tool_name=name, tool_call_id=call_id)
    return ToolCallError(message, tool_name=name, tool_call_id=call_id)


class _Pending:
    """A call awaiting its ``tool-result``."""

    __slots__ = ("done", "error", "result", "sent")

    def __init__(self, done: anyio.Event) -> None:
        self.done = done
        self.result: ToolResult | None = None
        self.error: FrameDisconnected | None = None
        self.sent = False  # the tool-call went out (so a cancel must follow it)


class AssistantFrameHost:
    """The host end of a connection to one frame; a :class:`ModelContextProvider`.

    Use it as an async context manager. On entry it starts reading the transport and
    asks the frame for its context; :meth:`wait_for_context` waits for the first one.
    The frame's tools appear in :meth:`get_model_context` with an ``execute`` that calls
    across the channel, so ``parent_registry.add_provider(host)`` federates the frame.

    ``timeout`` (seconds, ``None`` for none) bounds each call unless the call gives its
    own. When the transport breaks, pending calls fail at once with
    :class:`FrameDisconnected`, the frame's tools disappear and subscribers are told.
    The host owns ``transport`` and closes it on exit.
    """

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
        self._state: State = "new"
        self._context = _EMPTY_CONTEXT
        self._wire: Mapping[str, Any] | None = None
        self._subscribers = _Subscribers()
        self._pending: dict[str, _Pending] = {}
        self._deadlines = Deadlines()  # calls with the default timeout
        self._ids = itertools.count(1)
        self._id_prefix = f"tool-{secrets.token_hex(3)}"
        self._subscribed = False
        self._malformed = 0
        self._ready: anyio.Event | None = None
        self._ended: anyio.Event | None = None
        self._new_event: Callable[[], anyio.Event] = anyio.Event  # the backend's, once entered
        self._disconnected: FrameDisconnected | None = None
        self._exit_stack: AsyncExitStack | None = None
        self._task_group: TaskGroup | None = None
        self._send_would_wait = transport.extra(TransportAttribute.send_would_wait, None)

    # -- lifecycle -----------------------------------------------------------------------

    async def __aenter__(self) -> AssistantFrameHost:
        if self._state != "new":
            raise RuntimeError("An AssistantFrameHost can be entered only once")
        self._ready = anyio.Event()
        self._ended = anyio.Event()
        self._new_event = event_class()
        async with AsyncExitStack() as stack:
            self._task_group = await stack.enter_async_context(task_group())
            self._state = "connected"
            self._task_group.start_soon(self._receive_loop)
            self._task_group.start_soon(self._deadlines.run)
            try:
                await self._transport.send(protocol.encode_context_request())
            except _CLOSED:
                self._disconnect("The frame's transport was already closed")
            self._exit_stack = stack.pop_all()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        await self._close(exc_type, exc, tb)
        return None

    async def aclose(self) -> None:
        """Cancel pending calls (sending ``tool-cancel``), unsubscribe and close."""
        await self._close(None, None, None)

    async def _close(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._state == "closed":
            return
        was_connected = self._state == "connected"
        self._state = "closed"
        closed = FrameDisconnected(f"The host of {self.name} was closed")
        with anyio.CancelScope(shield=True), anyio.move_on_after(_CANCEL_SEND_TIMEOUT):
            if was_connected:
                for call_id in list(self._pending):
                    await self._try_send(protocol.encode_tool_cancel(call_id))
                if self._subscribed:
                    await self._try_send(protocol.encode_context_unsubscribe())
        self._fail_pending(closed)
        if self._ended is not None:
            self._ended.set()
        self._clear_context()
        if self._task_group is not None:
            self._task_group.cancel_scope.cancel()
        try:
            with anyio.CancelScope(shield=True):
                await self._transport.aclose()
        finally:
            if self._exit_stack is not None:
                # The task group must see the exception the block raised (a
                # KeyboardInterrupt, a cancellation) or it would swallow it.
                stack, self._exit_stack = self._exit_stack, None
                await stack.__aexit__(exc_type, exc, tb)

    async def wait_disconnected(self) -> None:
        """Wait until the connection has ended (the transport broke, or the host closed)."""
        if self._ended is None:
            raise RuntimeError("Enter the host (async with) before waiting on it")
        await self._ended.wait()

    @property
    def state(self) -> State:
        """``"new"``, ``"connected"``, ``"disconnected"`` (transport broke) or ``"closed"``."""
        return self._state

    @property
    def connected(self) -> bool:
        """True while the transport is open."""
        return self._state == "connected"

    async def wait_for_context(self, timeout: float | None = None) -> ModelContext:
        """Wait until the frame's first context has arrived and return the current one.

        Raises ``TimeoutError`` after ``timeout`` seconds (default: the host's) and
        :class:`FrameDisconnected` if the connection ends first.
        """
        if self._ready is None:
            raise RuntimeError("Enter the host (async with) before waiting for its context")
        limit = self.timeout if timeout is None else timeout
        with anyio.fail_after(math.inf if limit is None else limit):
            await self._ready.wait()
        if self._wire is None:
            raise self._disconnected or FrameDisconnected(f"{self.name} is not connected")
        return self._context

    # -- ModelContextProvider ------------------------------------------------------------

    def get_model_context(self) -> ModelContext:
        """The frame's latest context (empty before the first and after a disconnect)."""
        return self._context

    def subscribe(self, callback: Callable[[], None]) -> Unsubscribe:
        """Call ``callback()`` whenever the frame's context changes."""
        return self._subscribers.add(callback)

    # -- tool calls ----------------------------------------------------------------------

    async def call_tool(
        self,
        name: str,
        args: Any = None,
        *,
        timeout: float | None = None,
        tool_call_id: str | None = None,
    ) -> Any:
        """Call the frame's tool ``name`` and return its result.

        Raises :class:`ToolCallError` with the frame's message when the tool fails,
        :class:`ToolCallTimeout` after ``timeout`` seconds (default: the host's; a
        ``tool-cancel`` is sent), and :class:`FrameDisconnected` when the connection is
        or goes away. Cancelling the caller also sends ``tool-cancel``.
        """
        if self._state != "connected":
            raise self._not_connected()
        call_id = tool_call_id or f"{self._id_prefix}{next(self._ids)}"
        if call_id in self._pending:
            raise ValueError(f"A call with id {call_id!r} is already pending")
        pending = _Pending(self._new_event())
        self._pending[call_id] = pending
        limit = self.timeout if timeout is None else timeout
        message = protocol.encode_tool_call(call_id, name, args)
        try:
            # The deadline covers the send: a peer that stopped reading makes it wait.
            if limit is None:
                await self._send_call(message, name, call_id)
                pending.sent = True
                await pending.done.wait()
            elif (
                timeout is None
                and self._send_would_wait is not None
                and not self._send_would_wait()
                and self._deadlines.add(call_id, limit, pending.done.set)
            ):
                # The send will not wait, so one task can time out every such call
                # (a cancel scope per call would cost a large share of it). Neither
                # result nor error once it expires: a timeout, reported below.
                await self._send_call(message, name, call_id)
                pending.sent = True
                await pending.done.wait()
            else:
                with anyio.move_on_after(limit):
                    await self._send_call(message, name, call_id)
                    pending.sent = True
                    await pending.done.wait()
        except anyio.get_cancelled_exc_class():
            if pending.sent and pending.result is None and pending.error is None:
                await self._cancel_remote(call_id)
            raise
        finally:
            self._pending.pop(call_id, None)
            self._deadlines.discard(call_id)
        result = pending.result
        if result is not None:
            if isinstance(result.error, str):
                raise _remote_error(result.error, name, call_id)
            return result.result
        if pending.error is not None:
            raise copy.copy(pending.error)  # a fresh exception per caller, same details
        if pending.sent:  # a call that never left needs no cancel
            await self._cancel_remote(call_id)
        raise ToolCallTimeout(name, limit or 0.0, tool_call_id=call_id)

    async def _send_call(self, message: dict[str, Any], name: str, call_id: str) -> None:
        try:
            await self._transport.send(message)
        except (TypeError, ValueError) as exc:
            raise ToolArgumentsError(
                f'Arguments for tool "{name}" cannot be sent: {exc}',
                tool_name=name,
                tool_call_id=call_id,
            ) from None
        except _CLOSED:
            self._disconnect("The frame's transport is closed")

    async def _cancel_remote(self, call_id: str) -> None:
        if self._state == "connected":
            with anyio.CancelScope(shield=True), anyio.move_on_after(_CANCEL_SEND_TIMEOUT):
                await self._try_send(protocol.encode_tool_cancel(call_id))

    async def _try_send(self, message: dict[str, Any]) -> None:
        with suppress(*_CLOSED):
            await self._transport.send(message)

    def _not_connected(self) -> FrameDisconnected:
        if self._state == "new":
            return FrameDisconnected(f"Enter the host of {self.name} (async with) first")
        if self._state == "closed":
            return FrameDisconnected(f"The host of {self.name} was closed")
        return self._disconnected or FrameDisconnected(f"{self.name} is not connected")

    # -- receiving -----------------------------------------------------------------------

    async def _receive_loop(self) -> None:
        receive = self._transport.receive
        try:
            while True:
                raw = await receive()
                try:
                    message = protocol.decode(raw)
                except MalformedMessage as exc:
                    self._log_malformed(exc.reason)
                    continue
                if message is None:
                    continue
                if type(message) is ToolResult:
                    call = self._pending.pop(message.id, None)
                    if call is not None:
                        call.result = message
                        call.done.set()
                elif type(message) is ModelContextUpdate or type(message) is ModelContextResponse:
                    self._apply(message.context)
                else:
                    logger.debug("Host ignored a %s message", message.type)
        except _CLOSED as exc:  # a transport may say why (an exit code, a close code)
            reason = close_reason(exc)
            self._disconnect(
                f"{self.name} disconnected: {reason.description}"
                if reason.description
                else f"{self.name} closed the connection",
                returncode=reason.exit_code,
                stderr_tail=reason.stderr_tail,
            )
        except Exception as exc:  # a transport failing in its own way
            logger.warning("Transport of %s failed: %r", self.name, exc)
            self._disconnect(f"The transport of {self.name} failed: {exc!r}")

    def _log_malformed(self, reason: str) -> None:
        self._malformed += 1
        level = logging.WARNING if self._malformed == 1 else logging.DEBUG
        logger.log(level, "Host dropped a malformed message from %s (%s)", self.name, reason)

    def _apply(self, wire: Mapping[str, Any]) -> None:
        try:
            context, changed = self._build_context(wire)
        except ValueError as exc:
            self._log_malformed(f"unusable context, kept the last good one: {exc}")
            return
        first = self._wire is None
        self._wire = wire
        self._context = context
        if first and not self._subscribed and self._state == "connected":
            self._subscribed = True
            if self._task_group is not None:  # receiving never waits for a send
                # Started before waking whoever waits for the context, so on asyncio
                # the subscribe goes out before their first call.
                self._task_group.start_soon(self._try_send, protocol.encode_context_subscribe())
        self._set_ready()
        if changed:
            self._subscribers.notify()

    def _set_ready(self) -> None:
        if self._ready is not None:
            self._ready.set()

    def _build_context(self, wire: Mapping[str, Any]) -> tuple[ModelContext, bool]:
        """The context for ``wire``, reusing unchanged tools; and whether anything changed.

        One pass over the tools: a frame may hold thousands, and every change resends all.
        """
        previous = self._wire or {}
        previous_tools = self._context.tools
        previous_specs = previous.get("tools") or {}
        specs = protocol.check_tools(wire.get("tools"))
        system = wire.get("system")
        system_changed = self._wire is None or system != previous.get("system")
        if self._wire is not None and specs == previous_specs:  # one C-level pass
            if not system_changed:
                return self._context, False
            return ModelContext(system=system, tools=previous_tools), True
        changed = system_changed or len(specs) != len(previous_specs)
        tools: dict[str, Tool] = {}
        for name, spec in specs.items():
            old = previous_tools.get(name)
            if old is not None and previous_specs.get(name) == spec:
                tools[name] = old  # unchanged: keep the same object
            else:
                tools[name] = self._remote_tool(name, protocol.check_tool(name, spec))
                changed = True
        return ModelContext(system=system, tools=tools), changed

    def _remote_tool(self, name: str, spec: SerializedTool) -> Tool:
        call_tool = self.call_tool

        async def invoke(args: Any, context: ToolCallContext) -> Any:
            return await call_tool(name, args)

        return Tool.from_parts(
            name,
            invoke,
            description=spec.get("description"),
            parameters=spec.get("parameters"),
            disabled=bool(spec.get("disabled")),
            type=spec.get("type"),
        )

    # -- disconnection -------------------------------------------------------------------

    def _disconnect(
        self, reason: str, *, returncode: int | None = None, stderr_tail: str | None = None
    ) -> None:
        if self._state != "connected":
            return
        self._state = "disconnected"
        self._disconnected = FrameDisconnected(
            reason, returncode=returncode, stderr_tail=stderr_tail
        )
        self._fail_pending(self._disconnected)
        self._set_ready()
        if self._ended is not None:
            self._ended.set()
        self._clear_context()

    def _clear_context(self) -> None:
        """The frame's tools are gone: empty the context and tell subscribers."""
        had_context = self._wire is not None
        self._wire = None
        self._context = _EMPTY_CONTEXT
        if had_context:
            self._subscribers.notify()

    def _fail_pending(self, error: FrameDisconnected) -> None:
        pending, self._pending = self._pending, {}
        for call in pending.values():
            call.error = error
            call.done.set()

    def __repr__(self) -> str:
        return f"<AssistantFrameHost {self.name!r} {self._state} tools={len(self._context.tools)}>"
