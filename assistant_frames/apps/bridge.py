"""``AppBridge``: the host side of one MCP Apps view, over any transport of ours.

It decides what a view may do: the requests it forwards to the MCP server the app came
from are checked against the tool's visibility first. And it is a
:class:`~assistant_frames.ModelContextProvider`: the view's own tools and what it last
told the model (``ui/update-model-context``) join a parent registry like a frame's (kept
current by :class:`~.view_context.ViewContext`). How it talks with the view (the
protocol's rules, reading, writing, its own requests) is
:class:`~.bridge_connection.BridgeConnection`'s.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeAlias

import anyio
import mcp_types as mcp
from anyio.abc import ObjectStream, TaskGroup
from mcp import Client

from .._anyio import call_maybe_async
from .._driver import Driver
from .._version import package_version
from ..errors import AssistantFramesError, ContextTimeout, FrameDisconnected, ToolCallError
from ..mcp.results import from_call_result
from ..registry.context import ModelContext, Unsubscribe
from . import protocol
from .bridge_connection import BridgeConnection
from .bridge_machine import BridgeMachine
from .client_server import as_app_server
from .display import as_host_context, updated_host_context
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

BridgeState = Literal["new", "initializing", "initialized", "disconnected", "closed"]
"""``new``: no ``ui/initialize`` yet; ``initializing``: answered, awaiting
``initialized``; ``initialized``: talking; ``disconnected``: the transport ended;
``closed``: the bridge was closed."""

#: A handler: called with the request's typed params; plain or async.
Handler: TypeAlias = Callable[[Any], Any]


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
        self._machine = BridgeMachine(
            host_info or _default_host_info(),
            host_context=as_host_context(host_context),
            id_prefix=f"host-{secrets.token_hex(3)}-",
            max_requests=max_requests,
        )
        # ui/initialize (plain callable): a host context returned answers it instead.
        self._machine.on_initialize = on_initialize
        self._sandbox = sandbox
        self._transport = transport
        self._view_context = ViewContext(self)  # what the view offers the model context
        self._connection = BridgeConnection(
            self,
            transport,
            self._machine,
            dispatch=self._dispatch,
            notification=self._notification,
            initialized=self._initialized,
            ended=self._connection_ended,
        )
        self._closed = False
        self._entered = False
        # Set when the view confirmed initialization or the connection ended.
        self._init_settled: anyio.Event | None = None
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
        self._init_settled = anyio.Event()
        self._ended = anyio.Event()
        self._connection.open()
        async with self._tasks.open() as group:
            self._task_group = group
            self._connection.start(group)
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
        closed = FrameDisconnected(f"The bridge of {self.name} was closed", frame=self.name)
        self._connection.lose(closed)
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
        if self._connection.ended_reason is not None:
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
        ended = self._connection.ended_reason
        if self._machine.state == "initialized" and ended is None:
            return
        if ended is not None:
            raise self._connection.lost()
        said = "sent no ui/initialize" if self._machine.state == "new" else "did not confirm"
        raise ContextTimeout(
            f"The view {self.name} {said} within {limit:g} s (ui/initialize, then"
            " ui/notifications/initialized): is it an MCP Apps view (an ext-apps App)?",
            frame=self.name,
        )

    # -- what the host tells the view ----------------------------------------------------

    async def send_tool_input(self, arguments: Mapping[str, Any] | None) -> None:
        """The complete arguments of the tool call the view shows (queued until initialized)."""
        await self._connection.send(self._machine.send_tool_input(arguments))

    async def send_tool_input_partial(self, arguments: Mapping[str, Any]) -> None:
        """Arguments still streaming in; ``RuntimeError`` after the complete input."""
        await self._connection.send(self._machine.send_tool_input_partial(arguments))

    async def send_tool_result(self, result: mcp.CallToolResult | Mapping[str, Any]) -> None:
        """The tool call's result (a ``CallToolResult`` or its wire form)."""
        await self._connection.send(self._machine.send_tool_result(result))

    async def send_tool_cancelled(self, reason: str | None = None) -> None:
        """The tool call was cancelled, perhaps saying why."""
        await self._connection.send(self._machine.send_tool_cancelled(reason))

    async def set_host_context(self, context: HostContext | Mapping[str, Any]) -> None:
        """Replace the host context; the view is told the keys whose values changed."""
        await self._connection.send(self._machine.set_host_context(context))

    async def update_host_context(self, **changes: Any) -> None:
        """Change some keys of the host context (``theme="dark"``, ``display_mode=...``)."""
        await self.set_host_context(updated_host_context(self._machine.host_context, changes))

    async def send_tool_list_changed(self) -> None:
        """Tell the view the server's tools changed."""
        await self._connection.send(self._machine.notify("notifications/tools/list_changed"))

    async def send_resource_list_changed(self) -> None:
        """Tell the view the server's resources changed."""
        await self._connection.send(self._machine.notify("notifications/resources/list_changed"))

    async def send_prompt_list_changed(self) -> None:
        """Tell the view the server's prompts changed."""
        await self._connection.send(self._machine.notify("notifications/prompts/list_changed"))

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
            await self._connection.request(protocol.RESOURCE_TEARDOWN, {}, timeout)
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
            page: mcp.ListToolsResult = await self._connection.request(
                "tools/list", params, timeout
            )
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
        result: mcp.CallToolResult = await self._connection.request(
            "tools/call", params, timeout, name
        )
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

    # -- what the view asks ----------------------------------------------------------------

    def _initialized(self) -> None:
        """The view confirmed initialization: who waits hears it; its tools are listed."""
        self._init_settled.set()  # type: ignore[union-attr]
        capabilities = self._machine.app_capabilities
        if capabilities is not None and capabilities.tools is not None:
            self._view_context.want_tools(self._task_group)  # type: ignore[arg-type]

    async def _dispatch(self, request: Request) -> Any:
        method = request.method
        if method == "ping":
            return {}
        if method in FORWARDED:
            return await forward(self.server, request, self._connection.send_soon)
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
                in_flight = self._connection.in_flight
                scope = in_flight.get(request_id) if request_id is not None else None
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
        send_soon = self._connection.send_soon

        def tools() -> None:
            send_soon(self._machine.notify("notifications/tools/list_changed"))

        def resources() -> None:
            send_soon(self._machine.notify("notifications/resources/list_changed"))

        def prompts() -> None:
            send_soon(self._machine.notify("notifications/prompts/list_changed"))

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

    def _connection_ended(self) -> None:
        """Who waits on the view hears it is gone; its tools and update leave the context."""
        if self._ended is not None:
            self._ended.set()
        if self._init_settled is not None:
            self._init_settled.set()
        self._view_context.clear()

    def __repr__(self) -> str:
        return f"<AppBridge {self.name!r} {self.state} tools={len(self._view_context.tools)}>"


def _default_host_info() -> mcp.Implementation:
    return mcp.Implementation(name="assistant-frames", version=package_version())
