"""``examples/aui_widget.py`` in Chromium: the window.aui widget it serves works as it says.

The example runs as a real subprocess; the test opens the URL it prints, clicks the
widget's buttons and checks the count it keeps through ``setWidgetState`` (and a tool
call) survives a reload and a restart of the example on the same SQLite file.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream

from browser_support import BrowserPage
from helpers import wait_until

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    """What is tested runs in a process of its own: the test's loop is only its harness,
    so one backend is enough."""
    return "asyncio"


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "aui_widget.py"
WAIT = 10.0


@asynccontextmanager
async def example(state_file: Path) -> AsyncIterator[tuple[str, list[str]]]:
    """The running example: the URL it prints, and its later output lines as they come."""
    process: Process = await anyio.open_process([sys.executable, str(EXAMPLE), str(state_file)])
    assert process.stdout is not None
    assert process.stdin is not None
    lines: list[str] = []
    got_url = anyio.Event()

    async def read() -> None:
        assert process.stdout is not None
        buffer = ""
        async for chunk in TextReceiveStream(process.stdout):
            buffer += chunk
            *done, buffer = buffer.split("\n")
            lines.extend(done)
            if any(line.startswith("Open ") for line in lines):
                got_url.set()

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(read)
            with anyio.fail_after(WAIT):
                await got_url.wait()
            url = next(line for line in lines if line.startswith("Open ")).split()[1]
            yield url, lines
            await process.stdin.send(b"\n")  # Enter stops it
            with anyio.fail_after(WAIT):
                assert await process.wait() == 0
    finally:
        if process.returncode is None:
            process.kill()
            with anyio.CancelScope(shield=True):
                await process.wait()


def _widget(page: BrowserPage) -> Any:
    for frame in page._page.frames:
        if "/widget.html" in frame.url:
            return frame
    raise LookupError("no widget frame yet")


async def widget_text(page: BrowserPage, expected: str) -> str:
    """Wait (bounded) until the widget shows ``expected``."""

    def wait(_context: Any) -> str:
        for _ in range(int(WAIT / 0.05)):
            try:
                frame = _widget(page)
                break
            except LookupError:
                page._page.wait_for_timeout(50)
        frame = _widget(page)
        # Null-safe: the relay reloads the widget when its socket reconnects (a busy
        # machine), and a document being loaded has no #out yet.
        frame.wait_for_function(
            "(text) => document.getElementById('out')?.textContent === text",
            arg=expected,
            timeout=WAIT * 1000,
        )
        return str(frame.evaluate("document.getElementById('out')?.textContent"))

    with anyio.fail_after(2 * WAIT + 5):
        return await page.browser.call(wait)


async def click(page: BrowserPage, button: str) -> None:
    await page.browser.call(lambda _context: _widget(page).click(f"#{button}"))


async def test_the_example_widget_keeps_its_count_across_reloads_and_restarts(
    page: BrowserPage, tmp_path: Path
) -> None:
    state_file = tmp_path / "widgets.sqlite3"
    async with example(state_file) as (url, lines):
        await page.goto(url)
        # The globals, then only the theme change the host sends once the widget is ready.
        assert await widget_text(page, "Count: 0 (dark)") == "Count: 0 (dark)"
        await click(page, "add")
        await widget_text(page, "Count: 1 (dark)")
        await click(page, "double")  # callTool, then setWidgetState with the tool's answer
        await widget_text(page, "Count: 2 (dark)")
        await click(page, "add")
        await widget_text(page, "Count: 3 (dark)")
        await wait_until(lambda: "widget state: {'count': 3}" in lines, timeout=WAIT)
        await page.goto(url.replace("/#", "/?reloaded#"))  # a re-render: a new WidgetHost
        await widget_text(page, "Count: 3 (dark)")

    async with example(state_file) as (url, _lines):  # a restart, the same SQLite file
        await page.goto(url)
        await widget_text(page, "Count: 3 (dark)")
        await click(page, "add")
        await widget_text(page, "Count: 4 (dark)")
    # (The console also has the favicon's 404 and the old page's relay retrying its socket.)
    assert not [line for line in page.console if "pageerror" in line or "widget runtime" in line]
