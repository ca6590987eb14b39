"""``WidgetHost``: the host side of one ``AUI_*`` widget, over any transport of ours.

The wire's rules (what is malformed, which calls are refused, each method's arguments,
admission, the globals to push) are :class:`~.host_machine.WidgetHostMachine`'s; this
module does the I/O. One task reads the transport; each method call is answered in a
task of its own (so a slow handler holds up nothing), bounded by ``timeout``; sends go
one at a time, each bounded too. Malformed messages are ignored: the first is logged as
a warning, later ones at debug level, and none reaches a handler.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

import anyio
import mcp_types as mcp
from anyio.abc import ObjectStream
from mcp import Client

from .._anyio import call_maybe_async
from .._driver import Driver
from ..apps import protocol as apps_protocol
from ..apps.bridge_machine import BridgeMachine
from ..apps.client_server import as_app_server
from ..apps.forwarding import AppServer
from ..errors import AssistantFramesError, FrameDisconnected
from ..transports.contract import CLOSED_ERRORS
from .host_machine import (
    CallTool,
    HostMethod,
    Ignored,
    Legacy,
    MethodRequest,
    MethodRequested,
    NotifyIntrinsicHeight,
    OpenExternal,
    Ready,
    Refused,
    RequestClose,
    RequestDisplayMode,
    RequestModal,
    SendFollowUpMessage,
    SetWidgetState,
    WidgetHostMachine,
)
from .keeper import InvalidWidgetState, WidgetStateKeeper
from .manifest import WidgetManifest
from .store import WidgetState, WidgetStateStore

__all__ = ["MethodError", "WidgetHost"]

logger = logging.getLogger("assistant_frames.widgets")

_CALL_TOOL_KEYS = frozenset({"content", "structuredContent", "isError", "_meta"})

#: A host callback: plain or async.
Callback: TypeAlias = Callable[..., Any]


class MethodError(Exception):
    """Raised by a handler (or the host) to reject a widget's call with this message."""


class WidgetHost(Driver):
    """The host end of one widget instance speaking the ``AUI_*`` wire.

    ``transport`` carries the widget's messages as dicts (a :func:`memory_pair` end, a
    WebSocket relay...); the host closes it on exit. ``widget_id`` names the widget
    instance: its state is saved in ``store`` under it (default: a fresh in-memory
    store) and comes back as the ``widgetState`` global when a host for the same id
    starts again. ``globals`` are the initial globals (``theme``, ``toolInput``...);
    they are pushed in full when the widget says ``ready``, and after that only the
    ones that change (``full_updates=True`` pushes them all each time).

    ``manifest`` grants methods; a call to any other is refused. ``callTool`` goes to
    ``server`` (the MCP server the widget came from), only for a tool whose visibility
    includes ``"app"``, or to ``on_call_tool(name, args)`` when no server is given.
    Other handlers, plain or async: ``on_widget_state(state)`` after the state is saved
    (whether it reaches the model is the host's choice), ``on_follow_up(args)``,
    ``on_request_display_mode(mode) -> mode granted``, ``on_request_modal(options)``,
    ``on_request_close()``, ``on_open_external(href)``, ``on_intrinsic_height(height)``;
    ``methods`` adds handlers for methods beyond the plan's (called with the call's
    args). A granted method without a handler is rejected as unsupported; a handler's
    exception rejects its call (a :class:`MethodError`'s message is passed on as is).
    Legacy messages go to ``on_ready()``, ``on_resize(height)`` (and
    ``on_intrinsic_height``), ``on_action(payload)``, ``on_add_result(payload)`` and
    ``on_widget_error(payload)``.

    ``timeout`` bounds each handler and each store operation. ``max_calls`` bounds the
    widget's calls in flight: a call counts until its answer is sent, and while
    ``max_calls`` do, the host reads nothing more from the widget (as a frame does), so
    a flood waits in the transport instead of growing the host. A widget that does not
    read an answer within ``send_timeout`` is disconnected, with the reason logged and
    kept in :attr:`close_reason`: no answer is dropped while the widget is connected.
    ``max_state_bytes`` bounds a widget state as JSON.
    """

    _noun = "WidgetHost"

    def __init__(
        self,
        transport: ObjectStream[Any],
        widget_id: str,
        *,
        globals: Mapping[str, Any] | None = None,  # the plan's own name
        manifest: WidgetManifest | None = None,
        store: WidgetStateStore | None = None,
        server: AppServer | Client | None = None,
        full_updates: bool = False,
        timeout: float = 30.0,
        send_timeout: float = 5.0,
        max_calls: int = 64,
        max_state_bytes: int = 256_000,
        on_call_tool: Callback | None = None,
        on_widget_state: Callback | None = None,
        on_follow_up: Callback | None = None,
        on_request_display_mode: Callback | None = None,
        on_request_modal: Callback | None = None,
        on_request_close: Callback | None = None,
        on_open_external: Callback | None = None,
        on_intrinsic_height: Callback | None = None,
        on_ready: Callback | None = None,
        on_resize: Callback | None = None,
        on_action: Callback | None = None,
        on_add_result: Callback | None = None,
        on_widget_error: Callback | None = None,
        methods: Mapping[str, Callback] | None = None,
    ) -> None:
        if not timeout > 0 or not send_timeout > 0:
            raise ValueError("timeout and send_timeout must be positive")
        self._methods: dict[str, Callback] = dict(methods or {})
        self._machine = WidgetHostMachine(
            manifest=manifest,
            extra_methods=self._methods,
            globals=globals,
            full_updates=full_updates,
            max_calls=max_calls,
        )
        self.widget_id = widget_id
        #: The widget's state: its store, size limit and ``on_widget_state`` callback.
        self.state = WidgetStateKeeper(
            store,
            widget_id,
            on_widget_state=on_widget_state,
            max_state_bytes=max_state_bytes,
            timeout=timeout,
        )
        self.server: AppServer | None = as_app_server(server)
        self.timeout = timeout
        self.send_timeout = send_timeout
        self.on_call_tool = on_call_tool
        self.on_follow_up = on_follow_up
        self.on_request_display_mode = on_request_display_mode
        self.on_request_modal = on_request_modal
        self.on_request_close = on_request_close
        self.on_open_external = on_open_external
        self.on_intrinsic_height = on_intrinsic_height
        self.on_ready = on_ready
        self.on_resize = on_resize
        self.on_action = on_action
        self.on_add_result = on_add_result
        self.on_widget_error = on_widget_error
        self._transport = transport
        self._send_lock = anyio.Lock()
        self._init_lifecycle()
        self._room: anyio.Event | None = None  # set when a call's place frees up
        #: Why the host disconnected the widget (``None``: it did not).
        self.close_reason: str | None = None
        self._ready: anyio.Event | None = None
        self._entered = False

    # -- lifecycle ---------------------------------------------------------------------------

    async def __aenter__(self) -> WidgetHost:
        if self._entered:
            raise RuntimeError("A WidgetHost can be entered only once")
        self._entered = True
        self._ready = anyio.Event()
        self._ended = anyio.Event()
        try:
            self._machine.state_loaded(await self.state.load())
            async with self._tasks.open() as group:
                group.start_soon(self._receive_loop)
        except BaseException:
            with anyio.CancelScope(shield=True), anyio.move_on_after(self.send_timeout):
                await self._transport.aclose()
            raise
        return self

    async def _stop(self) -> None:
        """Close the widget's transport (its calls in flight end with the tasks)."""
        with anyio.CancelScope(shield=True), anyio.move_on_after(self.send_timeout):
            await self._transport.aclose()

    @property
    def globals(self) -> dict[str, Any]:
        """The globals as the host has them now (a copy)."""
        return self._machine.globals

    @property
    def ready(self) -> bool:
        """Whether the widget has said ``ready`` (and got the globals)."""
        return self._machine.ready

    @property
    def ignored(self) -> int:
        """How many malformed messages were ignored."""
        return self._machine.ignored

    # The machine's settings, read at each message as when they were the host's own.

    @property
    def manifest(self) -> WidgetManifest:
        """The methods granted to the widget."""
        return self._machine.manifest

    @manifest.setter
    def manifest(self, manifest: WidgetManifest) -> None:
        self._machine.manifest = manifest

    @property
    def methods(self) -> dict[str, Callback]:
        """The handlers of methods beyond the plan's, by name."""
        return self._methods

    @methods.setter
    def methods(self, methods: dict[str, Callback]) -> None:
        self._methods = self._machine.extra_methods = methods

    @property
    def full_updates(self) -> bool:
        """Whether each change pushes every global (not only those that changed)."""
        return self._machine.full_updates

    @full_updates.setter
    def full_updates(self, full_updates: bool) -> None:
        self._machine.full_updates = full_updates

    @property
    def max_calls(self) -> int:
        """How many of the widget's calls may be in flight before the host stops reading."""
        return self._machine.max_calls

    @max_calls.setter
    def max_calls(self, max_calls: int) -> None:
        self._machine.max_calls = max_calls

    async def wait_ready(self, timeout: float = 30.0) -> None:
        """Wait until the widget says ``ready``; ``TimeoutError`` after ``timeout``.

        Raises :class:`~assistant_frames.FrameDisconnected` if the transport ends first.
        """
        if self._ready is None:
            raise RuntimeError("Enter the WidgetHost first")
        with anyio.fail_after(timeout):
            await self._ready.wait()  # set by ready, and by the end of the transport
        if not self.ready:
            raise FrameDisconnected(f"widget {self.widget_id!r} went before it was ready")

    async def update_globals(self, **changes: Any) -> None:
        """Change globals; a ready widget gets those that changed (nothing if none did)."""
        message = self._machine.update_globals(changes)
        if message is not None:
            await self._send(message)

    # -- receiving ---------------------------------------------------------------------------

    async def _receive_loop(self) -> None:
        assert self._ended is not None
        try:
            while True:
                while not self._machine.may_read:  # read on once one is answered
                    self._room = anyio.Event()
                    await self._room.wait()
                try:
                    raw = await self._transport.receive()
                except CLOSED_ERRORS:
                    return
                event = self._machine.receive(raw)
                if isinstance(event, MethodRequested):
                    self._start_call(event)
                elif isinstance(event, Refused):
                    await self._send(event.reply)
                elif isinstance(event, Ignored):
                    self._ignore(event)
                else:
                    await self._legacy(event)
        finally:
            self._ended.set()
            if self._ready is not None:
                self._ready.set()  # wakes wait_ready, which then says the widget went

    def _ignore(self, event: Ignored) -> None:
        log = logger.warning if event.first else logger.debug
        log("widget %r: ignored a malformed message: %s", self.widget_id, event.reason)

    def _start_call(self, call: MethodRequested) -> None:
        # The state keeper's ticket, taken at arrival: the state set last is kept.
        ticket = self.state.ticket()
        group = self._tasks.group
        if group is None:  # pragma: no cover - the loop runs only while the group is open
            self._machine.finished(call.id)
            return
        group.start_soon(self._serve, call, ticket)

    async def _serve(self, call: MethodRequested, ticket: int) -> None:
        machine = self._machine
        try:
            try:
                with anyio.fail_after(self.timeout):
                    result = await self._dispatch(call.request, ticket)
                answer = machine.answer(call.id, result)
            except MethodError as exc:
                answer = machine.fail(call.id, str(exc))
            except TimeoutError:
                error = f"{call.method} timed out after {self.timeout:g} s on the host"
                answer = machine.fail(call.id, error)
            except Exception as exc:
                logger.debug("widget %r: %s failed", self.widget_id, call.method, exc_info=True)
                answer = machine.fail(call.id, f"{call.method} failed: {exc}")
            await self._send(answer)
        finally:  # the place frees up once the answer is sent (or the widget is gone)
            machine.finished(call.id)
            if self._room is not None:
                self._room.set()

    async def _legacy(self, event: Ready | Legacy) -> None:
        kind = "ready" if isinstance(event, Ready) else event.kind
        try:
            if isinstance(event, Ready):
                await self._send(event.set_globals)
                assert self._ready is not None
                self._ready.set()
                await self._callback(self.on_ready)
            elif kind == "resize":
                await self._callback(self.on_resize, event.payload)
                await self._callback(self.on_intrinsic_height, event.payload)
            elif kind == "action":
                await self._callback(self.on_action, event.payload)
            elif kind == "addResult":
                await self._callback(self.on_add_result, event.payload)
            else:
                await self._callback(self.on_widget_error, event.payload)
        except Exception:  # a host callback's failure must not end the connection
            logger.exception("widget %r: the %s callback failed", self.widget_id, kind)

    async def _callback(self, callback: Callback | None, *args: Any) -> None:
        if callback is not None:
            with anyio.fail_after(self.timeout):
                await call_maybe_async(callback, *args)

    # -- methods -----------------------------------------------------------------------------

    async def _dispatch(self, request: MethodRequest, ticket: int) -> Any:
        method = request.method
        if isinstance(request, HostMethod):
            return await self._handle(method, self.methods.get(method), *request.args)
        if isinstance(request, CallTool):
            return await self._call_tool(request.name, request.args)
        if isinstance(request, SetWidgetState):
            return await self._set_widget_state(request.state, ticket)
        if isinstance(request, SendFollowUpMessage):
            return await self._handle(method, self.on_follow_up, request.follow_up)
        if isinstance(request, RequestDisplayMode):
            granted = await self._handle(method, self.on_request_display_mode, request.mode)
            granted = request.mode if granted is None else granted
            await self.update_globals(displayMode=granted)
            return {"mode": granted}
        if isinstance(request, RequestModal):
            return await self._handle(method, self.on_request_modal, request.options)
        if isinstance(request, RequestClose):
            return await self._handle(method, self.on_request_close)
        if isinstance(request, OpenExternal):
            return await self._handle(method, self.on_open_external, request.href)
        assert isinstance(request, NotifyIntrinsicHeight)
        return await self._handle(method, self.on_intrinsic_height, request.height)

    async def _handle(self, method: str, handler: Callback | None, *args: Any) -> Any:
        if handler is None:
            raise MethodError(f"This host does not support {method}")
        return await call_maybe_async(handler, *args)

    async def _set_widget_state(self, state: WidgetState, ticket: int) -> None:
        # Calls are served in tasks, which may run in any order: the keeper saves the
        # state the widget set last (by arrival, `ticket`), never an older one after it.
        try:
            saved = await self.state.save(state, ticket)
        except InvalidWidgetState as exc:
            raise MethodError(f"setWidgetState: {exc}") from None
        if saved and self.state.state is state:  # and no later save came in since
            self._machine.state_saved(state)

    async def _call_tool(self, name: str, args: dict[str, Any]) -> Any:
        if self.server is None:
            return await self._handle("callTool", self.on_call_tool, name, args)
        try:
            tool = (await self.server.wait_for_context(self.timeout)).tools.get(name)
            if tool is None:
                raise MethodError(f'Tool "{name}" is not a tool of the widget\'s server')
            # Asked at each call, like the MCP Apps bridge: tools come, go and change.
            if not BridgeMachine.may_call(tool.meta):
                shown = list(apps_protocol.visibility(tool.meta))
                raise MethodError(
                    f'Tool "{name}" is not visible to apps (its visibility is {shown})'
                )
            result: mcp.CallToolResult = await self.server.call_tool_result(name, args)
        except FrameDisconnected as exc:
            raise MethodError(f"The widget's server is gone: {exc.message}") from None
        except AssistantFramesError as exc:
            raise MethodError(f"callTool {name} failed: {exc}") from None
        # The plan's CallToolResponse: content, structuredContent, isError (and _meta).
        answer = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        return {k: v for k, v in answer.items() if k in _CALL_TOOL_KEYS}

    # -- sending -----------------------------------------------------------------------------

    async def _send(self, message: dict[str, Any]) -> None:
        try:
            async with self._send_lock:
                if self.close_reason is None:
                    with anyio.fail_after(self.send_timeout):
                        await self._transport.send(message)
                    return
        except CLOSED_ERRORS:
            pass
        except TimeoutError:
            await self._disconnect(
                f"the widget read nothing for send_timeout ({self.send_timeout:g} s)"
            )
        logger.info(
            "widget %r: gone (%s); not sent: %s",
            self.widget_id,
            self.close_reason or "its transport ended",
            message.get("type"),
        )

    async def _disconnect(self, reason: str) -> None:
        """End the widget's connection, saying why (once)."""
        if self.close_reason is None:
            self.close_reason = reason
            logger.warning("widget %r: disconnected: %s", self.widget_id, reason)
        with anyio.CancelScope(shield=True), anyio.move_on_after(self.send_timeout):
            await self._transport.aclose()
