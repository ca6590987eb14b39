"""A web server's widget state, in its own process, for the NATS widget state store tests.

    python nats_widget_host.py URL BUCKET WIDGET_ID increment HOST COUNT
    python nats_widget_host.py URL BUCKET WIDGET_ID load

``increment``: enters a ``NATSWidgetStateStore``, prints ``ready``, waits for a line on
stdin (so that two hosts start writing together), then adds 1, ``COUNT`` times, to the
state's ``count`` and to its ``by[HOST]``, each through ``store.update()``, and prints
``done <runs>``: how many times its change ran (more than ``COUNT`` when it lost a
compare-and-set to the other host and ran again). ``load``: prints the state as JSON.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import anyio.to_thread

from assistant_frames.nats import NATSWidgetStateStore


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def main(url: str, bucket: str, widget_id: str, mode: str, *args: str) -> None:
    async with NATSWidgetStateStore(url, bucket=bucket) as store:
        if mode == "load":
            say(json.dumps(await store.load(widget_id)))
            return
        host, count = args[0], int(args[1])
        runs = 0

        def add_one(state: dict[str, Any] | None) -> dict[str, Any]:
            nonlocal runs
            runs += 1
            state = state or {"count": 0, "by": {}}
            state["count"] += 1
            state["by"][host] = state["by"].get(host, 0) + 1
            return state

        say("ready")
        await anyio.to_thread.run_sync(sys.stdin.readline)  # "go"
        for _ in range(count):
            await store.update(widget_id, add_one)
        say(f"done {runs}")


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:], backend="asyncio")
