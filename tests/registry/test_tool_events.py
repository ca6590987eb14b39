"""Tools that talk back: progress and log events from a running tool to its caller.

Locally, across the frame wire (memory, a stdio worker, a WebSocket, a relay frame in
between), through ``MCPContextServer`` to a real ``mcp.Client``, and the wire rules: a
call that did not ask gets no event messages, stray or malformed ones are ignored.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from assistant_frames import (
    AssistantFrameHost,
    AssistantFrameProvider,
    ModelContextRegistry,
    ReconnectingHost,
    ToolCallContext,
    ToolEvent,
    ToolLog,
    ToolProgress,
)
from assistant_frames.mcp import MCPContextServer
from assistant_frames.transports import connect_websocket, spawn_worker, websocket_server

from helpers import call_raw, envelope, next_message, raw_frame, serve_frame, served, wait_until

pytestmark = pytest.mark.anyio

TIMEOUT = 10.0


def reporting_registry() -> ModelContextRegistry:
    registry = ModelContextRegistry()

    @registry.tool
    async def count(n: int, context: ToolCallContext) -> str:
        """Count to n, reporting each step."""
        for i in range(1, n + 1):
            context.report_progress(i, n, f"step {i}")
            await anyio.sleep(0.001)
        context.log("info", "counted", data={"n": n})
        return f"counted to {n}"

    @registry.tool
    def spin(n: int, context: ToolCallContext) -> int:
        """Report progress n times from a worker thread, as fast as it can."""
        for i in range(1, n + 1):
            context.report_progress(i, n)
        context.log("notice", "spun")
        return n

    return registry


def progress_of(events: list[ToolEvent]) -> list[float]:
    return [event.progress for event in events if isinstance(event, ToolProgress)]


def logs_of(events: list[ToolEvent]) -> list[ToolLog]:
    return [event for event in events if isinstance(event, ToolLog)]


def assert_counted(events: list[ToolEvent], n: int, call_id: str | None, name: str) -> None:
    """The progress of ``count(n)``: increasing, ending at n of n; then its log."""
    progress = progress_of(events)
    assert progress, events
    assert progress == sorted(progress)
    assert progress[-1] == n
    last = [event for event in events if isinstance(event, ToolProgress)][-1]
    assert (last.total, last.message) == (n, f"step {n}")
    (log,) = logs_of(events)
    assert (log.level, log.message, log.data) == ("info", "counted", {"n": n})
    for event in events:
        assert event.tool_name == name
        if call_id is not None:
            assert event.tool_call_id == call_id


# -- in one process ----------------------------------------------------------------------------


async def test_a_local_call_gets_its_events_through_the_merged_context() -> None:
    parent = ModelContextRegistry()
    parent.add_provider(reporting_registry(), namespace="w")
    events: list[ToolEvent] = []
    with anyio.fail_after(TIMEOUT):
        result = await parent.get_model_context().call_tool(
            "w_count", {"n": 3}, tool_call_id="c1", on_event=events.append
        )
    assert result == "counted to 3"
    assert progress_of(events) == [1, 2, 3]  # no wire between: nothing coalesced
    assert_counted(events, 3, "c1", "w_count")


async def test_a_thread_tool_reports_without_waiting_and_keeps_the_latest() -> None:
    events: list[ToolEvent] = []
    tool = reporting_registry().get_model_context().tools["spin"]
    with anyio.fail_after(TIMEOUT):
        assert await tool.invoke({"n": 20_000}, on_event=events.append) == 20_000
        await anyio.sleep(0.05)  # the last flush from the thread
    progress = progress_of(events)
    assert progress[-1] == 20_000
    assert progress == sorted(progress)
    assert len(events) < 20_000  # bursts from the thread were coalesced
    assert [log.message for log in logs_of(events)] == ["spun"]


async def test_no_listener_no_events_and_nothing_fails() -> None:
    context = ToolCallContext("c", "t")
    assert not context.wants_events
    context.report_progress(1, 2)  # nobody listens: nothing happens
    context.log("debug", "quiet")
    with pytest.raises(ValueError, match="log level"):
        context.log("verbose", "no such level")  # type: ignore[arg-type]


async def test_frame_events_reach_the_caller_through_host_and_namespace() -> None:
    frame = AssistantFrameProvider(reporting_registry())
    async with serve_frame(frame) as host:
        parent = ModelContextRegistry()
        parent.add_provider(host, namespace="f")
        events: list[ToolEvent] = []
        with anyio.fail_after(TIMEOUT):
            result = await parent.get_model_context().call_tool(
                "f_count", {"n": 5}, on_event=events.append
            )
            assert result == "counted to 5"
            assert_counted(events, 5, events[0].tool_call_id, "f_count")
            direct: list[ToolEvent] = []
            assert await host.call_tool("count", {"n": 2}, on_event=direct.append) == (
                "counted to 2"
            )
            assert_counted(direct, 2, None, "count")
            assert direct[0].tool_call_id.startswith("tool-")  # type: ignore[union-attr]
            # A thread tool's burst across the wire: bounded, latest last.
            spun: list[ToolEvent] = []
            assert await host.call_tool("spin", {"n": 20_000}, on_event=spun.append) == 20_000
            assert progress_of(spun)[-1] == 20_000


async def test_events_cross_a_relay_frame() -> None:
    """caller -> host -> relay frame -> host -> frame: the inner tool's events arrive."""
    inner = AssistantFrameProvider(reporting_registry())
    async with serve_frame(inner) as inner_host:
        relay = ModelContextRegistry()
        relay.add_provider(inner_host, namespace="inner")
        async with serve_frame(AssistantFrameProvider(relay)) as outer_host:
            events: list[ToolEvent] = []
            with anyio.fail_after(TIMEOUT):
                result = await outer_host.call_tool("inner_count", {"n": 4}, on_event=events.append)
            assert result == "counted to 4"
            assert_counted(events, 4, None, "inner_count")


async def test_a_failing_callback_is_logged_and_the_call_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(event: ToolEvent) -> None:
        raise RuntimeError("callback bug")

    async with serve_frame(AssistantFrameProvider(reporting_registry())) as host:
        with caplog.at_level(logging.WARNING), anyio.fail_after(TIMEOUT):
            assert await host.call_tool("count", {"n": 2}, on_event=broken) == "counted to 2"
    assert "tool event callback raised" in caplog.text
    assert "callback bug" in caplog.text


async def test_connection_subscribers_get_every_calls_events() -> None:
    async with serve_frame(AssistantFrameProvider(reporting_registry())) as host:
        seen: list[ToolEvent] = []
        unsubscribe = host.subscribe_tool_events(seen.append)
        with anyio.fail_after(TIMEOUT):
            await host.call_tool("count", {"n": 2})
            assert_counted(seen, 2, None, "count")
            unsubscribe()
            seen.clear()
            await host.call_tool("count", {"n": 2})
        assert seen == []


# -- the wire ----------------------------------------------------------------------------------


async def test_only_a_call_that_asks_gets_event_messages() -> None:
    async with served(reporting_registry()) as end:
        with anyio.fail_after(TIMEOUT):
            result, before = await call_raw(end, "count", {"n": 3})
            assert result["result"] == "counted to 3"
            assert before == []  # like a JS host: nothing it does not know
            await end.send(
                envelope(
                    {
                        "type": "tool-call",
                        "id": "asked",
                        "toolName": "count",
                        "args": {"n": 3},
                        "events": True,
                    }
                )
            )
            messages = []
            while True:
                message = await next_message(end)
                messages.append(message)
                if message["type"] == "tool-result":
                    break
    assert messages[-1] == {"type": "tool-result", "id": "asked", "result": "counted to 3"}
    progress = [m for m in messages if m["type"] == "tool-progress"]
    assert progress[-1] == {
        "type": "tool-progress",
        "id": "asked",
        "progress": 3,
        "total": 3,
        "message": "step 3",
    }
    assert {"type": "tool-log", "id": "asked", "level": "info", "message": "counted"} | {
        "data": {"n": 3}
    } in messages


async def test_the_host_asks_only_when_someone_listens_and_ignores_strays(
    caplog: pytest.LogCaptureFixture,
) -> None:
    context = {"tools": {"t": {"parameters": {"type": "object"}}}}
    async with raw_frame(context) as (host, frame_end):
        events: list[ToolEvent] = []
        async with anyio.create_task_group() as tg:

            async def call(on_event: Any) -> None:
                assert await host.call_tool("t", {}, on_event=on_event) == "ok"

            tg.start_soon(call, None)
            with anyio.fail_after(TIMEOUT):
                plain = await next_message(frame_end, "tool-call")
            assert "events" not in plain
            await frame_end.send(
                envelope({"type": "tool-result", "id": plain["id"], "result": "ok"})
            )

            tg.start_soon(call, events.append)
            with anyio.fail_after(TIMEOUT):
                asked = await next_message(frame_end, "tool-call")
            assert asked["events"] is True
            with caplog.at_level(logging.DEBUG, "assistant_frames.frames"):
                for message in (
                    {"type": "tool-progress", "id": "someone-else", "progress": 1},  # stray
                    {"type": "tool-progress", "id": asked["id"], "progress": "half"},  # malformed
                    {"type": "tool-log", "id": asked["id"], "level": "loud"},  # malformed
                    {"type": "tool-progress", "id": asked["id"], "progress": 0.5, "total": 1},
                    {"type": "tool-log", "id": asked["id"], "level": "error", "data": [1]},
                    {"type": "tool-result", "id": asked["id"], "result": "ok"},
                    {"type": "tool-progress", "id": asked["id"], "progress": 1},  # too late
                ):
                    await frame_end.send(envelope(message))
        assert events == [
            ToolProgress(0.5, 1, None, asked["id"], "t"),
            ToolLog("error", None, [1], asked["id"], "t"),
        ]
        assert "malformed" in caplog.text


# -- across processes --------------------------------------------------------------------------

WORKER = """
import sys
import anyio
from assistant_frames import ModelContextRegistry, ToolCallContext
from assistant_frames.frames import serve_stdio

registry = ModelContextRegistry()

@registry.tool
async def count(n: int, context: ToolCallContext) -> str:
    \"\"\"Count to n, reporting each step.\"\"\"
    for i in range(1, n + 1):
        context.report_progress(i, n, f"step {i}")
        await anyio.sleep(0.001)
    context.log("info", "counted", data={"n": n})
    return f"counted to {n}"

anyio.run(serve_stdio, registry, backend=sys.argv[1])
"""


async def test_progress_from_a_worker_subprocess(tmp_path: Path, anyio_backend: str) -> None:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    async with (
        spawn_worker([sys.executable, str(script), anyio_backend], stderr="capture") as transport,
        AssistantFrameHost(transport, timeout=TIMEOUT, name="worker") as host,
    ):
        parent = ModelContextRegistry()
        parent.add_provider(host, namespace="worker")
        events: list[ToolEvent] = []
        with anyio.fail_after(TIMEOUT):
            await host.wait_for_context(TIMEOUT)
            result = await parent.get_model_context().call_tool(
                "worker_count", {"n": 4}, on_event=events.append
            )
        assert result == "counted to 4"
        assert_counted(events, 4, None, "worker_count")


async def test_progress_over_a_websocket_and_a_reconnecting_host() -> None:
    frame = AssistantFrameProvider(reporting_registry())
    async with websocket_server(frame.serve) as server:
        reconnecting = ReconnectingHost(lambda: connect_websocket(server.url), timeout=TIMEOUT)
        async with reconnecting:
            seen: list[ToolEvent] = []
            reconnecting.subscribe_tool_events(seen.append)
            events: list[ToolEvent] = []
            with anyio.fail_after(TIMEOUT):
                await reconnecting.wait_for_context(TIMEOUT)
                result = await reconnecting.call_tool("count", {"n": 3}, on_event=events.append)
            assert result == "counted to 3"
            assert_counted(events, 3, None, "count")
            assert_counted(seen, 3, None, "count")


# -- MCP ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_mcp_context_server_sends_progress_and_logs(mode: str) -> None:
    """A frame's tool reports; a real mcp.Client's progress_callback hears it."""
    frame = AssistantFrameProvider(reporting_registry())
    async with serve_frame(frame) as host:
        parent = ModelContextRegistry()
        parent.add_provider(host, namespace="frame")
        server = MCPContextServer(parent)
        progress: list[tuple[float, float | None, str | None]] = []
        logs: list[Any] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append((value, total, message))

        async def on_log(params: Any) -> None:
            logs.append((params.level, params.data))

        async with (
            server.running(),
            Client(server.server, mode=mode, logging_callback=on_log, log_level="debug") as client,
        ):
            with anyio.fail_after(TIMEOUT):
                result = await client.call_tool(
                    "frame_count", {"n": 3}, progress_callback=on_progress
                )
                assert not result.is_error
                assert progress
                assert progress[-1] == (3, 3, "step 3")
                assert [p[0] for p in progress] == sorted(p[0] for p in progress)
                # Notifications may be handled just after the response, in legacy mode.
                await wait_until(lambda: bool(logs), TIMEOUT)
                assert logs == [("info", {"message": "counted", "data": {"n": 3}})]
                # Without a progress token (and, on 2026-07-28, no log opt-in) the frame
                # is not asked for events at all.
                progress.clear()
                await client.call_tool("frame_count", {"n": 2})
                assert progress == []
