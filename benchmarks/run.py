"""Performance benchmark for assistant-frames.

Run from the repository root::

    python benchmarks/run.py [--backend asyncio|trio] [--quick] [--json PATH]

It prints one table, measured in one run on one machine:

* tool-call round trips for (a) a floor: bare anyio memory object streams, no
  validation; (b) assistant-frames: ``AssistantFrameHost`` -> ``AssistantFrameProvider``
  over ``memory_pair()``; (c) the official ``mcp`` SDK in-process (``mcp.Client`` on an
  ``MCPServer``), each as sequential latency and as throughput with 100 calls in flight;
* burst: how many context messages reach a connected host for 1,000 synchronous
  ``registry.add_tool`` calls;
* propagation: time from one change in a 1,000-tool registry to the host's subscriber.

The runner reports targets (PASS/MISS) but never fails on them: it exits 0 unless
something raised. See ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import gc
import importlib.metadata
import itertools
import json
import math
import os
import platform
import statistics
import sys
import time
import traceback
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

import anyio
from anyio.abc import ObjectReceiveStream, ObjectSendStream, ObjectStream

from assistant_frames import (
    AssistantFrameHost,
    AssistantFrameProvider,
    ModelContextRegistry,
    memory_pair,
)
from assistant_frames.frames import protocol

Call = Callable[[], Coroutine[Any, Any, object]]

EXPECTED = 3
IN_FLIGHT = 100  # concurrent calls per round
SETTLE_SECONDS = 0.05  # quiet time for a connection's background chatter to finish
TIMEOUT_SECONDS = 60.0  # any single wait longer than this is a bug, not a slow machine


# -- configuration -------------------------------------------------------------------------


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
)


# -- call targets --------------------------------------------------------------------------


def _request(call_id: int) -> dict[str, Any]:
    return {"id": call_id, "toolName": "add", "args": {"a": 1, "b": 2}}


async def _floor_server(
    receive: ObjectReceiveStream[dict[str, Any]],
    send: ObjectSendStream[dict[str, Any]],
) -> None:
    """Handles each request inline: no validation, no task per call."""
    async with receive, send:
        async for message in receive:
            if message["toolName"] == "add":
                args = message["args"]
                await send.send({"id": message["id"], "result": args["a"] + args["b"]})
            else:
                await send.send({"id": message["id"], "error": "not found"})


@asynccontextmanager
async def floor_direct() -> AsyncIterator[Call]:
    """(a), sequential: send a request, receive the response on the same task."""
    to_server, server_in = anyio.create_memory_object_stream[dict[str, Any]](math.inf)
    server_out, from_server = anyio.create_memory_object_stream[dict[str, Any]](math.inf)
    ids = itertools.count()
    send, receive = to_server.send, from_server.receive

    async def call() -> object:
        call_id = next(ids)
        await send(_request(call_id))
        response = await receive()
        if response["id"] != call_id:
            raise RuntimeError("floor: out-of-order response")
        return response["result"]

    async with to_server, from_server, anyio.create_task_group() as tg:
        tg.start_soon(_floor_server, server_in, server_out)
        yield call
        tg.cancel_scope.cancel()


class _Waiter:
    __slots__ = ("done", "result")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.result: object = None


@asynccontextmanager
async def floor_dispatcher() -> AsyncIterator[Call]:
    """(a), in flight: a minimal dispatcher (dict id -> anyio.Event) on the client side."""
    to_server, server_in = anyio.create_memory_object_stream[dict[str, Any]](math.inf)
    server_out, from_server = anyio.create_memory_object_stream[dict[str, Any]](math.inf)
    ids = itertools.count()
    pending: dict[int, _Waiter] = {}
    send = to_server.send

    async def dispatch() -> None:
        async for message in from_server:
            waiter = pending.pop(message["id"], None)
            if waiter is not None:
                waiter.result = message.get("result")
                waiter.done.set()

    async def call() -> object:
        call_id = next(ids)
        waiter = pending[call_id] = _Waiter()
        await send(_request(call_id))
        await waiter.done.wait()
        return waiter.result

    async with to_server, from_server, anyio.create_task_group() as tg:
        tg.start_soon(_floor_server, server_in, server_out)
        tg.start_soon(dispatch)
        yield call
        tg.cancel_scope.cancel()


@asynccontextmanager
async def assistant_frames_target() -> AsyncIterator[Call]:
    """(b): the library with its defaults, tool arguments validated from type hints."""
    registry = ModelContextRegistry()

    @registry.tool
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    host_end, frame_end = memory_pair()
    provider = AssistantFrameProvider(registry)
    async with anyio.create_task_group() as tg:
        tg.start_soon(provider.serve, frame_end)
        async with AssistantFrameHost(host_end) as host:
            await host.wait_for_context(timeout=TIMEOUT_SECONDS)
            call_tool = host.call_tool

            async def call() -> object:
                return await call_tool("add", {"a": 1, "b": 2})

            yield call
        tg.cancel_scope.cancel()


def mcp_version() -> str | None:
    try:
        return importlib.metadata.version("mcp")
    except importlib.metadata.PackageNotFoundError:
        return None


@asynccontextmanager
async def mcp_target() -> AsyncIterator[Call]:
    """(c): the official MCP SDK, client and server in the same process."""
    import mcp
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench")

    @server.tool()
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    async with mcp.Client(server) as client:
        call_tool = client.call_tool

        async def call() -> object:
            result = await call_tool("add", {"a": 1, "b": 2})
            structured = result.structured_content
            return structured.get("result") if structured else None

        yield call


# -- call measurements ---------------------------------------------------------------------


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
    """Calls per second over ``rounds`` rounds of ``width`` concurrent calls."""
    clock = time.perf_counter_ns
    start = clock()
    for _ in range(rounds):
        async with anyio.create_task_group() as tg:
            for _ in range(width):
                tg.start_soon(call)
    elapsed = clock() - start
    return rounds * width / (elapsed / 1e9)


@dataclass
class CallResult:
    key: str
    label: str
    latency_samples_ns: list[int] = field(default_factory=list)
    throughputs: list[float] = field(default_factory=list)
    skipped: str | None = None

    @property
    def latency_us(self) -> float:
        return statistics.median(self.latency_samples_ns) / 1000

    @property
    def latency_p90_us(self) -> float:
        return _quantile(self.latency_samples_ns, 0.9) / 1000

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
        if self.throughputs:
            summary["throughput_best_calls_per_s"] = round(self.throughput, 1)
            summary["throughput_median_calls_per_s"] = round(statistics.median(self.throughputs), 1)
            summary["throughput_samples"] = [round(t, 1) for t in self.throughputs]
        return summary


def _quantile(values: Sequence[int | float], q: float) -> float:
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, int(q * len(ordered)))])


async def _check(label: str, call: Call) -> None:
    result = await call()
    if result != EXPECTED:
        raise RuntimeError(f"{label}: add(1, 2) returned {result!r}, expected {EXPECTED}")


async def bench_calls(config: Config, log: Callable[[str], None]) -> dict[str, CallResult]:
    """(a), (b) and (c), all connected at once and measured interleaved.

    Each repeat measures every target in turn (the order rotates), so the slow drift of
    a shared machine, or of a library being edited, hits all of them alike.
    """
    results = {
        "floor": CallResult("floor", "(a) floor: bare anyio streams"),
        "af": CallResult("af", "(b) assistant-frames"),
        "mcp": CallResult("mcp", f"(c) mcp {mcp_version() or ''} in-process".replace("  ", " ")),
        # Informational: the floor's sequential latency through its dispatcher, the
        # shape every multiplexing client (assistant-frames' host included) has.
        "floor_dispatcher": CallResult("floor_dispatcher", "(a') floor with dispatcher"),
    }
    async with AsyncExitStack() as stack:
        # key -> (call for the sequential figure, call for the in-flight one or None)
        targets: dict[str, tuple[Call, Call | None]] = {}
        floor_seq = await stack.enter_async_context(floor_direct())
        floor_par = await stack.enter_async_context(floor_dispatcher())
        targets["floor"] = (floor_seq, floor_par)
        targets["floor_dispatcher"] = (floor_par, None)
        af = await stack.enter_async_context(assistant_frames_target())
        targets["af"] = (af, af)
        if mcp_version() is None:
            results["mcp"].skipped = "mcp is not installed (pip install 'assistant-frames[mcp]')"
        else:
            mcp_call = await stack.enter_async_context(mcp_target())
            targets["mcp"] = (mcp_call, mcp_call)

        for key, (seq, par) in targets.items():
            await _check(results[key].label, seq)
            await measure_sequential(seq, config.warmup_calls)
            if par is not None:
                await _check(results[key].label, par)
                await measure_in_flight(par, 2)

        keys = list(targets)
        for repeat in range(config.repeats):
            log(f"calls: repeat {repeat + 1}/{config.repeats}")
            shift = repeat % len(keys)
            for key in keys[shift:] + keys[:shift]:
                seq, par = targets[key]
                gc.collect()
                results[key].latency_samples_ns += await measure_sequential(
                    seq, config.sequential_calls
                )
                if par is not None:
                    gc.collect()
                    results[key].throughputs.append(await measure_in_flight(par, config.rounds))
    return results


# -- burst and propagation -----------------------------------------------------------------


class CountingStream(ObjectStream[Any]):
    """Wraps the host's transport end; counts the context messages it receives."""

    CONTEXT_TYPES = frozenset({"model-context-update", "model-context-response"})

    def __init__(self, inner: ObjectStream[Any]) -> None:
        self.inner = inner
        self.context_messages = 0

    async def send(self, item: Any) -> None:
        await self.inner.send(item)

    async def receive(self) -> Any:
        item = await self.inner.receive()
        if isinstance(item, dict) and item.get("channel") == protocol.CHANNEL:
            message = item.get("message")
            if isinstance(message, dict) and message.get("type") in self.CONTEXT_TYPES:
                self.context_messages += 1
        return item

    async def send_eof(self) -> None:
        await self.inner.send_eof()

    async def aclose(self) -> None:
        await self.inner.aclose()


async def small_tool(query: str, limit: int = 10) -> list[str]:
    """Look something up.

    Args:
        query: What to look for.
        limit: At most this many results.
    """
    return [query] * limit


@asynccontextmanager
async def served(
    registry: ModelContextRegistry,
) -> AsyncIterator[tuple[AssistantFrameHost, CountingStream]]:
    """``registry`` served to a connected host whose first context has arrived."""
    host_end, frame_end = memory_pair()
    counting = CountingStream(host_end)
    provider = AssistantFrameProvider(registry)
    async with anyio.create_task_group() as tg:
        tg.start_soon(provider.serve, frame_end)
        async with AssistantFrameHost(counting, timeout=TIMEOUT_SECONDS) as host:
            await host.wait_for_context(timeout=TIMEOUT_SECONDS)
            await anyio.sleep(SETTLE_SECONDS)  # the subscribe round trip
            yield host, counting
        tg.cancel_scope.cancel()


@dataclass
class BurstResult:
    adds: int
    context_messages: int
    sync_ms: float  # the add_tool loop itself
    visible_ms: float  # from the first add_tool to the host holding every tool


async def bench_burst(config: Config) -> BurstResult:
    registry = ModelContextRegistry()
    registry.add_tool("seed", small_tool)
    async with served(registry) as (host, counting):
        expected = 1 + config.burst_size
        done = anyio.Event()

        def on_change() -> None:
            if len(host.get_model_context().tools) >= expected:
                done.set()

        unsubscribe = host.subscribe(on_change)
        counting.context_messages = 0
        clock = time.perf_counter_ns
        start = clock()
        for i in range(config.burst_size):
            registry.add_tool(f"burst_{i}", small_tool, description=f"Burst tool {i}")
        synced = clock()
        with anyio.fail_after(TIMEOUT_SECONDS):
            await done.wait()
        visible = clock()
        await anyio.sleep(0.2)  # let any trailing update arrive before counting
        unsubscribe()
        return BurstResult(
            adds=config.burst_size,
            context_messages=counting.context_messages,
            sync_ms=(synced - start) / 1e6,
            visible_ms=(visible - start) / 1e6,
        )


@dataclass
class PropagationResult:
    tools: int
    changes: int
    median_ms: float
    min_ms: float
    p90_ms: float
    max_ms: float
    median_ms_by_kind: dict[str, float]
    setup_ms: float


async def bench_propagation(config: Config) -> PropagationResult:
    clock = time.perf_counter_ns
    setup_start = clock()
    registry = ModelContextRegistry()
    handles = [
        registry.add_tool(f"tool_{i}", small_tool, description=f"Tool number {i}")
        for i in range(config.propagation_tools)
    ]
    instruction = registry.add_instruction("You are a benchmark.")
    async with served(registry) as (host, _):
        if len(host.get_model_context().tools) != config.propagation_tools:
            raise RuntimeError("propagation: the host does not hold every tool")
        setup_ms = (clock() - setup_start) / 1e6
        fired: list[anyio.Event] = [anyio.Event()]
        host.subscribe(lambda: fired[0].set())
        added: list[Any] = []

        def add_tool(k: int) -> None:
            added.append(registry.add_tool(f"extra_{k}", small_tool))

        def update_tool(k: int) -> None:
            handles[(k * 37) % len(handles)].update(description=f"Updated, change {k}")

        def update_instruction(k: int) -> None:
            instruction.update(f"You are a benchmark (change {k}).")

        def remove_tool(k: int) -> None:
            added.pop(0).remove()

        kinds: list[tuple[str, Callable[[int], None]]] = [
            ("add tool", add_tool),
            ("update tool", update_tool),
            ("update instruction", update_instruction),
            ("remove tool", remove_tool),
        ]
        by_kind: dict[str, list[int]] = {name: [] for name, _ in kinds}
        samples: list[int] = []
        total = config.propagation_warmup + config.propagation_changes
        gc.collect()  # once: a collection before every change would leave the caches cold
        for k in range(total):
            name, change = kinds[k % len(kinds)]
            event = fired[0] = anyio.Event()
            start = clock()
            change(k)
            with anyio.fail_after(TIMEOUT_SECONDS):
                await event.wait()
            elapsed = clock() - start
            if k >= config.propagation_warmup:
                samples.append(elapsed)
                by_kind[name].append(elapsed)
            await anyio.sleep(0.002)  # let the connection go idle between changes
    return PropagationResult(
        tools=config.propagation_tools,
        changes=len(samples),
        median_ms=statistics.median(samples) / 1e6,
        min_ms=min(samples) / 1e6,
        p90_ms=_quantile(samples, 0.9) / 1e6,
        max_ms=max(samples) / 1e6,
        median_ms_by_kind={
            name: round(statistics.median(values) / 1e6, 3)
            for name, values in by_kind.items()
            if values
        },
        setup_ms=setup_ms,
    )


# -- report --------------------------------------------------------------------------------


@dataclass
class Target:
    label: str
    value: float | None
    unit: str
    goal: str
    passed: bool | None  # None: not measured

    @property
    def verdict(self) -> str:
        return "SKIP" if self.passed is None else ("PASS" if self.passed else "MISS")


def targets_for(
    calls: dict[str, CallResult], burst: BurstResult, propagation: PropagationResult
) -> list[Target]:
    floor, af, mcp = calls["floor"], calls["af"], calls["mcp"]
    out = [
        Target(
            "(b)/(a) latency        (x the floor)",
            af.latency_us / floor.latency_us,
            "x",
            "<= 2x",
            af.latency_us / floor.latency_us <= 2,
        ),
        Target(
            "(a)/(b) throughput     (x the floor)",
            floor.throughput / af.throughput,
            "x",
            "<= 2x",
            floor.throughput / af.throughput <= 2,
        ),
    ]
    if mcp.skipped:
        out += [
            Target("(c)/(b) latency        (x faster than mcp)", None, "x", ">= 5x", None),
            Target("(b)/(c) throughput     (x faster than mcp)", None, "x", ">= 5x", None),
        ]
    else:
        out += [
            Target(
                "(c)/(b) latency        (x faster than mcp)",
                mcp.latency_us / af.latency_us,
                "x",
                ">= 5x",
                mcp.latency_us / af.latency_us >= 5,
            ),
            Target(
                "(b)/(c) throughput     (x faster than mcp)",
                af.throughput / mcp.throughput,
                "x",
                ">= 5x",
                af.throughput / mcp.throughput >= 5,
            ),
        ]
    out += [
        Target(
            f"burst: context messages for {burst.adds:,} add_tool",
            burst.context_messages,
            "",
            "<= 2",
            burst.context_messages <= 2,
        ),
        Target(
            f"propagation: change -> host callback ({propagation.tools:,} tools), median",
            propagation.median_ms,
            "ms",
            "< 5 ms",
            propagation.median_ms < 5,
        ),
    ]
    return out


def render(
    config: Config,
    backend: str,
    calls: dict[str, CallResult],
    burst: BurstResult,
    propagation: PropagationResult,
    targets: list[Target],
    elapsed_s: float,
) -> str:
    lines = [
        f"assistant-frames benchmark | backend={backend} | mode={config.mode} | "
        f"python {platform.python_version()} | {os.cpu_count()} CPUs | {elapsed_s:.1f} s",
        "",
        f"{'add(1, 2) round trip':<38}{'sequential µs/call':>20}{'p90 µs':>10}"
        f"{f'{IN_FLIGHT} in flight calls/s':>24}",
    ]
    for key in ("floor", "af", "mcp"):
        result = calls[key]
        if result.skipped:
            lines.append(f"{result.label:<38}{'skipped: ' + result.skipped}")
            continue
        lines.append(
            f"{result.label:<38}{result.latency_us:>20.1f}{result.latency_p90_us:>10.1f}"
            f"{result.throughput:>24,.0f}"
        )
    extra = calls["floor_dispatcher"]
    lines += [
        f"{extra.label + ' [info]':<38}{extra.latency_us:>20.1f}{extra.latency_p90_us:>10.1f}"
        f"{'':>24}",
        "",
        f"{'target':<58}{'measured':>10}{'goal':>10}  verdict",
    ]
    for target in targets:
        if target.value is None:
            value = "n/a"
        elif target.unit == "x":
            value = f"{target.value:.2f}x"
        elif target.unit == "ms":
            value = f"{target.value:.2f} ms"
        else:
            value = f"{target.value:.0f}"
        lines.append(f"{target.label:<58}{value:>10}{target.goal:>10}  {target.verdict}")
    kinds = ", ".join(f"{k} {v:.2f}" for k, v in propagation.median_ms_by_kind.items())
    lines += [
        "",
        f"burst: {burst.adds:,} add_tool took {burst.sync_ms:.1f} ms; the host held every tool "
        f"{burst.visible_ms:.1f} ms after the first",
        f"propagation: {propagation.changes} changes, min {propagation.min_ms:.2f} ms, "
        f"p90 {propagation.p90_ms:.2f} ms, max {propagation.max_ms:.2f} ms; "
        f"median ms by kind: {kinds}",
        f"method: latency = median of {len(calls['af'].latency_samples_ns):,} sequential calls "
        f"({config.repeats} interleaved repeats); throughput = best of {config.repeats} "
        f"samples of {config.rounds} rounds x {IN_FLIGHT} concurrent calls",
    ]
    return "\n".join(lines)


def to_json(
    config: Config,
    backend: str,
    calls: dict[str, CallResult],
    burst: BurstResult,
    propagation: PropagationResult,
    targets: list[Target],
    elapsed_s: float,
) -> dict[str, Any]:
    def version(name: str) -> str | None:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return None

    return {
        "backend": backend,
        "config": asdict(config),
        "environment": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "anyio": version("anyio"),
            "assistant-frames": version("assistant-frames"),
            "mcp": version("mcp"),
            "trio": version("trio") if backend == "trio" else None,
        },
        "elapsed_s": round(elapsed_s, 2),
        "calls": {key: result.summary() for key, result in calls.items()},
        "burst": asdict(burst),
        "propagation": asdict(propagation),
        "targets": [
            {
                "label": " ".join(t.label.split()),
                "value": None if t.value is None else round(t.value, 3),
                "goal": t.goal,
                "verdict": t.verdict,
            }
            for t in targets
        ],
    }


# -- main ----------------------------------------------------------------------------------


async def run(config: Config, backend: str) -> tuple[str, dict[str, Any]]:
    """Every section in one event loop; returns the table and the figures."""

    def log(message: str) -> None:
        print(f"  .. {message}", file=sys.stderr, flush=True)

    started = time.perf_counter()
    log(f"backend={backend}, mode={config.mode}")
    calls = await bench_calls(config, log)
    gc.collect()
    log("burst")
    burst = await bench_burst(config)
    gc.collect()
    log("propagation")
    propagation = await bench_propagation(config)
    elapsed = time.perf_counter() - started

    targets = targets_for(calls, burst, propagation)
    text = render(config, backend, calls, burst, propagation, targets, elapsed)
    return text, to_json(config, backend, calls, burst, propagation, targets, elapsed)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    parser.add_argument("--quick", action="store_true", help="a fast smoke run (for CI)")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    options = parser.parse_args(argv)
    config = QUICK if options.quick else FULL
    try:
        text, data = anyio.run(run, config, options.backend, backend=options.backend)
    except Exception as exc:
        traceback.print_exc()
        cause: BaseException = exc
        while isinstance(cause, BaseExceptionGroup) and len(cause.exceptions) == 1:
            cause = cause.exceptions[0]
        print(f"\nbenchmark failed: {type(cause).__name__}: {cause}", file=sys.stderr)
        return 1
    print(text, flush=True)
    if options.json:
        with open(options.json, "w", encoding="utf-8") as file:
            json.dump(data, file, indent=2)
            file.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
