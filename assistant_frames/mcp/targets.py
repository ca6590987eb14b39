"""How an MCP server is reached, and why reaching it failed.

A server target is a URL (streamable HTTP), a command or ``StdioServerParameters`` (a
subprocess over stdio), an in-process ``MCPServer`` or ``Server``, or an ``mcp`` client
``Transport``: :func:`resolve_server` tells which, with a short description for errors
and logs. :func:`http_transport` is streamable HTTP with the caller's headers and each
response shown to the caller; :class:`WatchedTransport` tells the frame the moment the
server's stream ends. The rest picks, out of the exception groups an ``mcp`` client
raises, the error that says why connecting failed: :func:`connected_client` enters a
client and makes that error a :class:`ConnectError` (:func:`connect_error`).
"""

from __future__ import annotations

import logging
import shlex
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

import anyio
from mcp import StdioServerParameters
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError

from ..errors import ConnectError, HandshakeRejected
from ._stdio import describe_exit

if TYPE_CHECKING:
    from mcp import Client
    from mcp.client import Transport

    from ..transports.contract import CloseReason
    from ._stdio import TransportStreams

__all__ = [
    "ServerKind",
    "WatchedTransport",
    "connect_error",
    "connect_failure",
    "connected_client",
    "failure_reason",
    "http_transport",
    "is_http_error",
    "leaves",
    "resolve_server",
    "split_errors",
]

logger = logging.getLogger("assistant_frames.mcp")

#: How the ``mcp`` client reaches a server.
ServerKind = Literal["in-process", "http", "stdio", "transport"]

_HTTP_TIMEOUT = 30.0
_HTTP_READ_TIMEOUT = 300.0


class WatchedTransport:
    """Wraps an ``mcp`` client transport to notice when the server's stream ends.

    The SDK fails pending requests when its read stream ends but says nothing to anyone
    else; the frame needs to know at once to drop the server's tools.
    """

    def __init__(self, inner: Transport, on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    async def __aenter__(self) -> TransportStreams:
        read_stream, write_stream = await self._inner.__aenter__()
        return WatchedStream(read_stream, self._on_end), write_stream

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        return await self._inner.__aexit__(exc_type, exc, tb)


class WatchedStream:
    """A read stream that calls ``on_end()`` when it ends; otherwise the stream itself."""

    def __init__(self, inner: Any, on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    def __getattr__(self, name: str) -> Any:  # last_context and the like
        return getattr(self._inner, name)

    def __aiter__(self) -> WatchedStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self._inner.__anext__()
        except (StopAsyncIteration, anyio.ClosedResourceError, anyio.EndOfStream):
            self._on_end()
            raise

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.ClosedResourceError, anyio.EndOfStream):
            self._on_end()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> WatchedStream:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        self._on_end()
        result: bool | None = await self._inner.__aexit__(*exc_info)
        return result


def resolve_server(
    server: Any,
    *,
    env: Mapping[str, str] | None,
    cwd: str | Path | None,
    headers: Mapping[str, str] | None = None,
) -> tuple[Any, str, ServerKind]:
    """The ``mcp`` client target for ``server``, a short description of it, and its kind."""
    is_url = isinstance(server, str) and server.startswith(("http://", "https://"))
    if headers is not None and not is_url:
        raise ValueError("token and headers are for an http:// or https:// URL")
    if isinstance(server, (MCPServer, Server)):  # the SDK's Client takes either as it is
        return server, f"in-process server {server.name!r}", "in-process"
    if isinstance(server, str) and is_url:
        return server, server, "http"
    if isinstance(server, str):
        server = shlex.split(server)
    if isinstance(server, Sequence) and not isinstance(server, str):
        command = [str(part) for part in server]
        if not command:
            raise ValueError("The MCP server command is empty")
        server = StdioServerParameters(
            command=command[0], args=command[1:], env=dict(env) if env else None, cwd=cwd
        )
    if isinstance(server, StdioServerParameters):
        return server, shlex.join([server.command, *server.args]), "stdio"
    if callable(getattr(server, "__aenter__", None)):
        return server, type(server).__name__, "transport"
    raise TypeError(
        "An MCP server is a URL, a command, StdioServerParameters, an MCPServer or Server, "
        f"or an mcp client Transport; not {server!r}"
    )


@asynccontextmanager
async def http_transport(
    url: str, headers: dict[str, str], on_response: Callable[[Any], Awaitable[None]]
) -> AsyncIterator[TransportStreams]:
    """Streamable HTTP with ``headers`` on every request, the SDK's client timeouts, and
    each response shown to ``on_response`` (the SDK keeps only "an error response")."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    timeout = httpx2.Timeout(_HTTP_TIMEOUT, read=_HTTP_READ_TIMEOUT)
    hooks = {"response": [on_response]}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout, event_hooks=hooks) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield streams


@asynccontextmanager
async def connected_client(
    client: Client,
    name: str,
    *,
    connected: Callable[[], bool],
    connect_error: Callable[[str, str], ConnectError],
) -> AsyncIterator[Client]:
    """``client`` entered, for the frame host ``name``; what goes wrong while connecting
    is a ``ConnectError`` (``connect_error(what, reason)``). ``connected()``: the frame
    host got connected (what fails from then on is its own to tell)."""
    entered = False
    try:
        async with client:
            entered = True
            yield client
    except BaseException as exc:
        errors, rest = split_errors(exc)
        if errors is None:  # a cancellation, KeyboardInterrupt...
            raise
        if entered:
            if connected():
                raise
            # A transport that broke with its server fails again on the way out.
            logger.debug("MCP frame %s: closing its client failed: %r", name, errors)
            if rest is not None:
                raise rest from None
            return
        cause = connect_failure(errors)
        if cause is None:
            raise
        what = f"Cannot connect to the MCP server {name}"
        raise connect_error(what, failure_reason(cause)) from cause


def connect_error(
    what: str, reason: str, *, refused: int | None, ended: CloseReason | None
) -> ConnectError:
    """``what`` failed for ``reason``; a server process that ended (``ended``) says why
    instead, and an HTTP server that refused us (``refused``, its status) is a
    :class:`HandshakeRejected`."""
    if refused is not None:
        rejected = HandshakeRejected(refused)
        hint = " (a missing or wrong token?)" if refused == 401 else ""
        rejected.args = (f"{what}: it refused the connection with HTTP {refused}{hint}",)
        return rejected
    if ended is None:
        return ConnectError(f"{what}: {reason}")
    return ConnectError(
        f"{what}: {describe_exit(ended)}",
        returncode=ended.exit_code,
        stderr_tail=ended.stderr_tail,
    )


def split_errors(exc: BaseException) -> tuple[Exception | None, BaseException | None]:
    """``exc`` as (its errors, the rest: cancellations and the like); either may be None."""
    if isinstance(exc, BaseExceptionGroup):
        return exc.split(Exception)
    if isinstance(exc, Exception):
        return exc, None
    return None, exc


def leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]


def connect_failure(errors: BaseException) -> BaseException | None:
    """The error among ``errors`` that says why connecting failed, if it is one."""
    for leaf in leaves(errors):
        if isinstance(leaf, (OSError, MCPError, anyio.BrokenResourceError, anyio.EndOfStream)):
            return leaf
        if is_http_error(leaf):
            return leaf
    return None


def failure_reason(exc: BaseException) -> str:
    if isinstance(exc, MCPError):
        return exc.message
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def is_http_error(exc: BaseException) -> bool:
    return type(exc).__module__.split(".")[0] in {"httpx", "httpx2", "httpcore"}
