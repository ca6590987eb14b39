"""The checks a WebSocket handshake passes before a handler sees it, and the refusals.

The same rules as :func:`~assistant_frames.transports.websocket_server`: a bearer token
(``Authorization: Bearer <token>``, or ``?access_token=<token>`` for browsers, read only
when there is no ``Authorization: Bearer`` header; compared in constant time) refused
with HTTP 401 and ``WWW-Authenticate: Bearer``; then an Origin allowlist refused with
HTTP 403 (clients that send no ``Origin`` are allowed). A refusal is an HTTP response
where the server supports the ASGI ``websocket.http.response`` extension (uvicorn
does); elsewhere it is a close before accepting, which ASGI servers answer with HTTP
403.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import parse_qs

from starlette.types import Scope, Send

from .scope import header

__all__ = ["HandshakeChecks", "Refusal", "refuse"]

logger = logging.getLogger("assistant_frames.asgi")


@dataclass(frozen=True)
class Refusal:
    """Why a handshake is refused, as the HTTP answer to it."""

    status: int
    body: bytes
    headers: tuple[tuple[bytes, bytes], ...] = ()


@dataclass(frozen=True)
class HandshakeChecks:
    """What a client must show to be accepted.

    ``token``: the bearer token (``None``: none needed). ``allowed_origins``: the
    browser origins accepted (``None``: any). ``same_origin``: also accept a browser
    whose ``Origin`` names the host the request was sent to (its ``Host`` header), as a
    page served by the same application does.
    """

    token: str | None = None
    allowed_origins: frozenset[str] | None = None
    same_origin: bool = False

    @classmethod
    def build(
        cls,
        token: str | None = None,
        allowed_origins: Sequence[str] | None = None,
        *,
        same_origin: bool = False,
    ) -> HandshakeChecks:
        """Checks from the public options (``allowed_origins`` as a sequence of origins)."""
        if isinstance(allowed_origins, str):
            raise TypeError("allowed_origins is a list of origins, not one string")
        origins = None if allowed_origins is None else frozenset(allowed_origins)
        if token is not None and not token:
            raise ValueError("token must not be empty (None: no token)")
        return cls(token, origins, same_origin)

    def refusal(self, scope: Scope) -> Refusal | None:
        """The refusal for this handshake, or ``None`` to accept it: the token first."""
        if self.token is not None and not token_ok(scope, self.token):
            return Refusal(
                401,
                b"Missing or invalid bearer token\n",
                ((b"www-authenticate", b"Bearer"),),
            )
        origin = header(scope, b"origin")
        if origin is None or (self.allowed_origins is None and not self.same_origin):
            return None
        if self.allowed_origins is not None and origin in self.allowed_origins:
            return None
        if self.same_origin and _same_host(origin, header(scope, b"host")):
            return None
        text = f"Failed to open a WebSocket connection: invalid Origin header: {origin}.\n"
        return Refusal(403, text.encode("utf-8", "replace"))


def token_ok(scope: Scope, token: str) -> bool:
    """Whether the handshake carries ``token`` (header first, then the query string)."""
    authorization = header(scope, b"authorization") or ""
    if authorization.startswith("Bearer "):
        offered = authorization[len("Bearer ") :]
    else:
        query = parse_qs(bytes(scope.get("query_string", b"")).decode("latin-1"))
        offered = (query.get("access_token") or [""])[0]
    return hmac.compare_digest(offered.encode("utf-8", "replace"), token.encode())


def _same_host(origin: str, host: str | None) -> bool:
    """Whether ``origin`` (``scheme://host[:port]``) names ``host`` (a ``Host`` header)."""
    if host is None:
        return False
    scheme, _, netloc = origin.partition("://")
    if scheme not in ("http", "https") or not netloc:
        return False
    default = ":443" if scheme == "https" else ":80"
    return netloc.lower().removesuffix(default) == host.lower().removesuffix(default)


async def refuse(scope: Scope, send: Send, refusal: Refusal) -> None:
    """Answer the handshake with ``refusal``: an HTTP response if the server can send
    one, else a close before accepting (HTTP 403 from the server)."""
    logger.info(
        "Refused a WebSocket client on %s: HTTP %d %s",
        scope.get("path", ""),
        refusal.status,
        refusal.body.decode("utf-8", "replace").strip(),
    )
    if "websocket.http.response" in (scope.get("extensions") or {}):
        headers = [
            (b"content-type", b"text/plain; charset=utf-8"),
            (b"content-length", str(len(refusal.body)).encode()),
            *refusal.headers,
        ]
        await send(
            {"type": "websocket.http.response.start", "status": refusal.status, "headers": headers}
        )
        await send({"type": "websocket.http.response.body", "body": refusal.body})
    else:
        await send({"type": "websocket.close", "code": 1008, "reason": ""})
