"""What the scenario scripts share: result lines, a frame's tools, bounded waits.

Scripts print ``RESULT <name> = <json>`` for each thing they checked; the test compares
those values with what it expects, so a script that returns early or computes the
wrong thing fails even when it exits 0.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream

from assistant_frames import ModelContextRegistry, ToolCallContext, ToolResult, ToolUI

HERE = Path(__file__).resolve().parent
LAUNCH = HERE / "launch.py"
#: The runner this process runs under (set by launch.py; subprocesses inherit it).
RUNNER = os.environ.get("SCENARIO_RUNNER", "")


def report(name: str, value: Any) -> None:
    """One result line for the test to check."""
    assert " = " not in name, name
    print(f"RESULT {name} = {json.dumps(value, sort_keys=True)}", flush=True)


def without_pids(text: str) -> str:
    """``text`` with process ids as ``PID`` (they differ from run to run)."""
    return re.sub(r"\bprocess \d+", "process PID", text)


def failure(error: Any) -> list[Any]:
    """A failed call as ``[kind, message, tool, frame]`` (a ToolCallError's fields, the
    message without the process ids)."""
    return [type(error).__name__, without_pids(error.message), error.tool_name, error.frame]


def launched(script: str, runner: str | None = None, *args: str) -> list[str]:
    """The command that runs ``HERE/script`` under ``runner`` (default: this one's)."""
    return [sys.executable, str(LAUNCH), runner or RUNNER, str(HERE / script), *args]


def calculator(name: str = "calc") -> ModelContextRegistry:
    """A frame's registry: sync tools (run in threads), async ones, progress, a failure."""
    registry = ModelContextRegistry()
    registry.add_instruction(f"{name}: use add for sums.")

    @registry.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @registry.tool
    def count(n: int, context: ToolCallContext) -> int:
        """Count to n, reporting progress from the tool's thread."""
        for done in range(1, n + 1):
            context.report_progress(done, n)
            time.sleep(0.001)
        return n

    @registry.tool
    async def pause(seconds: float, context: ToolCallContext) -> str:
        """Sleep, then report progress from the event loop."""
        await anyio.sleep(seconds)
        context.report_progress(1, 1, "slept")
        context.log("info", "done sleeping")
        return f"slept {seconds}"

    @registry.tool
    def nap(seconds: float) -> str:
        """Block its thread for a while (a sync tool cannot be interrupted)."""
        time.sleep(seconds)
        return "rested"

    @registry.tool
    def pid() -> int:
        """The process serving this frame."""
        return os.getpid()

    @registry.tool
    def fail(why: str) -> str:
        """Always raises."""
        raise ValueError(why)

    return registry


def progress_of(events: list[Any]) -> list[Any]:
    """What a call's events said: ``[last progress, total]`` (progress faster than the
    caller takes it is coalesced, the latest wins, so only the last one is certain),
    whether progress only grew, and the log messages as ``[level, message]``."""
    progress = [
        [event.progress, event.total] for event in events if type(event).__name__ == "ToolProgress"
    ]
    logs = [[event.level, event.message] for event in events if type(event).__name__ == "ToolLog"]
    growing = all(a[0] < b[0] for a, b in itertools.pairwise(progress))
    return [progress[-1] if progress else None, growing, logs]


async def http(
    url: str,
    *,
    method: str = "GET",
    body: Any = None,
    headers: Mapping[str, str] | None = None,
    timeout: float = 10.0,
) -> tuple[int, str]:
    """One HTTP request, from a thread (a client of our own that is no part of what is
    tested); returns the status and the body as text."""

    def request() -> tuple[int, str]:
        data = None if body is None else json.dumps(body).encode()
        sent = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))
        if data is not None:
            sent.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(sent, timeout=timeout) as answer:
                return int(answer.status), answer.read().decode()
        except urllib.error.HTTPError as error:
            return int(error.code), error.read().decode()

    return await anyio.to_thread.run_sync(request)


async def wait_until(check: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    """Poll ``check`` until it holds; fail saying ``what`` after ``timeout`` seconds."""
    with anyio.fail_after(timeout + 1):
        for _ in range(int(timeout / 0.02) + 1):
            if check():
                return
            await anyio.sleep(0.02)
    raise TimeoutError(f"not within {timeout} s: {what}")


CLOCK_HTML = "<!doctype html><p id=now>...</p>"


def clock_app() -> ModelContextRegistry:
    """An MCP app: a tool with a view (ui://clock/view) and an app-only tool."""
    registry = ModelContextRegistry()
    registry.add_ui_resource(
        "ui://clock/view", html=CLOCK_HTML, csp={"connectDomains": ["https://time.example"]}
    )

    @registry.tool(ui="ui://clock/view")
    def clock(city: str) -> ToolResult:
        """Show the time in a city."""
        return ToolResult(
            content=f"Noon in {city}.", structured_content={"city": city, "time": "12:00"}
        )

    @registry.tool(ui=ToolUI("ui://clock/view", visibility=["app"]))
    def refresh(city: str) -> dict[str, str]:
        """The view's refresh button."""
        return {"city": city, "time": "12:01"}

    return registry


async def first_line(process: Process, timeout: float = 20.0) -> str:
    """The first line ``process`` writes on its stdout (a URL it serves, say)."""
    assert process.stdout is not None
    text = ""
    with anyio.fail_after(timeout):
        async for chunk in TextReceiveStream(process.stdout):
            text += chunk
            if "\n" in text:
                return text.split("\n", 1)[0].strip()
    raise RuntimeError(f"the process ended before writing a line: {text!r}")
