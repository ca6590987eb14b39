"""connect() to a registry, a ws:// frame and workers (a command, a .py script, a
command string); websocket_server,
websocket_listener and connect_websocket; a Federation of all three that gets a
killed worker back."""

from __future__ import annotations

import os
import shlex
import signal

import anyio
from common import HERE, calculator, failure, http, launched, progress_of, report, wait_until

from assistant_frames import (
    AssistantFrameHost,
    AssistantFrameProvider,
    Federation,
    ToolCallError,
    ToolCallTimeout,
    connect,
)
from assistant_frames.transports import connect_websocket, websocket_listener, websocket_server

TOKEN = "s3cret"


async def main() -> None:
    # connect() to a registry in this process (memory_pair).
    async with connect(calculator("memory"), name="memory") as frame:
        report("memory add", await frame.call_tool("add", {"a": 2, "b": 3}))
        events: list[object] = []
        report("memory count", await frame.call_tool("count", {"n": 3}, on_event=events.append))
        report("memory count events", progress_of(events))

    ws_registry = calculator("ws")
    provider = AssistantFrameProvider(ws_registry)
    files = {"/hello.txt": (b"hello from the frame server", "text/plain")}
    async with websocket_server(provider.serve, token=TOKEN, http_files=files) as server:
        report("ws http file", await http(f"http://127.0.0.1:{server.port}/hello.txt"))
        status, _ = await http(f"http://127.0.0.1:{server.port}/nothing")
        report("ws http missing", status)

        # connect() to a ws:// URL.
        async with connect(server.url, token=TOKEN, name="ws") as frame:
            report("ws system", frame.get_model_context().system)
            report("ws add", await frame.call_tool("add", {"a": 20, "b": 22}))
            events = []
            result = await frame.call_tool("pause", {"seconds": 0.01}, on_event=events.append)
            report("ws pause", [result, progress_of(events)])
            events = []
            result = await frame.call_tool("count", {"n": 2}, on_event=events.append)
            report("ws count", [result, progress_of(events)])
            try:
                await frame.call_tool("fail", {"why": "no reason"})
            except ToolCallError as error:
                report("ws fail", failure(error))
            try:
                await frame.call_tool("pause", {"seconds": 5}, timeout=0.2)
            except ToolCallTimeout as error:
                report("ws timeout", type(error).__name__)

        # connect_websocket + AssistantFrameHost, by hand; a wrong token is refused.
        async with (
            connect_websocket(server.url, token=TOKEN) as transport,
            AssistantFrameHost(transport, name="by-hand") as host,
        ):
            await host.wait_for_context(timeout=5)
            report("connect_websocket add", await host.call_tool("add", {"a": 1, "b": 1}))
            # Live changes: the host asked for patches; a tool comes and goes.
            await wait_until(
                lambda: any(c.machine.patches for c in provider._connections),
                "the frame heard the host ask for patches",
            )
            double = ws_registry.add_tool("double", lambda n: 2 * n)
            await wait_until(lambda: "double" in host.get_model_context().tools, "tool added")
            report("live tool added", await host.call_tool("double", {"n": 21}))
            double.remove()
            await wait_until(lambda: "double" not in host.get_model_context().tools, "removed")
            report("live changes as patches", host._machine.patch_seq)
            # A burst between two pushes: a tool replaced in place, one added, one gone.
            seq = host._machine.patch_seq or 0
            double = ws_registry.add_tool("double", lambda n: 2 * n)
            double.update(description="Twice n.")
            triple = ws_registry.add_tool("triple", lambda n: 3 * n)
            double.remove()

            def burst_seen() -> bool:
                tools = host.get_model_context().tools
                return "triple" in tools and "double" not in tools

            await wait_until(burst_seen, "the burst arrived")
            triple.update(description="Thrice n.")
            await wait_until(
                lambda: host.get_model_context().tools["triple"].description == "Thrice n.",
                "the update arrived",
            )
            report(
                "live burst as patches",
                [
                    list(host.get_model_context().tools)
                    == list(ws_registry.get_model_context().tools),
                    await host.call_tool("triple", {"n": 5}),
                    (host._machine.patch_seq or 0) > seq,
                ],
            )
            triple.remove()
            # frame_loaded(), the JS host's frameLoaded(): a context request with a fresh
            # id, which the frame answers before the grace period ends.
            host.frame_loaded(grace=5)
            request = host._machine.load_request or ""
            await wait_until(lambda: host._machine.load_request is None, "the load answered")
            report(
                "frame loaded",
                [
                    len(request),
                    request.strip("0123456789abcdef") == "",
                    host.get_model_context().system,
                    await host.call_tool("add", {"a": 2, "b": 2}),
                ],
            )
        try:
            async with connect(server.url, token="wrong", name="intruder", connect_timeout=5):
                pass
        except Exception as error:
            report("ws wrong token", type(error).__name__)

    # A sync tool given up on (timeout) keeps its thread until it returns, then gives
    # it back from that thread: with one thread, the next sync call waits for it.
    single = AssistantFrameProvider(calculator("single"), max_threads=1)
    async with websocket_server(single.serve) as server, connect(server.url) as frame:
        try:
            await frame.call_tool("nap", {"seconds": 0.5}, timeout=0.1)
        except ToolCallTimeout as error:
            report("nap timeout", type(error).__name__)
        with anyio.fail_after(10):
            added = await frame.call_tool("add", {"a": 1, "b": 1})
        report("after an abandoned thread", [added, single.thread_limiter.running])

    # websocket_listener, served in a task group of ours.
    async with (
        await websocket_listener(token=TOKEN) as listener,
        anyio.create_task_group() as group,
    ):
        await group.start(listener.serve, AssistantFrameProvider(calculator("listener")).serve)
        async with connect(listener.url, token=TOKEN) as frame:
            report("listener add", await frame.call_tool("add", {"a": 3, "b": 4}))
        group.cancel_scope.cancel()

    # connect() to a worker command (run under this runner too).
    async with connect(launched("worker_frame.py"), name="worker") as frame:
        report("worker add", await frame.call_tool("add", {"a": 5, "b": 6}))
        events = []
        result = await frame.call_tool("count", {"n": 3}, on_event=events.append)
        report("worker count", [result, progress_of(events)])

    # connect() to a .py script (run with this interpreter), and to a command string.
    async with connect(str(HERE / "worker_script.py"), name="script") as frame:
        report(
            "script worker",
            [frame.get_model_context().system, await frame.call_tool("add", {"a": 1, "b": 9})],
        )
    async with connect(
        shlex.join(launched("worker_frame.py", None, "string")), name="str"
    ) as frame:
        report("command string worker", frame.get_model_context().system)

    # A Federation of a ws frame, a worker and a registry (the last two joining side by
    # side); the worker is killed and comes back.
    async with (
        websocket_server(AssistantFrameProvider(calculator("fed-ws")).serve, token=TOKEN) as server,
        Federation(initial_delay=0.05, max_delay=0.2) as federation,
    ):
        await federation.add("ws", server.url, token=TOKEN)
        # The other two added without waiting, then waited for side by side.
        await federation.add("worker", launched("worker_frame.py"), wait=False)
        await federation.add("local", calculator("local"), wait=False)
        async with anyio.create_task_group() as group:
            for name in ("worker", "local"):
                group.start_soon(federation.wait_joined, name)
        report("federation tools", sorted(federation.get_model_context().tools))
        report("federation ws add", await federation.call_tool("ws_add", {"a": 1, "b": 2}))
        report("federation local add", await federation.call_tool("local_add", {"a": 2, "b": 2}))
        first = await federation.call_tool("worker_pid")
        os.kill(first, signal.SIGKILL)
        await wait_until(
            lambda: (
                federation.status("worker").connections >= 2
                and "worker_pid" in federation.get_model_context().tools
            ),
            "the killed worker is back",
        )
        second = await federation.call_tool("worker_pid")
        report("federation worker restarted", second != first)
        report("federation worker add", await federation.call_tool("worker_add", {"a": 4, "b": 4}))
        report("federation states", [s.state for s in federation.statuses()])
    report("done", True)
