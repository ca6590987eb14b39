"""The dev page (``DevPage``) in Chromium: a federation of every kind of remote member,
and a frame killed and started again.

- A worker script (``words_worker.py`` in ``tmp_path``), a frame over ``ws://`` (a
  registry served with ``websocket_server`` on 127.0.0.1 by the test), the npm MCP
  server ``@modelcontextprotocol/server-everything`` over stdio (pinned in
  ``tests/mcp_peers``) and a UI tool (``examples/weather_app.py``, an MCP server over
  stdio), federated and shown in the shipped page: all four connected with their tools;
  one tool of each called from its generated form, with its result; the MCP server's
  long-running operation shows its progress (3 / 3); the UI tool's view renders beside
  its result, from another origin; the screenshot is not blank.
- A ``ws://`` frame served by a separate process, killed (SIGKILL): the page shows the
  member reconnecting with the reason and its tools gone; the same frame started again
  on the same port: the page shows it connected again (a second connection), its tools
  back, and a call from the page reaches the new process.
- A worker member (``worker.py`` in ``tmp_path``, with a ``pid`` tool) whose process is
  killed (SIGKILL, by the pid a call from the page returned): the page shows the member
  reconnecting, its tools gone, with the reason (that pid, killed by SIGKILL); the
  federation starts the worker again: the page shows it connected again (a second
  connection), its tools back, the transitions in the activity log, and a call from the
  page returns a new pid, of another worker this process started.

Every wait is bounded (``anyio.fail_after``, Playwright's timeouts); the page's state is
awaited with ``wait_for_function``. Chromium or Playwright missing skips these tests
(fails with ``CI`` set), as the other browser tests do; node or the npm server missing
skips the federation test (fails in CI), as the MCP peer tests do.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from anyio.abc import Process
from npm_peers import PEERS_DIR, node_with
from test_browser_dev_page import VIEWPORT, WAIT, act, screenshot, text_of

from assistant_frames import AssistantFrameProvider, Federation, ModelContextRegistry
from assistant_frames.dev import DevPage
from assistant_frames.transports import websocket_server

from browser_support import BrowserPage, ink
from helpers import WORDS_WORKER

pytestmark = pytest.mark.anyio

WEATHER_APP = Path(__file__).resolve().parents[2] / "examples" / "weather_app.py"
EVERYTHING_JS = (
    PEERS_DIR / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
)

#: A frame over ws:// in its own process: ``python live_frame.py PORT GENERATION`` serves
#: on 127.0.0.1:PORT (0: any free port) and prints the port once it listens.
LIVE_FRAME = """
import sys

import anyio

from assistant_frames import AssistantFrameProvider, ModelContextRegistry
from assistant_frames.transports import websocket_server

port, generation = int(sys.argv[1]), sys.argv[2]
registry = ModelContextRegistry()
registry.add_instruction("Ask the live frame which process answers.")


@registry.tool
def whoami() -> str:
    '''Which run of the frame answers.'''
    return f"generation {generation}"


@registry.tool
def shout(text: str) -> str:
    '''Upper-case a text.'''
    return text.upper()


async def main() -> None:
    frame = AssistantFrameProvider(registry)
    async with websocket_server(frame.serve, "127.0.0.1", port) as server:
        print(server.port, flush=True)
        await anyio.sleep_forever()


anyio.run(main)
"""


def calculator() -> ModelContextRegistry:
    registry = ModelContextRegistry()
    registry.add_instruction("Add numbers with the calc tools.")

    @registry.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return registry


@pytest.fixture(scope="session")
def everything() -> list[str]:
    """server-everything over stdio (skips, or fails in CI, without node or the package)."""
    return [node_with((EVERYTHING_JS,)), str(EVERYTHING_JS), "stdio"]


async def one_member_connected(page: BrowserPage, tools: int) -> None:
    """Wait until the page shows its one member connected with ``tools`` tools."""
    await page.wait_for(
        """(tools) => {
             const s = devPage.snapshot();
             return s.members.length === 1 && s.members[0].state === "connected"
               && s.tools.length === tools;
           }""",
        tools,
        timeout=WAIT,
    )


async def call_from_form(page: BrowserPage, tool: str, fields: dict[str, str]) -> str:
    """Open ``tool``, fill its form's ``fields``, call it, and return its result's text
    once the call is done."""
    selector = f'.tool[data-tool="{tool}"]'
    await act(page, "click", f"{selector} > details > summary")
    for field, value in fields.items():
        await act(page, "fill", f'{selector} [data-field="{field}"] input', value)
    await act(page, "click", f"{selector} .call-button")
    await page.wait_for(
        f"""() => document.querySelector('{selector} .call[data-state="done"] .result')
                  || document.querySelector('{selector} .call[data-state="error"]')""",
        timeout=WAIT,
    )
    state = await page.evaluate(
        f"document.querySelector('{selector} .call').getAttribute('data-state')"
    )
    assert state == "done", await text_of(page, f"{selector} .call")
    return await text_of(page, f"{selector} .call .result")


async def test_a_worker_a_websocket_frame_and_an_npm_mcp_server(
    page: BrowserPage, tmp_path: Path, everything: list[str]
) -> None:
    worker = tmp_path / "words_worker.py"
    worker.write_text(textwrap.dedent(WORDS_WORKER), encoding="utf-8")
    frame = AssistantFrameProvider(calculator())
    async with (
        websocket_server(frame.serve, "127.0.0.1", 0) as server,
        Federation() as federation,
        DevPage(federation) as dev,
    ):
        await dev.add("words", [sys.executable, str(worker)])
        await dev.add("calc", server.url)
        await dev.add("every", everything, mcp=True)
        await dev.add("weather", [sys.executable, str(WEATHER_APP)], mcp=True)  # a UI tool
        await page.browser.call(lambda _c: page._page.set_viewport_size(VIEWPORT))
        await page.goto(dev.url)
        # All four connected, each with its tools (server-everything adds
        # simulate-research-query once initialized: wait for it too).
        await page.wait_for(
            """() => {
                 const s = devPage.snapshot();
                 return s.status === "connected"
                   && s.members.length === 4
                   && s.members.every((m) => m.state === "connected")
                   && ["words_count", "calc_add", "every_echo", "every_get-sum",
                       "weather_forecast",
                       "every_trigger-long-running-operation",
                       "every_simulate-research-query"].every((t) => s.tools.includes(t));
               }""",
            timeout=WAIT,
        )
        snapshot = await page.evaluate("devPage.snapshot()")
        owners = {name.partition("_")[0] for name in snapshot["tools"]}
        assert owners == {"words", "calc", "every", "weather"}
        for member, target, tool in [
            ("words", "worker `", "words_count"),
            ("calc", f"ws://127.0.0.1:{server.port}", "calc_add"),
            ("every", "MCP server `", "every_echo"),
        ]:
            item = f'.member[data-member="{member}"]'
            assert await text_of(page, f"{item} .state") == "connected"
            assert target in await text_of(page, f"{item} .target")
            assert await text_of(page, f'.tool[data-tool="{tool}"] .owner') == member
        merged = await text_of(page, "#merged-instructions pre")
        assert "Count words" in merged
        assert "Add numbers" in merged
        assert "Everything Server" in merged

        # One tool of each member, called from its generated form.
        assert await call_from_form(page, "words_count", {"text": "one two three"}) == "3"
        assert await call_from_form(page, "calc_add", {"a": "20", "b": "22"}) == "42"
        assert await call_from_form(page, "every_echo", {"message": "hello"}) == "Echo: hello"

        # The npm server's progress notifications fill the call's progress bar.
        long_run = "every_trigger-long-running-operation"
        result = await call_from_form(page, long_run, {"duration": "0.3", "steps": "3"})
        assert "Long running operation completed" in result
        bar = await page.evaluate(
            """(tool) => {
                 const call = document.querySelector(`.tool[data-tool="${tool}"] .call`);
                 const bar = call.querySelector("progress");
                 return [bar.value, bar.max, call.getAttribute("data-progress"),
                         call.querySelector(".progress-text").textContent];
               }""",
            long_run,
        )
        assert bar[:3] == [3, 3, "3"]
        assert bar[3].startswith("3 / 3")

        # The UI tool's MCP Apps view renders beside its result, from another origin.
        forecast = await call_from_form(page, "weather_forecast", {"city": "Oslo"})
        assert "Oslo" in forecast
        src: str = await page.wait_for(
            "(() => { const v = devPage.snapshot().views[0]; return v && v.src; })()",
            timeout=WAIT,
        )
        assert not src.startswith(dev.origin)
        await page.wait_in_frame(
            src, "document.getElementById('city').textContent === 'Weather in Oslo'", WAIT
        )

        image = await screenshot(page)
        assert ink(image) > 0.02
        assert not [line for line in page.console if line.startswith(("error", "pageerror"))]


# -- a frame killed and started again ------------------------------------------------------


@asynccontextmanager
async def live_frame(
    script: Path, port: int, generation: int
) -> AsyncIterator[tuple[Process, int]]:
    """``script`` serving on ``port`` (0: any) as run ``generation``: the process, once
    it listens, and its port. Killed on leaving, if still running."""
    log = script.with_name(f"live_frame.{generation}.log")
    with log.open("wb") as stderr:
        process = await anyio.open_process(
            [sys.executable, str(script), str(port), str(generation)],
            stdin=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        assert process.stdout is not None
        printed = b""
        with anyio.fail_after(WAIT):
            while b"\n" not in printed:
                try:
                    printed += await process.stdout.receive()
                except anyio.EndOfStream:
                    pytest.fail(f"the frame exited: {log.read_text()}")
        yield process, int(printed.decode().split()[0])
    finally:
        if process.returncode is None:
            process.kill()
        with anyio.fail_after(WAIT), anyio.CancelScope(shield=True):
            await process.wait()
        await process.aclose()


async def test_a_websocket_frame_killed_and_started_again(
    page: BrowserPage, tmp_path: Path
) -> None:
    script = tmp_path / "live_frame.py"
    script.write_text(textwrap.dedent(LIVE_FRAME), encoding="utf-8")
    member = '.member[data-member="live"]'
    async with Federation() as federation, DevPage(federation) as dev:
        async with live_frame(script, 0, 1) as (first, port):
            await dev.add("live", f"ws://127.0.0.1:{port}")
            await page.goto(dev.url)
            await one_member_connected(page, tools=2)
            assert sorted(await page.evaluate("devPage.snapshot().tools")) == [
                "live_shout",
                "live_whoami",
            ]
            assert "1 connection" in await text_of(page, member)
            assert await call_from_form(page, "live_whoami", {}) == "generation 1"

            first.kill()
            with anyio.fail_after(WAIT):
                await first.wait()
        # Killed: the member reconnects, with the reason; its tools are gone.
        await page.wait_for(
            f"""() => {{
                 const m = document.querySelector('{member}');
                 return m && m.dataset.state === "reconnecting" && m.querySelector(".error")
                   && devPage.snapshot().tools.length === 0
                   && !document.querySelector('.tool[data-tool^="live_"]')
                   && document.getElementById("activity").textContent
                        .includes("live: connected \\u2192 reconnecting");
               }}""",
            timeout=WAIT,
        )
        assert await text_of(page, f"{member} .state") == "reconnecting"
        assert await text_of(page, f"{member} .error")
        snapshot = await page.evaluate("devPage.snapshot()")
        assert snapshot["status"] == "connected"  # the page's own WebSocket is still up

        # Started again on the same port: connected again, its tools back, and a call
        # from the page reaches the new process.
        async with live_frame(script, port, 2) as (_, again):
            assert again == port
            await page.wait_for(
                f"""() => {{
                     const m = document.querySelector('{member}');
                     const s = devPage.snapshot();
                     return m && m.dataset.state === "connected" && !m.querySelector(".error")
                       && s.tools.length === 2
                       && m.textContent.includes("2 connections")
                       && document.getElementById("activity").textContent
                            .includes("live: reconnecting \\u2192 connected");
                   }}""",
                timeout=WAIT,
            )
            assert await call_from_form(page, "live_whoami", {}) == "generation 2"
            assert await call_from_form(page, "live_shout", {"text": "back"}) == "BACK"
            assert federation.status("live").connections == 2
        assert not [line for line in page.console if line.startswith(("error", "pageerror"))]


# -- a worker member killed and restarted by the federation --------------------------------

#: A worker that says which process answers: ``pid`` returns its own process id.
PID_WORKER = """
import os

import anyio

from assistant_frames import ModelContextRegistry
from assistant_frames.frames import serve_stdio

registry = ModelContextRegistry()
registry.add_instruction("Ask the pid worker which process answers.")


@registry.tool
def pid() -> int:
    '''The id of the worker process that answers.'''
    return os.getpid()


@registry.tool
def count(text: str) -> int:
    '''Count the words in a text.'''
    return len(text.split())


anyio.run(serve_stdio, registry)
"""

#: Records every rendering of the member ``pids`` in the page (its state, its counts
#: line, its error and how many of its tools the page lists), in ``window.pidsShown``: the
#: federation restarts a worker 0.1 s after it dies, too soon to poll for with certainty.
RECORD_PIDS_MEMBER = """() => {
  window.pidsShown = [];
  const record = () => {
    const m = document.querySelector('.member[data-member="pids"]');
    if (!m) return;
    const error = m.querySelector(".error");
    const shown = {
      state: m.dataset.state,
      counts: m.querySelector(".muted").textContent,
      error: error ? error.textContent : null,
      tools: document.querySelectorAll('.tool[data-tool^="pids_"]').length,
    };
    const last = window.pidsShown[window.pidsShown.length - 1];
    if (!last || JSON.stringify(last) !== JSON.stringify(shown)) window.pidsShown.push(shown);
  };
  new MutationObserver(record).observe(document.body, {
    subtree: true, childList: true, attributes: true, characterData: true,
  });
  record();
  return true;
}"""


def parent_of(pid: int) -> int:
    """The parent process id of ``pid``, from ``/proc`` (Linux)."""
    stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    return int(stat.rpartition(")")[2].split()[1])


async def test_a_worker_member_killed_and_restarted(page: BrowserPage, tmp_path: Path) -> None:
    worker = tmp_path / "worker.py"
    worker.write_text(textwrap.dedent(PID_WORKER), encoding="utf-8")
    member = '.member[data-member="pids"]'
    async with Federation() as federation, DevPage(federation) as dev:
        await dev.add("pids", [sys.executable, str(worker)])
        await page.goto(dev.url)
        await one_member_connected(page, tools=2)
        assert sorted(await page.evaluate("devPage.snapshot().tools")) == ["pids_count", "pids_pid"]
        assert "worker `" in await text_of(page, f"{member} .target")
        assert "1 connection" in await text_of(page, member)
        first = int(await call_from_form(page, "pids_pid", {}))
        # The pid the page shows is a worker this process started.
        assert parent_of(first) == os.getpid()

        await page.wait_for(RECORD_PIDS_MEMBER, timeout=WAIT)
        os.kill(first, signal.SIGKILL)
        # Killed: the member shows reconnecting, with the reason and its tools gone; the
        # federation starts the worker again: connected, a second connection, its tools
        # back.
        await page.wait_for(
            f"""() => {{
                 const m = document.querySelector('{member}');
                 const s = devPage.snapshot();
                 const activity = document.getElementById("activity").textContent;
                 return m && m.dataset.state === "connected" && !m.querySelector(".error")
                   && m.textContent.includes("2 tools, 2 connections")
                   && s.tools.length === 2
                   && window.pidsShown.some((shown) => shown.state === "reconnecting"
                                                       && shown.error)
                   && activity.includes("pids: connected \\u2192 reconnecting")
                   && activity.includes("pids: reconnecting \\u2192 connected");
               }}""",
            timeout=WAIT,
        )
        shown = await page.evaluate("window.pidsShown")
        # What the page showed: connected; reconnecting, its tools gone, with the reason
        # (the worker's pid, killed by SIGKILL); connected again, a second connection (its
        # tools back once the new worker has sent its context). Nothing else between.
        states = [entry["state"] for entry in shown]
        runs = [state for i, state in enumerate(states) if i == 0 or states[i - 1] != state]
        assert runs == ["connected", "reconnecting", "connected"], shown
        reconnecting = [entry for entry in shown if entry["state"] == "reconnecting"]
        assert all(
            entry["tools"] == 0 and entry["counts"] == "0 tools, 1 connection"
            for entry in reconnecting
        ), shown
        assert any(
            f"worker process {first} " in (entry["error"] or "")
            and "killed by SIGKILL" in entry["error"]
            for entry in reconnecting
        ), shown
        assert all(
            entry["counts"].endswith("2 connections") and entry["error"] is None
            for entry in shown[states.index("reconnecting") :]
            if entry["state"] == "connected"
        ), shown
        assert shown[-1] == {
            "state": "connected",
            "counts": "2 tools, 2 connections",
            "error": None,
            "tools": 2,
        }, shown
        activity = await text_of(page, "#activity")
        assert activity.index("pids: reconnecting \u2192 connected") < activity.index(
            "pids: connected \u2192 reconnecting"
        )  # newest first
        # The reason is logged too, though it came after the state changed.
        assert "killed by SIGKILL" in activity, activity
        assert federation.status("pids").connections == 2

        # A call from the page reaches the new worker: another process, started by this one.
        second = int(await call_from_form(page, "pids_pid", {}))
        assert second != first
        assert parent_of(second) == os.getpid()
        assert await call_from_form(page, "pids_count", {"text": "back again"}) == "2"
        assert not [line for line in page.console if line.startswith(("error", "pageerror"))]
