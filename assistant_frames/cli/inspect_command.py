"""``assistant-frames inspect``: print a frame's instructions and tools."""

from __future__ import annotations

import argparse
import json
import shutil

import anyio

from .common import EXIT_OK
from .render import render_context
from .targets import client_token, connect, resolve_target

__all__ = ["cmd_inspect"]


def cmd_inspect(options: argparse.Namespace) -> int:
    target = resolve_target(options)
    result: list[str] = []

    async def run() -> None:
        async with connect(target, token=client_token(options), timeout=options.timeout) as (
            host,
            described,
        ):
            context = host.get_model_context()
            if options.json:
                from ..frames import protocol

                wire = protocol.serialize_context(context)
                result.append(json.dumps(wire, indent=2, ensure_ascii=False))
            else:
                width = shutil.get_terminal_size((100, 24)).columns
                result.append(render_context(context, title=described, width=width))

    anyio.run(run)
    print(result[0])
    return EXIT_OK
