"""The MCP Apps views of the dev page: a tool with a UI shows its view beside its result.

Nothing here re-implements the app page: an :class:`~assistant_frames.apps.AppPage`
runs inside the :class:`~.page.DevPage` with no server of its own (``port=None``), only
the views' server, on another port and so another origin than the dev page. The dev
page's server passes each view's WebSocket (``/view/<id>``) to it, and
:class:`DevViews` holds an in-process control connection to it (the one the app page's
own page would hold): what it says of a view (its description, its JSON-RPC traffic,
its size) goes to the dev page that made the call, and that page's display-mode and
close buttons go back to it. Each view's resources, tools and the call itself come from
the merged context, through :class:`ContextServer`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from contextlib import suppress
from typing import Any

import anyio
import mcp_types as mcp
from anyio.abc import ObjectStream, TaskGroup
from anyio.streams.stapled import StapledObjectStream

from ..apps.display import build_host_context
from ..apps.links import LinkPolicy
from ..apps.page import AppPage
from ..apps.protocol import APP_MIME_TYPE, InvalidParams
from ..apps.protocol.models import Theme
from ..apps.view import AppView
from ..errors import AssistantFramesError
from ..mcp.results import error_result, failure, tool_result
from ..registry.context import ModelContext, ModelContextProvider, Unsubscribe
from ..registry.events import ToolEvent

__all__ = ["ContextServer", "DevViews", "ui_of"]

logger = logging.getLogger("assistant_frames.dev")

#: What the app page says of a view, as the dev page is told it (the same fields).
_RENAMED = {"view": "view", "log": "view-log", "size": "view-size", "message": "view-message"}
_RENAMED["link"] = "view-link"
_CONTROL_BUFFER = 1000


def ui_of(context: ModelContext, name: str) -> str | None:
    """The ``ui://`` URI of the view of ``context``'s tool ``name``, if it has one the
    model may call (not an app-only tool) and its resource is in the context."""
    tool = context.tools.get(name)
    ui = None if tool is None else tool.ui
    if ui is None or "model" not in ui.visibility:
        return None
    return ui.resource_uri if ui.resource_uri in context.ui_resources else None


def _nothing() -> None:
    """Unsubscribe from what never changes."""


class ContextServer:
    """A model context provider (a :class:`~assistant_frames.Federation`) as the
    :class:`~assistant_frames.apps.AppServer` of its views.

    Its tools are the provider's merged context's, its resources the context's
    ``ui_resources`` (read as ``text/html;profile=mcp-app`` with their ``_meta.ui``), and
    a call's result is said as assistant-frames' MCP server says it (the three tiers, a
    failure as an ``isError`` result or a JSON-RPC error by the error table). It has no
    prompts and no resource templates. ``timeout`` bounds a call that gives none.
    """

    def __init__(self, provider: ModelContextProvider, *, timeout: float | None = None) -> None:
        self.provider = provider
        self.timeout = timeout

    async def wait_for_context(self, timeout: float | None = None) -> ModelContext:
        """The provider's context as it is now."""
        return self.provider.get_model_context()

    def subscribe(self, callback: Callable[[], None]) -> Unsubscribe:
        """Call ``callback()`` when the context (its tools) changes."""
        return self.provider.subscribe(callback)

    def subscribe_resources(self, callback: Callable[[], None]) -> Unsubscribe:
        """Call ``callback()`` when the context changes: its UI resources come with it."""
        return self.provider.subscribe(callback)

    def subscribe_prompts(self, callback: Callable[[], None]) -> Unsubscribe:
        """There are no prompts: nothing to tell."""
        return _nothing

    async def call_tool_result(
        self,
        name: str,
        args: Any = None,
        *,
        timeout: float | None = None,
        on_event: Callable[[ToolEvent], object] | None = None,
    ) -> mcp.CallToolResult:
        """Call the context's tool ``name``: its result, or its failure as an ``isError``
        result (a failure MCP says as a JSON-RPC error is raised)."""
        limit = self.timeout if timeout is None else timeout
        try:
            with anyio.fail_after(limit):
                value = await self.provider.get_model_context().call_tool(
                    name, args, on_event=on_event
                )
        except AssistantFramesError as exc:
            code, message = failure(exc)
            if code is not None:
                raise
            return mcp.CallToolResult.model_validate(error_result(message))
        return as_call_result(value)

    async def read_resource(self, uri: str) -> mcp.ReadResourceResult:
        """The context's UI resource ``uri``; ``InvalidParams`` for one it does not have."""
        resource = self.provider.get_model_context().ui_resources.get(uri)
        if resource is None:
            raise InvalidParams(f"Unknown resource: {uri}", method="resources/read")
        content: dict[str, Any] = {"uri": uri, "mimeType": APP_MIME_TYPE, "text": resource.html}
        ui = resource.ui_meta()
        if ui:
            content["_meta"] = {"ui": ui}
        return mcp.ReadResourceResult.model_validate({"contents": [content]})

    async def list_resources(self) -> list[mcp.Resource]:
        """The context's UI resources, each with its ``_meta.ui``."""
        listed = []
        for resource in self.provider.get_model_context().ui_resources.values():
            entry: dict[str, Any] = {
                "uri": resource.uri,
                "name": resource.name or resource.uri,
                "mimeType": APP_MIME_TYPE,
            }
            if resource.title is not None:
                entry["title"] = resource.title
            ui = resource.ui_meta()
            if ui:
                entry["_meta"] = {"ui": ui}
            listed.append(mcp.Resource.model_validate(entry))
        return listed

    async def list_resource_templates(self) -> list[mcp.ResourceTemplate]:
        """None."""
        return []

    async def list_prompts(self) -> list[mcp.Prompt]:
        """None."""
        return []


def as_call_result(value: Any) -> mcp.CallToolResult:
    """A tool's return value as the ``CallToolResult`` a view is sent."""
    return mcp.CallToolResult.model_validate(tool_result(value, modern=False))


#: Where a view's news goes: ``post(owner, message)``; ``owner`` ``None`` means every page.
Post = Callable[[Any, dict[str, Any]], None]


class DevViews:
    """The views of the dev page's calls, shown by an :class:`AppPage` of
    ``provider``'s context that serves only the views (``port=None``).

    :meth:`open` shows the view of a call for one *owner* (an open dev page) and
    gives it the call's input; :meth:`finish` gives it the result, the failure or the
    cancellation. Everything the app page says of that view is passed to ``post`` with
    its owner. ``app_page`` is the page itself (its ``traffic``, its ``views``).
    """

    def __init__(
        self,
        provider: ModelContextProvider,
        post: Post,
        *,
        host: str,
        timeout: float | None,
        link_policy: LinkPolicy | None = None,
        theme: Theme = "light",
    ) -> None:
        self.server = ContextServer(provider, timeout=timeout)
        self.app_page = AppPage(
            self.server,
            host=host,
            port=None,
            title="assistant-frames dev",
            host_context=build_host_context(theme=theme),
            link_policy=link_policy,
            allow_calls=False,
        )
        self._post = post
        self._owners: dict[str, tuple[Any, str]] = {}  # app id -> (owner, call id)
        self._control: StapledObjectStream[Any] | None = None

    async def start(self, tasks: TaskGroup) -> None:
        """Connect to the (entered) app page as its page would, in ``tasks``."""
        to_us, from_page = anyio.create_memory_object_stream[Any](_CONTROL_BUFFER)
        to_page, from_us = anyio.create_memory_object_stream[Any](_CONTROL_BUFFER)
        theirs = StapledObjectStream(to_us, from_us)
        self._control = StapledObjectStream(to_page, from_page)
        tasks.start_soon(self._serve, theirs)
        tasks.start_soon(self._listen, self._control)

    async def _serve(self, theirs: ObjectStream[Any]) -> None:
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):  # stopping
            await self.app_page.serve_socket(theirs, "page")

    async def stop(self) -> None:
        """End the control connection (what we send): the app page lets it go. What it
        still says of its views while it stops is read until the tasks end."""
        control, self._control = self._control, None
        if control is not None:
            await control.send_stream.aclose()

    def has_view(self, context: ModelContext, name: str) -> bool:
        """Whether calling ``name`` shows a view."""
        return ui_of(context, name) is not None

    async def open(
        self,
        owner: Any,
        call_id: str,
        name: str,
        arguments: Mapping[str, Any],
        *,
        member: ModelContextProvider | None = None,
        member_name: str | None = None,
    ) -> AppView | None:
        """Show the view of the tool ``name`` for ``owner``'s call ``call_id`` and send it
        the input; ``None`` if the tool has no view.

        ``member`` is the federation member the tool is ``member_name`` of: the view's
        server is then that member's own context, so that the view calls its tools by
        the names it knows (``refresh``, not ``weather_refresh``). Without it, the view
        sees the merged context."""
        context = self.server.provider.get_model_context()
        uri = ui_of(context, name)
        if uri is None:
            return None
        tool = context.tools[name]
        server = self.server
        own = name
        if member is not None and member_name is not None:
            theirs = member.get_model_context()
            if ui_of(theirs, member_name) == uri:
                server, own = ContextServer(member, timeout=self.server.timeout), member_name
        view = self.app_page.new_view(
            title=tool.title or name,
            resource_uri=uri,
            tool_name=own,
            tool_call_id=call_id,
            server=server,
        )
        self._owners[view.app_id] = (owner, call_id)
        await self.app_page.show(view)
        await view.send_tool_input(arguments)
        return view

    async def finish(
        self,
        view: AppView,
        *,
        value: Any = None,
        error: Exception | None = None,
        cancelled: bool = False,
    ) -> None:
        """Tell ``view`` how its call ended: ``value``; or ``error``, as MCP would say it
        (an ``isError`` result, or a JSON-RPC error: the view is told the call was
        cancelled, with the message); or ``cancelled``."""
        if cancelled:
            await view.send_tool_cancelled("The call was cancelled")
            return
        if error is not None:
            code, message = failure(error)
            if code is not None:
                await view.send_tool_cancelled(message)
                return
            result = mcp.CallToolResult.model_validate(error_result(message))
        else:
            result = as_call_result(value)
        view.fallback_text = _text(result) or view.fallback_text
        await view.send_tool_result(result)

    def owns(self, owner: Any, app_id: object) -> bool:
        """Whether the view ``app_id`` is ``owner``'s (a view of no owner, shown to every
        page, is everyone's)."""
        entry = self._owners.get(str(app_id))
        return entry is not None and (entry[0] is None or entry[0] is owner)

    async def command(self, owner: Any, message: Mapping[str, Any]) -> None:
        """``owner``'s ``display-mode {id, mode}`` or ``close {id}`` of one of its views,
        passed to the app page (which says what failed as a notice)."""
        if self.owns(owner, message.get("id")) and self._control is not None:
            await self._control.send(dict(message))

    async def set_theme(self, theme: Theme) -> None:
        """Switch every view to ``theme`` (``hostContext.theme``); none is reloaded."""
        await self.app_page.set_theme(theme)

    async def close_all(self, owner: Any) -> None:
        """Tear down every view of ``owner`` (its page went away)."""
        for app_id, (whose, _) in list(self._owners.items()):
            view = self.app_page.views.get(app_id)
            if whose is owner and view is not None:
                await view.close()

    async def _listen(self, control: ObjectStream[Any]) -> None:
        try:
            async for message in control:
                if isinstance(message, dict):
                    self._deliver(message)
        except (anyio.ClosedResourceError, anyio.EndOfStream):
            pass

    def _deliver(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "notice":
            self._post(None, message)
            return
        renamed = _RENAMED.get(str(kind))
        entry = self._owners.get(str(message.get("id")))
        if renamed is None or entry is None:
            return
        owner, call_id = entry
        self._post(owner, {**message, "type": renamed, "call": call_id})
        if kind == "view" and message.get("state") == "closed":
            self._owners.pop(str(message["id"]), None)


def _text(result: mcp.CallToolResult) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)
