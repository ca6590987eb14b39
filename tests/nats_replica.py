"""One replica of a frame on NATS, in its own process, for the NATS tests.

    python nats_replica.py URL NAME [--prefix P] [--extra] [--heartbeat S] [--drain S]

Serves a registry as ``NATSFrameProvider(registry, NAME, nats=URL, prefix=P)`` and prints
``ready <replica id>`` once it serves. Tools: ``add(a, b)``; ``slow(seconds, marker)``,
which reports progress while it sleeps; ``whoami()``, the replica's id and pid; ``cpu(n)``,
CPU-bound and synchronous; with ``--extra`` one tool more (``extra``), so replicas of one
frame can disagree on their tools.

Each tool run prints a line on stdout (``start <tool> <marker>``, ``end <marker>``,
``cancelled <marker>``): the test counts executions per replica from these, even from a
replica it killed. Stops cleanly on stdin EOF or SIGTERM (``stopped`` is its last line).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import threading

import anyio

from assistant_frames import ModelContextRegistry, ToolCallContext
from assistant_frames.nats import NATSFrameProvider

_say = threading.Lock()


def say(line: str) -> None:
    """One whole line on stdout (sync tools run in threads: lines must not interleave)."""
    with _say:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def registry(replica: list[str], more: bool) -> ModelContextRegistry:
    """The replica's tools; ``replica`` holds its id once the service is up."""
    tools = ModelContextRegistry()

    @tools.tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @tools.tool
    async def slow(seconds: float, context: ToolCallContext, marker: str = "") -> str:
        """Sleep ``seconds``, reporting progress ten times."""
        say(f"start slow {marker}")
        try:
            for step in range(1, 11):
                await anyio.sleep(seconds / 10)
                context.report_progress(step, 10, f"step {step}")
        except anyio.get_cancelled_exc_class():
            say(f"cancelled {marker}")
            raise
        say(f"end {marker}")
        return marker

    @tools.tool
    def whoami(marker: str = "") -> dict[str, object]:
        """This replica's id and process id."""
        say(f"start whoami {marker}")
        return {"replica": replica[0], "pid": os.getpid()}

    @tools.tool
    def cpu(n: int) -> int:
        """Burn CPU: the sum of the squares below ``n``, in a thread."""
        return sum(i * i for i in range(n))

    if more:

        @tools.tool
        def extra() -> str:
            """Only some replicas have this."""
            return "extra"

    return tools


async def stdin_closed() -> None:
    """Return when stdin reaches EOF (the test closed it, or died)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while await reader.read(4096):
        pass


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("name")
    parser.add_argument("--prefix", default="frames")
    parser.add_argument("--extra", action="store_true")
    parser.add_argument("--heartbeat", type=float, default=0.1)
    parser.add_argument("--drain", type=float, default=1.0)
    options = parser.parse_args()
    replica: list[str] = []
    service = NATSFrameProvider(
        registry(replica, options.extra),
        options.name,
        nats=options.url,
        prefix=options.prefix,
        heartbeat=options.heartbeat,
        drain_timeout=options.drain,
    )
    with anyio.open_signal_receiver(signal.SIGTERM) as signals:
        async with service, anyio.create_task_group() as group:
            replica.append(service.replica)
            say(f"ready {service.replica}")

            async def stop_on(wait: object) -> None:
                await wait  # type: ignore[misc]
                group.cancel_scope.cancel()

            group.start_soon(stop_on, stdin_closed())
            group.start_soon(stop_on, signals.__anext__())
    say("stopped")


if __name__ == "__main__":
    asyncio.run(main())
