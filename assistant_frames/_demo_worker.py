"""The worker subprocess of ``assistant-frames demo``: a frame served over stdio.

The demo starts it as ``python -m assistant_frames._demo_worker`` with
:func:`~assistant_frames.transports.spawn_worker`. It offers two tools: a quick one
and a slow one that the demo's parent kills the worker in the middle of. What it
writes to stderr ends up in the error the parent gets when the worker dies.
"""

from __future__ import annotations

import sys

import anyio

from .frames.worker import serve_stdio
from .registry import ModelContextRegistry

__all__ = ["main", "registry"]

registry = ModelContextRegistry()
registry.add_instruction("Heavy computation runs in a separate worker process.")

_MAX_N = 10_000


@registry.tool
def fibonacci(n: int) -> int:
    """The n-th Fibonacci number, computed in the worker process.

    Args:
        n: Which Fibonacci number, counting from 0 (at most 10000).
    """
    if not 0 <= n <= _MAX_N:
        raise ValueError(f"n must be between 0 and {_MAX_N}, not {n}")
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


@registry.tool
async def slow_report(seconds: float = 60.0) -> str:
    """Write a report; it takes a while.

    Args:
        seconds: How long writing it takes.
    """
    print(f"[worker] slow_report started: this takes {seconds:g} s", file=sys.stderr, flush=True)
    await anyio.sleep(seconds)
    return f"a report that took {seconds:g} s"


def main() -> None:
    """Serve :data:`registry` to the parent process on stdin/stdout until stdin closes."""
    anyio.run(serve_stdio, registry)


if __name__ == "__main__":
    main()
