"""``assistant-frames serve``: serve a frame or a federation over stdio, WebSockets or MCP."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import anyio

from .._text import without_credentials
from ..frames import AssistantFrameProvider
from .common import (
    EXIT_OK,
    LOOPBACK,
    TOKEN_ENV,
    CommandError,
    note,
    usage_error,
    websocket_module,
)
from .federation import served_frame

if TYPE_CHECKING:
    from ..mcp import MCPContextServer

__all__ = ["cmd_serve"]


def cmd_serve(options: argparse.Namespace) -> int:
    token: str | None = options.token or os.environ.get(TOKEN_ENV) or None
    if options.ws is None and options.allow_origin:
        raise usage_error("--allow-origin is for --ws")
    if options.ws is None and options.mcp_http is None and options.nats is None and options.token:
        raise usage_error(
            "--token is for --ws, --mcp-http and --nats (stdio peers are the parent process)"
        )
    if options.nats is None and options.prefix != "frames":
        raise usage_error("--prefix is for --nats")
    if options.nats is not None:
        anyio.run(_serve_nats, options, token, backend="asyncio")  # nats-py needs asyncio
    elif options.stdio:
        anyio.run(_serve_stdio, options)
    elif options.mcp_stdio:
        anyio.run(_serve_mcp_stdio, options)
    elif options.mcp_http is not None:
        host, port = options.mcp_http
        anyio.run(_serve_mcp_http, options, host, port, token)
    else:
        host, port = options.ws
        anyio.run(_serve_ws, options, host, port, token, options.allow_origin)
    return EXIT_OK


def _describe(options: argparse.Namespace, frame: AssistantFrameProvider) -> str:
    count = len(frame.get_model_context().tools)
    what = options.target or "the federation"
    return f"{what} ({count} tool{'s' if count != 1 else ''})"


async def _serve_stdio(options: argparse.Namespace) -> None:
    from ..frames.worker import serve_stdio

    async with served_frame(options, timeout=options.timeout) as frame:
        await serve_stdio(frame)


async def _serve_mcp_stdio(options: argparse.Namespace) -> None:
    MCPContextServer = _mcp_server_class()
    async with served_frame(options, timeout=options.timeout) as frame:
        await MCPContextServer(frame, name=options.name).run_stdio()


async def _serve_mcp_http(
    options: argparse.Namespace, host: str, port: int, token: str | None
) -> None:
    MCPContextServer = _mcp_server_class()
    async with served_frame(options, timeout=options.timeout) as frame:
        server = MCPContextServer(frame, name=options.name)

        def ready(url: str) -> None:
            auth = "a bearer token is required" if token else "no token required"
            note(f"serving {_describe(options, frame)} over MCP at {url}; {auth}; Ctrl-C stops")
            _warn_if_open(host, token)

        with _stop_signals() as stop:
            async with anyio.create_task_group() as group:
                group.start_soon(lambda: server.run_http(host, port, ready=ready, token=token))
                async for signum in stop:
                    note(f"{signal.Signals(signum).name}: stopping")
                    group.cancel_scope.cancel()
                    return


def _warn_if_open(host: str, token: str | None) -> None:
    """Warn when whoever reaches ``host``, not a loopback address, may call the tools."""
    if not token and host not in LOOPBACK:
        note(
            f"warning: listening on {host} without --token: whoever reaches this port can "
            "call these tools"
        )


async def _serve_ws(
    options: argparse.Namespace, host: str, port: int, token: str | None, origins: list[str] | None
) -> None:
    websocket_server = websocket_module().websocket_server
    async with served_frame(options, timeout=options.timeout) as frame:
        with _stop_signals() as stop:
            async with websocket_server(
                frame.serve, host, port, token=token, allowed_origins=origins
            ) as server:
                auth = "a bearer token is required" if token else "no token required"
                note(f"serving {_describe(options, frame)} on {server.url} ({auth}); Ctrl-C stops")
                _warn_if_open(host, token)
                async for signum in stop:
                    note(f"{signal.Signals(signum).name}: stopping")
                    return


async def _serve_nats(options: argparse.Namespace, token: str | None) -> None:
    try:
        from ..nats import NATSFrameProvider
    except ImportError as exc:
        raise CommandError(f"--nats needs the 'nats' extra ({exc})") from None
    shown = without_credentials(options.nats)
    async with served_frame(options, timeout=options.timeout) as frame:
        with _stop_signals() as stop:
            try:
                service = NATSFrameProvider(
                    frame,
                    options.name,
                    nats=options.nats,
                    nats_options={"token": token} if token else None,
                    prefix=options.prefix,
                )
            except ValueError as exc:
                raise usage_error(str(exc)) from None
            async with service:
                note(
                    f"serving {_describe(options, frame)} on NATS {shown} as frame "
                    f"{options.name!r} (replica {service.replica}, subjects "
                    f"{service.subjects.base}.*); Ctrl-C stops"
                )
                async for signum in stop:
                    note(f"{signal.Signals(signum).name}: stopping")
                    return


def _mcp_server_class() -> type[MCPContextServer]:
    try:
        from ..mcp import MCPContextServer
    except ImportError as exc:
        raise CommandError(str(exc)) from None
    return MCPContextServer


def _stop_signals() -> contextlib.AbstractContextManager[AsyncIterator[int]]:
    """SIGTERM as an async iterator, so that a stopped server closes its connections."""
    if sys.platform == "win32":  # pragma: no cover - no signal receivers there
        return contextlib.nullcontext(_forever())
    return anyio.open_signal_receiver(signal.SIGTERM)


async def _forever() -> AsyncIterator[int]:  # pragma: no cover - Windows
    await anyio.sleep_forever()
    yield 0
