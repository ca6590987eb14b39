"""Context updates: burst (context messages for many ``add_tool`` calls) and
propagation (one change to the host's subscriber), at 1,000 tools and at 10x that."""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
from anyio.abc import ObjectStream
from bench_common import TIMEOUT_SECONDS, Config, quantile

from assistant_frames import (
    AssistantFrameHost,
    AssistantFrameProvider,
    ModelContextRegistry,
    memory_pair,
)
from assistant_frames.frames import protocol

SETTLE_SECONDS = 0.05  # quiet time for a connection's background chatter to finish


class CountingStream(ObjectStream[Any]):
    """Wraps the host's transport end; counts the context messages it receives."""

    CONTEXT_TYPES = frozenset(
        {"model-context-update", "model-context-response", "model-context-patch"}
    )

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


MERGED_MEMBERS = 10  # members of the merged propagation row
MANY_MEMBERS = 1000  # members of the many-members row: one tool each


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
    members: int = 1  # registries merged (namespaced) into the one served; 1: itself
    carrier: str = ""  # what carries the context to the host ("": a memory pair)

    @property
    def us_per_tool(self) -> float:
        """The median spread over the registry's tools, in µs."""
        return self.median_ms * 1000 / self.tools

    @property
    def label(self) -> str:
        label = f"{self.tools:,} tools"
        if self.members > 1:
            label += f" in {self.members} members"
        return f"{label} over {self.carrier}" if self.carrier else label


Serve = Callable[[ModelContextRegistry], AbstractAsyncContextManager[Any]]
"""Serves a registry to a host whose first context has arrived; yields the host."""


@asynccontextmanager
async def served_host(registry: ModelContextRegistry) -> AsyncIterator[Any]:
    """:func:`served`'s host alone: over a memory pair."""
    async with served(registry) as (host, _):
        yield host


async def bench_propagation(
    config: Config,
    tools: int | None = None,
    members: int = 1,
    serve: Serve = served_host,
    carrier: str = "",
) -> PropagationResult:
    """One change in a registry of ``tools`` tools (``config.propagation_tools`` by
    default) to the host's subscriber. With ``members`` > 1, the tools are spread over
    that many registries merged, namespaced, into the one served (a federation's
    parent), and each change is made in one member in turn. ``serve`` connects the host
    (over a memory pair by default; ``carrier`` names what else it uses)."""
    tools = config.propagation_tools if tools is None else tools
    clock = time.perf_counter_ns
    setup_start = clock()
    registry = ModelContextRegistry()
    owners = [registry] if members == 1 else [ModelContextRegistry() for _ in range(members)]
    for index, member in enumerate(owners if members > 1 else ()):
        registry.add_provider(member, namespace=f"m{index}")
    handles = [
        owners[i % members].add_tool(f"tool_{i}", small_tool, description=f"Tool number {i}")
        for i in range(tools)
    ]
    instruction = owners[-1].add_instruction("You are a benchmark.")
    async with serve(registry) as host:
        if len(host.get_model_context().tools) != tools:
            raise RuntimeError("propagation: the host does not hold every tool")
        setup_ms = (clock() - setup_start) / 1e6
        fired: list[anyio.Event] = [anyio.Event()]
        host.subscribe(lambda: fired[0].set())
        added: list[Any] = []

        def add_tool(k: int) -> None:
            added.append(owners[k % members].add_tool(f"extra_{k}", small_tool))

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
        tools=tools,
        changes=len(samples),
        median_ms=statistics.median(samples) / 1e6,
        min_ms=min(samples) / 1e6,
        p90_ms=quantile(samples, 0.9) / 1e6,
        max_ms=max(samples) / 1e6,
        median_ms_by_kind={
            name: round(statistics.median(values) / 1e6, 3)
            for name, values in by_kind.items()
            if values
        },
        setup_ms=setup_ms,
        members=members,
        carrier=carrier,
    )
