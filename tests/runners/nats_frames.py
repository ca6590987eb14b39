"""NATSFrameProvider (a replica here and one in a subprocess under this runner),
NATSFrameHost, NATSDiscovery, connect("nats://...") and a Federation member on NATS.
Under trio each says NATS needs asyncio. The server's URL is argv[1]."""

from __future__ import annotations

import sys

import anyio
from common import RUNNER, calculator, launched, progress_of, report

from assistant_frames import Federation, connect
from assistant_frames.nats import NATSDiscovery, NATSFrameHost, NATSFrameProvider


async def main() -> None:
    url = sys.argv[1]
    if RUNNER == "trio":
        await refused_under_trio(url)
        report("done", True)
        return
    command = launched("nats_replica_frame.py", None, url)
    async with (
        await anyio.open_process(command, stderr=None) as replica,
        NATSFrameProvider(calculator("here"), "calc", nats=url),
    ):
        assert replica.stdout is not None
        assert replica.stdin is not None
        with anyio.fail_after(10):
            said = await replica.stdout.receive()
        report("replica process", said.decode().strip())

        async with NATSFrameHost("calc", nats=url) as host:
            await host.wait_for_context(timeout=10)
            report("host add", await host.call_tool("add", {"a": 2, "b": 40}))
            events: list[object] = []
            result = await host.call_tool("count", {"n": 2}, on_event=events.append)
            report("host count", [result, progress_of(events)])
            events = []
            result = await host.call_tool("pause", {"seconds": 0.01}, on_event=events.append)
            report("host pause", [result, progress_of(events)])
            pids = {await host.call_tool("pid") for _ in range(20)}
            report("calls spread over replicas", len(pids))

        async with NATSDiscovery(nats=url, interval=0.5) as bus:
            await bus.wait_for("calc", timeout=10)
            report("discovery frames", bus.frames)
            report("discovery add", await bus.call_tool("calc_add", {"a": 1, "b": 1}))

        async with connect(f"{url}/calc", name="calc") as frame:
            report("connect frame add", await frame.call_tool("add", {"a": 3, "b": 3}))
        async with connect(url) as frame:
            report("connect bus add", await frame.call_tool("calc_add", {"a": 4, "b": 4}))

        async with Federation() as federation:
            await federation.add("bus", f"{url}/calc")
            report("federation add", await federation.call_tool("bus_add", {"a": 5, "b": 5}))

        await replica.stdin.aclose()
        with anyio.fail_after(10):
            report("replica exit", await replica.wait())
    report("done", True)


async def refused_under_trio(url: str) -> None:
    attempts = {
        "NATSFrameProvider": lambda: NATSFrameProvider(calculator(), "calc", nats=url),
        "NATSFrameHost": lambda: NATSFrameHost("calc", nats=url),
        "NATSDiscovery": lambda: NATSDiscovery(nats=url),
        "connect": lambda: connect(f"{url}/calc"),
    }
    for name, make in attempts.items():
        try:
            with anyio.fail_after(5):
                async with make():
                    pass
        except RuntimeError as error:
            report(f"trio {name}", str(error))
    try:
        async with Federation() as federation:
            with anyio.fail_after(5):
                await federation.add("bus", f"{url}/calc")
    except Exception as error:
        report("trio Federation.add", f"{type(error).__name__}: {error}")
