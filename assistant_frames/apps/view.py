"""``AppView``: a Python host's view of one app item in a conversation.

An app item says which view to show (a ``ui://`` resource, or HTML the host already
has), for which tool call, and where (a display mode). The ``AppView`` makes every
decision a host owns, in Python, and drives an :class:`~.bridge.AppBridge` over the
transport a caller gives it (a WebSocket to the page that renders the iframe, or a
:func:`~assistant_frames.memory_pair` end and a Python :class:`~.app.App` in tests):

- resolving: ``resources/read`` through the app's server, checked
  (:func:`~.resource.resolve_resource`), into HTML with its CSP and permissions;
- the lifecycle: ``ui/initialize`` within ``init_timeout``, the tool's input, partial
  inputs, result or cancellation (only for an item with a tool-call id), and
  ``ui/resource-teardown`` sent and awaited (bounded) before the view goes, for any
  reason;
- display modes (:mod:`.display`), the host context and its partial updates, the link
  policy (:class:`~.links.LinkPolicy`), and the view's messages and model-context
  updates to the host's callbacks. The view's ``tools/call`` and ``resources/*`` go to
  its own server only, gated by visibility (:mod:`.forwarding`).

:attr:`AppView.state` is ``"resolving"``, ``"loading"`` (the HTML is known; waiting for
the view to connect and initialize), ``"ready"``, ``"error"`` (:attr:`AppView.error`
says why; show :attr:`AppView.fallback_text`) or ``"closed"``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from contextlib import suppress
from types import TracebackType
from typing import Any, Literal, Protocol, TypeAlias

import anyio
import mcp_types as mcp
from anyio.abc import ObjectStream, TaskStatus
from mcp import Client

from .._anyio import call_maybe_async
from ..errors import ContextTimeout, FrameDisconnected
from ..mcp.tools import mcp_tools
from .bridge import AppBridge, Handler
from .client_server import as_app_server
from .display import (
    DISPLAY_MODES,
    allowed_display_modes,
    as_host_context,
    choose_display_mode,
    updated_host_context,
)
from .forwarding import AppServer
from .links import LinkPolicy
from .protocol import (
    ActionResult,
    DisplayMode,
    HostContext,
    InitializeParams,
    MessageParams,
    OpenLinkParams,
    RequestDisplayModeParams,
    SandboxCapability,
    SizeChangedParams,
    ToolInfo,
    UpdateModelContextParams,
)
from .resource import AppResource, AppResourceError, check_ui_uri, resolve_resource

__all__ = ["AppView", "ViewCallback", "ViewState", "WidgetStateSource"]

logger = logging.getLogger("assistant_frames.apps")

ViewState = Literal["resolving", "loading", "ready", "error", "closed"]
"""``resolving``: reading the resource; ``loading``: the HTML is known, the view has not
initialized (yet, or again after its connection ended); ``ready``: initialized;
``error``: the resource could not be shown or the view never initialized; ``closed``."""

#: A host callback: called with the view and the request's typed params; plain or async.
ViewCallback: TypeAlias = Callable[["AppView", Any], Any]


class WidgetStateSource(Protocol):
    """Where a view's widget state is kept, e.g. a ``widgets.WidgetStateKeeper``."""

    async def load(self) -> Any:
        """The state kept for the widget instance (``None``: none)."""
        ...

    @property
    def extensions(self) -> Mapping[str, Handler]:
        """The extension requests that save it (``x-assistant-frames/widget-state``)."""
        ...


class AppView:
    """One app item, as its host shows it: resolve it, then :meth:`serve` its view.

    The item: ``title``, a stable ``app_id``, the ``resource_uri`` (``ui://``) or the
    prefetched ``html`` (``resources/read`` is then skipped; ``resource_meta`` is its
    ``_meta.ui``), an optional ``tool_name`` and ``tool_call_id`` (the view's
    ``hostContext.toolInfo.id``; without one, ``"<app_id>/tool-call"``),
    ``fallback_text`` for errors and the requested ``display_mode``.

    The host: ``server`` is the app's MCP server (an entered ``MCPFrameHost`` or
    ``mcp.Client``, or any :class:`AppServer`); ``host_context`` is built once per host
    (:func:`~.display.build_host_context`) and ``display_modes`` are the modes the host
    supports. ``link_policy`` decides which ``ui/open-link`` requests reach
    ``on_open_link(view, url)``; ``on_message`` and ``on_update_model_context`` get
    ``(view, params)``; ``on_change(view)`` (plain) is called when :attr:`state` or
    :attr:`display_mode` changes. ``extensions`` answers requests MCP Apps does not have
    (as ``AppBridge(extensions=...)``). ``widget_state`` (a ``widgets.WidgetStateKeeper``)
    keeps the state a ``widget-runtime.js`` widget sets: each connection of the view is
    told the state kept last, as the host context's ``widgetState``, so a re-render gets
    it back. ``init_timeout`` bounds the view's initialization,
    ``teardown_timeout`` its teardown, ``timeout`` every other request either way.
    """

    def __init__(
        self,
        *,
        title: str,
        app_id: str,
        server: AppServer | Client | None = None,
        resource_uri: str | None = None,
        html: str | None = None,
        resource_meta: Mapping[str, Any] | None = None,
        tool_name: str | None = None,
        tool_call_id: str | int | None = None,
        fallback_text: str | None = None,
        aria_label: str | None = None,
        display_mode: DisplayMode = "inline",
        host_context: HostContext | Mapping[str, Any] | None = None,
        display_modes: Iterable[DisplayMode] = DISPLAY_MODES,
        host_info: mcp.Implementation | None = None,
        link_policy: LinkPolicy | None = None,
        on_open_link: ViewCallback | None = None,
        on_message: ViewCallback | None = None,
        on_update_model_context: ViewCallback | None = None,
        on_size_changed: ViewCallback | None = None,
        on_change: Callable[[AppView], object] | None = None,
        extensions: Mapping[str, Handler] | None = None,
        widget_state: WidgetStateSource | None = None,
        init_timeout: float = 30.0,
        teardown_timeout: float = 5.0,
        timeout: float = 30.0,
    ) -> None:
        if resource_uri is None and html is None:
            raise ValueError("An app view needs a resource_uri or prefetched html")
        if display_mode not in DISPLAY_MODES:
            raise ValueError(f"display_mode must be one of {DISPLAY_MODES}, not {display_mode!r}")
        modes = tuple(display_modes)
        if "inline" not in modes or not set(modes) <= set(DISPLAY_MODES):
            raise ValueError(f"display_modes must include 'inline' and be of {DISPLAY_MODES}")
        for name, value in (("init_timeout", init_timeout), ("teardown_timeout", teardown_timeout)):
            if not value > 0:
                raise ValueError(f"{name} must be positive, not {value!r}")
        self.title = title
        self.app_id = app_id
        self.aria_label = aria_label or title
        self.resource_uri = resource_uri
        self.tool_name = tool_name
        # The tool notifications and toolInfo need an id; a view made without one gets
        # its own rather than silently never receiving its input and result.
        self.tool_call_id: str | int = (
            f"{app_id}/tool-call" if tool_call_id is None else tool_call_id
        )
        self.fallback_text = fallback_text
        #: The display mode the item asked for (what the view may use decides).
        self.requested_display_mode: DisplayMode = display_mode
        self.display_modes: tuple[DisplayMode, ...] = modes
        self.server: AppServer | None = as_app_server(server)
        self.host_info = host_info
        self.link_policy = link_policy or LinkPolicy()
        self.on_open_link = on_open_link
        self.on_message = on_message
        self.on_update_model_context = on_update_model_context
        self.on_size_changed = on_size_changed
        self.on_change = on_change
        self.extensions: dict[str, Handler] = dict(extensions or {})
        self.widget_state = widget_state
        self.init_timeout = init_timeout
        self.teardown_timeout = teardown_timeout
        self.timeout = timeout
        self._host_context = as_host_context(host_context) or HostContext()
        #: The resolved HTML and sandbox (``None`` until resolved).
        self.resource: AppResource | None = None
        #: Why the view is in the ``error`` state (``None``: it is not).
        self.error: str | None = None
        self._state: ViewState = "resolving"
        #: What the view may use: ``inline`` and the host's modes, narrowed to the view's
        #: own once it initialized.
        self.allowed_display_modes = allowed_display_modes(modes, modes)
        self._display_mode: DisplayMode = choose_display_mode(display_mode, modes)
        self._tool_info: ToolInfo | None = None
        # The tool call as the host told it: replayed to each new connection of the view.
        self._input: dict[str, Any] | None = None
        self._partial: dict[str, Any] | None = None
        self._result: mcp.CallToolResult | Mapping[str, Any] | None = None
        self._cancelled: tuple[str | None] | None = None
        self._bridge: AppBridge | None = None
        self._widget_state: Any = None  # as read for the connection in progress
        self._sending: anyio.Lock | None = None
        self._stop: anyio.Event | None = None
        self._done: anyio.Event | None = None
        self._changed: anyio.Event | None = None
        self._closing = False
        self._tool_looked_up = False
        try:
            if resource_uri is not None:
                check_ui_uri(resource_uri)
            if html is not None:
                self.resource = AppResource.from_meta(html, resource_meta, resource_uri)
                self._state = "loading"
        except AppResourceError as exc:
            self._fail(exc.message)

    # -- state ---------------------------------------------------------------------------

    @property
    def state(self) -> ViewState:
        """Where the view is (see :data:`ViewState`)."""
        return self._state

    @property
    def display_mode(self) -> DisplayMode:
        """The display mode in force."""
        return self._display_mode

    @property
    def host_context(self) -> HostContext:
        """The host context this view is (or will be) told: the host's, plus its display
        mode, the modes it may use, its tool and (with ``widget_state``) the widget state
        read when its connection began."""
        extra: dict[str, Any] = {
            "display_mode": self._display_mode,
            "available_display_modes": list(self.allowed_display_modes),
        }
        if self._tool_info is not None:
            extra["tool_info"] = self._tool_info
        if self._widget_state is not None:
            extra["widgetState"] = self._widget_state
        return self._host_context.model_copy(update=extra)

    @property
    def bridge(self) -> AppBridge | None:
        """The bridge to the connected view (``None`` while none is)."""
        return self._bridge

    def _set_state(self, state: ViewState) -> None:
        if state != self._state and self._state != "closed":  # closed is for good
            self._state = state
            self._touch()

    def _fail(self, message: str) -> None:
        logger.info("App view %s (%s) failed: %s", self.app_id, self.title, message)
        self.error = message
        self._set_state("error")

    def _touch(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None
        if self.on_change is not None:
            try:
                self.on_change(self)
            except Exception:
                logger.exception("on_change of app view %s raised", self.app_id)

    async def wait_state(self, *states: ViewState, timeout: float | None = None) -> ViewState:
        """Wait until :attr:`state` is one of ``states``; ``TimeoutError`` after ``timeout``."""
        with anyio.fail_after(timeout):
            while self._state not in states:
                if self._changed is None:
                    self._changed = anyio.Event()
                await self._changed.wait()
        return self._state

    # -- resolving -----------------------------------------------------------------------

    async def resolve(self) -> AppResource | None:
        """Read the view's resource (unless prefetched): ``loading`` with :attr:`resource`
        set, or ``error`` (and ``None``)."""
        if self._state == "resolving":
            if self.server is None:
                self._fail("No server to read the view's resource from")
                return None
            try:
                self.resource = await resolve_resource(
                    self.server, self.resource_uri or "", timeout=self.timeout
                )
            except AppResourceError as exc:
                self._fail(exc.message)
                return None
            if self._state == "resolving":
                self._set_state("loading")
        if self._state == "loading" and not self._tool_looked_up:
            self._tool_looked_up = True
            await self._find_tool()
        return self.resource

    async def _find_tool(self) -> None:
        """The tool's listing, for the view's ``hostContext.toolInfo``."""
        if self.server is None or self.tool_name is None:
            return
        try:
            with anyio.fail_after(self.timeout):
                tools = mcp_tools(await self.server.wait_for_context())
        except Exception as exc:  # only the tool info is missing then
            logger.info("No tool info for app view %s: %s", self.app_id, exc)
            return
        for tool in tools:
            if tool.name == self.tool_name:
                self._tool_info = ToolInfo(id=self.tool_call_id, tool=tool)

    # -- the view's connection -----------------------------------------------------------

    async def serve(self, transport: ObjectStream[Any]) -> None:
        """Drive the view over ``transport`` until it goes; owns and closes the transport.

        Resolves first if needed. Waits ``init_timeout`` for the view to initialize
        (else ``error``), sends what the host said of the tool call, then serves the
        view until :meth:`close`, the view's ``request-teardown``, the transport's end
        (back to ``loading``: a new connection may be served) or this task's
        cancellation. Before the connection is closed, ``ui/resource-teardown`` is sent
        and awaited (within ``teardown_timeout``) whenever the view had initialized.
        """
        await self.resolve()
        if self._state != "loading" or self._stop is not None:
            with anyio.CancelScope(shield=True):
                await transport.aclose()
            if self._stop is not None:
                raise RuntimeError(f"App view {self.app_id} is already serving a connection")
            return
        stop, done = self._stop, self._done = anyio.Event(), anyio.Event()
        self._sending = self._sending or anyio.Lock()
        try:
            self._widget_state = await self._load_widget_state()
            async with anyio.create_task_group() as group:
                await group.start(self._drive, transport, stop, done)
                try:
                    await done.wait()
                finally:  # closed, or cancelled: the driver tears the view down
                    if not done.is_set():
                        self._closing = True
                    stop.set()
                    with anyio.CancelScope(shield=True):
                        with anyio.move_on_after(self.teardown_timeout + 1.0):
                            await done.wait()
        finally:
            self._stop = self._done = None
            if self._closing:
                self._set_state("closed")

    async def _load_widget_state(self) -> Any:
        if self.widget_state is None:
            return None
        try:
            with anyio.fail_after(self.timeout):
                return await self.widget_state.load()
        except Exception:  # the view is shown without its state rather than not at all
            logger.warning(
                "App view %s: its widget state could not be read", self.app_id, exc_info=True
            )
            return None

    async def _drive(
        self,
        transport: ObjectStream[Any],
        stop: anyio.Event,
        done: anyio.Event,
        *,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        # Shielded: a cancelled serve() must still get the teardown's answer, which the
        # bridge's own tasks (inside this scope) read. serve() bounds the wait for it.
        with anyio.CancelScope(shield=True):
            task_status.started()
            try:
                bridge = self._make_bridge(transport, stop)
                async with bridge:
                    await self._replay(bridge)
                    initialized = await self._watch(bridge, stop)
                    if self._state == "ready" and not self._closing:
                        self._set_state("loading")  # its connection ended: it may come back
                    with anyio.move_on_after(self.teardown_timeout):
                        torn = await bridge.teardown(self.teardown_timeout)
                        if initialized and not torn:
                            logger.info("App view %s did not answer its teardown", self.app_id)
                    self._bridge = None
            finally:
                self._bridge = None
                done.set()

    async def _watch(self, bridge: AppBridge, stop: anyio.Event) -> bool:
        """Until told to stop or the connection ends; whether the view initialized."""
        initialized = False
        async with anyio.create_task_group() as group:

            async def stopper() -> None:
                await stop.wait()
                group.cancel_scope.cancel()

            group.start_soon(stopper)
            try:
                await bridge.wait_initialized(self.init_timeout)
            except ContextTimeout as exc:
                self._fail(exc.message)
            except FrameDisconnected:
                pass  # gone before it initialized: a new connection may come
            else:
                initialized = True
                self._set_state("ready")
                await bridge.wait_disconnected()
            group.cancel_scope.cancel()
        return initialized

    def _make_bridge(self, transport: ObjectStream[Any], stop: anyio.Event) -> AppBridge:
        def request_teardown() -> None:  # the view asks to go: it goes, torn down first
            self._closing = True
            stop.set()

        extensions = dict(self.extensions)
        if self.widget_state is not None:
            extensions.update(self.widget_state.extensions)
        bridge = AppBridge(
            transport,
            server=self.server,
            host_info=self.host_info,
            host_context=self.host_context,
            extensions=extensions,
            sandbox=self._sandbox(),
            name=self.app_id,
            timeout=self.timeout,
            init_timeout=self.init_timeout,
            on_message=self._handler(self.on_message),
            on_update_model_context=self._handler(self.on_update_model_context),
            on_size_changed=self._handler(self.on_size_changed),
            on_open_link=self._open_link if self.on_open_link is not None else None,
            on_request_display_mode=self._request_display_mode,
            on_request_teardown=request_teardown,
            on_initialize=self._initialize,
        )
        self._bridge = bridge
        return bridge

    def _sandbox(self) -> SandboxCapability | None:
        """What the view is granted: the CSP and permissions its resource declared (the
        page serves it with exactly those)."""
        resource = self.resource
        if resource is None:
            return None
        return SandboxCapability(permissions=resource.permissions, csp=resource.csp)

    def _handler(self, callback: ViewCallback | None) -> Callable[[Any], Any] | None:
        if callback is None:
            return None

        async def handle(
            params: MessageParams | UpdateModelContextParams | SizeChangedParams,
        ) -> Any:
            return await call_maybe_async(callback, self, params)

        return handle

    def _initialize(self, params: InitializeParams) -> HostContext:
        """What the view declared narrows its display modes; its answer says so."""
        declared = params.app_capabilities.available_display_modes
        self.allowed_display_modes = allowed_display_modes(self.display_modes, declared)
        mode = choose_display_mode(self.requested_display_mode, self.allowed_display_modes)
        if mode != self._display_mode:
            self._display_mode = mode
            self._touch()
        return self.host_context

    async def _request_display_mode(self, params: RequestDisplayModeParams) -> DisplayMode:
        """A mode the view may use is granted; otherwise the mode in force stays."""
        if params.mode in self.allowed_display_modes and params.mode != self._display_mode:
            # Also what a reloaded view starts in.
            self.requested_display_mode = self._display_mode = params.mode
            self._touch()
        return self._display_mode  # the bridge tells the view of a change

    async def _open_link(self, params: OpenLinkParams) -> ActionResult:
        decision = await self.link_policy.decide(params.url)
        if decision not in ("allowed", "confirmed"):
            logger.info("App view %s: link %.200r %s", self.app_id, params.url, decision)
            return ActionResult(is_error=True)
        assert self.on_open_link is not None
        # The URL as the browser reads it, so what opens is what was judged.
        url = self.link_policy.resolve(params.url) or params.url
        await call_maybe_async(self.on_open_link, self, url)
        return ActionResult()

    # -- what the host tells the view ----------------------------------------------------

    async def _replay(self, bridge: AppBridge) -> None:
        """Tell a new connection what the host said of the tool call so far."""
        assert self._sending is not None
        async with self._sending:
            if self._input is not None:
                await bridge.send_tool_input(self._input)
            elif self._partial is not None:
                await bridge.send_tool_input_partial(self._partial)
            if self._result is not None:
                await bridge.send_tool_result(self._result)
            elif self._cancelled is not None:
                await bridge.send_tool_cancelled(self._cancelled[0])

    async def _tell(self, send: Callable[[AppBridge], Any]) -> None:
        bridge, lock = self._bridge, self._sending
        if bridge is None or lock is None:
            return  # no connection: replayed to the next one
        # A connection that ends meanwhile is no error: the next one is told (replay).
        with suppress(FrameDisconnected):
            async with lock:
                if bridge.state not in ("disconnected", "closed"):
                    await send(bridge)

    async def send_tool_input(self, arguments: Mapping[str, Any] | None) -> None:
        """The tool call's complete arguments."""
        self._input = dict(arguments or {})
        await self._tell(lambda bridge: bridge.send_tool_input(arguments))

    async def send_tool_input_partial(self, arguments: Mapping[str, Any]) -> None:
        """Arguments still streaming in (dropped once the complete input was sent)."""
        if self._input is None:
            self._partial = dict(arguments)
            await self._tell(lambda bridge: bridge.send_tool_input_partial(arguments))

    async def send_tool_result(self, result: mcp.CallToolResult | Mapping[str, Any]) -> None:
        """The tool call's result."""
        self._result = result
        await self._tell(lambda bridge: bridge.send_tool_result(result))

    async def send_tool_cancelled(self, reason: str | None = None) -> None:
        """The tool call was cancelled."""
        self._cancelled = (reason,)
        await self._tell(lambda bridge: bridge.send_tool_cancelled(reason))

    async def update_host_context(self, **changes: Any) -> None:
        """Change some keys of the host context (``theme="dark"``, ``container_dimensions=``
        ...); a connected view is told only those, and is not reloaded."""
        if "display_mode" in changes or "available_display_modes" in changes:
            raise ValueError("Change the display mode with set_display_mode()")
        self._host_context = updated_host_context(self._host_context, changes)
        await self._tell(lambda bridge: bridge.update_host_context(**changes))

    async def set_display_mode(self, mode: DisplayMode) -> DisplayMode:
        """Show the view in ``mode`` if it may use it (else ``inline``); the mode in force.

        A connected view is told of a change (``host-context-changed``).
        """
        chosen = choose_display_mode(mode, self.allowed_display_modes)
        self.requested_display_mode = chosen  # also what a (re)connecting view starts in
        if chosen != self._display_mode:
            self._display_mode = chosen
            self._touch()
            await self._tell(lambda bridge: bridge.update_host_context(display_mode=chosen))
        return chosen

    # -- the end -------------------------------------------------------------------------

    async def close(self) -> None:
        """Remove the view: a connected one is torn down first (bounded); then ``closed``."""
        self._closing = True
        stop, done = self._stop, self._done
        if stop is not None and done is not None:
            stop.set()
            with anyio.CancelScope(shield=True), anyio.move_on_after(self.teardown_timeout + 1):
                await done.wait()
        self._set_state("closed")

    async def __aenter__(self) -> AppView:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<AppView {self.app_id!r} {self.state} {self.display_mode}>"
