"""Worker for ``benchmarks/run.py``: serves an ``add`` tool to its host over stdio.

Usage: ``python _stdio_worker.py [asyncio|trio]`` (the event loop to run on).
"""

from __future__ import annotations

import sys

import anyio

from assistant_frames import ModelContextRegistry
from assistant_frames.frames import serve_stdio

registry = ModelContextRegistry()


@registry.tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


if __name__ == "__main__":
    anyio.run(serve_stdio, registry, backend=sys.argv[1] if len(sys.argv) > 1 else "asyncio")
