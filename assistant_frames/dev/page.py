"""``DevPage``: one local web page that shows a :class:`~assistant_frames.Federation` live
and calls its tools.

The page is static (``assistant_frames/dev/static/dev-page.*``: plain HTML, CSS and
JavaScript, no build step, no dependencies) and does no protocol logic. Python pushes
what it shows over one WebSocket (``/socket``, beside the page), and the page sends back
the calls the person makes. Both directions are JSON objects with a ``type``.

Python to the page:

- ``state``: the whole federation (:func:`~.snapshot.describe_federation`), first on
  connecting and again whenever a member's state or the merged context changes;
- ``started`` (with the ``tool``, its ``member`` and the ``arguments``), ``progress``,
  ``log``, ``result``, ``error``, ``cancelled``: one call's life, by the page's own
  ``call`` id (``error`` carries the error's class, code, message, member and tool). A
  call the program makes (:meth:`DevPage.call_tool`, the model's call) is told to every
  page, by an id of its own (``p1``, ``p2``...), and again to each page that opens later;
- ``view``, ``view-log``, ``view-size``, ``view-message``, ``view-link``: the MCP Apps
  view of a call (see :mod:`.apps`);
- ``theme``: the theme of the page and its views, ``light`` or ``dark``;
- ``notice``: something the person should know (a message the page sent was refused).

The page to Python: ``call {call, tool, arguments}``, ``cancel {call}``, ``theme
{theme}``, ``view-mode {id, mode}`` and ``view-close {id}``.

The page and its files are served with no token (they hold no secret); the WebSocket
needs the token, which the page reads from its URL's fragment (no server ever sees a
fragment) and sends as ``?access_token=``, and a WebSocket from another origin than
the page's is refused. It listens on loopback by default.
"""

from __future__ import annotations

import json
import logging
import math
import secrets
import time
from collections import deque
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from importlib import resources
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.lowlevel
from anyio.abc import ObjectStream, TaskGroup

from .._driver import Lifecycle
from .._text import host_port
from ..browser import APP_PAGE_FILES, RELAY_FILES, relay_source
from ..errors import ToolCallError
from ..federation import Federation
from ..registry import ToolEvent, ToolLog, ToolProgress
from ..registry.context import Unsubscribe
from ..transports.message_writer import ConnectionWriter
from ..transports.websocket import (
    WebSocketAttribute,
    WebSocketServer,
    WebSocketTransport,
    websocket_server,
)
from .snapshot import describe_federation, jsonable

if TYPE_CHECKING:
    from ..apps.links import LinkPolicy
    from ..apps.view import AppView
    from .apps import DevViews

Theme = Literal["light", "dark"]
#: Where one call's news goes: a page's ``post``, or every page's.
Post = Callable[[dict[str, Any]], None]

__all__ = ["DevPage", "page_files"]

logger = logging.getLogger("assistant_frames.dev")

_HTML = "text/html; charset=utf-8"
#: The shipped files, by the URL path they are served at.
_FILES = {
    "/": ("dev-page.html", _HTML),
    "/dev-page.js": ("dev-page.js", "text/javascript; charset=utf-8"),
    "/dev-page.css": ("dev-page.css", "text/css; charset=utf-8"),
}
#: The views' relay and view box, shared with the app page (assistant_frames/browser/static).
_SHARED = ("parent-relay.js", "view-box.js")
_OUTBOX = 1000  # messages queued for one page before it counts as stuck
_SEND_TIMEOUT = 30.0  # a page that takes no message for this long is hung up on
_MAX_CALLS = 32  # calls of one page running at once
_MAX_MESSAGE_BYTES = 16 * 1024 * 1024  # a state message carries the whole context
_MAX_LOG_CHARS = 16 * 1024  # of one log message's text, as the page shows it
# Messages of the program's calls kept for the pages that open later: they are queued for
# a new page at once, with room to spare in its queue (_OUTBOX).
_REPLAY = 500


def page_files() -> dict[str, tuple[bytes, str]]:
    """The page's files for ``websocket_server(http_files=...)``: ``{path: (bytes,
    content type)}``, read from the package (``assistant_frames/dev/static``)."""
    static = resources.files(__package__).joinpath("static")
    files = {
        path: (static.joinpath(name).read_bytes(), kind) for path, (name, kind) in _FILES.items()
    }
    for name in _SHARED:
        files[f"/{name}"] = (relay_source(name), {**RELAY_FILES, **APP_PAGE_FILES}[name])
    return files


def describe_error(
    exc: BaseException, tool: str, owner: str | None, member_tool: str | None = None
) -> dict[str, Any]:
    """A failed call as the page shows it: the error's class and code, its message, the
    tool called, the member it is of (``owner``; else the frame the error names) and the
    tool's name there (``memberTool``: ``member_tool``, the member's own name for it;
    else the name the error gives)."""
    code = getattr(exc, "code", None)
    called = exc if isinstance(exc, ToolCallError) else None
    return {
        "type": type(exc).__name__,
        "code": None if code is None else str(getattr(code, "value", code)),
        "message": getattr(exc, "message", None) or str(exc) or type(exc).__name__,
        "member": owner or (called.frame if called else None),
        "tool": tool,
        "memberTool": member_tool or (called.tool_name if called else None) or tool,
    }


class _Page(ConnectionWriter):
    """One open page: its WebSocket, the writer of what it is sent, and its calls."""

    def __init__(self, transport: ObjectStream[Any]) -> None:
        super().__init__(
            transport,
            on_ended=self._went_away,
            on_unsendable=self._unsendable,
            queue_size=_OUTBOX,
            send_timeout=_SEND_TIMEOUT,
        )
        self.calls: dict[str, anyio.CancelScope] = {}
        self.gone = False

    def post(self, message: dict[str, Any]) -> None:
        """Send ``message`` in order, without waiting; a page that stopped reading (its
        queue is full) is hung up on."""
        if self.gone:
            return
        if self.writer.send_soon([message]):
            logger.warning("Dev page: a page stopped reading; closing its connection")
            self.hang_up()

    def hang_up(self) -> None:
        """Stop sending, cancel its calls, and have its connection closed."""
        self.gone = True
        super().hang_up()
        for scope in self.calls.values():
            scope.cancel()

    def _went_away(self, exc: BaseException) -> None:
        logger.info("Dev page: a page went away: %r", exc)

    def _unsendable(self, exc: Exception) -> None:  # jsonable() makes every message sendable
        logger.error("Dev page: a message could not be sent: %s", exc)


class DevPage(Lifecycle):
    """Serve the dev page for ``federation``: its members, merged context, tool forms,
    calls and the model's view, pushed live over one WebSocket.

    Enter it (``async with``) inside the federation's block to listen; :attr:`url` is
    then the page's address, its token in the fragment. Add members with :meth:`add`
    (they show as connecting at once) or on the federation itself; either way the page
    follows. ``timeout`` bounds each call the page makes (``None``: the federation's
    own ``timeout``). ``token`` defaults to a random one. ``theme`` is the page's and its
    views' (the page switches it: :meth:`set_theme`); ``link_policy`` says which links
    the views may offer (:class:`~assistant_frames.apps.LinkPolicy`; default: none).
    Leaving the block cancels the running calls and stops the server; the federation
    stays open.
    """

    def __init__(
        self,
        federation: Federation,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        title: str = "assistant-frames dev",
        timeout: float | None = None,
        theme: Theme = "light",
        link_policy: LinkPolicy | None = None,
    ) -> None:
        if theme not in ("light", "dark"):
            raise ValueError(f"theme is 'light' or 'dark', not {theme!r}")
        self.federation = federation
        self.host = host
        self.port = port
        self.title = title
        self.timeout = timeout
        self.token = token or secrets.token_urlsafe(24)
        self._server: WebSocketServer | None = None
        self._stack: AsyncExitStack | None = None
        self._pages: set[_Page] = set()
        self._changed: anyio.Event | None = None  # made on entry: it needs the event loop
        self._member_subscriptions: dict[str, Unsubscribe] = {}
        self._state: dict[str, Any] | None = None
        self._state_json = ""
        self._targets: dict[str, str] = {}  # how the page names members' targets
        self._theme: Theme = theme
        # The program's calls (call_tool): their scopes, and what the pages were told of
        # them, for the pages that open later.
        self._program_calls: dict[str, anyio.CancelScope] = {}
        self._program_told: deque[dict[str, Any]] = deque(maxlen=_REPLAY)
        self._program_count = 0
        #: The MCP Apps views of the calls of tools with a UI (an ``AppPage`` inside);
        #: ``None`` without the ``mcp`` extra (no views are shown then).
        self.views = _dev_views(federation, self._post_view, host, timeout, link_policy, theme)
        self._init_lifecycle()

    # -- addresses -----------------------------------------------------------------------

    @property
    def origin(self) -> str:
        """The page's origin, ``http://127.0.0.1:PORT``."""
        server = self._server
        if server is None:
            raise RuntimeError("The dev page is not running: enter it first (async with)")
        return f"http://{host_port(server.host, server.port)}"

    @property
    def url(self) -> str:
        """The page's URL; the token is in its fragment, which browsers never send."""
        return f"{self.origin}/#token={self.token}"

    @property
    def views_origin(self) -> str:
        """The views' origin: another port than the page's (see :mod:`.apps`)."""
        if self.views is None:
            raise RuntimeError("No MCP Apps views without the mcp extra")
        return self.views.app_page.views_origin

    @property
    def theme(self) -> Theme:
        """The theme of the page and its views."""
        return self._theme

    @property
    def state(self) -> dict[str, Any]:
        """What the pages were last sent (:func:`~.snapshot.describe_federation`)."""
        return self._state if self._state is not None else self._snapshot()

    # -- running -------------------------------------------------------------------------

    async def __aenter__(self) -> DevPage:
        async with self._tasks.open() as tasks, AsyncExitStack() as stack:
            self._changed = anyio.Event()
            self._server = await stack.enter_async_context(
                websocket_server(
                    self._accept,
                    self.host,
                    self.port,
                    token=self.token,
                    http_files=page_files(),
                    max_message_bytes=_MAX_MESSAGE_BYTES,
                )
            )
            # Left before the server (the exit stack runs backwards): the views are torn
            # down (bounded), then the views' server stops.
            if self.views is not None:
                await stack.enter_async_context(self.views.app_page)
                stack.push_async_callback(self.views.stop)
                await self.views.start(tasks)
            stack.callback(self._unsubscribe_all)
            unsubscribe = self.federation.subscribe(self._mark_changed)
            stack.callback(unsubscribe)
            self._follow_members()
            self._state = self._snapshot()
            self._state_json = _key(self._state)
            tasks.start_soon(self._push_changes)
            self._stack = stack.pop_all()
        return self

    async def _stop(self) -> None:
        for page in list(self._pages):
            page.hang_up()
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()

    async def _stopped(self) -> None:
        self._server = None

    # -- members -------------------------------------------------------------------------

    async def add(
        self,
        name: str,
        target: Any,
        *,
        described: str | None = None,
        wait: bool = False,
        **options: Any,
    ) -> None:
        """Add the member ``name`` to the federation: the page shows it connecting, then
        connected (or reconnecting, or failed, with the reason). ``described`` is how the
        page names its target (default: as the federation does); ``wait`` and
        ``options`` go to :meth:`Federation.add` (by default this does not wait for the
        member). ``ValueError`` for a taken name or a target
        :func:`~assistant_frames.connect` does not take."""
        await self.federation.add(name, target, wait=wait, **options)
        if described is not None:
            self._targets[name] = described
        self._mark_changed()

    async def remove(self, name: str) -> None:
        """Take the member ``name`` out of the federation (its tools leave the page)."""
        await self.federation.remove(name)
        self._targets.pop(name, None)
        self._mark_changed()

    def _follow_members(self) -> None:
        """Subscribe to each member's connection (its state changes), once each."""
        present = set(self.federation)
        for name in list(self._member_subscriptions):
            if name not in present:
                self._member_subscriptions.pop(name)()
        for name in present - set(self._member_subscriptions):
            try:
                connection = self.federation.connection(name)
            except KeyError:
                continue
            self._member_subscriptions[name] = connection.subscribe(self._mark_changed)

    def _unsubscribe_all(self) -> None:
        for unsubscribe in self._member_subscriptions.values():
            unsubscribe()
        self._member_subscriptions.clear()

    # -- what the pages are told ---------------------------------------------------------

    def _mark_changed(self) -> None:
        if self._changed is not None:
            self._changed.set()

    def _snapshot(self) -> dict[str, Any]:
        return describe_federation(self.federation, targets=self._targets)

    async def _push_changes(self) -> None:
        """Send the state again whenever something changed (changes that come while one
        is being described are sent together, next)."""
        while True:
            changed = self._changed
            assert changed is not None  # made on entry
            await changed.wait()
            self._changed = anyio.Event()
            self._follow_members()
            state = self._snapshot()
            key = _key(state)
            if key == self._state_json:
                continue
            self._state, self._state_json = state, key
            self._broadcast({"type": "state", **state})
            await anyio.lowlevel.checkpoint()  # a burst of changes collapses into the next

    def _broadcast(self, message: dict[str, Any]) -> None:
        for page in list(self._pages):
            page.post(message)

    def _member_of(self, tool: str) -> tuple[str | None, dict[str, Any]]:
        """The member whose tool ``tool`` is (by the federation as it is now, not the
        last state the pages were sent), and the view's options for it: that member and
        its own name for the tool (without the namespace), so that the view of the call
        is served that member's context. ``(None, {})`` for a tool of no member."""
        federation = self.federation
        for name in federation:
            try:
                namespaced = federation.status(name).namespaced
                member = federation.connection(name)
            except KeyError:  # removed meanwhile
                continue
            prefix = f"{name}_" if namespaced else ""
            own = tool[len(prefix) :] if tool.startswith(prefix) else None
            if own is not None and own in member.get_model_context().tools:
                return name, {"member": member, "member_name": own}
        return None, {}

    def _post_view(self, page: _Page | None, message: dict[str, Any]) -> None:
        """What the views' app page says: to the page whose call the view is; to every
        page if it is no view's (a notice), or the view of a call of the program's (kept
        for the pages that open later, as long as the view lives)."""
        if page is None:
            if "call" in message:
                self._tell_all(message)
            else:
                self._broadcast(message)
        elif page in self._pages:
            page.post(message)

    def _tell_all(self, message: dict[str, Any]) -> None:
        """Tell every page ``message`` about a call of the program's, and keep it for the
        pages that open later."""
        self._program_told.append(message)
        self._broadcast(message)

    async def set_theme(self, theme: Theme) -> None:
        """Switch every open page and every view to ``theme`` (no view is reloaded)."""
        if theme not in ("light", "dark"):
            raise ValueError(f"theme is 'light' or 'dark', not {theme!r}")
        self._theme = theme
        self._broadcast({"type": "theme", "theme": theme})
        if self.views is not None:
            await self.views.set_theme(theme)

    async def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None) -> Any:
        """Call the tool ``name`` of the federation as the model would, in sight: every
        open page shows the call (its progress, logs, result or error) and the tool's
        view, if it has one, and so does each page that opens while the page runs.

        Returns the result, or raises the call's error; ``timeout`` bounds it, as it
        bounds the page's calls. A call cancelled from a page raises
        :class:`~assistant_frames.ToolCallError`. ``RuntimeError`` if the page is not
        running."""
        if self._tasks.group is None:
            raise RuntimeError("The dev page is not running: enter it first (async with)")
        self._program_count += 1
        call_id = f"p{self._program_count}"
        scope = anyio.CancelScope()
        self._program_calls[call_id] = scope
        try:
            with scope:
                return await self._run(self._tell_all, None, call_id, name, arguments or {})
        finally:
            self._program_calls.pop(call_id, None)
        raise ToolCallError("The call was cancelled in the dev page", tool_name=name)

    # -- the WebSocket -------------------------------------------------------------------

    async def _accept(self, transport: WebSocketTransport) -> None:
        origin = transport.extra(WebSocketAttribute.origin, None)
        path = transport.extra(WebSocketAttribute.path, "").partition("?")[0]
        server = self._server
        views = self.views
        if server is None or (path != "/socket" and not (views and path.startswith("/view/"))):
            return
        allowed = (self.origin, f"http://localhost:{server.port}")
        if origin is not None and origin not in allowed:
            logger.info("Dev page: refused a WebSocket from %s", origin)
            return
        if path == "/socket":
            await self.serve_socket(transport)
        elif views is not None:  # a view's relay: the app page serves it
            await views.app_page.serve_socket(transport, path)

    async def serve_socket(self, transport: ObjectStream[Any]) -> None:
        """Serve one page's WebSocket on ``transport`` (its token and origin already
        checked); returns when the page goes away. For a page served elsewhere (mounted
        into another application), which accepts the WebSocket itself."""
        tasks = self._tasks.group
        if tasks is None:
            return
        page = _Page(transport)
        page.post({"type": "hello", "title": self.title, "theme": self._theme})
        page.post({"type": "state", **self.state})
        for message in self._program_told:  # the program's calls, so far
            page.post(message)
        self._pages.add(page)
        running = anyio.Semaphore(_MAX_CALLS)
        try:
            async with anyio.create_task_group() as calls:

                async def command(message: dict[str, Any]) -> None:
                    if not page.gone:
                        await self._command(page, message, calls, running)

                # A page hung up on (it went away, or stopped reading) has its connection
                # closed, which ends the serving; its calls are cancelled with it.
                await page.serve(command)
                calls.cancel_scope.cancel()
        finally:
            self._pages.discard(page)
            if self.views is not None:
                with anyio.CancelScope(shield=True):
                    await self.views.close_all(page)  # its views are torn down

    async def _command(
        self,
        page: _Page,
        message: dict[str, Any],
        tasks: TaskGroup,
        running: anyio.Semaphore,
    ) -> None:
        kind = message.get("type")
        if kind == "theme":
            theme = message.get("theme")
            if theme in ("light", "dark"):
                await self.set_theme(theme)
            else:
                page.post({"type": "notice", "level": "error", "text": f"no theme {theme!r}"})
            return
        if kind in ("view-mode", "view-close") and self.views is not None:
            mode = message.get("mode")
            command = "close" if kind == "view-close" else "display-mode"
            await self.views.command(page, {"type": command, "id": message.get("id"), "mode": mode})
            return
        call_id = message.get("call")
        if not isinstance(call_id, str) or not call_id or len(call_id) > 100:
            page.post({"type": "notice", "level": "error", "text": f"{kind}: no call id"})
            return
        if kind == "cancel":
            scope = page.calls.get(call_id) or self._program_calls.get(call_id)
            if scope is not None:
                scope.cancel()
            return
        if kind != "call":
            page.post({"type": "notice", "level": "error", "text": f"unknown message {kind!r}"})
            return
        tool, arguments = message.get("tool"), message.get("arguments", {})
        if not isinstance(tool, str) or not isinstance(arguments, dict):
            page.post(
                {
                    "type": "error",
                    "call": call_id,
                    "error": describe_error(
                        ValueError("A call needs a tool name and a JSON object of arguments"),
                        str(tool),
                        None,
                    ),
                }
            )
            return
        if call_id in page.calls:
            page.post({"type": "notice", "level": "error", "text": f"call {call_id} is running"})
            return
        await running.acquire()
        scope = anyio.CancelScope()
        page.calls[call_id] = scope
        tasks.start_soon(self._call, page, call_id, tool, arguments, scope, running)

    async def _call(
        self,
        page: _Page,
        call_id: str,
        tool: str,
        arguments: Mapping[str, Any],
        scope: anyio.CancelScope,
        running: anyio.Semaphore,
    ) -> None:
        """Run one call of the page's (its failure is told to the page, not raised)."""
        try:
            with scope:
                await self._run(page.post, page, call_id, tool, arguments)
        except Exception:  # told to the page by _run
            pass
        finally:
            page.calls.pop(call_id, None)
            running.release()

    async def _run(
        self,
        post: Post,
        owner: _Page | None,
        call_id: str,
        tool: str,
        arguments: Mapping[str, Any],
    ) -> Any:
        """Run one call, telling ``post`` its events and its end, and showing its view to
        ``owner`` (``None``: to every page). Returns the result; raises its failure and
        its cancellation."""
        owner_name, member = self._member_of(tool)
        started = time.perf_counter()

        def elapsed() -> float:
            return round((time.perf_counter() - started) * 1000, 1)

        def on_event(event: ToolEvent) -> None:
            post(_event_message(call_id, event))

        views = self.views
        view: AppView | None = None
        post(
            {
                "type": "started",
                "call": call_id,
                "tool": tool,
                "member": owner_name,
                "arguments": jsonable(arguments),
            }
        )
        try:
            try:
                if views is not None:
                    view = await views.open(owner, call_id, tool, arguments, **member)
            except Exception as exc:  # the call goes on; the page says why
                logger.warning("Dev page: cannot show the view of %s: %s", tool, exc)
                post({"type": "notice", "level": "error", "text": f"view: {exc}"})
            try:
                context = self.federation.get_model_context()
                with anyio.fail_after(self.timeout):
                    result = await context.call_tool(tool, dict(arguments), on_event=on_event)
            except Exception as exc:  # every failure is the call's, shown in the page
                shown = exc
                if type(exc) is TimeoutError and self.timeout is not None:  # fail_after
                    shown = TimeoutError(f"No result within {self.timeout:g} s")
                error = describe_error(shown, tool, owner_name, member.get("member_name"))
                post({"type": "error", "call": call_id, "error": error, "ms": elapsed()})
                if view is not None and views is not None:
                    await views.finish(view, error=shown)
                if shown is exc:
                    raise
                raise shown from None
            post({"type": "result", "call": call_id, "result": jsonable(result), "ms": elapsed()})
            if view is not None and views is not None:
                await views.finish(view, value=result)
            return result
        except anyio.get_cancelled_exc_class():
            post({"type": "cancelled", "call": call_id, "ms": elapsed()})
            if view is not None and views is not None:
                with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                    await views.finish(view, cancelled=True)
            raise


def _dev_views(
    federation: Federation,
    post: Callable[[Any, dict[str, Any]], None],
    host: str,
    timeout: float | None,
    link_policy: LinkPolicy | None,
    theme: Theme,
) -> DevViews | None:
    """The views of the page's calls; ``None`` without the ``mcp`` extra, which MCP
    Apps need (the rest of the page does not)."""
    try:
        from .apps import DevViews
    except ImportError:
        logger.info("Dev page: no MCP Apps views (the mcp extra is not installed)")
        return None
    return DevViews(
        federation, post, host=host, timeout=timeout, link_policy=link_policy, theme=theme
    )


def _event_message(call_id: str, event: ToolEvent) -> dict[str, Any]:
    if isinstance(event, ToolProgress):
        total = event.total
        return {
            "type": "progress",
            "call": call_id,
            "progress": event.progress if math.isfinite(event.progress) else None,
            "total": total if total is not None and math.isfinite(total) else None,
            "message": event.message,
        }
    assert isinstance(event, ToolLog)
    text = event.message
    if text is not None and len(text) > _MAX_LOG_CHARS:
        text = f"{text[:_MAX_LOG_CHARS]}... ({len(text):,} characters)"
    return {
        "type": "log",
        "call": call_id,
        "level": event.level,
        "message": text,
        "data": None if event.data is None else jsonable(event.data),
    }


def _key(state: Mapping[str, Any]) -> str:
    """A snapshot's identity, to send only what differs from the last one."""
    return json.dumps(state, sort_keys=True, default=repr)
