"""Who may use an MCP server served over HTTP: a bearer token, an auth hook, or both.

:data:`HTTPAuth` is the hook's type; :class:`RequireAuth` is the ASGI middleware that
answers HTTP 401 (with a JSON-RPC error as the body, which MCP clients report) to a
request without the token or refused by the hook.
"""

from __future__ import annotations

import hmac
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import mcp_types as types

if TYPE_CHECKING:
    from starlette.requests import HTTPConnection
    from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["HTTPAuth", "RequireAuth"]

HTTPAuth = Callable[["HTTPConnection"], "bool | Awaitable[bool]"]
"""An HTTP auth hook: given the request (headers, client address...), whether to serve it."""

logger = logging.getLogger("assistant_frames.mcp")

_UNAUTHORIZED = {"code": types.INVALID_REQUEST, "message": "Unauthorized (HTTP 401)"}


class RequireAuth:
    """ASGI middleware: HTTP 401 for a request without the token or refused by the hook.

    Pure ASGI rather than Starlette's ``BaseHTTPMiddleware``, which would buffer the
    server-sent event streams that Streamable HTTP answers with.
    """

    def __init__(self, app: ASGIApp, *, token: str | None, auth: HTTPAuth | None) -> None:
        self.app = app
        self.token = token
        self.auth = auth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not await self._allowed(scope):
            from starlette.responses import JSONResponse

            # A JSON-RPC error as the body: MCP clients report its message.
            refusal = JSONResponse(
                {"jsonrpc": "2.0", "id": None, "error": _UNAUTHORIZED},
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _allowed(self, scope: Scope) -> bool:
        from starlette.requests import HTTPConnection

        request = HTTPConnection(scope)
        if self.token is not None:
            offered = request.headers.get("authorization", "")
            scheme, _, credentials = offered.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(
                credentials.strip().encode(), self.token.encode()
            ):
                return False
        if self.auth is not None:
            try:
                allowed = self.auth(request)
                if inspect.isawaitable(allowed):
                    allowed = await allowed
            except Exception:
                logger.exception("The MCP server's auth hook raised; request refused")
                return False
            return bool(allowed)
        return True
