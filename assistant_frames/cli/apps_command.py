"""``assistant-frames apps preview``: show an MCP server's app views in a local web page."""

from __future__ import annotations

import argparse
import signal
from typing import TYPE_CHECKING, Any

import anyio

from .common import EXIT_OK, CommandError, note, parse_json_arguments, usage_error
from .serve_command import _stop_signals
from .targets import client_token, connect, resolve_target

if TYPE_CHECKING:
    from ..apps.page import AppPage
    from ..mcp import MCPFrameHost

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
    if options.args is not None and options.call is None:
        raise usage_error("--args goes with --call TOOL")
    arguments = parse_json_arguments(options.args or "{}") if options.call else None
    if arguments is not None and not isinstance(arguments, dict):
        raise usage_error(f"--args must be a JSON object, not {type(arguments).__name__}")
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
                async with page, anyio.create_task_group() as tasks:
                    if options.call is not None:
                        _check_tool(frame, options.call)
                    note(f"previewing {described}; Ctrl-C stops")
                    print(page.url, flush=True)
                    if options.call is not None:
                        tasks.start_soon(_call, page, options.call, arguments)
                    async for signum in stop:
                        note(f"{signal.Signals(signum).name}: stopping")
                        tasks.cancel_scope.cancel()
                        return

    anyio.run(run)
    return EXIT_OK


def _check_tool(frame: MCPFrameHost, name: str) -> None:
    """Refuse, before the page is announced, a ``--call`` of no UI tool of the server that
    the model may call."""
    tools = frame.get_model_context().tools
    ui_tools = sorted(
        n for n, t in tools.items() if t.ui is not None and "model" in t.ui.visibility
    )
    if name not in ui_tools:
        shown = ", ".join(ui_tools) or "none"
        raise usage_error(f"--call {name}: not a UI tool of the server (its UI tools: {shown})")


async def _call(page: AppPage, name: str, arguments: dict[str, Any] | None) -> None:
    """The model's call of ``name``: its view shows in every page (a failure is said)."""
    try:
        await page.call_tool(name, arguments)
    except Exception as exc:
        note(f"--call {name} failed: {exc}")
    else:
        note(f"--call {name}: the result was sent to its view")
