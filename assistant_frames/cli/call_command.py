"""``assistant-frames call``: call one tool of a frame and print its result as JSON."""

from __future__ import annotations

import argparse
import difflib
import json
from typing import Any

import anyio

from .common import EXIT_OK, CommandError, parse_json_arguments
from .targets import client_token, connect, resolve_target

__all__ = ["cmd_call"]


def cmd_call(options: argparse.Namespace) -> int:
    target = resolve_target(options)
    arguments = parse_json_arguments(options.args)
    name: str = options.tool
    result: list[Any] = []

    async def run() -> None:
        async with connect(target, token=client_token(options), timeout=options.timeout) as (
            host,
            _,
        ):
            context = host.get_model_context()
            if name not in context.tools:
                raise CommandError(_not_found(name, list(context.tools)))
            result.append(await host.call_tool(name, arguments, timeout=options.timeout))

    anyio.run(run)
    print(json.dumps(result[0], indent=2, ensure_ascii=False))
    return EXIT_OK


def _not_found(name: str, available: list[str]) -> str:
    message = f'Tool "{name}" not found'
    close = difflib.get_close_matches(name, available, n=1)
    if close:
        return f'{message}; did you mean "{close[0]}"?'
    if not available:
        return f"{message}; the frame has no tools"
    shown = ", ".join(available[:10]) + (", ..." if len(available) > 10 else "")
    return f"{message}; the frame has: {shown}"
