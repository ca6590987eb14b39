"""Worker start (spawn to ready, for each kind of child) and the import time of
``assistant_frames``."""

from __future__ import annotations

import gc
import statistics
import sys
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import anyio
from bench_children import ECHO_CHILD, STDIO_WORKER, Children, child_process
from bench_common import TIMEOUT_SECONDS, TOOL_CALL_MESSAGE, Config, mcp_version
from bench_stdio import PipeEcho

from assistant_frames import AssistantFrameHost
from assistant_frames.transports import spawn_worker


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


async def _echo_start(kids: Children, *mode: str) -> float:
    """Seconds from starting the echo child (in ``mode``) to its first reply."""
    start = time.perf_counter()
    async with child_process([sys.executable, str(ECHO_CHILD), *mode], kids.env) as process:
        with anyio.fail_after(TIMEOUT_SECONDS):
            reply = await PipeEcho(process).call()
        elapsed = time.perf_counter() - start
        if reply != TOOL_CALL_MESSAGE:
            raise RuntimeError(f"worker start: the echo child {mode} replied {reply!r}")
    return elapsed


async def start_pipe_echo(kids: Children) -> dict[str, float]:
    """Seconds from starting the echo child to its first reply."""
    return {"pipe_echo": await _echo_start(kids)}


async def start_anyio_floor(kids: Children) -> dict[str, float]:
    """The same for the echo child on anyio (with pydantic-core imported, as a worker's
    JSON needs): the floor for any such worker's start."""
    return {"anyio_floor": await _echo_start(kids, f"anyio-{kids.backend}")}


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
        "anyio_floor": StartResult("anyio_floor", "(f') ... on anyio + pydantic-core"),
        "mcp_init": StartResult("mcp_init", "(h) mcp: Client initialised"),
        "mcp_tools": StartResult("mcp_tools", "(h) mcp: ... and tools listed"),
    }
    starters: list[Callable[[Children], Coroutine[Any, Any, dict[str, float]]]] = [
        start_assistant_frames,
        start_pipe_echo,
        start_anyio_floor,
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
