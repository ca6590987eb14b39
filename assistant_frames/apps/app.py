"""``App``: the view side of an MCP App, in Python.

What the ext-apps ``App`` class is to a view in an iframe, for headless views, tests
and testing hosts: over any transport of ours (an anyio object stream of JSON dicts) it
initializes with the host, hears the tool call the view was opened for (input, partial
input, result, cancellation), follows the host context, answers teardown, makes the
view's requests (``ui/message``, ``tools/call`` proxied to the server...) and offers
the tools of a :class:`~assistant_frames.ModelContextProvider` to the host.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import suppress
from typing import Any, Literal, TypeAlias, TypeVar

import anyio
import mcp_types as mcp
from anyio.abc import ObjectStream, TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from pydantic import BaseModel

from .._anyio import call_maybe_async
from .._driver import Driver
from .._logs import log_first_loudly
from ..calls import PendingCall
from ..registry.context import ModelContextProvider, Unsubscribe
from ..transports.contract import CLOSED_ERRORS
from . import protocol
from .app_machine import (
    AppEvent,
    AppMachine,
    CancelRequested,
    Heard,
    Rejected,
    RequestReceived,
)
from .errors import AppDisconnected, AppRequestError, AppTimeout
from .registry_tools import call_registry_tool, list_registry_tools

__all__ = ["App", "AppState"]

logger = logging.getLogger("assistant_frames.apps")

_SEND_TIMEOUT = 1.0  # for what goes out on the way down (cancel notices)

AppState: TypeAlias = Literal["new", "initializing", "initialized", "closed"]
T = TypeVar("T")
#: A callback: plain or async, given the notification's params.
Callback: TypeAlias = Callable[[T], Awaitable[object] | object]
ContentInput: TypeAlias = str | Sequence[mcp.ContentBlock | Mapping[str, Any]]


def _content(content: ContentInput) -> list[mcp.ContentBlock]:
    if isinstance(content, str):
        return [mcp.TextContent(type="text", text=content)]
    return [_block(block) for block in content]


def _block(block: mcp.ContentBlock | Mapping[str, Any]) -> mcp.ContentBlock:
    if isinstance(block, BaseModel):
        return block
    return protocol.MessageParams.model_validate({"content": [dict(block)]}).content[0]


class App(Driver):
    """The view end of an MCP App connection (what ext-apps' ``App`` is in a browser).

    Use it as an async context manager: entering sends ``ui/initialize``, waits for the
    host's answer (at most ``timeout`` seconds, else :class:`AppTimeout`), stores
    :attr:`host_info`, :attr:`host_capabilities`, :attr:`host_context` and
    :attr:`protocol_version`, then sends ``ui/notifications/initialized``.

    What the host sends arrives at the callbacks (attributes or constructor keywords;
    plain or async callables, run in order, one at a time, on a task of their own so
    that they may make requests) and in plain state for tests to wait on
    (:meth:`wait_until`, :meth:`wait_tool_input`, :meth:`wait_tool_result`,
    :meth:`wait_torn_down`).

    ``registry``'s tools are the view's: the host lists and calls them with
    ``tools/list`` and ``tools/call``, and hears ``notifications/tools/list_changed``
    when they change. Each request the App sends is bounded by ``timeout`` and fails
    with :class:`AppRequestError` when the host answers with an error, and with
    :class:`AppDisconnected` at once when the connection ends. The App owns
    ``transport`` and closes it on exit.

    ``max_requests`` bounds the host's requests in flight (each counted until its
    answer is sent): one beyond it, or one reusing an id in flight, is refused
    (``-32000``). Refusals and other error answers are sent by the reader itself, so a
    host that floods without reading stops being read instead of growing the App.
    """

    _noun = "App"

    def __init__(
        self,
        transport: ObjectStream[Any],
        *,
        app_info: mcp.Implementation | None = None,
        registry: ModelContextProvider | None = None,
        capabilities: protocol.AppCapabilities | None = None,
        timeout: float = 30.0,
        max_requests: int = 64,
        on_tool_input: Callback[dict[str, Any]] | None = None,
        on_tool_input_partial: Callback[dict[str, Any]] | None = None,
        on_tool_result: Callback[mcp.CallToolResult] | None = None,
        on_tool_cancelled: Callback[str | None] | None = None,
        on_host_context_changed: Callback[protocol.HostContext] | None = None,
        on_teardown: Callable[[], Awaitable[object] | object] | None = None,
    ) -> None:
        if not timeout > 0:
            raise ValueError(f"timeout must be positive, not {timeout!r}")
        self._machine = AppMachine(max_requests=max_requests)
        self.timeout = timeout
        self.app_info = app_info or mcp.Implementation(name="assistant-frames-app", version="1")
        self.registry = registry
        if capabilities is None:
            capabilities = protocol.AppCapabilities()
        if registry is not None and capabilities.tools is None:
            capabilities = capabilities.model_copy(
                update={"tools": protocol.ListChanged(list_changed=True)}
            )
        self.capabilities = capabilities
        #: Called with the tool call's arguments (``ui/notifications/tool-input``).
        self.on_tool_input = on_tool_input
        #: Called with partial arguments while the model streams them.
        self.on_tool_input_partial = on_tool_input_partial
        #: Called with the tool's ``CallToolResult``.
        self.on_tool_result = on_tool_result
        #: Called with the reason (or ``None``) when the tool call was cancelled.
        self.on_tool_cancelled = on_tool_cancelled
        #: Called with the merged host context after each change.
        self.on_host_context_changed = on_host_context_changed
        #: Called (and awaited, within ``timeout``) before ``ui/resource-teardown`` is answered.
        self.on_teardown = on_teardown
        #: True once ``ui/resource-teardown`` was answered.
        self.torn_down = False

        self._transport = transport
        self._state: AppState = "new"
        self._disconnected: str | None = None
        # Events belong to the running backend: made on entry.
        self._changed: anyio.Event
        self._list_changed: anyio.Event
        self._running: dict[protocol.RequestId, anyio.CancelScope] = {}  # answers in progress
        self._task_group: TaskGroup | None = None
        self._init_lifecycle()
        self._callbacks_in: MemoryObjectSendStream[tuple[Callable[..., Any], tuple[Any, ...]]]
        self._callbacks_out: MemoryObjectReceiveStream[tuple[Callable[..., Any], tuple[Any, ...]]]
        self._unsubscribe: Unsubscribe | None = None

    # -- what the machine knows ----------------------------------------------------------

    @property
    def max_requests(self) -> int:
        """The bound on the host's requests in flight."""
        return self._machine.max_requests

    @property
    def host_info(self) -> mcp.Implementation | None:
        """The host's ``hostInfo``, once initialized."""
        return self._machine.host_info

    @property
    def host_capabilities(self) -> protocol.HostCapabilities | None:
        """The host's capabilities, once initialized."""
        return self._machine.host_capabilities

    @property
    def protocol_version(self) -> str | None:
        """The protocol version the host answered with, once initialized."""
        return self._machine.protocol_version

    @property
    def host_context(self) -> protocol.HostContext:
        """The host context: the initialize result's, merged with each change."""
        return self._machine.host_context

    @property
    def tool_input(self) -> dict[str, Any] | None:
        """The last tool input heard (the tool call's arguments)."""
        return self._machine.tool_input

    @property
    def tool_input_partial(self) -> dict[str, Any] | None:
        """The last partial tool input heard."""
        return self._machine.tool_input_partial

    @property
    def tool_result(self) -> mcp.CallToolResult | None:
        """The tool call's result, once heard."""
        return self._machine.tool_result

    @property
    def tool_cancelled(self) -> str | None:
        """The reason the tool call was cancelled with, if any."""
        return self._machine.tool_cancelled

    @property
    def cancelled(self) -> bool:
        """True once the host said the tool call was cancelled."""
        return self._machine.cancelled

    @property
    def rejected(self) -> int:
        """How many received messages could not be handled (answered with an error or
        dropped)."""
        return self._machine.rejected

    # -- lifecycle -----------------------------------------------------------------------

    @property
    def state(self) -> AppState:
        """``"new"``, ``"initializing"``, ``"initialized"`` or ``"closed"``."""
        return self._state

    async def __aenter__(self) -> App:
        if self._state != "new":
            raise RuntimeError("An App can be entered only once")
        self._state = "initializing"
        self._changed = anyio.Event()
        self._ended = anyio.Event()
        self._list_changed = anyio.Event()
        self._callbacks_in, self._callbacks_out = anyio.create_memory_object_stream(math.inf)
        async with self._tasks.open() as group:
            self._task_group = group
            group.start_soon(self._receive_loop)
            group.start_soon(self._run_callbacks)
            try:
                await self._initialize()
            except BaseException:
                await self._shut()  # before the group is left: its tasks read until cancelled
                raise
        return self

    async def _initialize(self) -> None:
        params = protocol.InitializeParams(
            protocol_version=protocol.PROTOCOL_VERSION,
            app_info=self.app_info,
            app_capabilities=self.capabilities,
        )
        try:
            result: protocol.InitializeResult = await self.request(protocol.INITIALIZE, params)
        except AppTimeout as exc:
            exc.message = (
                f"{exc.message}: is the other end an MCP Apps host (an ext-apps AppBridge"
                " or assistant-frames' AppBridge)?"
            )
            exc.args = (exc.message,)
            raise
        await self._send(self._machine.initialized(result), protocol.INITIALIZED)
        self._state = "initialized"
        if self.registry is not None:
            self._unsubscribe = self.registry.subscribe(self._on_registry_change)
            assert self._task_group is not None
            self._task_group.start_soon(self._announce_list_changes)
        self._touch()

    async def _stop(self) -> None:
        """Pending requests fail, the transport is closed."""
        if self._state not in ("new", "closed"):
            await self._shut()

    async def _shut(self) -> None:
        self._state = "closed"
        self._lost("The App was closed")
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._task_group is not None:
            self._task_group.cancel_scope.cancel()
        with anyio.CancelScope(shield=True):
            await self._transport.aclose()

    def _lost(self, reason: str) -> None:
        if self._disconnected is None:
            self._disconnected = reason
        self._machine.calls.fail_all(AppDisconnected(self._disconnected))
        assert self._ended is not None  # lost only once entered
        self._ended.set()
        self._touch()

    @property
    def connected(self) -> bool:
        """True while the connection is open."""
        return self._disconnected is None and self._state != "new"

    # -- state for tests -----------------------------------------------------------------

    def _touch(self) -> None:
        changed, self._changed = self._changed, anyio.Event()
        changed.set()

    async def wait_until(
        self, predicate: Callable[[App], bool], *, timeout: float | None = None
    ) -> None:
        """Wait until ``predicate(app)`` holds, checked after each message from the host
        and each callback.

        Raises :class:`AppTimeout` after ``timeout`` seconds (default: the App's) and
        :class:`AppDisconnected` if the connection ends first.
        """
        if self._state == "new":
            raise RuntimeError("Enter the App (async with) before waiting on it")
        limit = self.timeout if timeout is None else timeout
        with anyio.move_on_after(limit):
            while not predicate(self):
                if self._disconnected is not None:
                    raise AppDisconnected(self._disconnected)
                await self._changed.wait()
            return
        raise AppTimeout("a host message", limit)

    async def wait_tool_input(self, *, timeout: float | None = None) -> dict[str, Any]:
        """The tool call's arguments, once they arrived."""
        await self.wait_until(lambda app: app.tool_input is not None, timeout=timeout)
        assert self.tool_input is not None
        return self.tool_input

    async def wait_tool_result(self, *, timeout: float | None = None) -> mcp.CallToolResult:
        """The tool call's result, once it arrived."""
        await self.wait_until(lambda app: app.tool_result is not None, timeout=timeout)
        assert self.tool_result is not None
        return self.tool_result

    async def wait_torn_down(self, *, timeout: float | None = None) -> None:
        """Wait until the host's ``ui/resource-teardown`` was answered."""
        await self.wait_until(lambda app: app.torn_down, timeout=timeout)

    # -- sending -------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: BaseModel | Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
    ) -> Any:
        """Send the request ``method`` and return its typed result.

        Raises :class:`AppRequestError` for an error answer, :class:`AppTimeout` after
        ``timeout`` seconds (default: the App's; the host is told with
        ``notifications/cancelled``), :class:`AppDisconnected` when the connection is
        or goes away, and :class:`~assistant_frames.apps.protocol.InvalidParams` when
        the result does not match the method's. A method MCP Apps does not define (a
        host's extension, such as ``x-assistant-frames/widget-state``) returns its result
        as a dict; one MCP Apps defines as a notification raises ``MethodNotFound``
        before anything is sent.
        """
        done = anyio.Event()
        call, message = self._machine.request(method, params, wake=done.set)
        if self._disconnected is not None or self._state in ("new", "closed"):
            self._machine.calls.discard(call.id)
            raise AppDisconnected(self._disconnected or "The App is not open", method=method)
        limit = self.timeout if timeout is None else timeout
        try:
            with anyio.move_on_after(limit):
                await self._send(message, method)
                call.sent = True
                await done.wait()
        except BaseException:
            await self._abandon(call, "The request was cancelled")
            raise
        if not call.settled:
            await self._abandon(call, "Timed out")
            raise AppTimeout(method, limit)
        error = call.error
        if isinstance(error, AppDisconnected):
            raise AppDisconnected(error.message, method=method)
        if isinstance(error, protocol.ErrorResponse):
            raise AppRequestError(method, error.code, error.message, error.data)
        if isinstance(error, protocol.ProtocolError):  # a malformed answer
            raise protocol.InvalidParams(
                f"Invalid answer to {method}: {error.message}", method=method, raw=error.raw
            )
        if method not in protocol.METHODS:  # a host's extension (x-assistant-frames/...)
            return dict(call.result)
        return protocol.parse_result(method, call.result)

    async def _abandon(self, call: PendingCall, reason: str) -> None:
        cancel = self._machine.abandon(call, reason)
        if cancel is None:
            return
        with anyio.CancelScope(shield=True), anyio.move_on_after(_SEND_TIMEOUT):
            await self._try_send(cancel)

    async def notify(
        self, method: str, params: BaseModel | Mapping[str, Any] | None = None
    ) -> None:
        """Send the notification ``method`` (:class:`AppDisconnected` when closed)."""
        if self._disconnected is not None or self._state in ("new", "closed"):
            raise AppDisconnected(self._disconnected or "The App is not open", method=method)
        await self._send(protocol.encode_notification(method, params), method)

    async def _send(self, message: dict[str, Any], method: str | None = None) -> None:
        try:
            await self._transport.send(message)
        except CLOSED_ERRORS:
            self._lost("The host's transport is closed")
            raise AppDisconnected(self._disconnected or "closed", method=method) from None

    async def _try_send(self, message: dict[str, Any]) -> None:
        with suppress(*CLOSED_ERRORS):
            await self._transport.send(message)

    # -- the view's requests -------------------------------------------------------------

    async def call_server_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None, *, timeout: float | None = None
    ) -> mcp.CallToolResult:
        """Call a tool of the app's MCP server, through the host (``tools/call``)."""
        params = mcp.CallToolRequestParams(name=name, arguments=dict(arguments or {}))
        result: mcp.CallToolResult = await self.request("tools/call", params, timeout=timeout)
        return result

    async def read_server_resource(
        self, uri: str, *, timeout: float | None = None
    ) -> mcp.ReadResourceResult:
        """Read a resource of the app's MCP server, through the host (``resources/read``)."""
        params = mcp.ReadResourceRequestParams(uri=uri)
        result: mcp.ReadResourceResult = await self.request(
            "resources/read", params, timeout=timeout
        )
        return result

    async def send_message(self, content: ContentInput) -> protocol.ActionResult:
        """Add a message to the conversation, as the user (``ui/message``).

        ``content``: a string (one text block) or content blocks (models or wire dicts).
        """
        params = protocol.MessageParams(role="user", content=_content(content))
        result: protocol.ActionResult = await self.request(protocol.MESSAGE, params)
        return result

    async def update_model_context(
        self,
        content: ContentInput | None = None,
        structured_content: Mapping[str, Any] | None = None,
    ) -> None:
        """Tell the model what the view shows now; replaces the previous update."""
        params = protocol.UpdateModelContextParams(
            content=None if content is None else _content(content),
            structured_content=None if structured_content is None else dict(structured_content),
        )
        await self.request(protocol.UPDATE_MODEL_CONTEXT, params)

    async def open_link(self, url: str) -> protocol.ActionResult:
        """Ask the host to open ``url`` outside the sandbox (``ui/open-link``)."""
        result: protocol.ActionResult = await self.request(
            protocol.OPEN_LINK, protocol.OpenLinkParams(url=url)
        )
        return result

    async def download_file(
        self, contents: Sequence[mcp.EmbeddedResource | mcp.ResourceLink | Mapping[str, Any]]
    ) -> protocol.ActionResult:
        """Offer files to the user (``ui/download-file``)."""
        params = protocol.DownloadFileParams.model_validate(
            {"contents": [protocol.to_wire(item) for item in contents]}
        )
        result: protocol.ActionResult = await self.request(protocol.DOWNLOAD_FILE, params)
        return result

    async def request_display_mode(self, mode: protocol.DisplayMode) -> protocol.DisplayMode:
        """Ask for a display mode; returns the mode now in effect (maybe another)."""
        result: protocol.RequestDisplayModeResult = await self.request(
            protocol.REQUEST_DISPLAY_MODE, protocol.RequestDisplayModeParams(mode=mode)
        )
        return result.mode

    async def send_log(self, level: mcp.LoggingLevel, data: Any, logger: str | None = None) -> None:
        """Send a log message to the host (``notifications/message``)."""
        await self.notify(
            "notifications/message",
            mcp.LoggingMessageNotificationParams(level=level, data=data, logger=logger),
        )

    async def send_size_changed(self, width: float | None, height: float | None) -> None:
        """Tell the host the view's size (pixels) changed."""
        await self.notify(
            protocol.SIZE_CHANGED, protocol.SizeChangedParams(width=width, height=height)
        )

    async def request_teardown(self) -> None:
        """Ask the host to close the view (it answers with ``ui/resource-teardown``)."""
        await self.notify(protocol.REQUEST_TEARDOWN)

    # -- receiving -----------------------------------------------------------------------

    async def _receive_loop(self) -> None:
        try:
            while True:
                event = self._machine.receive(await self._transport.receive())
                if event is not None:  # an answer wakes its request itself: no touch
                    await self._handle(event)
                    self._touch()
        except CLOSED_ERRORS:
            self._lost("The host closed the connection")
        except Exception as exc:  # a transport failing in its own way
            logger.warning("The App's transport failed: %r", exc)
            self._lost(f"The transport failed: {exc!r}")

    async def _handle(self, event: AppEvent) -> None:
        """Act on what the machine made of a message. Error answers are sent by the reader
        itself: a host that does not read its answers stops being read (no task per
        answer piles up)."""
        if isinstance(event, RequestReceived):
            assert self._task_group is not None
            scope = self._running[event.request.id] = anyio.CancelScope()
            self._task_group.start_soon(self._answer, event.request, scope)
        elif isinstance(event, Heard):
            callback = getattr(self, f"on_{event.kind}")
            if callback is not None:
                self._callbacks_in.send_nowait((callback, (event.value,)))
        elif isinstance(event, CancelRequested):
            running = self._running.get(event.request_id)
            if running is not None:
                running.cancel()
        elif isinstance(event, Rejected):
            log_first_loudly(logger, event.first, "App rejected %s", event.reason)
            if event.reply is not None:
                await self._try_send(event.reply)
        else:  # HostError
            log_first_loudly(logger, event.first, "The host reported an error: %s", event.message)

    async def _run_callbacks(self) -> None:
        async for callback, args in self._callbacks_out:
            try:
                await call_maybe_async(callback, *args)
            except Exception:
                logger.exception("An App callback failed")
            self._touch()  # what a callback did may be what someone waits for

    # -- answering the host's requests ---------------------------------------------------

    async def _answer(self, request: protocol.Request, scope: anyio.CancelScope) -> None:
        # Counted in flight until its answer is sent, so max_requests also bounds the
        # answers waiting for a host that does not read.
        method = request.method
        try:
            try:
                with scope:
                    result = await self._serve(request)
            except Exception as exc:
                if isinstance(exc, protocol.ProtocolError):
                    first = self._machine.rejected == 0
                    log_first_loudly(logger, first, "App rejected %s: %s", method, exc.message)
                else:
                    logger.warning("App failed to answer %s: %r", method, exc)
                answer = self._machine.fail(request.id, exc)
                if answer is not None:
                    await self._try_send(answer)
                return
            if scope.cancelled_caught:
                return  # the host cancelled it: no answer, as MCP says
            await self._try_send(self._machine.answer(request.id, result))
        finally:
            self._running.pop(request.id, None)
            self._machine.finished(request.id)
        if method == protocol.RESOURCE_TEARDOWN:
            self.torn_down = True
            self._touch()

    async def _serve(self, request: protocol.Request) -> BaseModel | Mapping[str, Any]:
        method = request.method
        if method == "ping":
            return {}
        if method == protocol.RESOURCE_TEARDOWN:
            if self.on_teardown is not None:
                with anyio.fail_after(self.timeout):
                    await call_maybe_async(self.on_teardown)
            return {}
        if method in ("tools/list", "tools/call") and self.registry is not None:
            if method == "tools/list":
                return list_registry_tools(self.registry)
            return await call_registry_tool(self.registry, request.params)
        raise protocol.MethodNotFound(f"Method not found: {method}", method=method)

    def _on_registry_change(self) -> None:
        self._list_changed.set()  # a signal: one notification per burst of changes

    async def _announce_list_changes(self) -> None:
        while True:
            await self._list_changed.wait()
            self._list_changed = anyio.Event()
            await self._try_send(protocol.encode_notification("notifications/tools/list_changed"))

    def __repr__(self) -> str:
        host = self.host_info.name if self.host_info is not None else None
        return f"<App {self.app_info.name!r} {self._state} host={host!r}>"
