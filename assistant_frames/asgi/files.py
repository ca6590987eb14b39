"""Static files as an ASGI application, mountable under any prefix: the browser relays,
the app page's files, and the pages of your own that use them."""

from __future__ import annotations

from collections.abc import Mapping

from starlette.types import Receive, Scope, Send

from ..browser import relay_files
from .scope import route_path

__all__ = ["FilesApp", "files_app", "relay_app"]

_METHODS = (b"GET", b"HEAD")


class FilesApp:
    """An ASGI application answering ``GET`` and ``HEAD`` for a fixed set of files.

    Paths are below the mount point (``/parent-relay.js`` under
    ``app.mount("/assistant-frames", ...)``); the query string is ignored. A file gets
    ``200`` with its ``Content-Type``, ``Content-Length``, ``Cache-Control: no-store``
    and ``X-Content-Type-Options: nosniff``; another path ``404``, another method
    ``405``. A WebSocket is refused (HTTP 403).
    """

    def __init__(self, files: Mapping[str, tuple[bytes, str]]) -> None:
        self.files: dict[str, tuple[bytes, str]] = {}
        for path, (content, content_type) in files.items():
            if not path.startswith("/"):
                raise ValueError(f"file paths must start with '/': {path!r}")
            if not isinstance(content, bytes | bytearray | memoryview):
                raise TypeError(f"the content of {path!r} must be bytes")
            self.files[path] = (bytes(content), str(content_type))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI application."""
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": ""})
            return
        if scope["type"] != "http":
            return
        entry = self.files.get(route_path(scope) or "/")
        method = str(scope.get("method", "GET")).encode()
        headers = [(b"x-content-type-options", b"nosniff"), (b"cache-control", b"no-store")]
        if entry is None:
            status, body, content_type = 404, b"Not found\n", "text/plain; charset=utf-8"
        elif method not in _METHODS:
            status, body, content_type = 405, b"Method not allowed\n", "text/plain; charset=utf-8"
            headers.append((b"allow", b"GET, HEAD"))
        else:
            status, (body, content_type) = 200, entry
        headers += [
            (b"content-type", content_type.encode("latin-1")),
            (b"content-length", str(len(body)).encode()),
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if method == b"HEAD" else body})


def files_app(files: Mapping[str, tuple[bytes, str]]) -> FilesApp:
    """Serve ``{path: (content, content type)}`` (paths below the mount point)::

    app.mount("/demo", files_app({"/index.html": (page, "text/html; charset=utf-8")}))
    """
    return FilesApp(files)


def relay_app() -> FilesApp:
    """The shipped browser relays (``parent-relay.js``, ``child-relay.html``,
    ``child-relay.js``, ``widget-runtime.js``) at the mount point, e.g.
    ``app.mount("/assistant-frames", relay_app())`` serves
    ``/assistant-frames/parent-relay.js``. Public files: no token is needed."""
    return FilesApp(relay_files("/"))
