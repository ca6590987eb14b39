"""The app page of an :class:`~assistant_frames.apps.page.AppPage`, mounted into your
ASGI application under any prefix.

The page, its script, style and the parent relay are served at the mount point, and its
WebSockets (the control socket ``page`` and one ``view/<id>`` per view) beside them;
every URL in the page is relative, so ``app.mount("/apps", app_page_app(page))`` serves
it at ``/apps/``. The views themselves still come from the ``AppPage``'s own views
server, another origin than the page (a view sandboxed with ``allow-same-origin`` on
the page's origin could lift its own sandbox).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from starlette.types import Receive, Scope, Send

from ..browser import app_page_files
from .checks import HandshakeChecks
from .endpoint import DEFAULT_MAX_MESSAGE_BYTES, serve_connection
from .files import FilesApp
from .scope import route_path

if TYPE_CHECKING:
    from ..apps.page import AppPage

__all__ = ["AppPageApp", "app_page_app"]


class AppPageApp:
    """An ASGI application: the app page of ``page``, for ``app.mount(prefix, ...)``.

    Made by :func:`app_page_app`. Plain ``GET`` requests get the page (at the mount
    point; the mount point without its slash is redirected to it) and its files, with
    no token: they hold no secret. The WebSockets need the page's token (the page reads
    it from its URL's fragment) and a browser on the same origin as the request's
    ``Host``, or one of ``allowed_origins``; they are served while the page is running
    (``async with page``, e.g. in the application's lifespan).
    """

    def __init__(
        self,
        page: AppPage,
        *,
        allowed_origins: Sequence[str] | None = None,
        max_message_bytes: int | None = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        self.page = page
        self.max_message_bytes = max_message_bytes
        self._checks = HandshakeChecks.build(page.token, allowed_origins, same_origin=True)
        self._files = FilesApp(app_page_files())

    def url(self, base: str) -> str:
        """The page's URL where it is mounted (``base``, e.g.
        ``"http://127.0.0.1:8000/apps"``), with its token in the fragment."""
        return f"{base.rstrip('/')}/#token={self.page.token}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI application."""
        route = route_path(scope)
        if scope["type"] == "http":
            if route == "":
                await _to_slash(scope, send)
            else:
                await self._files(scope, receive, send)
        elif scope["type"] == "websocket":
            page = self.page

            async def serve(transport: Any) -> None:
                await page.serve_socket(transport, route)

            await serve_connection(
                scope, receive, send, serve, self._checks, self.max_message_bytes
            )


def app_page_app(
    page: AppPage,
    *,
    allowed_origins: Sequence[str] | None = None,
    max_message_bytes: int | None = DEFAULT_MAX_MESSAGE_BYTES,
) -> AppPageApp:
    """The app page of ``page`` as an ASGI application to mount under a prefix::

        app.mount("/apps", app_page_app(page))  # the page at /apps/#token=...

    Enter ``page`` (``async with``) for as long as the application serves it, e.g. in
    its lifespan. ``allowed_origins`` adds browser origins allowed on the page's
    WebSockets, besides the request's own host (a page behind a proxy that rewrites
    ``Host``).
    """
    return AppPageApp(page, allowed_origins=allowed_origins, max_message_bytes=max_message_bytes)


async def _to_slash(scope: Scope, send: Send) -> None:
    """Redirect the mount point to itself with a slash: the page's URLs are relative."""
    path = scope.get("root_path") or scope.get("path") or "/"
    query = bytes(scope.get("query_string", b""))
    location = path.rstrip("/").encode() + b"/" + (b"?" + query if query else b"")
    headers = [(b"location", location), (b"content-length", b"0")]
    await send({"type": "http.response.start", "status": 307, "headers": headers})
    await send({"type": "http.response.body", "body": b""})
