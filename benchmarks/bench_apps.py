"""MCP Apps: (l) to (p), a view's ``tools/call`` through an ``AppBridge`` (and (m'), the
task hops any view's host makes, without a bridge), and the handshake of a new bridge."""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from anyio.abc import ObjectStream
from bench_children import children
from bench_common import (
    TIMEOUT_SECONDS,
    Call,
    CallResult,
    Config,
    check_add,
    mcp_version,
    measure_paired,
    measure_sequential,
    quantile,
)
from bench_mcp import mcp_client_target, structured_result

from assistant_frames import memory_pair


def _apps_server() -> Any:
    """An ``MCPServer`` whose ``add`` has a view (``_meta.ui.resourceUri``): an app's tool."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench-app", log_level="WARNING")

    @server.tool(meta={"ui": {"resourceUri": "ui://bench/view.html"}})
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return server


class RawView:
    """The view end of a bridge as raw JSON-RPC dicts: what a view's ``App`` sends."""

    def __init__(self, transport: ObjectStream[Any]) -> None:
        from assistant_frames.apps import protocol as apps_protocol  # needs the mcp extra

        self.protocol = apps_protocol
        self.transport = transport
        self.next_id = 0

    async def request(self, method: str, params: Any) -> dict[str, Any]:
        self.next_id += 1
        await self.transport.send(self.protocol.encode_request(self.next_id, method, params))
        answer: dict[str, Any] = await self.transport.receive()
        if answer.get("id") != self.next_id:
            raise RuntimeError(f"the view expected the answer to {self.next_id}, got {answer}")
        return answer

    async def initialize(self) -> None:
        protocol = self.protocol
        params = {
            "protocolVersion": protocol.PROTOCOL_VERSION,
            "appInfo": {"name": "bench-view", "version": "1.0.0"},
            "appCapabilities": {},
        }
        await self.request(protocol.INITIALIZE, params)
        await self.transport.send(protocol.encode_notification(protocol.INITIALIZED))


@dataclass
class AppsResult:
    calls: dict[str, CallResult]
    handshake_ns: list[int] = field(default_factory=list)
    skipped: str | None = None

    @property
    def handshake_us(self) -> float:
        return statistics.median(self.handshake_ns) / 1000

    @property
    def handshake_p90_us(self) -> float:
        return quantile(self.handshake_ns, 0.9) / 1000

    def summary(self) -> dict[str, Any]:
        calls = {key: result.summary() for key, result in self.calls.items()}
        if self.skipped:
            return {"skipped": self.skipped, "calls": calls}
        return {
            "calls": calls,
            "handshake_median_us": round(self.handshake_us, 2),
            "handshake_p90_us": round(self.handshake_p90_us, 2),
            "handshakes": len(self.handshake_ns),
        }


def _frame_call(frame: Any) -> Call:
    """``add(1, 2)`` through ``frame.call_tool_result``."""
    call_tool_result = frame.call_tool_result

    async def call() -> object:
        result = await call_tool_result("add", {"a": 1, "b": 2})
        return structured_result(result)

    return call


@asynccontextmanager
async def app_view_target(frame: Any) -> AsyncIterator[Call]:
    """(l): a raw view's ``tools/call`` -> ``AppBridge`` -> ``frame`` -> its server."""
    from assistant_frames.apps import AppBridge

    host_end, view_end = memory_pair()
    async with AppBridge(host_end, server=frame, name="bench-view") as bridge:
        view = RawView(view_end)
        await view.initialize()
        await bridge.wait_initialized(timeout=TIMEOUT_SECONDS)
        request = view.request
        params = {"name": "add", "arguments": {"a": 1, "b": 2}}

        async def call() -> object:
            answer = await request("tools/call", params)
            return _structured_result_dict(answer["result"])

        yield call


@asynccontextmanager
async def task_hop_target(frame: Any) -> AsyncIterator[Call]:
    """(m'): (m) made by a task of its own for a caller over a memory pair, the result
    sent back in its wire form: what any host of a view does (the view is a peer of its
    own, answered from another task), without the bridge's JSON-RPC and checks."""
    import anyio

    host_end, view_end = memory_pair()
    call_tool_result = frame.call_tool_result

    async def serve() -> None:
        while True:
            request = await host_end.receive()
            result = await call_tool_result(request["name"], request["arguments"])
            await host_end.send(result.model_dump(mode="json", by_alias=True, exclude_none=True))

    params = {"name": "add", "arguments": {"a": 1, "b": 2}}
    async with anyio.create_task_group() as group:
        group.start_soon(serve)

        async def call() -> object:
            await view_end.send(params)
            return _structured_result_dict(await view_end.receive())

        yield call
        group.cancel_scope.cancel()


def _structured_result_dict(result: dict[str, Any]) -> object:
    structured = result.get("structuredContent")
    return structured.get("result") if isinstance(structured, dict) else structured


async def measure_handshakes(frame: Any, n: int) -> list[int]:
    """Nanoseconds from a new view's ``ui/initialize`` to ``wait_initialized()`` returning,
    for ``n`` bridges in turn (entering and leaving each is not counted)."""
    from assistant_frames.apps import AppBridge

    clock = time.perf_counter_ns
    samples: list[int] = []
    for _ in range(n):
        host_end, view_end = memory_pair()
        async with AppBridge(host_end, server=frame, name="bench-view") as bridge:
            view = RawView(view_end)
            start = clock()
            await view.initialize()
            await bridge.wait_initialized(timeout=TIMEOUT_SECONDS)
            samples.append(clock() - start)
    return samples


async def bench_apps(config: Config, backend: str, log: Callable[[str], None]) -> AppsResult:
    """(l) a view's ``tools/call`` through an ``AppBridge``, measured in blocks alternating
    with (m), the same call made through the same ``MCPFrameHost`` directly; (n) ``mcp.Client``
    on the same server; the handshake of a new bridge; and (o)/(p) as (l)/(m) with the
    server in a child over stdio."""
    results = {
        "app_view": CallResult("app_view", "(l) view -> AppBridge -> MCPFrameHost"),
        "app_frame": CallResult("app_frame", "(m) MCPFrameHost.call_tool_result"),
        "app_hop": CallResult("app_hop", "(m') (m) from a task, over a pair"),
        "app_mcp": CallResult("app_mcp", "(n) mcp.Client -> MCPServer"),
        "app_view_stdio": CallResult("app_view_stdio", "(o) view -> AppBridge -> stdio"),
        "app_frame_stdio": CallResult("app_frame_stdio", "(p) MCPFrameHost over stdio"),
    }
    if mcp_version() is None:
        for result in results.values():
            result.skipped = "mcp is not installed"
        return AppsResult(results, skipped="mcp is not installed")
    from assistant_frames.mcp import MCPFrameHost

    server = _apps_server()
    apps = AppsResult(results)
    async with AsyncExitStack() as stack:
        frame = await stack.enter_async_context(MCPFrameHost(server, name="bench-app"))
        child = stack.enter_context(children(backend)).mcp_parameters()
        stdio_frame = await stack.enter_async_context(MCPFrameHost(child, name="bench-app-stdio"))
        frame_call, stdio_frame_call = _frame_call(frame), _frame_call(stdio_frame)
        targets: dict[str, Call] = {
            "app_view": await stack.enter_async_context(app_view_target(frame)),
            "app_frame": frame_call,
            "app_hop": await stack.enter_async_context(task_hop_target(frame)),
            "app_mcp": await stack.enter_async_context(mcp_client_target(server)),
            "app_view_stdio": await stack.enter_async_context(app_view_target(stdio_frame)),
            "app_frame_stdio": stdio_frame_call,
        }
        paired = {
            "app_view": ("app_frame", frame_call, config.sequential_calls // 2),
            "app_hop": ("app_frame", frame_call, config.sequential_calls // 2),
            "app_view_stdio": ("app_frame_stdio", stdio_frame_call, config.transport_calls // 2),
        }
        for key, call in targets.items():
            await check_add(results[key].label, call)
            await measure_sequential(call, config.warmup_calls)
        await measure_handshakes(frame, max(1, config.handshakes // 10))

        # (m), (p): paired with (l) and (m'), and (o)
        keys = ["app_view", "app_hop", "app_mcp", "app_view_stdio"]
        for repeat in range(config.repeats):
            log(f"apps: repeat {repeat + 1}/{config.repeats}")
            shift = repeat % len(keys)
            for key in keys[shift:] + keys[:shift]:
                gc.collect()
                if key in paired:
                    reference_key, reference_call, n = paired[key]
                    samples, reference = await measure_paired(targets[key], reference_call, n)
                    results[key].latency_samples_ns += samples
                    results[key].reference_samples_ns += reference
                    results[reference_key].latency_samples_ns += reference
                else:
                    results[key].latency_samples_ns += await measure_sequential(
                        targets[key], config.sequential_calls // 2
                    )
            gc.collect()
            apps.handshake_ns += await measure_handshakes(
                frame, max(1, config.handshakes // config.repeats)
            )
    return apps
