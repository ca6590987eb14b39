"""Worker hosts and workers: spawn_worker + AssistantFrameHost to workers that run
serve_stdio under asyncio.run, uvloop.run and trio.run; a worker killed mid-call; a
command that is no frame; a worker that dies at once."""

from __future__ import annotations

import os
import signal
import sys

import anyio
from common import failure, launched, progress_of, report, without_pids

from assistant_frames import (
    AssistantFrameHost,
    ConnectError,
    ContextTimeout,
    FrameDisconnected,
    connect,
)
from assistant_frames.transports import spawn_worker

NOT_A_FRAME = [sys.executable, "-c", "print('hello'); import time; time.sleep(30)"]
DIES = [sys.executable, "-c", "import sys; sys.stderr.write('no config\\n'); sys.exit(3)"]


async def main() -> None:
    for worker_runner in ("asyncio", "uvloop", "trio"):
        command = launched("worker_frame.py", worker_runner, worker_runner)
        async with (
            spawn_worker(command) as transport,
            AssistantFrameHost(transport, name=f"on-{worker_runner}") as host,
        ):
            await host.wait_for_context(timeout=10)
            system = host.get_model_context().system
            added = await host.call_tool("add", {"a": 1, "b": 2})
            events: list[object] = []
            counted = await host.call_tool("count", {"n": 2}, on_event=events.append)
            report(f"worker on {worker_runner}", [system, added, counted, progress_of(events)])

    # A worker killed while a call runs: the call fails at once, saying how it ended.
    async with connect(launched("worker_frame.py"), name="doomed") as frame:
        pid = await frame.call_tool("pid")
        async with anyio.create_task_group() as group:

            async def kill_soon() -> None:
                await anyio.sleep(0.2)
                os.kill(pid, signal.SIGKILL)

            group.start_soon(kill_soon)
            with anyio.fail_after(5):
                try:
                    await frame.call_tool("pause", {"seconds": 30})
                except FrameDisconnected as error:
                    report("killed mid-call", failure(error))

    try:
        async with connect(NOT_A_FRAME, name="chatty", connect_timeout=1):
            pass
    except ContextTimeout as error:
        report("not a frame", str(error))

    try:
        async with connect(DIES, name="dies", connect_timeout=5):
            pass
    except ConnectError as error:
        report("dies at once", without_pids(str(error)))
    report("done", True)
