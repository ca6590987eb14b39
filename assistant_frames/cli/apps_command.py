"""``assistant-frames apps preview``: show an MCP server's app views in a local web page."""

from __future__ import annotations

import argparse
import signal

import anyio

from .common import EXIT_OK, CommandError, note, usage_error
from .serve_command import _stop_signals
from .targets import client_token, connect, resolve_target

__all__ = ["cmd_apps_preview"]


def cmd_apps_preview(options: argparse.Namespace) -> int:
    options.mcp = True  # the server is an MCP server: an http(s):// URL or a command
    if options.target is None and options.worker_command is None:
        raise usage_error("give the MCP server: an http(s):// URL, or '-- COMMAND ...' to start")
    if options.target is not None and not options.target.startswith(("http://", "https://")):
        raise usage_error(
            f"the MCP server is an http:// or https:// URL, or '-- COMMAND ...'; "
            f"not {options.target!r}"
        )
    target = resolve_target(options)
    if options.host not in ("127.0.0.1", "localhost", "::1"):
        raise usage_error(f"the preview page listens on loopback only, not {options.host!r}")
    try:
        from ..apps import LinkPolicy
        from ..apps.page import AppPage
        from ..mcp import MCPFrameHost
    except ImportError as exc:  # the mcp or websockets extra is missing
        raise CommandError(str(exc)) from None
    try:
        links = LinkPolicy(allow=options.allow_link or ())
    except ValueError as exc:
        raise usage_error(str(exc)) from None

    async def run() -> None:
        token = client_token(options)
        async with connect(target, token=token, timeout=options.timeout) as (frame, described):
            assert isinstance(frame, MCPFrameHost)  # an MCP target
            page = AppPage(
                frame,
                host=options.host,
                port=options.port,
                title=f"MCP Apps: {described}",
                link_policy=links,
                timeout=options.timeout,
            )
            with _stop_signals() as stop:
                async with page:
                    note(f"previewing {described}; Ctrl-C stops")
                    print(page.url, flush=True)
                    async for signum in stop:
                        note(f"{signal.Signals(signum).name}: stopping")
                        return

    anyio.run(run)
    return EXIT_OK
