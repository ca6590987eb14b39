"""What the handlers of :mod:`assistant_frames.asgi` read from an ASGI scope."""

from __future__ import annotations

from urllib.parse import quote

from starlette.types import Scope

__all__ = ["header", "request_path", "route_path"]


def header(scope: Scope, name: bytes) -> str | None:
    """The first header ``name`` (lower case) of the scope, decoded as Latin-1."""
    for key, value in scope.get("headers", ()):
        if bytes(key).lower() == name:
            return bytes(value).decode("latin-1")
    return None


def request_path(scope: Scope) -> str:
    """The path the client asked for (mount prefix included) and its query string, as
    sent (``raw_path`` when the server gives it)."""
    raw = scope.get("raw_path")
    path = bytes(raw).decode("latin-1") if raw else quote(scope.get("path", "/"))
    query = bytes(scope.get("query_string", b"")).decode("latin-1")
    return f"{path}?{query}" if query else path


def route_path(scope: Scope) -> str:
    """The path below the mount point (``root_path``): ``"/page"`` for ``/apps/page``
    mounted at ``/apps``; ``""`` for the mount point itself without its slash."""
    path: str = scope.get("path", "")
    root: str = scope.get("root_path", "")
    if root and path.startswith(root) and (len(path) == len(root) or path[len(root)] == "/"):
        return path[len(root) :]
    return path
