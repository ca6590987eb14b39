"""``MCPContextServer``: serve any model context provider as an MCP server.

The tool list is the provider's live context (disabled tools left out), calls are
routed to the tool that owns the name (a frame host forwards them to its frame), and
the context's system text is the server's instructions. It serves MCP Apps (the
``io.modelcontextprotocol/ui`` extension): tools keep their ``_meta.ui`` (plus the legacy
flat ``ui/resourceUri`` key) and the context's ``ui://`` resources are listed and read.
When the tool list changes,
clients are told on both protocol eras: a ``ToolsListChanged`` event on the
``subscriptions/listen`` bus for 2026-07-28 connections, and
``notifications/tools/list_changed`` on the standalone channel of every handshake-era
session.
"""

from __future__ import annotations

import logging
import socket
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
import sniffio
from anyio.abc import TaskGroup, TaskStatus
from mcp.server.apps import EXTENSION_ID
from mcp.server.connection import allowed_log_levels
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    ResourcesListChanged,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .._anyio import running_asyncio, task_group
from .._text import host_port
from .._version import package_version
from ..errors import AssistantFramesError
from ..formats.tools import MCPTool, to_mcp_tools
from ..registry.context import ModelContext, ModelContextProvider
from ..registry.events import ToolEvent, ToolLog, ToolProgress
from ._apps import list_resources, read_resource, stamp_tools
from ._openai import DIALECTS, AppDialect, check_dialects
from .http_auth import HTTPAuth, RequireAuth
from .results import error_result, failure, tool_result

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.session import ServerSession
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from starlette.applications import Starlette
    from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["HTTPAuth", "MCPContextServer"]

logger = logging.getLogger("assistant_frames.mcp")

# A handshake-era client that stopped reading must not hold up the others.
_NOTIFY_TIMEOUT = 5.0
_HTTP_STOP_TIMEOUT = 10.0
_MAX_QUEUED_LOGS = 256  # per call, when the client reads slower than the tool logs
_MODERN_LISTING = {"ttlMs": 0, "cacheScope": "private", "resultType": "complete"}


def _for_session(ctx: ServerRequestContext[Any], result: dict[str, Any]) -> dict[str, Any]:
    """``result`` with the cache fields a 2026-07-28 session requires (and an older one
    refuses)."""
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return {**result, **_MODERN_LISTING}
    return result


class _ContextServer(Server[Any]):
    """The SDK's low-level server, advertising ``tools.listChanged`` (and
    ``resources.listChanged``: the UI resources) on every session,
    with instructions read from the context whenever a client asks."""

    def __init__(
        self, name: str, *, version: str, instructions: Callable[[], str | None], **options: Any
    ) -> None:
        self._current_instructions = instructions
        super().__init__(name, version=version, **options)

    @property
    def instructions(self) -> str | None:
        return self._current_instructions()

    @instructions.setter
    def instructions(self, value: str | None) -> None:
        pass  # the SDK's constructor sets it; ours always comes from the context

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True, resources_changed=True),
            experimental_capabilities,
            extensions,
        )


class MCPContextServer:
    """An MCP server whose tools and instructions are a provider's live model context.

    ``provider`` is anything with ``get_model_context()`` (and ideally ``subscribe``):
    a :class:`~assistant_frames.ModelContextRegistry`, a frame host, or a parent
    registry that federates many frames. ``instructions`` overrides the context's
    system text as the server's instructions.

    ``app_dialects`` says how UI tools and ``ui://`` resources are served: ``"mcp-apps"``
    (``_meta.ui``, ``text/html;profile=mcp-app``) and ``"openai"`` (ChatGPT's
    ``openai/*`` keys, each resource again as ``text/html+skybridge`` under
    ``ui://widget/skybridge/...``). Both by default.

    Serve it with :meth:`run_stdio` or :meth:`run_http`, or embed :meth:`http_app` in
    your own ASGI server; :attr:`server` is the underlying ``mcp`` low-level server
    (for example for ``mcp.Client(server.server)`` in tests, inside :meth:`running`).
    """

    def __init__(
        self,
        provider: ModelContextProvider,
        *,
        name: str = "assistant-frames",
        version: str | None = None,
        instructions: str | None = None,
        app_dialects: Sequence[AppDialect] = DIALECTS,
    ) -> None:
        if not callable(getattr(provider, "get_model_context", None)):
            raise TypeError(f"{provider!r} is not a ModelContextProvider")
        if version is None:
            version = package_version()
        self.provider = provider
        self.app_dialects = check_dialects(app_dialects)
        self._fixed_instructions = instructions
        self._bus = InMemorySubscriptionBus()
        self._listen = ListenHandler(self._bus)
        self.server: Server[Any] = _ContextServer(
            name,
            version=version,
            instructions=self._instructions,
            on_subscriptions_listen=self._listen,
        )
        # Registered here rather than as on_* arguments: they answer in wire form,
        # which the SDK validates and which saves building models per call.
        self.server.add_request_handler(
            "tools/list", types.PaginatedRequestParams, self._list_tools
        )
        self.server.add_request_handler("tools/call", types.CallToolRequestParams, self._call_tool)
        self.server.add_request_handler(
            "resources/list", types.PaginatedRequestParams, self._list_resources
        )
        self.server.add_request_handler(
            "resources/read", types.ReadResourceRequestParams, self._read_resource
        )
        # Advertised whatever the context holds now: it is live, and UIs may come later.
        if "mcp-apps" in self.app_dialects:
            self.server.extensions[EXTENSION_ID] = {}
        # Lives as long as each handshake-era connection: see _track_session.
        self.server.add_notification_handler(
            "notifications/initialized", types.NotificationParams, self._track_session
        )
        self._sessions: set[ServerSession] = set()
        self._listed_for: ModelContext | None = None
        self._listing: dict[str, Any] = {}
        self._modern_listing: dict[str, Any] = {}
        self._changed: anyio.Event | None = None  # set while running(), on a change
        self._group: TaskGroup | None = None  # running()'s: sends tools' events
        self._refresh(self.provider.get_model_context())
        self._announced: list[MCPTool] = self._listing["tools"]
        self._announced_resources = self.provider.get_model_context().ui_resources

    # -- serving ---------------------------------------------------------------------

    @asynccontextmanager
    async def running(self) -> AsyncIterator[MCPContextServer]:
        """Follow the provider while the block runs: list-changed notifications go out.

        :meth:`run_stdio` and :meth:`run_http` enter this themselves; enter it yourself
        when you serve :attr:`server` or :meth:`http_app` another way.
        """
        if self._changed is not None:
            raise RuntimeError("This MCPContextServer is already running")
        self._changed = changed = anyio.Event()
        subscribe = getattr(self.provider, "subscribe", None)
        unsubscribe = subscribe(self._on_change) if subscribe is not None else None
        try:
            async with task_group() as group:
                group.start_soon(self._announce_changes, changed)
                self._group = group
                try:
                    yield self
                finally:
                    self._listen.close()
                    group.cancel_scope.cancel()
        finally:
            self._changed = None
            self._group = None
            if unsubscribe is not None:
                unsubscribe()

    async def run_stdio(self) -> None:
        """Serve one MCP client over this process's stdin and stdout until it closes."""
        from mcp.server.stdio import stdio_server

        async with self.running(), stdio_server() as (read_stream, write_stream):
            await self.server.run(
                read_stream, write_stream, self.server.create_initialization_options()
            )

    def http_app(
        self,
        *,
        path: str = "/mcp",
        host: str = "127.0.0.1",
        token: str | None = None,
        auth: HTTPAuth | None = None,
        **options: Any,
    ) -> Starlette:
        """The Streamable HTTP ASGI app (Starlette) serving this server at ``path``.

        With ``token``, every request must carry ``Authorization: Bearer <token>``; with
        ``auth``, ``auth(request)`` (a Starlette ``HTTPConnection``; sync or async) must
        return true. Other requests get HTTP 401 and never reach MCP. With both, both
        must pass. A hook that raises refuses the request (and is logged).

        ``options`` go to the SDK's ``Server.streamable_http_app`` (``stateless_http``,
        ``json_response``, ``transport_security``...).

        Serve it inside :meth:`running`, which runs its sessions (from the first
        request on): mounted into your own application, whose lifespan never reaches a
        mounted app, enter :meth:`running` in your application's lifespan. Served on its
        own, the app's lifespan enters :meth:`running` unless it is entered already. Its
        sessions run once: make a new app to serve again after :meth:`running` ends.
        """
        app = self.server.streamable_http_app(streamable_http_path=path, host=host, **options)
        sessions = _Sessions(self, self.server.session_manager)
        app.router.lifespan_context = sessions.lifespan
        app.add_middleware(_RunSessions, sessions=sessions)
        if token is not None or auth is not None:  # outermost: refused before anything
            app.add_middleware(RequireAuth, token=token, auth=auth)
        return app

    async def run_http(
        self,
        host: str = "127.0.0.1",
        port: int = 8000,
        *,
        path: str = "/mcp",
        ready: Callable[[str], None] | None = None,
        token: str | None = None,
        auth: HTTPAuth | None = None,
        **options: Any,
    ) -> None:
        """Serve MCP over Streamable HTTP at ``http://host:port/path`` (asyncio only).

        Runs until cancelled, then lets open requests finish (up to 10 s). ``ready`` is
        called with the URL once the socket listens (``port=0`` picks a free port); a
        port that cannot be bound raises ``OSError`` at once. ``token`` and ``auth``
        guard every request as in :meth:`http_app`. Uses uvicorn, which the ``mcp``
        extra installs. Under trio it raises ``RuntimeError`` at once: serve
        :meth:`http_app` with an ASGI server that runs on trio (Hypercorn) instead.
        """
        if not running_asyncio():
            library = sniffio.current_async_library()
            raise RuntimeError(
                f"MCPContextServer.run_http needs asyncio (uvicorn runs on asyncio only), "
                f"not {library}: serve http_app() with an ASGI server that runs on "
                f"{library} (such as Hypercorn), or run this under asyncio"
            )
        import uvicorn

        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        with sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((host, port))
            except OSError as exc:
                where = host_port(host, port)
                raise OSError(exc.errno, f"Cannot listen on {where}: {exc.strerror}") from None
            url = f"http://{host_port(host, sock.getsockname()[1])}{path}"
            app = self.http_app(path=path, host=host, token=token, auth=auth, **options)
            server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
            stopped = anyio.Event()
            # uvicorn stops cleanly when told to (should_exit); cancelled, it logs a
            # traceback. So it runs shielded, with a deadline once it is told to stop.
            serve_scope = anyio.CancelScope(shield=True)

            async def serve() -> None:
                try:
                    with serve_scope:
                        await server.serve(sockets=[sock])
                finally:
                    stopped.set()

            async with self.running(), anyio.create_task_group() as group:
                group.start_soon(serve)
                try:
                    while not server.started:
                        if stopped.is_set():
                            raise OSError(f"The MCP HTTP server could not start at {url}")
                        await anyio.sleep(0.01)
                    if ready is not None:
                        ready(url)
                    await stopped.wait()
                finally:
                    server.should_exit = True
                    serve_scope.deadline = anyio.current_time() + _HTTP_STOP_TIMEOUT

    # -- handlers --------------------------------------------------------------------

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> dict[str, Any]:
        context = self.provider.get_model_context()
        if context is not self._listed_for:
            self._refresh(context)
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return self._modern_listing
        return self._listing

    async def _list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> dict[str, Any]:
        listing = list_resources(self.provider.get_model_context(), self.app_dialects)
        return _for_session(ctx, listing)

    async def _read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> dict[str, Any]:
        resources = self.provider.get_model_context().ui_resources
        return _for_session(ctx, read_resource(resources, str(params.uri), self.app_dialects))

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> dict[str, Any]:
        name = params.name
        tool = self.provider.get_model_context().tools.get(name)
        if tool is None or tool.disabled:
            raise MCPError(types.INVALID_PARAMS, f'Tool "{name}" not found')
        # The tool's events go to the client as they come. Whether the client wants
        # progress is the SDK's to decide (it drops progress nobody asked for), so the
        # forwarder exists per call but starts a task only when the tool reports.
        events = _MCPEvents(ctx, self._group)
        try:
            try:
                result = await tool.invoke(params.arguments or {}, on_event=events.put)
            finally:
                await events.finish()  # what the tool reported goes before its result
        except Exception as exc:  # said as the error table says MCP says it
            if not isinstance(exc, AssistantFramesError):
                logger.debug("Tool %r raised", name, exc_info=True)
            code, message = failure(exc)
            if code is not None:
                raise MCPError(code, message) from None
            return error_result(message)
        return tool_result(result, modern=ctx.protocol_version in MODERN_PROTOCOL_VERSIONS)

    async def _track_session(
        self, ctx: ServerRequestContext[Any], params: types.NotificationParams
    ) -> None:
        # Notification handlers run as tasks of the connection, which cancels them
        # when it ends; so this task holds the session exactly as long as it is open.
        session = ctx.session
        self._sessions.add(session)
        try:
            await anyio.sleep_forever()
        finally:
            self._sessions.discard(session)

    # -- change notifications --------------------------------------------------------

    def _refresh(self, context: ModelContext) -> None:
        self._listed_for = context
        self._listing = {"tools": self._listable(context)}
        # The cache fields are required on 2026-07-28 (0 ms: refetch after each change)
        # and refused on older sessions.
        self._modern_listing = {**self._listing, **_MODERN_LISTING}

    def _instructions(self) -> str | None:
        if self._fixed_instructions is not None:
            return self._fixed_instructions
        return self.provider.get_model_context().system

    def _listable(self, context: ModelContext) -> list[MCPTool]:
        """The context's tools as MCP lists them, leaving out any MCP cannot carry (a
        schema with no object at its root: logged once), so one such tool never
        freezes the list for all the others."""
        return stamp_tools(to_mcp_tools(context), self.app_dialects)

    def _on_change(self) -> None:
        # Only a signal: the listing is rebuilt once per burst, by _announce_changes.
        if self._changed is not None:
            self._changed.set()

    async def _announce_changes(self, changed: anyio.Event) -> None:
        while True:
            await changed.wait()
            self._changed = changed = anyio.Event()
            context = self.provider.get_model_context()
            if context is not self._listed_for:
                self._refresh(context)
            tools = self._listing["tools"]
            if tools != self._announced:
                self._announced = tools
                await self._bus.publish(ToolsListChanged())
                for session in list(self._sessions):
                    with anyio.move_on_after(_NOTIFY_TIMEOUT):
                        await session.send_tool_list_changed()
            # Instructions only, or a change that MCP clients cannot see, says nothing.
            if context.ui_resources != self._announced_resources:
                self._announced_resources = context.ui_resources
                await self._bus.publish(ResourcesListChanged())
                for session in list(self._sessions):
                    with anyio.move_on_after(_NOTIFY_TIMEOUT):
                        await session.send_resource_list_changed()

    def __repr__(self) -> str:
        return f"MCPContextServer({self.provider!r}, name={self.server.name!r})"


class _Sessions:
    """The SDK's session manager of one :meth:`MCPContextServer.http_app`, run in
    :meth:`~MCPContextServer.running`'s task group from the app's first request.

    The SDK runs it in the app's own lifespan, which never runs for an app mounted
    into another one (Starlette runs only the outer app's): every request then failed
    with "Task group is not initialized".
    """

    def __init__(self, server: MCPContextServer, manager: StreamableHTTPSessionManager) -> None:
        self._server = server
        self._manager = manager
        self._running = False
        self._ended = False
        self._starting: anyio.Event | None = None

    @asynccontextmanager
    async def lifespan(self, app: object) -> AsyncIterator[None]:
        """The app's lifespan, when it is served on its own: the server's too, unless
        someone runs the server already (:meth:`~MCPContextServer.run_http` does)."""
        if self._server._group is not None:  # noqa: SLF001 - this module's MCPContextServer
            yield
            return
        async with self._server.running():
            yield

    async def ensure_running(self) -> None:
        """Start the session manager unless it runs; return once it does."""
        while not self._running:
            if self._starting is not None:  # another request is starting it
                await self._starting.wait()
                continue
            if self._ended:
                raise RuntimeError(
                    "This http_app() served a running() of its MCP server that has ended; "
                    "make a new one with MCPContextServer.http_app() to serve again"
                )
            group = self._server._group  # noqa: SLF001 - this module's MCPContextServer
            if group is None:
                raise RuntimeError(
                    "The MCP server is not running: enter MCPContextServer.running() for "
                    "the life of the application that serves its http_app() (in the "
                    "application's lifespan, say)"
                )
            self._starting = starting = anyio.Event()
            try:
                await group.start(self._run)
            finally:
                self._starting = None
                starting.set()

    async def _run(self, *, task_status: TaskStatus[None]) -> None:
        self._ended = True  # the SDK runs a session manager once
        async with self._manager.run():
            self._running = True
            try:
                task_status.started()
                await anyio.sleep_forever()
            finally:
                self._running = False


class _RunSessions:
    """ASGI middleware: each request waits until the app's sessions run."""

    def __init__(self, app: ASGIApp, *, sessions: _Sessions) -> None:
        self.app = app
        self.sessions = sessions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self.sessions.ensure_running()
        await self.app(scope, receive, send)


class _MCPEvents:
    """One call's events on their way to an MCP client, sent by one task started on the
    first event: the latest progress and a bounded list of log messages (at the levels
    the session allows), so a tool never waits for the client."""

    __slots__ = ("_ctx", "_done", "_group", "_levels", "_logs", "_progress", "_scope", "_wake")

    def __init__(self, ctx: ServerRequestContext[Any], group: TaskGroup | None) -> None:
        self._ctx = ctx
        self._group = group
        self._levels: frozenset[str] | None = None
        self._progress: ToolProgress | None = None
        self._logs: deque[ToolLog] = deque(maxlen=_MAX_QUEUED_LOGS)
        self._wake: anyio.Event | None = None
        self._scope: anyio.CancelScope | None = None
        self._done: anyio.Event | None = None

    def put(self, event: ToolEvent) -> None:
        if isinstance(event, ToolProgress):
            self._progress = event
        else:
            if self._levels is None:
                self._levels = allowed_log_levels(self._ctx.protocol_version, self._ctx.meta)
            if event.level not in self._levels:
                return
            self._logs.append(event)
        if self._wake is None:
            if self._group is None:  # not running(): sent when the call ends
                return
            self._wake = anyio.Event()
            self._scope = anyio.CancelScope()
            self._done = anyio.Event()
            self._group.start_soon(self._run, self._scope, self._done)
        self._wake.set()

    async def _run(self, scope: anyio.CancelScope, done: anyio.Event) -> None:
        try:
            with scope:
                while True:
                    assert self._wake is not None
                    await self._wake.wait()
                    self._wake = anyio.Event()
                    with anyio.CancelScope(shield=True):  # a message taken is a message sent
                        await self.flush()
        finally:
            done.set()

    async def finish(self) -> None:
        """The call is over: stop the task, then send what is left."""
        if self._scope is None and not self._logs and self._progress is None:
            return  # the tool reported nothing (or nobody is running): the usual case
        with anyio.CancelScope(shield=True), anyio.move_on_after(_NOTIFY_TIMEOUT):
            if self._scope is not None and self._done is not None:
                self._scope.cancel()
                await self._done.wait()
            await self.flush()

    async def flush(self) -> None:
        while self._logs or self._progress is not None:
            try:
                await self._send_one()
            except Exception as exc:  # a client that went away: the call itself goes on
                logger.debug("Could not send a tool's event to the MCP client: %r", exc)

    async def _send_one(self) -> None:
        session = self._ctx.session
        if self._logs:
            log = self._logs.popleft()
            notification = types.LoggingMessageNotification(
                params=types.LoggingMessageNotificationParams(level=log.level, data=_log_data(log))
            )
            await session.send_notification(notification, related_request_id=self._ctx.request_id)
            return
        progress, self._progress = self._progress, None
        if progress is not None:
            await session.report_progress(progress.progress, progress.total, progress.message)


def _log_data(log: ToolLog) -> Any:
    """MCP carries one ``data`` value: the message, the data, or both in an object."""
    if log.data is None:
        return log.message
    if log.message is None:
        return log.data
    return {"message": log.message, "data": log.data}
