"""``assistant-frames demo``: run the federation demo."""

from __future__ import annotations

import argparse

import anyio

from .common import EXIT_OK, usage_error, websocket_module

__all__ = ["cmd_demo"]


def cmd_demo(options: argparse.Namespace) -> int:
    if options.backend == "trio":
        try:
            import trio  # noqa: F401
        except ImportError:
            raise usage_error("--backend trio needs the 'trio' package: pip install trio") from None
    websocket_module()  # a clear error up front if websockets is missing
    from ..demo import run_demo

    anyio.run(run_demo, backend=options.backend)
    return EXIT_OK
