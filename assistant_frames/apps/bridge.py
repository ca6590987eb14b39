"""``AppBridge``: the host side of one MCP Apps view, over any transport of ours.

The protocol's rules live in :class:`~assistant_frames.apps.bridge_machine.BridgeMachine`;
this is its anyio driver. One task at a time reads the transport and feeds the machine;
when a request comes, that task serves it and another reader (an idle one, or a new
task) reads on, so a slow handler holds up no one. One task times out our requests. A
message goes straight to the transport when nothing is queued and the transport
promises not to wait; otherwise it is queued for a writer task, which keeps the order
(and receiving never waits for a send).

It decides what a view may do: the requests it forwards to the MCP server the app came
from are checked against the tool's visibility first. And it is a
:class:`~assistant_frames.ModelContextProvider`: the view's own tools and what it last
told the model (``ui/update-model-context``) join a parent registry like a frame's (kept
current by :class:`~.view_context.ViewContext`).
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Mapping
from contextlib import suppress
from typing import Any, Literal, NoReturn, TypeAlias

import anyio
import mcp_types as mcp
from anyio.abc import ObjectStream, TaskGroup
from mcp import Client

from .._anyio import call_maybe_async, event_class, expire_calls
from .._driver import Driver
from .._version import package_version
from ..calls import PendingCall
from ..errors import (
    AssistantFramesError,
    ContextTimeout,
    FrameDisconnected,
    ToolCallError,
    ToolCallTimeout,
    error_from_jsonrpc,
)
from ..mcp.results import from_call_result
from ..registry.context import ModelContext, Unsubscribe
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
from .client_server import as_app_server
from .errors import AppRequestError, AppTimeout
from .forwarding import FORWARDED, AppServer, forward
from .protocol import (
    ActionResult,
    ContentModalities,
    DisplayMode,
    Empty,
    HostCapabilities,
    HostContext,
    ListChanged,
    Notification,
    ProtocolError,
    Request,
)
from .view_context import ViewContext

__all__ = ["AppBridge", "BridgeState", "Handler"]

logger = logging.getLogger("assistant_frames.apps")

_SEND_BUFFER = 256  # messages waiting for the writer task before senders wait
_SHUTDOWN_SEND_TIMEOUT = 1.0
_IDLE_READERS = 4  # reader tasks kept waiting to read again, beyond them they end

BridgeState = Literal["new", "initializing", "initialized", "disconnected", "closed"]
"""``new``: no ``ui/initialize`` yet; ``initializing``: answered, awaiting
``initialized``; ``initialized``: talking; ``disconnected``: the transport ended;
``closed``: the bridge was closed."""

#: A handler: called with the request's typed params; plain or async.
Handler: TypeAlias = Callable[[Any], Any]


# MCP's tool name rule (SEP-986): what a view's own tool may be called.
_CLOSE_TIMEOUT = 5.0  # closing the transport of a view that does not read


class AppBridge(Driver):
    """The host end of a connection to one MCP Apps view; a ``ModelContextProvider``.

    ``transport`` carries the view's JSON-RPC messages (a :func:`memory_pair` end, a
    WebSocket through the shipped browser relay, a :class:`Multiplexer` sub-stream...);
    the bridge owns it and closes it on exit. ``server`` is the MCP server the app came
    from: an entered ``MCPFrameHost`` or ``mcp.Client`` (wrapped in a :class:`ClientServer`),
    or any :class:`AppServer`. The view's ``tools/call``, ``resources/*`` and
    ``prompts/list`` go there, a ``tools/call`` only for a tool whose visibility
    includes ``"app"``.

    ``host_info``, ``host_capabilities`` and ``host_context`` are what the view is told
    when it initializes (capabilities default to what the handlers and ``server``
    offer, and ``sandbox``: the CSP and permissions the host grants the view).
    ``timeout`` bounds each request sent to the view, ``init_timeout`` the wait in
    :meth:`wait_initialized`; ``max_requests`` bounds the view's requests in flight
    (more are refused).

    The view's own tools (``tools/list`` of a view that declares ``tools``) join the
    context as untrusted input: only names MCP allows (1 to 128 of ``A-Z a-z 0-9 _ - .``)
    and at most ``max_view_tools`` of them (the first listed); any other is left out and
    logged once.

    Handlers (``on_message``... as keywords or attributes) are plain or async callables
    taking the request's typed params; an unset one makes its method answer "method not
    found". ``extensions`` adds requests MCP Apps does not have (namespaced names such
    as ``x-assistant-frames/modal``), each answered by its handler from the raw params.
    A handler's exception answers its request with an error; it never reaches the bridge.
    """

    _noun = "bridge"

    def __init__(
        self,
        transport: ObjectStream[Any],
        *,
        server: AppServer | Client | None = None,
        host_info: mcp.Implementation | None = None,
        host_capabilities: HostCapabilities | None = None,
        host_context: HostContext | Mapping[str, Any] | None = None,
        sandbox: protocol.SandboxCapability | None = None,
        name: str | None = None,
        timeout: float | None = 30.0,
        init_timeout: float = 30.0,
        max_requests: int = 64,
        max_view_tools: int = 128,
        on_message: Handler | None = None,
        on_open_link: Handler | None = None,
        on_download_file: Handler | None = None,
        on_update_model_context: Handler | None = None,
        on_request_display_mode: Handler | None = None,
        on_sampling: Handler | None = None,
        on_size_changed: Handler | None = None,
        on_log: Handler | None = None,
        on_request_teardown: Callable[[], Any] | None = None,
        on_initialize: Callable[[protocol.InitializeParams], HostContext | None] | None = None,
        extensions: Mapping[str, Handler] | None = None,
    ) -> None:
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout must be positive or None, not {timeout!r}")
        if not init_timeout > 0:
            raise ValueError(f"init_timeout must be positive, not {init_timeout!r}")
        self.name = name or "app"
        clashes = sorted(set(extensions or ()) & set(protocol.METHODS))
        if clashes:
            raise ValueError(f"extensions cannot take over MCP Apps methods: {clashes}")
        #: Requests outside MCP Apps this host answers, ``{method: handler}``: the
        #: handler takes the params as received (a dict) and returns a result object.
        self.extensions: dict[str, Handler] = dict(extensions or {})
        #: The app's server (an ``mcp.Client`` passed in, wrapped in a ``ClientServer``).
        self.server: AppServer | None = as_app_server(server)
        self.timeout = timeout
        self.init_timeout = init_timeout
        if max_view_tools < 0:
            raise ValueError(f"max_view_tools must be 0 or more, not {max_view_tools!r}")
        self.max_view_tools = max_view_tools
        #: ``ui/message``: a message for the conversation, as the user (``MessageParams``).
        self.on_message = on_message
        #: ``ui/open-link`` (``OpenLinkParams``).
        self.on_open_link = on_open_link
        #: ``ui/download-file`` (``DownloadFileParams``).
        self.on_download_file = on_download_file
        #: ``ui/update-model-context`` (``UpdateModelContextParams``), after it is stored.
        self.on_update_model_context = on_update_model_context
        #: ``ui/request-display-mode`` (``RequestDisplayModeParams``) -> the mode now in
        #: effect; unset: the current mode stays.
        self.on_request_display_mode = on_request_display_mode
        #: ``sampling/createMessage`` (``mcp.CreateMessageRequestParams``) -> a result.
        self.on_sampling = on_sampling
        #: ``ui/notifications/size-changed`` (``SizeChangedParams``).
        self.on_size_changed = on_size_changed
        #: ``notifications/message`` (``mcp.LoggingMessageNotificationParams``).
        self.on_log = on_log
        #: ``ui/notifications/request-teardown``; unset: the bridge tears the view down
        #: (:meth:`teardown`) and closes.
        self.on_request_teardown = on_request_teardown
        self._capabilities = host_capabilities
        if host_context is not None and not isinstance(host_context, HostContext):
            host_context = HostContext.model_validate(host_context)
        self._machine = BridgeMachine(
            host_info or _default_host_info(),
            host_context=host_context,
            id_prefix=f"host-{secrets.token_hex(3)}-",
            max_requests=max_requests,
        )
        # ui/initialize (plain callable): a host context returned answers it instead.
        self._machine.on_initialize = on_initialize
        self._sandbox = sandbox
        self._transport = transport
        self._view_context = ViewContext(self)  # what the view offers the model context
        self._in_flight: dict[protocol.RequestId, anyio.CancelScope] = {}
        self._ended_reason: FrameDisconnected | None = None
        self._closed = False
        self._entered = False
        self._new_event: Callable[[], anyio.Event] = anyio.Event
        # Set when the view confirmed initialization or the connection ended.
        self._init_settled: anyio.Event | None = None
        self._writer = MessageWriter(
            transport,
            on_closed=self._transport_ended,
            on_unsendable=self._unsendable,
            queue_size=_SEND_BUFFER,
        )
        self._followers: list[anyio.Event] = []  # idle readers, each waiting for its turn
        self._task_group: TaskGroup | None = None
        self._init_lifecycle()
        self._unsubscribe: list[Unsubscribe] = []
        self._tearing_down = False

    # -- lifecycle -----------------------------------------------------------------------

    async def __aenter__(self) -> AppBridge:
        if self._entered:
            raise RuntimeError("An AppBridge can be entered only once")
        self._entered = True
        self._machine.host_capabilities = self._capabilities or self._default_capabilities()
        self._new_event = event_class()
        self._init_settled = anyio.Event()
        self._ended = anyio.Event()
        self._writer.open()
        async with self._tasks.open() as group:
            self._task_group = group
            group.start_soon(self._writer.run)
            group.start_soon(self._receive_loop)
            group.start_soon(expire_calls, self._machine.calls)
            if self.server is not None:
                self._follow_server(self.server)
        return self

    async def _stop(self, *, cancel_tasks: bool = True) -> None:
        """Everything closing does but leaving the task group (a task of it may stop):
        cancel the view's requests in flight, fail ours, close the transport.

        The task group's scope encloses the caller's ``async with`` block, so only the
        caller's own close cancels it; stopping from within leaves the tasks to end with
        the transport, or with the block.
        """
        if self._closed:
            return
        self._closed = True
        self._lose(FrameDisconnected(f"The bridge of {self.name} was closed", frame=self.name))
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        if cancel_tasks and self._task_group is not None:
            self._task_group.cancel_scope.cancel()
        with anyio.CancelScope(shield=True):
            await self._transport.aclose()

    @property
    def max_requests(self) -> int:
        """The bound on the view's requests in flight."""
        return self._machine.max_requests

    @property
    def state(self) -> BridgeState:
        """Where the connection is (see :data:`BridgeState`)."""
        if self._closed:
            return "closed"
        if self._ended_reason is not None:
            return "disconnected"
        return self._machine.state

    @property
    def app_info(self) -> mcp.Implementation | None:
        """The view's ``appInfo`` from ``ui/initialize`` (``None`` before)."""
        return self._machine.app_info

    @property
    def app_capabilities(self) -> protocol.AppCapabilities | None:
        """The view's ``appCapabilities`` from ``ui/initialize`` (``None`` before)."""
        return self._machine.app_capabilities

    @property
    def host_capabilities(self) -> HostCapabilities:
        """What the view is (or will be) told the host offers."""
        return self._capabilities or self._machine.host_capabilities

    @property
    def host_context(self) -> HostContext:
        """The host context as the view knows it (or will, once initialized)."""
        return self._machine.host_context

    @property
    def protocol_version(self) -> str | None:
        """The version agreed on in ``ui/initialize`` (``None`` before)."""
        return self._machine.protocol_version

    @property
    def malformed_count(self) -> int:
        """Received messages that were answered or dropped as malformed."""
        return self._machine.malformed

    async def wait_initialized(self, timeout: float | None = None) -> None:
        """Wait until the view sent ``ui/notifications/initialized``.

        Raises :class:`ContextTimeout` (a ``TimeoutError``) after ``timeout`` seconds
        (default: ``init_timeout``) and :class:`FrameDisconnected` if the connection
        ends first.
        """
        if self._init_settled is None:
            raise RuntimeError("Enter the bridge (async with) before waiting on it")
        limit = self.init_timeout if timeout is None else timeout
        with anyio.move_on_after(limit):
            await self._init_settled.wait()
        if self._machine.state == "initialized" and self._ended_reason is None:
            return
        if self._ended_reason is not None:
            raise self._lost()
        said = "sent no ui/initialize" if self._machine.state == "new" else "did not confirm"
        raise ContextTimeout(
            f"The view {self.name} {said} within {limit:g} s (ui/initialize, then"
            " ui/notifications/initialized): is it an MCP Apps view (an ext-apps App)?",
            frame=self.name,
        )

    # -- what the host tells the view ----------------------------------------------------

    async def send_tool_input(self, arguments: Mapping[str, Any] | None) -> None:
        """The complete arguments of the tool call the view shows (queued until initialized)."""
        await self._send(self._machine.send_tool_input(arguments))

    async def send_tool_input_partial(self, arguments: Mapping[str, Any]) -> None:
        """Arguments still streaming in; ``RuntimeError`` after the complete input."""
        await self._send(self._machine.send_tool_input_partial(arguments))

    async def send_tool_result(self, result: mcp.CallToolResult | Mapping[str, Any]) -> None:
        """The tool call's result (a ``CallToolResult`` or its wire form)."""
        await self._send(self._machine.send_tool_result(result))

    async def send_tool_cancelled(self, reason: str | None = None) -> None:
        """The tool call was cancelled, perhaps saying why."""
        await self._send(self._machine.send_tool_cancelled(reason))

    async def set_host_context(self, context: HostContext | Mapping[str, Any]) -> None:
        """Replace the host context; the view is told the keys whose values changed."""
        await self._send(self._machine.set_host_context(context))

    async def update_host_context(self, **changes: Any) -> None:
        """Change some keys of the host context (``theme="dark"``, ``display_mode=...``)."""
        current = self._machine.host_context.model_dump(exclude_none=True)
        await self.set_host_context(HostContext.model_validate({**current, **changes}))

    async def send_tool_list_changed(self) -> None:
        """Tell the view the server's tools changed."""
        await self._send(self._machine.notify("notifications/tools/list_changed"))

    async def send_resource_list_changed(self) -> None:
        """Tell the view the server's resources changed."""
        await self._send(self._machine.notify("notifications/resources/list_changed"))

    async def send_prompt_list_changed(self) -> None:
        """Tell the view the server's prompts changed."""
        await self._send(self._machine.notify("notifications/prompts/list_changed"))

    async def teardown(self, timeout: float | None = None) -> bool:
        """Ask the view to tear down (``ui/resource-teardown``) and wait for its answer.

        ``True`` once it answered (``-32601`` from a view without a teardown handler
        counts) or when it never initialized (nothing to tear down); ``False`` when it
        did not answer within ``timeout`` seconds (default: the bridge's), answered with
        another error, or the connection ended. Close the bridge afterwards.
        """
        if self.state in ("new", "disconnected", "closed"):
            return self.state == "new"
        try:
            await self._request(protocol.RESOURCE_TEARDOWN, {}, timeout)
        except (AssistantFramesError, ProtocolError, TimeoutError) as exc:
            logger.info("The view %s did not tear down cleanly: %s", self.name, exc)
            return False
        return True

    async def list_view_tools(self, timeout: float | None = None) -> list[mcp.Tool]:
        """The view's own tools (host-to-view ``tools/list``, every page).

        Raises :class:`~assistant_frames.apps.AppRequestError` when the view answers
        with an error, :class:`~assistant_frames.apps.AppTimeout` (a ``TimeoutError``)
        after ``timeout`` seconds (default: the bridge's) and :class:`FrameDisconnected`
        when the connection ends.
        """
        tools: list[mcp.Tool] = []
        cursor: str | None = None
        for _ in range(100):  # a view that pages forever is cut off
            params = {"cursor": cursor} if cursor else {}
            page: mcp.ListToolsResult = await self._request("tools/list", params, timeout)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    async def call_view_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None, timeout: float | None = None
    ) -> mcp.CallToolResult:
        """Call the view's tool ``name`` (host-to-view ``tools/call``); its result as sent.

        Raises :class:`ToolCallError` when the view answers with an error,
        :class:`ToolCallTimeout` (the view is told to cancel) and
        :class:`FrameDisconnected` as :meth:`call_tool` does.
        """
        params = {"name": name, "arguments": dict(arguments or {})}
        result: mcp.CallToolResult = await self._request("tools/call", params, timeout, name)
        return result

    # -- ModelContextProvider ------------------------------------------------------------

    def get_model_context(self) -> ModelContext:
        """The view's tools and its last model-context update (as ``system``)."""
        return self._view_context.context

    def subscribe(self, callback: Callable[[], None]) -> Unsubscribe:
        """Call ``callback()`` whenever the view's tools or model context change."""
        return self._view_context.subscribe(callback)

    @property
    def model_context(self) -> protocol.UpdateModelContextParams | None:
        """The view's last ``ui/update-model-context`` (``None``: none yet)."""
        return self._view_context.model_context

    @model_context.setter
    def model_context(self, update: protocol.UpdateModelContextParams | None) -> None:
        self._view_context.model_context = update  # settable, as when it was an attribute

    async def call_tool(self, name: str, args: Any = None, *, timeout: float | None = None) -> Any:
        """Call the view's tool ``name`` and return its value (structured content or text).

        Raises as :meth:`call_view_tool`, and :class:`ToolCallError` for an ``isError``
        result.
        """
        result = await self.call_view_tool(name, args, timeout)
        try:
            return from_call_result(result, name)
        except ToolCallError as exc:
            exc.frame = self.name
            raise

    async def refresh_view_tools(self, timeout: float | None = None) -> list[mcp.Tool]:
        """List the view's tools now and offer them, as its ``tools/list_changed`` does.

        The bridge does this by itself once the view is initialized (when it declares
        the ``tools`` capability); await it to know the tools are in the context.
        """
        listed = await self.list_view_tools(timeout)
        return self._view_context.offer(listed, self.max_view_tools)

    # -- sending -------------------------------------------------------------------------

    async def _send(self, messages: list[dict[str, Any]], *, bounded: bool = True) -> None:
        """Send in order, through the writer.

        ``bounded``: wait at most :attr:`timeout` for room in the queue (else as long as
        it takes: the reader's own answers, so a view that does not read is not read).
        """
        if not messages:
            return
        if not self._writer.is_open:
            raise RuntimeError(f"Enter the bridge of {self.name} (async with) first")
        if self._ended_reason is not None:
            raise self._lost()
        await self._writer.send(messages, timeout=self.timeout if bounded else None)

    def _send_soon(self, messages: list[dict[str, Any]]) -> None:
        """Send from a callback (no await): in order, by the writer task.

        Queued at once while there is room, so a call's progress goes before its answer
        (a task per message would race: trio runs new tasks in no set order). Only a
        full queue leaves the rest to a task.
        """
        if not messages or self._ended_reason is not None:
            return
        rest = self._writer.send_soon(messages)
        if rest and self._task_group is not None:
            self._task_group.start_soon(self._send_quietly, rest)

    async def _send_quietly(self, messages: list[dict[str, Any]]) -> None:
        """Send what the bridge owes the view (answers, notifications); a view that
        leaves no room for it within :attr:`timeout` is disconnected, saying so."""
        try:
            await self._send(messages)
        except (*CLOSED_ERRORS, FrameDisconnected):
            pass  # the connection ended: its end says why
        except TimeoutError:
            await self._disconnect_slow_view()

    async def _disconnect_slow_view(self) -> None:
        if self._ended_reason is not None:
            return
        unanswered = len(self._in_flight)
        reason = (
            f"{self.name} read nothing for {self.timeout:g} s (the bridge's timeout): disconnected"
        )
        logger.warning(
            "%s; %d of its requests end unanswered, and the bridge's own requests fail",
            reason,
            unanswered,
        )
        self._lose(FrameDisconnected(reason, frame=self.name))
        with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_TIMEOUT):
            await self._transport.aclose()  # the view sees the end, not silence

    def _unsendable(self, exc: Exception) -> None:
        """A message (a handler's result) had no JSON form: the connection ends."""
        logger.warning("The bridge of %s could not send a message: %s", self.name, exc)
        self._lose(FrameDisconnected(f"The bridge of {self.name} failed to send: {exc}"))

    async def _request(
        self, method: str, params: Any, timeout: float | None, tool: str | None = None
    ) -> Any:
        """Send our request to the view and return its typed result."""
        if self._ended_reason is not None or not self._writer.is_open:
            raise self._lost(tool)
        limit = self.timeout if timeout is None else timeout
        done = self._new_event()
        deadline = None if limit is None else anyio.current_time() + limit
        messages, call = self._machine.request(method, params, deadline=deadline, wake=done.set)
        try:
            try:
                await self._send(messages)
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
            self._send_soon(self._cancel_message(call, "Timed out"))
            self._timed_out(call, limit, tool)
        error = call.error
        if isinstance(error, FrameDisconnected):
            raise self._lost(tool)
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
            await self._send(self._cancel_message(call, reason))

    # -- receiving -----------------------------------------------------------------------

    async def _receive_loop(self) -> None:
        """Read the view's messages until one is a request, and serve that one here.

        Leader and followers: the task that read a request hands reading on to an idle
        reader (or a new one) and serves the request itself, so its answer goes out
        without waiting for a task to be scheduled; then it waits, idle, to read again.
        """
        while True:
            admitted = await self._read_until_request()
            if admitted is None:  # the connection ended: the idle readers end too
                for follower in self._followers:
                    follower.set()
                self._followers.clear()
                return
            group = self._task_group
            assert group is not None
            if self._followers:
                self._followers.pop().set()
            else:
                group.start_soon(self._receive_loop)
            await self._serve(*admitted)
            if len(self._followers) >= _IDLE_READERS or self._ended_reason is not None:
                return
            turn = self._new_event()
            self._followers.append(turn)
            await turn.wait()
            if self._ended_reason is not None:
                return

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
                    scope = self._in_flight[event.request.id] = anyio.CancelScope()
                    return event.request, scope
                if isinstance(event, Send):
                    # Sent by the reader itself, not a task per answer: a view flooding
                    # without reading then stops being read (backpressure).
                    await self._send(event.messages, bounded=False)
                    if machine.initializations > max(initializations, 1):
                        logger.info("The view %s sent ui/initialize again; answered", self.name)
                elif isinstance(event, Initialized):
                    await self._send(event.messages, bounded=False)
                    self._init_settled.set()  # type: ignore[union-attr]
                    capabilities = machine.app_capabilities
                    if capabilities is not None and capabilities.tools is not None:
                        self._view_context.want_tools(self._task_group)  # type: ignore[arg-type]
                elif isinstance(event, NotificationReceived):
                    await self._notification(event.notification)
        except CLOSED_ERRORS as exc:
            self._transport_ended(exc)
        except FrameDisconnected:  # lost while answering: already said why
            pass
        except Exception as exc:  # a transport failing in its own way
            logger.warning("Transport of %s failed: %r", self.name, exc)
            self._lose(FrameDisconnected(f"The transport of {self.name} failed: {exc!r}"))
        return None

    def _extension_request(self, raw: object) -> Request | None:
        """``raw`` as a request for one of :attr:`extensions` (``None``: any other message).

        Checked before the machine, which knows MCP Apps methods only and would answer
        "method not found".
        """
        if not (isinstance(raw, dict) and self.extensions and protocol.is_jsonrpc(raw)):
            return None
        method, request_id, params = raw.get("method"), raw.get("id"), raw.get("params")
        # A method that is not a string may be unhashable (a list): no dict lookup for it.
        if not isinstance(method, str) or method not in self.extensions:
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
            self._in_flight.pop(request.id, None)
            self._machine.finished(request.id)

    async def _dispatch(self, request: Request) -> Any:
        method = request.method
        if method == "ping":
            return {}
        if method in FORWARDED:
            return await forward(self.server, request, self._send_soon)
        if method == protocol.UPDATE_MODEL_CONTEXT:
            self._view_context.update(request.params)
            if self.on_update_model_context is not None:
                await call_maybe_async(self.on_update_model_context, request.params)
            return {}
        if method == protocol.REQUEST_DISPLAY_MODE:
            return await self._display_mode(request.params)
        if method in self.extensions:
            result = await call_maybe_async(self.extensions[method], request.params)
            return {} if result is None else result
        handler = self._handlers().get(method)
        if handler is None:
            raise protocol.MethodNotFound(
                f"Method not found: {method} (the host does not offer it)"
            )
        result = await call_maybe_async(handler, request.params)
        if method == "sampling/createMessage":
            if result is None:
                raise protocol.InvalidParams("The host's sampling handler returned nothing")
            return result
        return ActionResult() if result is None else result

    def _handlers(self) -> dict[str, Handler | None]:
        return {
            protocol.MESSAGE: self.on_message,
            protocol.OPEN_LINK: self.on_open_link,
            protocol.DOWNLOAD_FILE: self.on_download_file,
            "sampling/createMessage": self.on_sampling,
        }

    async def _display_mode(self, params: protocol.RequestDisplayModeParams) -> Any:
        current: DisplayMode = self._machine.host_context.display_mode or "inline"
        if self.on_request_display_mode is None:
            return {"mode": current}
        chosen = await call_maybe_async(self.on_request_display_mode, params)
        if isinstance(chosen, protocol.RequestDisplayModeResult):
            chosen = chosen.mode
        mode = chosen if chosen in ("inline", "fullscreen", "pip") else current
        if mode != current:  # the view hears of the change as hosts tell it any other
            await self.update_host_context(display_mode=mode)
        return {"mode": mode}

    async def _notification(self, note: Notification) -> None:
        method = note.method
        try:
            if method == protocol.SIZE_CHANGED and self.on_size_changed is not None:
                await call_maybe_async(self.on_size_changed, note.params)
            elif method == "notifications/message":
                logger.debug("Log from the view %s: %s", self.name, note.raw_params)
                if self.on_log is not None:
                    await call_maybe_async(self.on_log, note.params)
            elif method == "notifications/cancelled":
                request_id = note.params.request_id
                scope = self._in_flight.get(request_id) if request_id is not None else None
                if scope is not None:
                    scope.cancel()
            elif method == "notifications/tools/list_changed":
                capabilities = self._machine.app_capabilities
                if capabilities is not None and capabilities.tools is not None:
                    self._view_context.want_tools(self._task_group)  # type: ignore[arg-type]
            elif method == protocol.REQUEST_TEARDOWN:
                if self.on_request_teardown is not None:
                    await call_maybe_async(self.on_request_teardown)
                elif not self._tearing_down:  # one teardown, however often it is asked
                    self._tearing_down = True
                    self._task_group.start_soon(self._teardown_and_close)  # type: ignore[union-attr]
        except Exception:
            logger.exception("A handler of %s for %s raised", self.name, method)

    async def _teardown_and_close(self) -> None:
        await self.teardown()
        await self._stop(cancel_tasks=False)

    # -- the app's server ------------------------------------------------------------------

    def _follow_server(self, server: AppServer) -> None:
        def tools() -> None:
            self._send_soon(self._machine.notify("notifications/tools/list_changed"))

        def resources() -> None:
            self._send_soon(self._machine.notify("notifications/resources/list_changed"))

        def prompts() -> None:
            self._send_soon(self._machine.notify("notifications/prompts/list_changed"))

        self._unsubscribe = [
            server.subscribe(tools),
            server.subscribe_resources(resources),
            server.subscribe_prompts(prompts),
        ]

    def _default_capabilities(self) -> HostCapabilities:
        modalities = ContentModalities(text=Empty(), structured_content=Empty())
        server = self.server is not None
        return HostCapabilities(
            open_links=Empty() if self.on_open_link is not None else None,
            download_file=Empty() if self.on_download_file is not None else None,
            server_tools=ListChanged(list_changed=True) if server else None,
            server_resources=ListChanged(list_changed=True) if server else None,
            logging=Empty(),
            update_model_context=modalities,
            message=modalities if self.on_message is not None else None,
            sampling=protocol.SamplingCapability() if self.on_sampling is not None else None,
            sandbox=self._sandbox,
        )

    # -- the end ---------------------------------------------------------------------------

    def _transport_ended(self, exc: BaseException) -> None:
        reason = close_reason(exc)
        message = (
            f"{self.name} disconnected: {reason.description}"
            if reason.description
            else f"{self.name} closed the connection"
        )
        self._lose(FrameDisconnected(message, frame=self.name))

    def _lose(self, error: FrameDisconnected) -> None:
        if self._ended_reason is not None:
            return
        error.frame = self.name
        self._ended_reason = error
        self._writer.stop()  # what is queued dies with the connection
        self._machine.calls.fail_all(error)
        for scope in self._in_flight.values():
            scope.cancel()
        if self._ended is not None:
            self._ended.set()
        if self._init_settled is not None:
            self._init_settled.set()
        self._view_context.clear()

    def _lost(self, tool: str | None = None) -> FrameDisconnected:
        known = self._ended_reason
        message = known.message if known is not None else f"{self.name} is not connected"
        return FrameDisconnected(message, tool_name=tool, frame=self.name)

    def __repr__(self) -> str:
        return f"<AppBridge {self.name!r} {self.state} tools={len(self._view_context.tools)}>"


def _default_host_info() -> mcp.Implementation:
    return mcp.Implementation(name="assistant-frames", version=package_version())
