"""Shared by every section: the configuration, the measured call, timing and
statistics."""

from __future__ import annotations

import functools
import importlib.metadata
import math
import statistics
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from assistant_frames import AssistantFrameHost, ModelContextRegistry
from assistant_frames.frames import protocol

Call = Callable[[], Coroutine[Any, Any, object]]

EXPECTED = 3
IN_FLIGHT = 100  # concurrent calls per round
TIMEOUT_SECONDS = 60.0  # any single wait longer than this is a bug, not a slow machine


@dataclass(frozen=True)
class Config:
    """How much work each section does."""

    mode: str
    repeats: int  # interleaved repeats of every call benchmark
    warmup_calls: int  # sequential calls before measuring, per target
    sequential_calls: int  # measured sequential calls per target per repeat
    rounds: int  # rounds of IN_FLIGHT concurrent calls per throughput sample
    burst_size: int
    propagation_tools: int
    propagation_warmup: int
    propagation_changes: int
    transport_warmup: int  # sequential calls before measuring, per cross-process target
    transport_calls: int  # measured sequential calls per cross-process target per repeat
    mcp_stdio_calls: int  # the same for mcp over stdio (some 10x slower), warm-up included
    spawns: int  # worker starts measured per kind of child
    import_runs: int  # runs of each import-time measurement
    handshakes: int  # AppBridge handshakes measured, over all repeats
    nats_cpu_calls: int  # calls of the CPU-bound tool per throughput block over NATS
    nats_discoveries: int  # times 100 frames are discovered, each way
    # Scale: the same measurements at 10x the size.
    propagation_tools_large: int  # tools in the registry of the second propagation row
    nats_frames_large: int  # running frames discovered into one parent (served by one child)
    nats_discoveries_large: int  # times those frames are discovered
    # FastMCP (``fastmcp``, the ``bench`` extra): some 5x slower per call than (c).
    fastmcp_calls: int  # measured sequential calls per FastMCP target per repeat


FULL = Config(
    mode="full",
    repeats=7,
    warmup_calls=300,
    sequential_calls=3_000,
    rounds=20,
    burst_size=1_000,
    propagation_tools=1_000,
    propagation_warmup=5,
    propagation_changes=40,
    transport_warmup=200,
    transport_calls=2_000,
    mcp_stdio_calls=200,
    spawns=10,
    import_runs=7,
    handshakes=700,
    nats_cpu_calls=400,
    nats_discoveries=5,
    propagation_tools_large=10_000,
    nats_frames_large=1_000,
    nats_discoveries_large=3,
    fastmcp_calls=1_000,
)
QUICK = Config(
    mode="quick",
    repeats=3,
    warmup_calls=100,
    sequential_calls=600,
    rounds=8,
    burst_size=1_000,
    propagation_tools=1_000,
    propagation_warmup=3,
    propagation_changes=20,
    transport_warmup=50,
    transport_calls=400,
    mcp_stdio_calls=60,
    spawns=5,
    import_runs=3,
    handshakes=150,
    nats_cpu_calls=150,
    nats_discoveries=2,
    propagation_tools_large=10_000,
    nats_frames_large=1_000,
    nats_discoveries_large=2,
    fastmcp_calls=200,
)


def package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def mcp_version() -> str | None:
    try:
        return importlib.metadata.version("mcp")
    except importlib.metadata.PackageNotFoundError:
        return None


def add_registry() -> ModelContextRegistry:
    registry = ModelContextRegistry()

    @registry.tool
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return registry


def add_call(host: AssistantFrameHost) -> Call:
    call_tool = host.call_tool

    async def call() -> object:
        return await call_tool("add", {"a": 1, "b": 2})

    return call


#: What the host sends for ``add(1, 2)`` (an id of the same length as its own); the bare
#: echoes send and receive exactly this.
TOOL_CALL_MESSAGE = protocol.encode_tool_call("tool-1a2b3c1", "add", {"a": 1, "b": 2})


async def measure_sequential(call: Call, n: int) -> list[int]:
    """Nanoseconds for each of ``n`` calls made one after the other."""
    clock = time.perf_counter_ns
    samples: list[int] = []
    append = samples.append
    for _ in range(n):
        start = clock()
        await call()
        append(clock() - start)
    return samples


async def measure_in_flight(call: Call, rounds: int, width: int = IN_FLIGHT) -> float:
    """Calls per second over ``rounds`` rounds of ``width`` concurrent calls, a task
    spawned per call (see :func:`measure_throughput` for ``width`` calls in flight)."""
    clock = time.perf_counter_ns
    start = clock()
    for _ in range(rounds):
        async with anyio.create_task_group() as tg:
            for _ in range(width):
                tg.start_soon(call)
    elapsed = clock() - start
    return rounds * width / (elapsed / 1e9)


async def measure_paired(
    call: Call, reference: Call, n: int, block: int = 50
) -> tuple[list[int], list[int]]:
    """``n`` sequential calls each of ``call`` and ``reference``, alternating in blocks.

    For a ratio between two close figures: drift on a shared machine hits both alike.
    """
    samples: list[int] = []
    reference_samples: list[int] = []
    for done in range(0, n, block):
        size = min(block, n - done)
        samples += await measure_sequential(call, size)
        reference_samples += await measure_sequential(reference, size)
    return samples, reference_samples


async def measure_rotating(calls: dict[str, Call], n: int, block: int = 50) -> dict[str, list[int]]:
    """``n`` sequential calls of each of ``calls``, in blocks of ``block`` taken in turn:
    drift on a shared machine hits all of them alike."""
    samples: dict[str, list[int]] = {key: [] for key in calls}
    for done in range(0, n, block):
        for key, call in calls.items():
            samples[key] += await measure_sequential(call, min(block, n - done))
    return samples


async def measure_throughput(call: Call, n: int, width: int) -> float:
    """Calls per second for ``n`` calls made by ``width`` tasks, each calling in turn."""
    remaining = n

    async def caller() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            await call()

    start = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(width):
            tg.start_soon(caller)
    return n / (time.perf_counter() - start)


@dataclass
class CallResult:
    key: str
    label: str
    latency_samples_ns: list[int] = field(default_factory=list)
    throughputs: list[float] = field(default_factory=list)
    # For information: calls/s over rounds of IN_FLIGHT tasks spawned per round.
    spawned_throughputs: list[float] = field(default_factory=list)
    skipped: str | None = None
    # For a paired measurement: what the reference call took, in the same blocks.
    reference_samples_ns: list[int] = field(default_factory=list)

    @property
    def reference_latency_us(self) -> float:
        return statistics.median(self.reference_samples_ns) / 1000

    @property
    def latency_us(self) -> float:
        return statistics.median(self.latency_samples_ns) / 1000

    @property
    def latency_p90_us(self) -> float:
        return quantile(self.latency_samples_ns, 0.9) / 1000

    @property
    def throughput(self) -> float:
        return max(self.throughputs) if self.throughputs else math.nan

    def summary(self) -> dict[str, Any]:
        if self.skipped:
            return {"label": self.label, "skipped": self.skipped}
        summary: dict[str, Any] = {
            "label": self.label,
            "latency_median_us": round(self.latency_us, 2),
            "latency_p90_us": round(self.latency_p90_us, 2),
            "sequential_calls": len(self.latency_samples_ns),
        }
        if self.reference_samples_ns:
            summary["paired_reference_latency_median_us"] = round(self.reference_latency_us, 2)
        if self.throughputs:
            summary["throughput_best_calls_per_s"] = round(self.throughput, 1)
            summary["throughput_median_calls_per_s"] = round(statistics.median(self.throughputs), 1)
            summary["throughput_samples"] = [round(t, 1) for t in self.throughputs]
        if self.spawned_throughputs:
            summary["spawned_throughput_best_calls_per_s"] = round(max(self.spawned_throughputs), 1)
        return summary


def quantile(values: Sequence[int | float], q: float) -> float:
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, int(q * len(ordered)))])


async def check_add(label: str, call: Call) -> None:
    result = await call()
    if result != EXPECTED:
        raise RuntimeError(f"{label}: add(1, 2) returned {result!r}, expected {EXPECTED}")


Measure = Callable[[int], Coroutine[Any, Any, list[int]]]


@dataclass(frozen=True)
class Probe:
    """One connected target of a cross-process section."""

    call: Call  # one call; its result must equal ``expected``
    measure: Measure  # ``n`` sequential calls -> nanoseconds for each
    expected: object = EXPECTED


def local_probe(call: Call) -> Probe:
    """A target measured on the runner's own event loop."""
    return Probe(call, functools.partial(measure_sequential, call))
