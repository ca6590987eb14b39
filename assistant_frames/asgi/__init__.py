"""Frames, the browser relays and the app page inside your ASGI application.

For Starlette and FastAPI (and any ASGI framework) under an ASGI server such as uvicorn;
needs the ``asgi`` extra (``pip install 'assistant-frames[asgi]'``):

* :func:`frame_endpoint` is a WebSocket endpoint: it serves an
  :class:`~assistant_frames.AssistantFrameProvider` to every host that connects, or
  hands each connection to a handler (to host the browser frames that dial in, say),
  with the bearer token, Origin allowlist, size limit and close codes of
  :func:`~assistant_frames.transports.websocket_server`.
  ``app.router.add_websocket_route("/frames", frame_endpoint(provider, token=token))``.
* :class:`ASGIWebSocketTransport` is each connection, a transport like any other (it
  passes the transport conformance suite).
* :func:`relay_app` serves the browser relays (``app.mount("/assistant-frames",
  relay_app())``) and :func:`files_app` any files of yours, under any prefix.
* :func:`app_page_app` mounts an :class:`~assistant_frames.apps.page.AppPage`'s page
  (``app.mount("/apps", app_page_app(page))``).

See ``docs/running.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._extras import require
from .._lazy import lazy_exports

require(
    "starlette",
    "assistant_frames.asgi needs Starlette: pip install 'assistant-frames[asgi]'",
)

if TYPE_CHECKING:
    from .app_page import AppPageApp, app_page_app
    from .endpoint import DEFAULT_MAX_MESSAGE_BYTES, FrameEndpoint, Handler, frame_endpoint
    from .files import FilesApp, files_app, relay_app
    from .transport import ASGIAttribute, ASGIWebSocketTransport

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "ASGIAttribute",
    "ASGIWebSocketTransport",
    "AppPageApp",
    "FilesApp",
    "FrameEndpoint",
    "Handler",
    "app_page_app",
    "files_app",
    "frame_endpoint",
    "relay_app",
]

# Imported on first use (PEP 562): serving files needs no frame endpoint.
_LAZY = {
    "AppPageApp": ".app_page",
    "app_page_app": ".app_page",
    "DEFAULT_MAX_MESSAGE_BYTES": ".endpoint",
    "FrameEndpoint": ".endpoint",
    "Handler": ".endpoint",
    "frame_endpoint": ".endpoint",
    "FilesApp": ".files",
    "files_app": ".files",
    "relay_app": ".files",
    "ASGIAttribute": ".transport",
    "ASGIWebSocketTransport": ".transport",
}


__getattr__, __dir__ = lazy_exports(__name__, globals(), _LAZY)
