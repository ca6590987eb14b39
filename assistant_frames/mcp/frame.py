"""``MCPFrameHost``: an MCP server used as a frame, i.e. as a :class:`ModelContextProvider`.

The server's tools become tools of the context (its ``inputSchema`` as the parameters;
its ``title``, ``icons``, ``annotations``, ``outputSchema`` and ``_meta`` kept exactly as
declared), its instructions the system text, and each call goes through the official
``mcp`` client. A server whose tools have MCP Apps UIs also gives the context its
``ui://`` resources (read once, and again when it says its resources changed). The frame
follows the server's tool list: on ``notifications/tools/list_changed`` (handshake-era
servers) or a ``subscriptions/listen`` event (2026-07-28 servers) it fetches the list
again. Servers that cannot notify are polled only when asked to.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio
import anyio.abc
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from .._anyio import cancel_scope_class, clock, expire_calls
from .._driver import Driver
from ..calls import PendingCalls
from ..errors import (
    ConnectError,
    FrameDisconnected,
    ToolCallError,
    ToolCallTimeout,
    error_from_jsonrpc,
)
from ..registry.context import ModelContext, Subscribers, Unsubscribe
from ..registry.events import (
    ToolEventCallback,
    ToolEventSubscribers,
    ToolLog,
    ToolProgress,
    deliver_event,
)
from ..registry.ui import UIResource
from ..registry.waiting import WaitsForTools
from ..transports.contract import CloseReason
from ._stdio import describe_exit, server_process
from .client import check_arguments, progress_callback
from .follow import ServerFollower
from .listings import ListingKind, ServerListings
from .results import from_call_result
from .server_tools import same_context, server_context
from .targets import (
    WatchedTransport,
    connect_error,
    connected_client,
    http_transport,
    leaves,
    resolve_server,
)

if TYPE_CHECKING:
    from mcp.shared.dispatcher import ProgressFnT


__all__ = ["MCPFrameHost"]

logger = logging.getLogger("assistant_frames.mcp")

State = Literal["new", "connected", "disconnected", "closed"]
_T = TypeVar("_T")

_EMPTY_CONTEXT = ModelContext()


class MCPFrameHost(Driver, WaitsForTools):
    """A connection to one MCP server whose tools form a live :class:`ModelContext`.

    ``server`` is what to connect to:

    - an ``http://`` or ``https://`` URL: Streamable HTTP;
    - a command, as a list (``["uvx", "mcp-server-time"]``) or a shell-style string
      (``"uvx mcp-server-time"``), or ``mcp.StdioServerParameters``: a subprocess over
      stdio (``env`` and ``cwd`` apply to a command);
    - an ``mcp`` ``MCPServer`` or low-level ``Server`` in this process;
    - any ``mcp`` client ``Transport``, e.g. ``streamable_http_client(url,
      http_client=...)`` for custom headers or auth.

    Use it as an async context manager: entering connects, negotiates the protocol and
    fetches the tool list, so the context is complete once the block starts. Add it to
    a parent registry like a frame host: ``parent.add_provider(frame, namespace="time")``.

    ``timeout`` bounds each call (``None`` for none); ``connect_timeout`` bounds
    entering. ``poll_interval`` (seconds) also re-fetches the tool list that often, for
    servers that change their tools without announcing it; otherwise the list is fetched
    again only when the server says it changed.

    When the server goes away its tools disappear, subscribers are told, and pending and
    new calls fail with :class:`FrameDisconnected`. A subprocess is noticed at once, and
    the error carries its exit code and the end of its stderr (``returncode``,
    ``stderr_tail``; :attr:`disconnect_error` keeps it), as does the
    :class:`ConnectError` of one that dies while connecting. Over HTTP a failing request
    or the change stream tells, and where neither would (handshake-era servers), a ping
    every ``keepalive`` seconds does.
    """

    _noun = "MCPFrameHost"
    _stale: anyio.Event  # set when the tool list should be fetched again
    _fetching: anyio.Lock

    def __init__(
        self,
        server: Any,
        *,
        name: str | None = None,
        timeout: float | None = 30.0,
        connect_timeout: float = 30.0,
        poll_interval: float | None = None,
        keepalive: float | None = 15.0,
        mode: str = "auto",
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        token: str | None = None,
        headers: Mapping[str, str] | None = None,
        resource_tool: bool = False,
    ) -> None:
        limits = (("timeout", timeout), ("poll_interval", poll_interval), ("keepalive", keepalive))
        for label, value in limits:
            if value is not None and not value > 0:
                raise ValueError(f"{label} must be positive or None, not {value!r}")
        if not connect_timeout > 0:
            raise ValueError(f"connect_timeout must be positive, not {connect_timeout!r}")
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.poll_interval = poll_interval
        self.keepalive = keepalive
        self.resource_tool = resource_tool
        if token is not None:
            headers = {**(headers or {}), "Authorization": f"Bearer {token}"}
        target, description, self._kind = resolve_server(server, env=env, cwd=cwd, headers=headers)
        if isinstance(target, StdioServerParameters):
            target = server_process(target, self._process_ended)
        elif self._kind == "http":
            target = http_transport(target, dict(headers or {}), self._on_http_response)
        self._refused: int | None = None  # an HTTP 401 or 403 status, while connecting
        self.name = name or description
        self._client = Client(
            target if self._kind == "in-process" else WatchedTransport(target, self._stream_ended),
            mode=mode,
            message_handler=self._on_message,
            logging_callback=self._on_log,
            cache=None,  # a changed list must be fetched, never served from a cache
        )
        self._state: State = "new"
        self._context = _EMPTY_CONTEXT
        self._subscribers = Subscribers()
        self._disconnected: FrameDisconnected | None = None
        self._exit: CloseReason | None = None  # how a server subprocess ended
        self._calls = PendingCalls()  # each call's wake cancels its scope
        self._new_scope: Callable[[], anyio.CancelScope] = anyio.CancelScope  # once entered:
        self._clock: Callable[[], float] = anyio.current_time  # the backend's own
        # Resources and prompts: listed when asked, kept until the server says they changed.
        self._listings = ServerListings(
            self._client, request=self._request, check_connected=self._check_connected
        )
        self._follower = ServerFollower(
            self.name,
            stale=self._mark_stale,
            lists_changed=self._lists_changed,
            gone=self._gone_because,
            fetch=self._fetch,
        )
        self._ui_resources: dict[str, UIResource] = {}  # read ui:// resources, by URI
        self._events = ToolEventSubscribers()
        self._init_lifecycle()

    # -- lifecycle -----------------------------------------------------------------------

    async def __aenter__(self) -> MCPFrameHost:
        if self._state != "new":
            raise RuntimeError("An MCPFrameHost can be entered only once")
        self._ended = anyio.Event()
        self._stale = anyio.Event()
        self._fetching = anyio.Lock()
        self._new_scope, self._clock = cancel_scope_class(), clock()
        async with self._tasks.open() as group:
            try:
                # The client lives in its own task, so this deadline never sits
                # between the client's task groups and their exit.
                with anyio.fail_after(self.connect_timeout):
                    await group.start(self._run)
            except TimeoutError:
                self._state = "closed"
                raise ConnectError(
                    f"Cannot connect to the MCP server {self.name}: "
                    f"no answer within {self.connect_timeout:g} s"
                ) from None
            except BaseException as exc:
                self._state = "closed"
                # The failure comes out of the client's nested task groups: say it plainly.
                failure = next((e for e in leaves(exc) if isinstance(e, ConnectError)), None)
                if failure is None or failure is exc:
                    raise
                raise failure from failure.__cause__
        return self

    async def _run(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        connecting = connected_client(
            self._client,
            self.name,
            connected=lambda: self.connected,
            connect_error=self._connect_error,
        )
        async with connecting:
            self._state = "connected"
            async with anyio.create_task_group() as group:
                group.start_soon(expire_calls, self._calls)
                # Listening starts before the first listing, so that no change can fall
                # between the two.
                await self._follower.start(
                    group,
                    self._client,
                    kind=self._kind,
                    poll_interval=self.poll_interval,
                    keepalive=self.keepalive,
                )
                group.start_soon(self._refetch_when_stale)
                try:
                    await self._fetch()
                except MCPError as exc:
                    raise self._connect_error(
                        f"Cannot list the tools of the MCP server {self.name}", exc.message
                    ) from exc
                task_status.started()

    def _connect_error(self, what: str, reason: str) -> ConnectError:
        """``what`` failed for ``reason``, as this frame host's server tells it."""
        return connect_error(what, reason, refused=self._refused, ended=self._exit)

    async def _stop(self) -> None:
        """Disconnect from the server (a subprocess is stopped with the tasks)."""
        if self._state == "closed":
            return
        self._state = "closed"
        self._fail(FrameDisconnected(f"The MCP frame {self.name} was closed"))

    @property
    def state(self) -> State:
        """``"new"``, ``"connected"``, ``"disconnected"`` (the server went away) or ``"closed"``."""
        return self._state

    @property
    def connected(self) -> bool:
        """True while the server is reachable."""
        return self._state == "connected"

    @property
    def disconnect_error(self) -> FrameDisconnected | None:
        """Why the frame is no longer connected (``None`` until then).

        The error that calls now raise: for a server subprocess that died, with its
        :attr:`~FrameDisconnected.returncode` and :attr:`~FrameDisconnected.stderr_tail`.
        """
        return self._disconnected

    @property
    def client(self) -> Client:
        """The underlying ``mcp.Client`` (for prompts, resources and the like)."""
        return self._client

    @property
    def protocol_version(self) -> str:
        """The MCP protocol version negotiated with the server."""
        return self._client.protocol_version

    @property
    def server_info(self) -> types.Implementation | None:
        """What the server says about itself (``None`` if it does not say)."""
        return self._client.server_info

    async def wait_for_context(self, timeout: float | None = None) -> ModelContext:
        """The server's context, as :meth:`AssistantFrameHost.wait_for_context` gives a frame's.

        Entering already fetched it, so this waits for nothing (``timeout`` is accepted
        for the likeness); it raises :class:`FrameDisconnected` once the server is gone.
        """
        if self._state == "new":
            raise RuntimeError("Enter the MCPFrameHost (async with) before waiting for its context")
        if self._state != "connected":
            raise self._lost(f"The MCP frame {self.name} was closed")
        return self._context

    # -- ModelContextProvider ------------------------------------------------------------

    def get_model_context(self) -> ModelContext:
        """The server's tools and instructions (empty once it has gone away)."""
        return self._context

    def subscribe(self, callback: Callable[[], None]) -> Unsubscribe:
        """Call ``callback()`` whenever the server's tools change."""
        return self._subscribers.add(callback)

    # -- calls ---------------------------------------------------------------------------

    def subscribe_tool_events(self, callback: ToolEventCallback) -> Unsubscribe:
        """Call ``callback(event)`` with every call's progress and the server's log messages.

        MCP's log messages name no call, so they come here (as
        :class:`~assistant_frames.ToolLog` with no ``tool_call_id``), not to a call's
        ``on_event``.
        """
        return self._events.add(callback)

    async def call_tool(
        self,
        name: str,
        args: Any = None,
        *,
        timeout: float | None = None,
        on_event: ToolEventCallback | None = None,
    ) -> Any:
        """Call the server's tool ``name``; return its structured content or text.

        ``on_event`` receives the call's progress (MCP ``notifications/progress``) as
        :class:`~assistant_frames.ToolProgress` events.

        Raises :class:`ToolCallError` when the server reports an error (``isError``
        results and MCP errors alike), :class:`ToolCallTimeout` after ``timeout``
        seconds (default: the frame's; the server is told to cancel), and
        :class:`FrameDisconnected` when the server is or goes away.
        """
        result = await self.call_tool_result(name, args, timeout=timeout, on_event=on_event)
        try:
            return from_call_result(result, name)
        except ToolCallError as exc:  # an isError result
            exc.frame = self.name
            raise

    async def call_tool_result(
        self,
        name: str,
        args: Any = None,
        *,
        timeout: float | None = None,
        on_event: ToolEventCallback | None = None,
    ) -> types.CallToolResult:
        """Call the server's tool ``name`` and return its ``CallToolResult`` as sent.

        For whoever passes results on whole (an MCP Apps view's proxied ``tools/call``):
        an ``isError`` result is returned, not raised. Otherwise as :meth:`call_tool`.
        """
        if self._state != "connected":
            raise self._lost(f"The MCP frame {self.name} is not connected", name)
        check_arguments(name, args, self.name)
        limit = self.timeout if timeout is None else timeout
        # One scope for the deadline and for the frame closing or losing its server (an
        # in-process server runs the call in this very task, where no transport ends
        # it). Cancelled, the client tells the server to cancel the call.
        with self._new_scope() as scope:
            deadline = None if limit is None else self._clock() + limit
            call = self._calls.add(name, deadline=deadline, wake=scope.cancel)
            progress = None
            if on_event is not None or self._events:
                progress = self._progress_callback(call.id, name, on_event)
            try:
                return await self._client.call_tool(name, args, progress_callback=progress)
            except MCPError as exc:
                if exc.code == types.CONNECTION_CLOSED:
                    self._gone_because("it closed the connection")
                    raise self._lost(exc.message, name) from None
                failure = error_from_jsonrpc(exc.code, exc.message, name)
                failure.frame = self.name
                raise failure from None
            except (RuntimeError, ValidationError) as exc:
                # The SDK checks the result: its shape, and content against outputSchema.
                raise ToolCallError(
                    f'The MCP server {self.name} sent an invalid result for tool "{name}": {exc}',
                    tool_name=name,
                    frame=self.name,
                ) from exc
            finally:
                self._calls.discard(call.id)
        if call.timed_out:
            raise ToolCallTimeout(name, limit or 0.0, frame=self.name)
        raise self._lost(f"The MCP frame {self.name} was closed", name, call.error)

    def _lost(
        self, message: str, tool_name: str | None = None, cause: object = None
    ) -> FrameDisconnected:
        """A fresh ``FrameDisconnected`` for one caller: why the server went (``cause``, or
        the frame's own record), else ``message``; each raise gets its own instance."""
        known = cause if isinstance(cause, FrameDisconnected) else self._disconnected
        error = copy.copy(known) if known is not None else FrameDisconnected(message)
        error.tool_name, error.frame = tool_name, self.name
        return error

    # -- resources and prompts ----------------------------------------------------------

    async def list_resources(self) -> list[types.Resource]:
        """The server's resources (every page), cached until it says they changed."""
        return await self._listings.listing("resources")

    async def list_resource_templates(self) -> list[types.ResourceTemplate]:
        """The server's resource templates, cached until it says its resources changed."""
        return await self._listings.listing("resource_templates")

    async def read_resource(self, uri: str) -> types.ReadResourceResult:
        """Read the resource at ``uri`` (listed, or filled in from a template).

        Raises the SDK's ``MCPError`` when the server refuses (an unknown URI...),
        ``TimeoutError`` after the frame's ``timeout``, and :class:`FrameDisconnected`
        when the server is or goes away.
        """
        return await self._listings.read_resource(uri)

    async def list_prompts(self) -> list[types.Prompt]:
        """The server's prompts (every page), cached until it says they changed."""
        return await self._listings.listing("prompts")

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None
    ) -> types.GetPromptResult:
        """The prompt ``name`` filled in with ``arguments``; errors as :meth:`read_resource`."""
        return await self._listings.get_prompt(name, arguments)

    def subscribe_resources(self, callback: Callable[[], None]) -> Unsubscribe:
        """Call ``callback()`` when the server says its resources (or templates) changed."""
        return self._listings.subscribe_resources(callback)

    def subscribe_prompts(self, callback: Callable[[], None]) -> Unsubscribe:
        """Call ``callback()`` when the server says its prompts changed."""
        return self._listings.subscribe_prompts(callback)

    def _lists_changed(self, *kinds: ListingKind) -> None:
        self._listings.changed(*kinds)
        if "prompts" not in kinds:
            self._ui_resources.clear()
            if self.resource_tool or self._context.ui_resources:
                self._stale.set()  # the read_resource tool or the UI resources list them

    def _check_connected(self) -> None:
        if self._state != "connected":
            raise self._lost(f"The MCP frame {self.name} is not connected")

    async def _request(self, what: str, send: Callable[[], Awaitable[_T]]) -> _T:
        """``send()`` bounded by the frame's timeout, and ended by the server leaving."""
        self._check_connected()
        limit = self.timeout
        with self._new_scope() as scope:  # as in call_tool: see there
            deadline = None if limit is None else self._clock() + limit
            call = self._calls.add(what, deadline=deadline, wake=scope.cancel)
            try:
                return await send()
            except MCPError as exc:
                if exc.code == types.CONNECTION_CLOSED:
                    self._gone_because("it closed the connection")
                    raise self._lost(exc.message) from None
                raise
            finally:
                self._calls.discard(call.id)
        if call.timed_out:
            raise TimeoutError(f"The MCP server {self.name}: {what} timed out after {limit:g} s")
        raise self._lost(f"The MCP frame {self.name} was closed", None, call.error)

    def _progress_callback(
        self, call_id: str, name: str, on_event: ToolEventCallback | None
    ) -> ProgressFnT:
        events = self._events

        def deliver(event: ToolProgress) -> None:
            if on_event is not None:
                deliver_event(on_event, event)
            if events:
                events(event)

        return progress_callback(call_id, name, deliver)

    async def _on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        if not self._events:
            return
        data = params.data
        message = data if isinstance(data, str) else None
        self._events(ToolLog(params.level, message, None if message is not None else data))

    # -- following the server ------------------------------------------------------------

    async def _on_message(self, message: Any) -> None:
        self._follower.on_message(message)

    def _mark_stale(self) -> None:
        self._stale.set()

    async def _refetch_when_stale(self) -> None:
        while True:
            await self._stale.wait()
            self._stale = anyio.Event()
            try:
                await self._fetch()
            except MCPError as exc:
                if exc.code == types.CONNECTION_CLOSED:
                    self._gone_because("it closed the connection")
                    return
                logger.warning("MCP frame %s: listing its tools failed: %s", self.name, exc.message)

    async def _on_http_response(self, response: Any) -> None:
        if response.status_code in (401, 403) and self._state == "new":
            self._refused = response.status_code

    def _stream_ended(self) -> None:
        self._gone_because("it closed the connection")

    def _process_ended(self, reason: CloseReason) -> None:
        # Called before the client's stream ends, so every failure that follows says why.
        self._exit = reason
        self._gone_because(
            describe_exit(reason), returncode=reason.exit_code, stderr_tail=reason.stderr_tail
        )

    def _gone_because(
        self, reason: str, *, returncode: int | None = None, stderr_tail: str | None = None
    ) -> None:
        if self._state != "connected":
            return
        self._state = "disconnected"
        self._fail(
            FrameDisconnected(
                f"The MCP server {self.name} went away: {reason}",
                returncode=returncode,
                stderr_tail=stderr_tail,
            )
        )

    def _fail(self, error: FrameDisconnected) -> None:
        self._disconnected = self._disconnected or error
        if self._ended is not None:
            self._ended.set()
        self._calls.fail_all(self._disconnected)
        self._listings.clear()
        if self._context is not _EMPTY_CONTEXT:
            self._context = _EMPTY_CONTEXT
            self._subscribers.notify()

    async def _fetch(self) -> None:
        # One listing at a time, so that an older one never lands after a newer one.
        async with self._fetching:
            await self._fetch_now()

    async def _fetch_now(self) -> None:
        context = await server_context(
            self.name,
            self._client,
            self._listings,
            call_tool=self.call_tool,
            read=self.read_resource,
            offer_resources=self.resource_tool,
            ui_cache=self._ui_resources,
        )
        if self._state != "connected":
            return
        if same_context(context, self._context):
            return
        self._context = context
        self._subscribers.notify()

    def __repr__(self) -> str:
        return f"MCPFrameHost({self.name!r}, state={self._state!r})"
