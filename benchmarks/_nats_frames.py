"""Frames for ``benchmarks/run.py``'s NATS rows, served from one child process.

Usage: ``python _nats_frames.py URL PREFIX NAME [COUNT]``: serves the frame ``NAME``
(or, with a ``COUNT`` above 1, the frames ``NAME-0`` to ``NAME-<COUNT-1>``), each a
``NATSFrameProvider`` of its own around a registry with one tool, ``work``, all sharing
one NATS client. Prints ``ready`` once every frame is served; stops when its stdin
closes.

``work`` computes in pure Python, holding the GIL, so each frame runs it in one thread
(``max_threads=1``), as ``docs/concepts.md`` advises for such tools: more threads only
take turns, and keep the event loop waiting for the GIL.
"""

from __future__ import annotations

import sys
from contextlib import AsyncExitStack

import anyio
import anyio.to_thread

from assistant_frames import AssistantFrameProvider, ModelContextRegistry
from assistant_frames.nats import NATSFrameProvider, connect_nats


def work(n: int) -> int:
    """Loop ``n`` times in pure Python: CPU-bound, holding the GIL throughout."""
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


def frame_registry() -> ModelContextRegistry:
    """A registry with the one sync tool ``work`` (run in a worker thread, the default)."""
    registry = ModelContextRegistry()
    registry.tool(work)
    return registry


async def main(url: str, prefix: str, name: str, count: int) -> None:
    names = [name] if count == 1 else [f"{name}-{i}" for i in range(count)]
    client = await connect_nats(url, name=f"benchmark frames {name}")
    try:
        async with AsyncExitStack() as stack:
            for frame in names:
                provider = AssistantFrameProvider(frame_registry(), max_threads=1)
                service = NATSFrameProvider(provider, frame, nats=client, prefix=prefix)
                await stack.enter_async_context(service)
            sys.stdout.write("ready\n")
            sys.stdout.flush()
            await anyio.to_thread.run_sync(sys.stdin.read)  # until the runner closes it
    finally:
        await client.drain()


if __name__ == "__main__":
    url, prefix, name = sys.argv[1:4]
    anyio.run(main, url, prefix, name, int(sys.argv[4]) if len(sys.argv) > 4 else 1)
