"""``assistant-frames apps preview``: ``dev`` for one MCP server, to see its app views.

The page is the dev page (:class:`~assistant_frames.dev.DevPage`) with the server as its
one member, its tools under their own names: calling a tool with a UI from the page
shows its view beside the result. What ``preview`` adds: it waits for the server (one
that does not connect is an error, not a member retried), the views' links follow
``--allow-link``, and ``--call TOOL --args JSON`` calls a UI tool as the model would as
soon as the page is up, so every page that opens shows its view.
"""

from __future__ import annotations

import argparse

from .common import EXIT_OK, CommandError, parse_json_arguments, usage_error
from .dev_command import DevMember, Preview, default_name, run_dev
from .targets import client_token, resolve_target

__all__ = ["cmd_apps_preview"]


def cmd_apps_preview(options: argparse.Namespace) -> int:
    """Run ``assistant-frames apps preview``: the dev page of one MCP server."""
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
    resolved = resolve_target(options)
    try:
        from ..apps import LinkPolicy
    except ImportError as exc:  # the mcp extra is missing
        raise CommandError(str(exc)) from None
    try:
        links = LinkPolicy(allow=options.allow_link or ())
    except ValueError as exc:
        raise usage_error(str(exc)) from None
    target = resolved.url or resolved.command or ()
    member = DevMember(default_name(target), target, mcp=True)
    token = client_token(options)
    described = resolved.describe()
    run_dev(
        [member],
        {member.name: token} if token else {},
        host=options.host,
        port=options.port,
        title=f"MCP Apps: {member.name}",
        connect_timeout=options.timeout,
        call_timeout=options.timeout,
        preview=Preview(described, links, options.call, arguments),
    )
    return EXIT_OK
