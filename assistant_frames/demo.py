"""``assistant-frames demo``: one parent assistant federating three frames.

The parent assistant has a tool of its own and connects a host to each of three
frames, each over another transport:

* ``notes``: a sub-agent in this process, over :func:`~assistant_frames.memory_pair`;
* ``worker``: a worker subprocess (``python -m assistant_frames._demo_worker``), over
  stdio with :func:`~assistant_frames.transports.spawn_worker`;
* ``weather``: a service on a WebSocket server on 127.0.0.1 (a free port), over
  :func:`~assistant_frames.transports.connect_websocket`.

It adds each host to its registry under a namespace, prints the merged context, calls
a tool of each frame, shows a live update (the weather service adds a tool and the
parent's subscriber hears of it without asking), kills the worker with SIGKILL while a
call to it is pending (the call fails at once with :class:`FrameDisconnected`, saying
how the worker died and what it last wrote to stderr) and shows that the other frames
still work. Loopback only; every wait is bounded; it takes about a second.

Run it with ``assistant-frames demo`` or ``python -m assistant_frames demo``; the code
of :func:`run_demo` below is meant to be read too.
"""

from __future__ import annotations

import datetime
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any, TextIO

import anyio
from pydantic import BaseModel

from ._text import format_table
from .errors import AssistantFramesError, FrameDisconnected
from .frames import AssistantFrameHost, AssistantFrameProvider
from .registry import ModelContextRegistry
from .transports import memory_pair

if TYPE_CHECKING:
    from .transports.stdio import WorkerTransport

__all__ = ["run_demo"]

DEMO_TIMEOUT = 30.0  # the whole demo
STEP_TIMEOUT = 5.0  # each wait inside it
CALL_TIMEOUT = 10.0  # each tool call (the hosts' default timeout)
WORKER_MODULE = "assistant_frames._demo_worker"

# -- the parent assistant's own tool and the two in-process frames ---------------------------


def _parent_registry() -> ModelContextRegistry:
    parent = ModelContextRegistry()
    parent.add_instruction("You are the team assistant. Answer briefly.")

    @parent.tool
    def today() -> str:
        """Today's date (ISO 8601)."""
        return datetime.date.today().isoformat()

    return parent


NOTES = [
    "2026-11-20 deploy: the release train moved to Thursdays.",
    "2026-11-21 incident: the cache warmed slowly after the deploy.",
    "2026-11-22 planning: ship the frame protocol before the MCP bridge.",
]


class Note(BaseModel):
    """A team note."""

    date: str
    text: str


def _notes_registry() -> ModelContextRegistry:
    notes = ModelContextRegistry()
    notes.add_instruction("Look things up in the team notes.")

    @notes.tool
    def search(query: str, limit: int = 3) -> list[Note]:
        """Search the team notes.

        Args:
            query: A word to look for.
            limit: Return at most this many notes.
        """
        hits = [note for note in NOTES if query.lower() in note.lower()][:limit]
        return [Note(date=hit[:10], text=hit[11:]) for hit in hits]

    return notes


FORECASTS: dict[str, tuple[str, int, int]] = {  # sky, high, low
    "Oslo": ("snow", 1, -4),
    "Lima": ("overcast", 24, 19),
    "Nairobi": ("sunny", 26, 14),
}
ALERTS = {"Oslo": ["Icy roads until 10:00"], "Lima": [], "Nairobi": []}


class Forecast(BaseModel):
    """Tomorrow's weather in a city."""

    city: str
    sky: str
    high_c: int
    low_c: int


def _weather_registry() -> ModelContextRegistry:
    weather = ModelContextRegistry()
    weather.add_instruction("Weather questions go to the weather service.")

    @weather.tool
    def forecast(city: str) -> Forecast:
        """Tomorrow's forecast for a city.

        Args:
            city: Oslo, Lima or Nairobi.
        """
        if city not in FORECASTS:
            raise ValueError(f"No forecast for {city!r}; try {', '.join(FORECASTS)}")
        sky, high, low = FORECASTS[city]
        return Forecast(city=city, sky=sky, high_c=high, low_c=low)

    return weather


def _alerts(city: str) -> list[str]:
    """Weather alerts in force for a city.

    Args:
        city: Oslo, Lima or Nairobi.
    """
    if city not in ALERTS:
        raise ValueError(f"No alerts for {city!r}; try {', '.join(ALERTS)}")
    return ALERTS[city]


# -- output ------------------------------------------------------------------------------------


class _Output:
    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._sections = 0

    def __call__(self, text: str = "") -> None:
        print(text, file=self._out, flush=True)

    def title(self, text: str) -> None:
        self(text)
        self("=" * len(text))

    def section(self, text: str) -> None:
        self._sections += 1
        heading = f"{self._sections}. {text}"
        self()
        self(heading)
        self("-" * len(heading))

    def call(self, name: str, args: Any, frame: str) -> None:
        self(f"  {name} {_json(args)}")
        self(f"    routed to {frame}")

    def result(self, value: Any) -> None:
        self(f"    result: {_json(value)}")


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


class _ToolWatcher:
    """A subscriber of the parent: records which tools come and go, and when."""

    def __init__(self, parent: ModelContextRegistry) -> None:
        self._parent = parent
        self._tools = set(parent.get_model_context().tools)
        self.added: list[str] = []
        self.removed: list[str] = []
        self.changed_at = 0.0
        self.changed = anyio.Event()
        self.unsubscribe: Callable[[], None] = parent.subscribe(self._on_change)

    def _on_change(self) -> None:  # runs synchronously inside the change
        tools = list(self._parent.get_model_context().tools)
        added = [name for name in tools if name not in self._tools]
        removed = sorted(self._tools.difference(tools))
        self._tools = set(tools)
        if added or removed:
            self.added += added
            self.removed += removed
            self.changed_at = time.perf_counter()
            self.changed.set()


# -- the demo ----------------------------------------------------------------------------------


class _Federation:
    """The parent assistant and its connected frames, as the steps below use them."""

    def __init__(self, say: _Output, parent: ModelContextRegistry) -> None:
        self.say = say
        self.parent = parent
        self.routes: dict[str, str] = {}  # namespace -> where its calls go

    def frame_of(self, tool: str) -> str:
        """The namespace of the frame that owns ``tool`` (the parent's own tools have none)."""
        for namespace in self.routes:
            if tool.startswith(f"{namespace}_"):
                return namespace
        return "parent (its own)"

    async def call(self, name: str, args: dict[str, Any]) -> Any:
        """Call a tool of the merged context, the way a model's tool call would."""
        self.say.call(name, args, self.routes.get(self.frame_of(name), "the parent itself"))
        result = await self.parent.get_model_context().call_tool(name, args)
        self.say.result(result)
        return result


async def run_demo(out: TextIO | None = None) -> None:
    """Run the demo, printing to ``out`` (default: stdout).

    Raises ``RuntimeError`` if something does not behave as the demo shows (it never
    should), and ``TimeoutError`` if a step takes longer than a few seconds.
    """
    from .transports.stdio import spawn_worker
    from .transports.websocket import connect_websocket, websocket_server

    say = _Output(out or sys.stdout)
    started = time.perf_counter()
    notes = _notes_registry()
    weather = _weather_registry()
    federation = _Federation(say, _parent_registry())

    say.title("assistant-frames demo: one parent assistant, three frames")
    say("The parent assistant connects a host to each frame, merges what the frames offer")
    say("into one model context, and routes every tool call to the frame that owns the tool.")

    with anyio.fail_after(DEMO_TIMEOUT):
        async with AsyncExitStack() as stack:
            task_group = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(task_group.cancel_scope.cancel)  # runs last: stops the serve tasks

            # 1. The notes sub-agent runs in this process; memory_pair connects it.
            host_end, frame_end = memory_pair()
            task_group.start_soon(AssistantFrameProvider(notes).serve, frame_end)
            notes_host = await stack.enter_async_context(
                AssistantFrameHost(host_end, name="notes", timeout=CALL_TIMEOUT)
            )

            # 2. The worker is a subprocess speaking newline-delimited JSON on stdin/stdout.
            worker = await stack.enter_async_context(
                spawn_worker(
                    [sys.executable, "-m", WORKER_MODULE], stderr="capture", grace_period=1.0
                )
            )
            worker_host = await stack.enter_async_context(
                AssistantFrameHost(worker, name="worker", timeout=CALL_TIMEOUT)
            )

            # 3. The weather service listens on a free loopback port; the parent dials it.
            server = await stack.enter_async_context(
                websocket_server(AssistantFrameProvider(weather).serve, "127.0.0.1", 0)
            )
            connection = await stack.enter_async_context(
                connect_websocket(server.url, open_timeout=STEP_TIMEOUT)
            )
            weather_host = await stack.enter_async_context(
                AssistantFrameHost(connection, name="weather", timeout=CALL_TIMEOUT)
            )

            say.section("Three frames connect, each over another transport")
            frames = [  # namespace, host, what it is, transport
                ("notes", notes_host, "in-process sub-agent", "memory_pair"),
                ("worker", worker_host, "worker subprocess", f"stdio, pid {worker.pid}"),
                ("weather", weather_host, "WebSocket service", server.url),
            ]
            federation.routes = {  # where each frame's calls go
                "notes": "notes, in this process",
                "worker": f"worker pid {worker.pid}",
                "weather": f"weather at {server.url}",
            }
            rows = [["FRAME", "WHAT IT IS", "TOOLS", "CONNECTED OVER"]]
            for namespace, host, what, transport in frames:
                context = await host.wait_for_context(STEP_TIMEOUT)
                # The frame's tools join the parent's context as <namespace>_<name>.
                federation.parent.add_provider(host, namespace=namespace)
                rows.append([namespace, what, str(len(context.tools)), transport])
            say(format_table(rows))

            await _show_context(federation)
            await _call_each_frame(federation)
            await _live_update(federation, weather)
            await _kill_worker(federation, worker)
            await _others_still_work(federation)

    say()
    say(f"Done in {time.perf_counter() - started:.2f} s; every connection is closed.")


async def _show_context(federation: _Federation) -> None:
    say = federation.say
    say.section("The merged context the model sees")
    context = federation.parent.get_model_context()
    say("Instructions (the parent's, then each frame's):")
    for paragraph in (context.system or "").split("\n\n"):
        say(f"  {paragraph}")
    say()
    rows = [["TOOL", "FRAME", "DESCRIPTION"]]
    for name, tool in context.tools.items():
        summary = (tool.description or "").strip().split("\n")[0]
        rows.append([name, federation.frame_of(name), summary])
    say(format_table(rows))


async def _call_each_frame(federation: _Federation) -> None:
    federation.say.section("Calls, each routed to the frame that owns the tool")
    await federation.call("today", {})
    await federation.call("notes_search", {"query": "planning"})
    await federation.call("worker_fibonacci", {"n": 90})
    await federation.call("weather_forecast", {"city": "Oslo"})


async def _live_update(federation: _Federation, weather: ModelContextRegistry) -> None:
    say = federation.say
    say.section("A live update, pushed without asking")
    watcher = _ToolWatcher(federation.parent)
    try:
        say("  The weather service registers a new tool while everything runs:")
        say('    weather.add_tool("alerts", ...)')
        added_at = time.perf_counter()
        weather.add_tool("alerts", _alerts)
        with anyio.fail_after(STEP_TIMEOUT):
            await watcher.changed.wait()
    finally:
        watcher.unsubscribe()
    delay = _ms(watcher.changed_at - added_at)
    say(f"  The parent's subscriber is called {delay} later; nobody polled:")
    for name in watcher.added:
        say(f"    + {name}  (from {federation.frame_of(name)}, over the WebSocket)")
    if watcher.added != ["weather_alerts"]:
        raise RuntimeError(f"expected weather_alerts to appear, got {watcher.added}")
    count = len(federation.parent.get_model_context().tools)
    say(f"  The model now sees {count} tools. Calling the new one:")
    await federation.call("weather_alerts", {"city": "Oslo"})


async def _kill_worker(federation: _Federation, worker: WorkerTransport) -> None:
    say = federation.say
    say.section("The worker is killed in the middle of a call")
    watcher = _ToolWatcher(federation.parent)
    outcome: list[BaseException | None] = []
    failed_at = 0.0
    slow = "worker_slow_report"
    args = {"seconds": 60}

    async def call_slow() -> None:
        nonlocal failed_at
        try:
            await federation.parent.get_model_context().call_tool(slow, args)
        except (AssistantFramesError, TimeoutError) as exc:
            outcome.append(exc)
        else:
            outcome.append(None)
        failed_at = time.perf_counter()

    try:
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(call_slow)
            with anyio.fail_after(STEP_TIMEOUT):  # until the worker says the call has started
                while "slow_report started" not in worker.stderr_tail():  # noqa: ASYNC110
                    await anyio.sleep(0.01)
            say(f"  {slow} {_json(args)} is running in worker pid {worker.pid}.")
            say(f"  The parent sends SIGKILL to pid {worker.pid} while the call is pending.")
            killed_at = time.perf_counter()
            os.kill(worker.pid, signal.SIGKILL)
        error = outcome[0] if outcome else None
        if not isinstance(error, FrameDisconnected):
            raise RuntimeError(f"expected FrameDisconnected from the killed worker, got {error!r}")
        say(f"  The pending call fails at once, {_ms(failed_at - killed_at)} later, no timeout:")
        first, *rest = str(error).splitlines()
        say(f"    FrameDisconnected: {first}")
        for line in rest:
            say(f"      {line}")
        with anyio.fail_after(STEP_TIMEOUT):
            await watcher.changed.wait()
    finally:
        watcher.unsubscribe()
    say(f"  The parent's subscriber sees the worker's tools go: {', '.join(watcher.removed)}")
    federation.say.call("worker_fibonacci", {"n": 10}, "nobody: the worker is gone")
    try:
        await federation.parent.get_model_context().call_tool("worker_fibonacci", {"n": 10})
    except AssistantFramesError as exc:
        say(f"    error: {type(exc).__name__}: {exc}")
    else:
        raise RuntimeError("worker_fibonacci still answered after the worker was killed")


async def _others_still_work(federation: _Federation) -> None:
    federation.say.section("The other frames still work")
    tools = federation.parent.get_model_context().tools
    federation.say(f"  The model now sees: {', '.join(tools)}")
    await federation.call("notes_search", {"query": "deploy", "limit": 1})
    await federation.call("weather_forecast", {"city": "Lima"})
