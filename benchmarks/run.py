"""Performance benchmark for assistant-frames.

Run from the repository root::

    python benchmarks/run.py [--backend asyncio|trio] [--quick] [--json PATH]

It prints one table, measured in one run on one machine:

* tool-call round trips for (a) a floor: bare anyio memory object streams, no
  validation; (b) assistant-frames: ``AssistantFrameHost`` -> ``AssistantFrameProvider``
  over ``memory_pair()``; (c) the official ``mcp`` SDK in-process (``mcp.Client`` on an
  ``MCPServer``), (c') FastMCP in-process (``fastmcp.Client`` on a ``FastMCP`` server,
  the ``bench`` extra), each as sequential latency and as throughput with 100 calls in
  flight; and, sequential only, the same call to a sync ``add`` through the same host: (b') run
  on the event loop (``thread=False``), measured in small blocks alternating with (b)'s
  async ``add`` so that its ratio to (b) survives a busy machine, and (b'') in a worker
  thread (the default);
* MCP interop, in-process: (i) ``mcp.Client`` on a plain ``MCPServer``, (j) on
  ``MCPContextServer`` serving the same tool, (k) the ``MCPServer``'s tool called through
  an ``MCPFrameHost`` in a parent registry;
* FastMCP's mount, in-process: (w) ``fastmcp.Client`` on a ``FastMCP`` server, (x) on a
  parent ``FastMCP`` that mounts it, in blocks taken in turn;
* MCP Apps, in-process: (l) a view's ``tools/call`` (raw JSON-RPC over ``memory_pair()``)
  through an ``AppBridge`` to an ``MCPFrameHost`` on an ``MCPServer``, measured in blocks
  alternating with (m), the same call made through the same ``MCPFrameHost`` directly; (n)
  ``mcp.Client`` on that server; and the handshake of a new bridge (``ui/initialize`` to
  ``wait_initialized()``); (o) the view's call through a bridge to an ``MCPFrameHost`` on an
  ``MCPServer`` child over stdio (an app's server is usually another process), paired
  with (p), that ``MCPFrameHost``'s call directly;
* burst: how many context messages reach a connected host for 1,000 synchronous
  ``registry.add_tool`` calls;
* propagation: time from one change in a 1,000-tool registry to the host's subscriber,
  in a 10,000-tool one (the growth per tool), and in 10,000 tools spread over 10
  members merged into the served registry (a federation's parent);
* across processes, sequential latency of the same call: (d) a bare ``websockets``
  echo vs (e) assistant-frames over ``connect_websocket``/``websocket_server`` on
  127.0.0.1; (f) a bare newline-JSON echo through a child's pipes ((f') the same echo
  from the worker's event loop) vs (g) a ``spawn_worker`` worker running
  ``serve_stdio`` vs (h) ``mcp.Client`` over stdio to an ``MCPServer`` child (scripts:
  ``benchmarks/_*.py``);
* worker start: ``spawn_worker`` to the host's first context (and the same for the
  echo child's first reply and mcp's client initialisation);
* import time of ``assistant_frames`` (``-X importtime`` and wall time);
* NATS, on asyncio only (``nats-py`` is asyncio-only; on trio these rows are reported as
  skipped), against a ``nats-server`` the runner starts on a free loopback port: (q)
  ``NATSFrameHost`` -> ``NATSFrameProvider`` vs (r) a bare ``nats-py`` request-reply echo
  and (e) again, in rotating blocks; calls/s of a CPU-bound sync tool served by (s) 1 and
  (t) 2 replica processes (one thread each), with 16 calls in flight; and 100 frames
  (one child process) discovered into one parent by ``NATSDiscovery``: (u) running
  before it, from entering the discovery, and (v) started after it, until all their
  tools are in the parent; and (u') 1,000 running frames (one child process), as (u)
  (the growth per frame).

The runner reports targets (PASS/MISS) but never fails on them: it exits 0 unless
something raised. Each family of rows lives in a module of its own next to this
file (``bench_*.py``); this one runs them in order and prints the report. See
``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
import traceback
from collections.abc import Sequence
from typing import Any

import anyio
from bench_apps import bench_apps
from bench_calls import bench_calls
from bench_common import FULL, QUICK, Config
from bench_context import MANY_MEMBERS, MERGED_MEMBERS, bench_burst, bench_propagation
from bench_fastmcp import bench_fastmcp_mount
from bench_mcp import bench_mcp_interop
from bench_report import render, targets_for, to_json
from bench_transports import bench_cross_process


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
    calls.update(await bench_fastmcp_mount(config, log))
    gc.collect()
    apps = await bench_apps(config, backend, log)
    gc.collect()
    log("burst")
    burst = await bench_burst(config)
    gc.collect()
    log("propagation")
    propagation = await bench_propagation(config)
    gc.collect()
    log(f"propagation, {config.propagation_tools_large:,} tools")
    propagation_large = await bench_propagation(config, config.propagation_tools_large)
    gc.collect()
    log(f"propagation, {config.propagation_tools_large:,} tools in {MERGED_MEMBERS} members")
    propagation_merged = await bench_propagation(
        config, config.propagation_tools_large, MERGED_MEMBERS
    )
    gc.collect()
    log(f"propagation, {MANY_MEMBERS:,} members")
    propagation_members = await bench_propagation(config, MANY_MEMBERS, MANY_MEMBERS)
    gc.collect()
    cross = await bench_cross_process(config, backend, log)
    elapsed = time.perf_counter() - started

    figures = (
        calls,
        burst,
        propagation,
        propagation_large,
        propagation_merged,
        propagation_members,
        cross,
        apps,
    )
    targets = targets_for(*figures, backend)
    text = render(config, backend, *figures, targets, elapsed)
    data = to_json(config, backend, *figures, targets, elapsed)
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
