"""Across processes: (d) to (h) and (f'), connected at once and measured in blocks taken in
turn; and ``bench_cross_process``, which runs the cross-process sections in order (these
transports, worker start, import time, NATS)."""

from __future__ import annotations

import gc
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass

import anyio
from bench_children import SECTION_TIMEOUT_SECONDS, Children, children
from bench_common import CallResult, Config, Probe, mcp_version, package_version
from bench_nats import NATSResult, bench_nats
from bench_startup import ImportResult, StartResult, bench_import, bench_worker_start
from bench_stdio import mcp_stdio_target, pipe_echo_target, stdio_target
from bench_websocket import websocket_echo_target, websocket_target

_BLOCK = 50  # calls per target per turn


async def bench_transports(
    config: Config, kids: Children, log: Callable[[str], None]
) -> dict[str, CallResult]:
    """(d) to (h) and (f'), all connected at once; sequential latency, in blocks taken in turn."""
    websockets_version = package_version("websockets")
    mcp = mcp_version()
    results = {
        "ws_echo": CallResult(
            "ws_echo", f"(d) bare websockets {websockets_version or ''} echo".replace("  ", " ")
        ),
        "ws_af": CallResult("ws_af", "(e) assistant-frames, WebSocket"),
        "pipe_echo": CallResult("pipe_echo", "(f) bare pipe echo, child process"),
        "loop_echo": CallResult("loop_echo", f"(f') the same, {kids.backend} child"),
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
        probes["loop_echo"] = await stack.enter_async_context(pipe_echo_target(kids, on_loop=True))
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

        # In blocks of 50 calls taken in turn (the order rotating per repeat), so each
        # ratio to its echo compares figures from the same stretch of time; mcp, some 20x
        # slower, takes its fewer calls in a run of its own.
        keys = [key for key in probes if key != "mcp_stdio"]
        for repeat in range(config.repeats):
            log(f"transports: repeat {repeat + 1}/{config.repeats}")
            turn = repeat % len(keys)
            order = keys[turn:] + keys[:turn]
            gc.collect()
            for done in range(0, config.transport_calls, _BLOCK):
                for key in order:
                    block = min(_BLOCK, config.transport_calls - done)
                    results[key].latency_samples_ns += await probes[key].measure(block)
            if "mcp_stdio" in probes:
                gc.collect()
                results["mcp_stdio"].latency_samples_ns += await probes["mcp_stdio"].measure(
                    config.mcp_stdio_calls
                )
    return results


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
