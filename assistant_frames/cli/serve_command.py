"""``assistant-frames serve``: serve a ``MODULE:OBJECT`` over stdio or WebSockets."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator

import anyio

from .common import EXIT_OK, TOKEN_ENV, note, usage_error, websocket_module
from .loading import load_frame_async

__all__ = ["cmd_serve"]


def cmd_serve(options: argparse.Namespace) -> int:
    token: str | None = options.token or os.environ.get(TOKEN_ENV) or None
    if options.stdio and options.allow_origin:
        raise usage_error("--allow-origin is for --ws")
    if options.stdio and options.token:
        raise usage_error("--token is for --ws (a --stdio worker talks only to its parent)")
    if options.stdio:
        anyio.run(_serve_stdio, options.target)
    else:
        host, port = options.ws
        anyio.run(_serve_ws, options.target, host, port, token, options.allow_origin)
    return EXIT_OK


async def _serve_stdio(spec: str) -> None:
    frame = await load_frame_async(spec)
    from ..transports.stdio import serve_stdio

    await serve_stdio(frame)


async def _serve_ws(
    spec: str, host: str, port: int, token: str | None, origins: list[str] | None
) -> None:
    frame = await load_frame_async(spec)
    websocket_server = websocket_module().websocket_server
    with _stop_signals() as stop:
        async with websocket_server(
            frame.serve, host, port, token=token, allowed_origins=origins
        ) as server:
            count = len(frame.get_model_context().tools)
            auth = "a bearer token is required" if token else "no token required"
            note(
                f"serving {spec} ({count} tool{'s' if count != 1 else ''}) on {server.url} "
                f"({auth}); Ctrl-C stops"
            )
            if not token and host not in ("127.0.0.1", "::1", "localhost"):
                note(
                    f"warning: listening on {host} without --token: whoever reaches this port "
                    "can call these tools"
                )
            async for signum in stop:
                note(f"{signal.Signals(signum).name}: stopping")
                return


def _stop_signals() -> contextlib.AbstractContextManager[AsyncIterator[int]]:
    """SIGTERM as an async iterator, so that a stopped server closes its connections."""
    if sys.platform == "win32":  # pragma: no cover - no signal receivers there
        return contextlib.nullcontext(_forever())
    return anyio.open_signal_receiver(signal.SIGTERM)


async def _forever() -> AsyncIterator[int]:  # pragma: no cover - Windows
    await anyio.sleep_forever()
    yield 0
