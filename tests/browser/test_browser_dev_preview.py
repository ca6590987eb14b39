"""``assistant-frames apps preview`` in Chromium: the dev page of one MCP server.

The command runs as a person runs it, in a subprocess, on ``examples/weather_app.py`` (an
MCP server over stdio, its ``forecast`` tool with a view):

- the page lists the server's tools under their own names; ``forecast`` called from its
  generated form shows its view beside the result, on the views' origin (another port),
  with the city in it, and the screenshot of the view is not blank;
- ``--call forecast --args JSON``: the page, opened after the call, shows the call as the
  program's and its view without a click (what ``chromium --headless --screenshot URL``
  needs);
- the theme switch turns the page and the view dark (the view is told through
  ``ui/notifications/host-context-changed``, and is not reloaded); with
  ``ASSISTANT_FRAMES_SCREENSHOTS=DIR`` the page is saved there (``apps-preview.png``:
  docs/images has it).

Every wait is bounded; SIGTERM stops the command, which must exit 0 with no traceback.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from test_browser_dev_page import VIEWPORT, WAIT, act, text_of

from browser_support import BrowserPage, ink

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    """What is tested runs in a process of its own: the test's loop is only its harness,
    so one backend is enough."""
    return "asyncio"


ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "weather_app.py"
SCREENSHOTS = os.environ.get("ASSISTANT_FRAMES_SCREENSHOTS")


@asynccontextmanager
async def preview(*options: str) -> AsyncIterator[str]:
    """``assistant-frames apps preview [options] -- python examples/weather_app.py``: the
    printed URL; SIGTERM stops it on the way out, cleanly."""
    python_path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "assistant_frames", "apps", "preview", *options]
    command += ["--", sys.executable, str(EXAMPLE.relative_to(ROOT))]  # as the docs show it
    process = await anyio.open_process(
        command,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": python_path},
        stdin=subprocess.DEVNULL,
    )
    try:
        assert process.stdout is not None
        printed = b""
        with anyio.fail_after(30):
            while b"\n" not in printed:
                printed += await process.stdout.receive()
        url = printed.decode().strip()
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/#token=[\w-]{20,}", url), url
        yield url
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        with anyio.fail_after(15):
            code = await process.wait()
    assert process.stderr is not None
    output = b""
    with anyio.fail_after(5), suppress(anyio.EndOfStream):
        while True:
            output += await process.stderr.receive()
    stderr = output.decode()
    assert code == 0, stderr
    assert "Traceback" not in stderr
    assert "previewing MCP server" in stderr
    assert "SIGTERM: stopping" in stderr


async def open_preview(page: BrowserPage, url: str) -> None:
    await page.browser.call(lambda _c: page._page.set_viewport_size(VIEWPORT))
    await page.goto(url)
    await page.wait_for(
        """() => { const s = devPage.snapshot();
                   return s.members.length === 1 && s.members[0].state === "connected"
                     && s.tools.includes("forecast"); }""",
        timeout=WAIT,
    )


async def in_view(page: BrowserPage, expression: str) -> Any:
    """Wait (bounded) until ``expression`` is truthy in the view's frame (the frame
    whose URL is the view's ``src`` in the page's report); its value."""
    src: str = await page.wait_for(
        "(() => { const v = devPage.snapshot().views[0]; return v && v.src; })()",
        timeout=WAIT,
    )
    return await page.wait_in_frame(src, expression, WAIT)


async def view_screenshot(page: BrowserPage) -> bytes:
    data: bytes = await page.browser.call(
        lambda _c: bytes(page._page.locator(".app-view iframe").screenshot())
    )
    return data


async def test_a_tool_called_from_the_form_shows_its_view(page: BrowserPage) -> None:
    async with preview() as url:
        await open_preview(page, url)
        # Under their own names (refresh is the view's own tool: visibility app).
        assert await page.evaluate("devPage.snapshot().tools") == ["forecast", "refresh"]
        assert await text_of(page, "#title") == "MCP Apps: weather_app"
        card = '.tool[data-tool="forecast"]'
        await act(page, "click", f"{card} > details > summary")
        await act(page, "fill", f'{card} [data-field="city"] input', "Oslo")
        await act(page, "click", f"{card} .call-button")
        await in_view(page, "document.getElementById('city').textContent === 'Weather in Oslo'")
        assert await in_view(page, "document.getElementById('sky').textContent") == "snow"
        view = await page.wait_for(
            """(() => { const v = devPage.snapshot().views[0];
                        return v && v.state === "ready" && v; })()""",
            timeout=WAIT,
        )
        assert not view["src"].startswith(url.split("/#")[0])  # another origin
        calls = await page.evaluate("devPage.snapshot().calls")
        assert [(c["tool"], c["byProgram"]) for c in calls] == [("forecast", False)]
        assert ink(await view_screenshot(page)) > 0.01


async def test_call_shows_the_view_in_a_page_opened_after_it(page: BrowserPage) -> None:
    async with preview("--call", "forecast", "--args", '{"city": "Bergen"}') as url:
        await open_preview(page, url)
        await in_view(page, "document.getElementById('city').textContent === 'Weather in Bergen'")
        call = await page.wait_for(
            """(() => { const c = devPage.snapshot().calls[0];
                        return c && c.state === "done" && c; })()""",
            timeout=WAIT,
        )
        assert (call["tool"], call["byProgram"]) == ("forecast", True)
        assert "called by the program" in await text_of(page, '.call[data-by="program"]')
        assert ink(await view_screenshot(page)) > 0.01


async def test_the_theme_switch_turns_the_page_and_its_view_dark(page: BrowserPage) -> None:
    async with preview("--call", "forecast", "--args", '{"city": "Oslo"}') as url:
        await open_preview(page, url)
        assert await page.evaluate("devPage.snapshot().theme") == "light"
        await in_view(page, "document.getElementById('city').textContent === 'Weather in Oslo'")
        await in_view(page, "(window.__mark = 'kept', true)")  # to see it is not reloaded
        background = "getComputedStyle(document.body).backgroundColor"
        light = await page.evaluate(background)

        await page.browser.call(lambda _c: page._page.select_option("#theme", "dark"))
        await page.wait_for("devPage.snapshot().theme === 'dark'", timeout=WAIT)
        assert await page.evaluate(background) != light
        traffic = await page.wait_for(
            """(() => { const v = devPage.snapshot().views[0];
                        const t = v && v.traffic.join("\\n");
                        return t && t.includes("host-context-changed") && t; })()""",
            timeout=WAIT,
        )
        assert "ui/notifications/host-context-changed" in traffic
        assert await in_view(page, "window.__mark") == "kept"
        picture = await page.browser.call(lambda _c: bytes(page._page.screenshot()))
        assert ink(picture) > 0.05
        if SCREENSHOTS:  # docs/images/apps-preview.png
            await anyio.Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
            await (anyio.Path(SCREENSHOTS) / "apps-preview.png").write_bytes(picture)
