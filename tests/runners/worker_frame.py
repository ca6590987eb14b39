"""A worker: serves common.calculator() on stdio under the runner launch.py was given
(``asyncio.run(serve_stdio(registry))`` and the like)."""

from __future__ import annotations

import sys

from common import calculator

from assistant_frames.frames import serve_stdio


async def main() -> None:
    await serve_stdio(calculator(sys.argv[1] if len(sys.argv) > 1 else "worker"))
