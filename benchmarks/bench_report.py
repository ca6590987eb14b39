"""The report: targets (PASS/MISS), the printed table and the JSON figures."""

from __future__ import annotations

import importlib.metadata
import math
import os
import platform
import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from bench_apps import AppsResult
from bench_common import IN_FLIGHT, CallResult, Config
from bench_context import BurstResult, PropagationResult
from bench_nats import NATS_FRAME_COUNT, NATS_IN_FLIGHT, NATSResult
from bench_startup import ImportResult
from bench_transports import CrossProcess


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
    propagation_large: PropagationResult,
    propagation_merged: PropagationResult,
    propagation_members: PropagationResult,
    cross: CrossProcess,
    apps: AppsResult,
    backend: str,
) -> list[Target]:
    """Each row against its goal (benchmarks/README.md lists them)."""
    floor, af, mcp = calls["floor"], calls["af"], calls["mcp"]
    out = [
        Target(
            "(b)/(a) latency        (x the floor)",
            af.latency_us / floor.latency_us,
            "x",
            "<= 0.8x",
            af.latency_us / floor.latency_us <= 0.8,
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
            Target("(b)/(c) throughput     (x faster than mcp)", None, "x", ">= 10x", None),
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
                ">= 10x",
                af.throughput / mcp.throughput >= 10,
            ),
        ]
    out.append(
        _ratio_target(
            "(c')/(b) latency       (x faster than FastMCP)",
            calls["fastmcp"],
            af,
            ">= 10x",
            lambda r: r >= 10,
        )
    )
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
            "<= 1.05x",
            lambda r: r <= 1.05,
        ),
        _ratio_target(
            "(l)/(m) app view tools/call (x the MCPFrameHost itself)",
            apps.calls["app_view"],
            apps.calls["app_frame"],
            "<= 1.1x",
            lambda r: r <= 1.1,
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
            "<= 0.5 ms",
            propagation.median_ms <= 0.5,
        ),
        Target(
            f"propagation, {propagation_large.tools:,} tools: change -> host callback, median",
            propagation_large.median_ms,
            "ms",
            "<= 1 ms",
            propagation_large.median_ms <= 1,
        ),
        Target(
            f"propagation, {propagation_merged.label}: change -> host, median",
            propagation_merged.median_ms,
            "ms",
            "<= 1 ms",
            propagation_merged.median_ms <= 1,
        ),
    ]
    return out + cross_process_targets(cross, backend)


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


def _spawned_rounds(calls: dict[str, CallResult]) -> list[str]:
    """The in-flight figures over rounds of tasks spawned per call, for information."""
    keys = [key for key in ("floor", "af", "mcp", "fastmcp") if calls[key].spawned_throughputs]
    if not keys:
        return []
    best = {key: max(calls[key].spawned_throughputs) for key in keys}
    figures = ", ".join(f"{calls[key].label.split(' ')[0]} {best[key]:,.0f}" for key in keys)
    ratio = f"; (b)/(c) {best['af'] / best['mcp']:.2f}x" if {"af", "mcp"} <= set(best) else ""
    return [f"[info] {IN_FLIGHT} tasks spawned per round instead, calls/s: {figures}{ratio}"]


def _reference_latency_us(result: CallResult, reference: CallResult) -> float:
    """``reference``'s latency, from the blocks paired with ``result``'s if it has them."""
    if result.reference_samples_ns:
        return result.reference_latency_us
    return reference.latency_us


#: (g)/(f): the stdio round trip's goal, in times the bare pipe echo.
STDIO_GOAL = 1.3


def cross_process_targets(cross: CrossProcess, backend: str) -> list[Target]:
    """The cross-process rows against their goals (the WebSocket's is looser on trio,
    whose I/O has no protocol callbacks to take a reply from)."""
    t, start = cross.transports, cross.starts["stdio_af"]
    ws_goal = 1.5 if backend == "trio" else 1.2
    extra_import_ms = cross.imports.wall_import_ms - cross.imports.wall_pass_ms
    return [
        _ratio_target(
            "(e)/(d) WebSocket latency  (x the bare echo)",
            t["ws_af"],
            t["ws_echo"],
            f"<= {ws_goal}x",
            lambda r: r <= ws_goal,
        ),
        _ratio_target(
            "(g)/(f) stdio latency      (x the bare echo)",
            t["stdio_af"],
            t["pipe_echo"],
            f"<= {STDIO_GOAL}x",
            lambda r: r <= STDIO_GOAL,
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
            "<= 150 ms",
            start.median_ms <= 150,
        ),
        Target(
            'import: python -c "import assistant_frames" over "pass"',
            extra_import_ms,
            "ms",
            "<= 150 ms",
            extra_import_ms <= 150,
        ),
        _ratio_target(
            "(q)/(r) NATS latency       (x the bare echo)",
            cross.nats.calls["nats_af"],
            cross.nats.calls["nats_echo"],
            "<= 1.2x",
            lambda r: r <= 1.2,
        ),
        *nats_scale_targets(cross.nats),
    ]


def nats_scale_targets(nats: NATSResult) -> list[Target]:
    """The CPU-bound tool over 2 replica processes against 1, and the discovery of
    ``NATS_FRAME_COUNT`` running frames."""
    scaling_label = "(t)/(s) CPU-bound tool, 2 replicas (x 1 replica)"
    discovery_label = f"(u) discovery: {NATS_FRAME_COUNT} running frames -> parent, median"
    if nats.skipped:
        return [
            Target(scaling_label, None, "x", ">= 1.9x", None),
            Target(discovery_label, None, "ms", "<= 200 ms", None),
        ]
    discovery_ms = statistics.median(nats.discovery_enter_s) * 1000
    return [
        Target(scaling_label, nats.scaling, "x", ">= 1.9x", nats.scaling >= 1.9),
        Target(discovery_label, discovery_ms, "ms", "<= 200 ms", discovery_ms <= 200),
    ]


def render(
    config: Config,
    backend: str,
    calls: dict[str, CallResult],
    burst: BurstResult,
    propagation: PropagationResult,
    propagation_large: PropagationResult,
    propagation_merged: PropagationResult,
    propagation_members: PropagationResult,
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
    for key in ("floor", "af", "mcp", "fastmcp"):
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
    lines += _spawned_rounds(calls)
    lines += [
        "",
        f"{'MCP interop, in-process':<38}{'sequential µs/call':>20}{'p90 µs':>10}{'x (i)':>24}",
    ]
    plain = calls["mcp_plain"]
    for key in ("mcp_plain", "mcp_scoped", "mcp_served", "mcp_frame"):
        result = calls[key]
        if result.skipped:
            lines.append(f"{result.label:<38}{'skipped: ' + result.skipped}")
            continue
        lines.append(
            f"{result.label:<38}{result.latency_us:>20.1f}{result.latency_p90_us:>10.1f}"
            f"{result.latency_us / plain.latency_us:>23.2f}x"
        )
    frame, scoped = calls["mcp_frame"], calls["mcp_scoped"]
    if not (frame.skipped or scoped.skipped):
        label = "[info] (k)/(i'): what a frame adds to the cancel scope it must open"
        lines.append(f"{label:<68}{frame.latency_us / scoped.latency_us:>23.2f}x")
    lines += ["", *render_fastmcp_mount(calls)]
    lines += ["", *render_apps(apps)]
    lines += [
        "",
        *render_propagation(
            propagation, propagation_large, propagation_merged, propagation_members
        ),
    ]
    lines += [
        "",
        *render_cross_process(cross, calls["af"]),
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
        f"({config.repeats} interleaved repeats, in blocks of 50 taken in turn); "
        f"throughput = best of {config.repeats} "
        f"samples of {config.rounds * IN_FLIGHT:,} calls by {IN_FLIGHT} tasks each calling in turn",
        f"method, across processes: latency = median of "
        f"{config.repeats * config.transport_calls:,} sequential calls "
        f"({config.repeats * config.mcp_stdio_calls:,} for mcp; {config.repeats} interleaved "
        f"repeats, in blocks of 50 taken in turn); the workers and the mcp server run on "
        f"{backend}; (d) runs on its own asyncio loop in a thread; worker start = "
        f"{config.spawns} interleaved starts each",
    ]
    if not cross.nats.skipped:
        lines.append(
            f"method, NATS: latency = median of {config.repeats * config.transport_calls:,} "
            f"sequential calls each, in blocks of 50 taken in turn; throughput = median of "
            f"{config.repeats} blocks of {config.nats_cpu_calls} calls each, alternating; "
            f"discovery = {config.nats_discoveries} runs each way"
        )
    return "\n".join(lines)


def render_fastmcp_mount(calls: dict[str, CallResult]) -> list[str]:
    """(w) and (x), and beside them ours: (k)/(i), the nearest row we have (an MCP
    server's tool reached through an ``MCPFrameHost`` in a parent registry, against
    ``mcp.Client`` calling it directly)."""
    lines = [
        f"{'FastMCP mount, in-process':<38}{'sequential µs/call':>20}{'p90 µs':>10}{'x (w)':>24}",
    ]
    direct = calls["fastmcp_direct"]
    for key in ("fastmcp_direct", "fastmcp_mounted"):
        result = calls[key]
        if result.skipped:
            lines.append(f"{result.label:<38}{'skipped: ' + result.skipped}")
            continue
        lines.append(
            f"{result.label:<38}{result.latency_us:>20.1f}{result.latency_p90_us:>10.1f}"
            f"{result.latency_us / direct.latency_us:>23.2f}x"
        )
    frame, plain = calls["mcp_frame"], calls["mcp_plain"]
    if not (frame.skipped or plain.skipped):
        label = "ours: (k)/(i), a frame in a parent registry (x mcp.Client itself)"
        lines.append(f"{label:<68}{frame.latency_us / plain.latency_us:>23.2f}x")
    return lines


def render_propagation(small: PropagationResult, *larger: PropagationResult) -> list[str]:
    """Propagation at several sizes: the median, and the median per tool of the registry
    (growth: over the smallest)."""
    lines = [
        f"{'propagation: change -> host callback':<38}{'median ms':>20}{'p90 ms':>10}"
        f"{'µs per tool   growth':>24}",
    ]
    for result in (small, *larger):
        growth = "" if result is small else f"{result.median_ms / small.median_ms:.2f}x"
        per_tool = f"{result.us_per_tool:.3f} {growth:>8}"
        lines.append(
            f"{result.label:<38}{result.median_ms:>20.2f}{result.p90_ms:>10.2f}{per_tool:>24}"
        )
    for result in larger[-2:]:
        kinds = ", ".join(f"{k} {v:.2f}" for k, v in result.median_ms_by_kind.items())
        lines.append(f"  {result.label}, median ms by kind: {kinds}")
    return lines


def render_apps(apps: AppsResult) -> list[str]:
    lines = [
        f"{'MCP Apps, in-process':<38}{'sequential µs/call':>20}{'p90 µs':>10}"
        f"{'x (m)   x (n)':>24}",
    ]
    mcp = apps.calls["app_mcp"]
    references = {"app_view_stdio": "app_frame_stdio", "app_frame_stdio": "app_frame_stdio"}
    keys = ("app_view", "app_frame", "app_hop", "app_mcp", "app_view_stdio", "app_frame_stdio")
    for key in keys:
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
        # Each over the (m) of its own blocks: the two were measured at different times.
        frame = apps.calls["app_frame"]
        view, hop = (apps.calls[key] for key in ("app_view", "app_hop"))
        ratio = (view.latency_us / _reference_latency_us(view, frame)) / (
            hop.latency_us / _reference_latency_us(hop, frame)
        )
        label = "[info] (l)/(m'): what the bridge adds to the hops a view needs"
        lines.append(f"{label:<68}{ratio:>23.2f}x")
        label = "handshake: ui/initialize -> initialized"
        lines.append(
            f"{label:<38}{apps.handshake_us:>20.1f}{apps.handshake_p90_us:>10.1f}"
            f"{f'{len(apps.handshake_ns)} bridges':>24}"
        )
    return lines


def render_cross_process(cross: CrossProcess, in_process: CallResult) -> list[str]:
    """The cross-process rows; ``in_process`` is (b), the same call's whole round trip
    inside one process, to set against what (g) adds to its loop's echo (f')."""
    t = cross.transports
    lines = [
        f"{'add(1, 2) across processes, 127.0.0.1':<38}{'sequential µs/call':>20}{'p90 µs':>10}"
        f"{'x the bare echo':>24}",
    ]
    for key, echo in (
        ("ws_echo", "ws_echo"),
        ("ws_af", "ws_echo"),
        ("pipe_echo", "pipe_echo"),
        ("loop_echo", "pipe_echo"),
        ("stdio_af", "pipe_echo"),
        ("mcp_stdio", "pipe_echo"),
    ):
        result = t[key]
        if result.skipped:
            lines.append(f"{result.label:<38}{'skipped: ' + result.skipped}")
            continue
        ratio = "" if t[echo].skipped else f"{result.latency_us / t[echo].latency_us:.2f}x"
        if key in ("stdio_af", "mcp_stdio") and not t["loop_echo"].skipped:
            # Against the echo from an event loop too: the floor of a worker that has one.
            ratio += f" ({result.latency_us / t['loop_echo'].latency_us:.2f}x (f'))"
        lines.append(
            f"{result.label:<38}{result.latency_us:>20.1f}{result.latency_p90_us:>10.1f}{ratio:>24}"
        )
    lines += _stdio_floor(t, in_process)
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
    ours, floor = cross.starts["stdio_af"], cross.starts.get("anyio_floor")
    if floor is not None and not floor.skipped and not ours.skipped:
        lines.append(
            f"[info] (g) over (f'): +{ours.median_ms - floor.median_ms:.0f} ms, "
            f"{ours.median_ms / floor.median_ms:.2f}x (what the library adds to an anyio worker)"
        )
    return [*lines, "", *render_nats(cross.nats)]


def _stdio_floor(t: dict[str, CallResult], in_process: CallResult) -> list[str]:
    """(g) - (f'): the work of the protocol's two ends, one in each process; against (b),
    which is that same work (and no pipe) in one process, and against what the stdio
    goal (``STDIO_GOAL`` times the bare echo (f)) leaves over (f')."""
    ours, loop_echo, echo = t["stdio_af"], t["loop_echo"], t["pipe_echo"]
    if ours.skipped or loop_echo.skipped or echo.skipped or in_process.skipped:
        return []
    added = ours.latency_us - loop_echo.latency_us
    room = STDIO_GOAL * echo.latency_us - loop_echo.latency_us
    left = f"leaves {room:.1f} µs" if room >= 0 else "is below (f') itself"
    return [
        f"[info] (g) - (f'): {added:.1f} µs for both ends' protocol work; (b), the same work "
        f"in one process: {in_process.latency_us:.1f} µs; {STDIO_GOAL}x (f) {left}"
    ]


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
    title = f"CPU-bound tool ({nats.tool_ms:.1f} ms, 1 thread), {NATS_IN_FLIGHT} in flight"
    lines += ["", f"{title:<38}{'calls/s':>20}{'min':>10}{'x 1 replica':>24}"]
    for replicas, label in (("1", "(s) 1 replica process"), ("2", "(t) 2 replica processes")):
        ratio = "" if replicas == "1" else f"{nats.scaling:.2f}x"
        lines.append(
            f"{label:<38}{nats.calls_per_s(replicas):>20,.0f}"
            f"{min(nats.throughput[replicas]):>10,.0f}{ratio:>24}"
        )
    for count, label in (("1", "(t') the tool alone, 1 process"), ("2", "(t') ... 2 processes")):
        if not nats.plain[count]:
            continue
        ratio = "" if count == "1" else f"{nats.plain_scaling:.2f}x"
        lines.append(
            f"{label:<38}{statistics.median(nats.plain[count]):>20,.0f}"
            f"{min(nats.plain[count]):>10,.0f}{ratio:>24}"
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
    title = "discovery growth: running frames"
    lines += ["", f"{title:<38}{'median ms':>20}{'max ms':>10}{'ms per frame   growth':>24}"]
    for label, count, samples in (
        (
            f"(u) {NATS_FRAME_COUNT:,} running: from entering",
            NATS_FRAME_COUNT,
            nats.discovery_enter_s,
        ),
        (
            f"(u') {nats.frames_large:,} running: from entering",
            nats.frames_large,
            nats.discovery_large_enter_s,
        ),
    ):
        median_ms = statistics.median(samples) * 1000
        growth = "" if count == NATS_FRAME_COUNT else f"{nats.discovery_growth:.2f}x"
        per_frame = f"{median_ms / count:.2f} {growth:>8}"
        lines.append(f"{label:<38}{median_ms:>20.1f}{max(samples) * 1000:>10.1f}{per_frame:>24}")
    propagation = nats.propagation
    if propagation is not None:
        title = "propagation: change -> host callback"
        kinds = ", ".join(f"{k} {v:.2f}" for k, v in propagation.median_ms_by_kind.items())
        lines += [
            "",
            f"{title:<38}{'median ms':>20}{'p90 ms':>10}",
            f"{propagation.label:<38}{propagation.median_ms:>20.2f}{propagation.p90_ms:>10.2f}",
            f"  median ms by kind: {kinds}",
        ]
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


def _rounded(value: float) -> float | None:
    return None if math.isnan(value) else round(value, 3)


def to_json(
    config: Config,
    backend: str,
    calls: dict[str, CallResult],
    burst: BurstResult,
    propagation: PropagationResult,
    propagation_large: PropagationResult,
    propagation_merged: PropagationResult,
    propagation_members: PropagationResult,
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
            "fastmcp": version("fastmcp"),
            "trio": version("trio") if backend == "trio" else None,
        },
        "elapsed_s": round(elapsed_s, 2),
        "calls": {key: result.summary() for key, result in calls.items()},
        "burst": asdict(burst),
        "propagation": asdict(propagation),
        "propagation_large": asdict(propagation_large),
        "propagation_merged": asdict(propagation_merged),
        "propagation_members": asdict(propagation_members),
        "propagation_growth_large_over_small": _rounded(
            propagation_large.median_ms / propagation.median_ms
        ),
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
