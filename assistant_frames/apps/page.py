"""``AppPage``: a web page that renders app views, with every decision made in Python.

The page is static (``assistant_frames/browser/static/app-page.*``: plain HTML, CSS and
JavaScript, no build step, no dependencies) and does no protocol logic. It shows what
Python tells it over a *control* WebSocket (the server's UI tools, each view with its
URL, ``allow`` attribute and display mode, the JSON-RPC traffic), sends back what the
person does (call a tool, switch theme or display mode, close a view), and relays each
view's JSON-RPC between its iframe and a WebSocket of its own (the shipped parent
relay's app mode). Behind each of those WebSockets an :class:`~.view.AppView` drives an
:class:`~.bridge.AppBridge`.

Two listeners, both on loopback by default:

- the page's server: the page and the relay (no token: they hold no secret), the
  control WebSocket (``/page``) and one WebSocket per view (``/view/<id>``), which need
  the token (the page reads it from its URL's fragment, which no server sees);
- the views' server, on another port and so another origin (a view sandboxed with
  ``allow-scripts allow-same-origin`` on the page's origin could lift its own sandbox):
  ``GET /view/<id>/<secret>`` is the view's HTML with its ``Content-Security-Policy``
  header. Nothing else is served there.
"""

from __future__ import annotations

import logging
import secrets
from collections import deque
from collections.abc import Iterable, Mapping
from contextlib import AsyncExitStack, suppress
from typing import Any, Literal

import anyio
import mcp_types as mcp
from anyio.abc import ObjectStream

from .._driver import Lifecycle
from .._logs import log_first_loudly
from .._text import host_port
from ..browser import RELAY_FILES, app_page_files
from ..mcp.tools import mcp_tools
from ..transports.message_writer import ConnectionWriter
from ..transports.websocket import (
    HttpRequest,
    HttpResponse,
    WebSocketAttribute,
    WebSocketServer,
    WebSocketTransport,
    websocket_server,
)
from .display import DISPLAY_MODES, as_host_context, build_host_context
from .forwarding import AppServer
from .links import LinkPolicy
from .protocol import DisplayMode, HostContext, MessageParams, SizeChangedParams
from .traffic import Recorded, Traffic, logged
from .view import AppView

__all__ = ["AppPage", "Traffic"]

logger = logging.getLogger("assistant_frames.apps")

_HTML = "text/html; charset=utf-8"
_MAX_TRAFFIC = 2000  # messages kept for the log pane (and for tests)
_MAX_MESSAGE_CHARS = 64 * 1024  # of a view's ui/message, as the page shows it
_MAX_ARGUMENTS = 256 * 1024
_MAX_COMMANDS = 16  # commands of one page running at once


def _ui_uri(tool: mcp.Tool) -> str | None:
    """A tool's view (``_meta.ui.resourceUri``, or the legacy flat key)."""
    meta = tool.meta or {}
    ui = meta.get("ui")
    uri = ui.get("resourceUri") if isinstance(ui, Mapping) else None
    uri = uri or meta.get("ui/resourceUri")
    return uri if isinstance(uri, str) else None


def _for_model(tool: mcp.Tool) -> bool:
    """Whether a person (standing in for the model) may call it: not an app-only tool."""
    ui = (tool.meta or {}).get("ui")
    visibility = ui.get("visibility") if isinstance(ui, Mapping) else None
    return visibility is None or "model" in visibility


def _text(content: Iterable[Any]) -> str:
    return "\n".join(getattr(block, "text", "") for block in content if hasattr(block, "text"))


class AppPage(Lifecycle):
    """Serve the app page for ``server``'s UI tools, and show app views in it.

    ``server`` is the app's MCP server, an entered :class:`~assistant_frames.mcp.MCPFrameHost`
    (or any :class:`~.forwarding.AppServer`). Enter the page (``async with``) to listen;
    :attr:`url` is then the page's address, token included. A person calls a UI tool
    from the page (``allow_calls``), or the host shows a view itself with
    :meth:`call_tool` or :meth:`show`. ``host_context`` (default
    :func:`~.display.build_host_context`) and ``display_modes`` apply to every view;
    ``link_policy`` says which ``ui/open-link`` requests are offered to the person (as a
    link in the page: it never opens one by itself). ``token`` defaults to a random one.
    ``port=None`` starts no server for the page: it is served where it is mounted
    (:func:`assistant_frames.asgi.app_page_app`), and only the views' server listens.
    Leaving the block tears every view down (bounded), then stops the servers.
    """

    def __init__(
        self,
        server: AppServer,
        *,
        host: str = "127.0.0.1",
        port: int | None = 0,
        views_port: int = 0,
        token: str | None = None,
        title: str = "MCP Apps",
        host_context: HostContext | Mapping[str, Any] | None = None,
        display_modes: Iterable[DisplayMode] = DISPLAY_MODES,
        link_policy: LinkPolicy | None = None,
        allow_calls: bool = True,
        timeout: float = 30.0,
        init_timeout: float = 30.0,
    ) -> None:
        self.server = server
        self.host = host
        self.title = title
        self.token = token or secrets.token_urlsafe(24)
        self._host_context = as_host_context(host_context) or build_host_context()
        self.display_modes = tuple(display_modes)
        self.link_policy = link_policy or LinkPolicy()
        self.allow_calls = allow_calls
        self.timeout = timeout
        self.init_timeout = init_timeout
        #: The views shown, by app id (a closed view leaves).
        self.views: dict[str, AppView] = {}
        #: The JSON-RPC traffic of every view, oldest first (the last 2,000 messages, each
        #: shortened past 8 KiB: see :class:`Traffic`).
        self.traffic: deque[Traffic] = deque(maxlen=_MAX_TRAFFIC)
        self._ports = (port, views_port)
        self._secrets: dict[str, str] = {}
        self._controls: dict[ObjectStream[Any], ConnectionWriter] = {}  # the pages connected
        self._counter = 0
        self._init_lifecycle()
        self._stack: AsyncExitStack | None = None  # the servers and the pump's stream
        self._page_server: WebSocketServer | None = None
        self._views_server: WebSocketServer | None = None
        self._dropped = 0  # messages for the pages dropped because they were too slow

    # -- addresses -----------------------------------------------------------------------

    def _running(self) -> tuple[WebSocketServer, WebSocketServer]:
        views = self._views_server
        if views is None:
            raise RuntimeError("The app page is not running: enter it first (async with)")
        if self._page_server is None:
            raise RuntimeError(
                "The app page has no server of its own (port=None): it is served where "
                "it is mounted (assistant_frames.asgi.app_page_app)"
            )
        return self._page_server, views

    @property
    def origin(self) -> str:
        """The page's origin, ``http://127.0.0.1:PORT``."""
        return _origin(self._running()[0])

    @property
    def views_origin(self) -> str:
        """The views' origin: another port than the page's."""
        if self._views_server is None:
            raise RuntimeError("The app page is not running: enter it first (async with)")
        return _origin(self._views_server)

    @property
    def url(self) -> str:
        """The page's URL; the token is in its fragment, which browsers never send."""
        return f"{self.origin}/#token={self.token}"

    @property
    def theme(self) -> str | None:
        """The theme every view is told (``hostContext.theme``)."""
        return self._host_context.theme

    # -- running -------------------------------------------------------------------------

    async def __aenter__(self) -> AppPage:
        # The task group first: the servers' own tasks nest inside it, and end first.
        async with self._tasks.open(), AsyncExitStack() as stack:
            page_port, views_port = self._ports
            if page_port is not None:
                self._page_server = await stack.enter_async_context(
                    websocket_server(
                        self._accept,
                        self.host,
                        page_port,
                        token=self.token,
                        http_files=_page_files(),
                    )
                )
            self._views_server = await stack.enter_async_context(
                websocket_server(
                    _refuse,
                    self.host,
                    views_port,
                    token=secrets.token_urlsafe(24),  # no WebSocket here, ever
                    http_handler=self._view_html,
                )
            )
            stack.push_async_callback(self._close_views)
            self._stack = stack.pop_all()
        return self

    async def _stop(self) -> None:
        """Close the views, then the servers; the tasks end after (``aclose``, the end of
        the block)."""
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()

    async def _stopped(self) -> None:
        self._page_server = self._views_server = None

    async def _close_views(self) -> None:
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as group:
                for view in list(self.views.values()):
                    group.start_soon(view.close)

    # -- what the page is told -----------------------------------------------------------

    def _post(self, message: dict[str, Any]) -> None:
        """Send ``message`` to every page connected, without waiting. Each page has its
        own bounded queue (a :class:`MessageWriter`): what does not fit is dropped for
        that page (a view flooding its log must not cost the person the page), and a
        page that takes nothing for ``timeout`` is closed (the others go on)."""
        for control in list(self._controls.values()):
            if control.writer.send_soon([message]):
                self._dropped += 1
                # The first drop is a warning; a view flooding the log would otherwise
                # make one for each of its messages.
                log_first_loudly(
                    logger,
                    self._dropped == 1,
                    "App page: a page is too slow; dropped a %s (%d so far; later drops are"
                    " logged at DEBUG)",
                    message["type"],
                    self._dropped,
                )

    async def _hello(self) -> dict[str, Any]:
        tools: list[dict[str, Any]] = []
        try:
            listed = mcp_tools(await self.server.wait_for_context(self.timeout))
        except Exception as exc:
            logger.warning("App page: cannot list the server's tools: %s", exc)
            listed = []
        for tool in listed:
            if _ui_uri(tool) is not None and _for_model(tool):
                tools.append(
                    {
                        "name": tool.name,
                        "title": tool.title or tool.name,
                        "description": tool.description or "",
                        "inputSchema": tool.input_schema,
                    }
                )
        return {
            "type": "hello",
            "title": self.title,
            "theme": self.theme,
            "displayModes": list(self.display_modes),
            "allowCalls": self.allow_calls,
            "tools": tools,
        }

    def _describe(self, view: AppView) -> dict[str, Any]:
        described: dict[str, Any] = {
            "type": "view",
            "id": view.app_id,
            "title": view.title,
            "state": view.state,
            "error": view.error,
            "fallback": view.fallback_text,
            "displayMode": view.display_mode,
            "displayModes": list(view.allowed_display_modes),
        }
        resource = view.resource
        if resource is not None and view.app_id in self._secrets:
            secret = self._secrets[view.app_id]
            described["src"] = f"{self.views_origin}/view/{view.app_id}/{secret}"
            described["socket"] = f"/view/{view.app_id}"
            described["allow"] = resource.allow
            described["border"] = resource.prefers_border is not False
        return described

    def _changed(self, view: AppView) -> None:
        if self.views.get(view.app_id) is not view:
            return
        if view.state == "closed":
            del self.views[view.app_id]
            self._secrets.pop(view.app_id, None)
        self._post(self._describe(view))

    def _record(self, app_id: str, direction: Literal["in", "out"], message: Any) -> None:
        kept, size, truncated = logged(message)
        self.traffic.append(Traffic(app_id, direction, kept, size, truncated))
        self._post({"type": "log", "id": app_id, "direction": direction, "message": kept})

    # -- views ---------------------------------------------------------------------------

    def new_view(
        self,
        *,
        title: str,
        resource_uri: str | None = None,
        html: str | None = None,
        app_id: str | None = None,
        **options: Any,
    ) -> AppView:
        """An :class:`AppView` of this page's server, with the page's host context,
        display modes, link policy and callbacks (``options`` go to ``AppView``)."""
        self._counter += 1
        settings: dict[str, Any] = {
            "server": self.server,
            "host_context": self._host_context,
            "display_modes": self.display_modes,
            "link_policy": self.link_policy,
            "on_open_link": self._open_link,
            "on_message": self._message,
            "on_size_changed": self._size_changed,
            "timeout": self.timeout,
            "init_timeout": self.init_timeout,
            **options,
        }
        return AppView(
            title=title,
            app_id=app_id or f"view-{self._counter}",
            resource_uri=resource_uri,
            html=html,
            **settings,
        )

    async def show(self, view: AppView) -> AppView:
        """Resolve ``view`` and show it in the page (as an error with its fallback text,
        if it cannot be shown). It is served when the page's relay connects."""
        if view.app_id in self.views:
            raise ValueError(f"The page already shows a view {view.app_id!r}")
        theirs = view.on_change

        def changed(changed_view: AppView) -> None:
            self._changed(changed_view)
            if theirs is not None:
                theirs(changed_view)

        view.on_change = changed
        self.views[view.app_id] = view
        self._secrets[view.app_id] = secrets.token_urlsafe(18)
        await view.resolve()
        self._post(self._describe(view))
        return view

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        display_mode: DisplayMode = "inline",
    ) -> AppView:
        """What the model calling ``name`` looks like: the tool's view is shown, gets the
        input, then the result (or the cancellation, if the call fails)."""
        arguments = dict(arguments or {})
        tools = {tool.name: tool for tool in mcp_tools(await self.server.wait_for_context())}
        tool = tools.get(name)
        uri = None if tool is None else _ui_uri(tool)
        if tool is None or uri is None or not _for_model(tool):
            raise LookupError(f"The server has no tool {name!r} with a view for the model")
        view = self.new_view(
            title=tool.title or name,
            resource_uri=uri,
            tool_name=name,
            tool_call_id=f"call-{self._counter + 1}",
            display_mode=display_mode,
        )
        await self.show(view)
        await view.send_tool_input(arguments)
        try:
            result = await self.server.call_tool_result(name, arguments, timeout=self.timeout)
        except Exception as exc:
            await view.send_tool_cancelled(str(exc))
            raise
        view.fallback_text = _text(result.content) or view.fallback_text
        await view.send_tool_result(result)
        if view.state == "error":  # the page shows the result's text instead
            self._post(self._describe(view))
        return view

    async def set_theme(self, theme: Literal["light", "dark"]) -> None:
        """Switch every view (and the page) to ``theme``; no view is reloaded."""
        self._host_context = self._host_context.model_copy(update={"theme": theme})
        self._post({"type": "theme", "theme": theme})
        for view in list(self.views.values()):
            await view.update_host_context(theme=theme)

    # -- the views' callbacks ------------------------------------------------------------

    def _open_link(self, view: AppView, url: str) -> None:
        self._post({"type": "link", "id": view.app_id, "url": url})

    def _message(self, view: AppView, params: MessageParams) -> None:
        text = _text(params.content)
        if len(text) > _MAX_MESSAGE_CHARS:  # the page shows it; a view may send megabytes
            text = f"{text[:_MAX_MESSAGE_CHARS]}... ({len(text):,} characters)"
        self._post({"type": "message", "id": view.app_id, "text": text})

    def _size_changed(self, view: AppView, params: SizeChangedParams) -> None:
        self._post(
            {"type": "size", "id": view.app_id, "width": params.width, "height": params.height}
        )

    # -- HTTP and WebSockets -------------------------------------------------------------

    async def _view_html(self, request: HttpRequest) -> HttpResponse | None:
        """``/view/<id>/<secret>``: the view's HTML under its CSP; nothing else."""
        parts = request.path.split("/")
        if len(parts) == 4 and parts[1] == "view":
            view = self.views.get(parts[2])
            secret = self._secrets.get(parts[2], "")
            if (
                view is not None
                and view.resource is not None
                and secrets.compare_digest(parts[3], secret)
            ):
                headers = {
                    "Content-Security-Policy": view.resource.csp_header,
                    "Referrer-Policy": "no-referrer",
                }
                return HttpResponse(200, view.resource.html.encode(), _HTML, headers)
        return HttpResponse(404, b"Not found\n")

    async def _accept(self, transport: WebSocketTransport) -> None:
        origin = transport.extra(WebSocketAttribute.origin, None)
        page, _ = self._running()
        if origin is not None and origin not in (_origin(page), f"http://localhost:{page.port}"):
            logger.info("App page: refused a WebSocket from %s", origin)
            return
        await self.serve_socket(transport, transport.extra(WebSocketAttribute.path, ""))

    async def serve_socket(self, transport: ObjectStream[Any], route: str) -> None:
        """Serve one of the page's WebSockets on ``transport``: ``route`` is ``"page"``
        (the control socket) or ``"view/<app id>"``, relative to the page (a leading
        ``/`` and a query string are ignored).

        The page's own server calls it for ``/page`` and ``/view/<id>``; a page mounted
        into another application (:func:`assistant_frames.asgi.app_page_app`) calls it
        once that application has checked the token and the origin. Returns when the
        connection should close (at once if the page is not running or there is no
        such view).
        """
        route = route.partition("?")[0].strip("/")
        if self._tasks.group is None:
            logger.info("App page: not running; refused a WebSocket for %s", route)
            return
        if route == "page":
            await self._control(transport)
            return
        parts = route.split("/")
        view = self.views.get(parts[1]) if len(parts) == 2 and parts[0] == "view" else None
        if view is None:
            logger.info("App page: no view at %s", route)
            return
        app_id = view.app_id
        if view.bridge is not None:  # e.g. the page open in two tabs: the first one has it
            logger.info("App page: view %s is already shown in another page", app_id)
            return

        def record(direction: Literal["in", "out"], message: Any) -> None:
            self._record(app_id, direction, message)

        await view.serve(Recorded(transport, record))

    async def _control(self, transport: ObjectStream[Any]) -> None:
        # One page's control connection and the writer of what it is told, in order; a
        # page that takes nothing for ``timeout`` seconds is hung up on.
        control = ConnectionWriter(
            transport,
            on_ended=_page_ended,
            on_unsendable=lambda exc: logger.error("App page: not sent: %s", exc),
            queue_size=_MAX_TRAFFIC,
            send_timeout=self.timeout,
        )
        control.writer.send_soon([await self._hello()])
        control.writer.send_soon([self._describe(view) for view in list(self.views.values())])
        self._controls[transport] = control
        # Commands run side by side (a tool call takes a while), up to a limit: a page
        # sending more waits, unread, instead of piling up tasks.
        running = anyio.Semaphore(_MAX_COMMANDS)

        async def command(message: dict[str, Any]) -> None:
            tasks = self._tasks.group
            assert tasks is not None  # running: this socket is served
            await running.acquire()
            tasks.start_soon(self._command, message, running)

        try:
            await control.serve(command)
        finally:
            self._controls.pop(transport, None)

    async def _command(self, message: dict[str, Any], running: anyio.Semaphore) -> None:
        """One thing the person did in the page; failures become notices there."""
        try:
            await self._do(message)
        finally:
            running.release()

    async def _do(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        view = self.views.get(str(message.get("id")))
        try:
            if kind == "call" and self.allow_calls:
                arguments = message.get("arguments")
                if not isinstance(arguments, dict) or len(repr(arguments)) > _MAX_ARGUMENTS:
                    raise ValueError("The arguments must be a JSON object")
                mode = message.get("displayMode", "inline")
                if mode not in DISPLAY_MODES:
                    raise ValueError(f"No display mode {mode!r}")
                await self.call_tool(str(message.get("tool")), arguments, display_mode=mode)
            elif kind == "theme" and message.get("theme") in ("light", "dark"):
                await self.set_theme(message["theme"])
            elif kind == "display-mode" and view is not None:
                mode = message.get("mode")
                if mode not in DISPLAY_MODES:
                    raise ValueError(f"No display mode {mode!r}")
                await view.set_display_mode(mode)
                self._post(self._describe(view))  # also when the mode did not change
            elif kind == "close" and view is not None:
                await view.close()
            else:
                logger.info("App page: ignored %s", str(message)[:200])
        except Exception as exc:
            logger.info("App page: %s failed: %s", kind, exc)
            self._post({"type": "notice", "level": "error", "text": f"{kind}: {exc}"})


# Of assistant_frames.browser.app_page_files(), the relays the page's own server does not
# serve: the frames' child relay, and the runtime widgets load on their own origin.
_NOT_SERVED = frozenset(f"/assistant-frames/{name}" for name in RELAY_FILES) - {
    "/assistant-frames/parent-relay.js"
}


def _page_ended(exc: BaseException) -> None:
    if isinstance(exc, TimeoutError):
        logger.info("App page: a page took nothing for a while; closing it")


def _page_files() -> dict[str, tuple[bytes, str]]:
    return {path: entry for path, entry in app_page_files().items() if path not in _NOT_SERVED}


def _origin(server: WebSocketServer) -> str:
    return f"http://{host_port(server.host, server.port)}"


async def _refuse(transport: WebSocketTransport) -> None:
    """The views' server has no WebSockets (its token is never given out)."""
    with suppress(Exception):
        await transport.aclose()
