"""The dev page's MCP Apps views in Chromium.

A federation holds a ``MODULE:OBJECT`` registry (``sky.py``, written into ``tmp_path``)
with a tool whose UI is a ``ui://`` resource. Called from the dev page's generated form,
the tool's view renders beside the result, in an iframe on the views' origin (another
port than the page's), sandboxed; it shows the tool's input and then its result; the
view's JSON-RPC traffic panel lists ``ui/initialize`` and the tool-result notification;
the display-mode buttons move it; closing it tears it down. Every wait is bounded.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from assistant_frames import Federation
from assistant_frames.apps.page import AppPage
from assistant_frames.cli.loading import load_frame_async
from assistant_frames.dev import DevPage

from browser_support import BrowserPage

pytestmark = pytest.mark.anyio

WAIT = 15.0


def app_page(page: DevPage) -> AppPage:
    """The app page inside ``page`` (there is one: the mcp extra is installed)."""
    assert page.views is not None
    return page.views.app_page


VIEWPORT = {"width": 1400, "height": 900}

SKY = '''
"""A tool with an MCP Apps view that shows the call's input, then its result."""

from assistant_frames import ModelContextRegistry, ToolResult

URI = "ui://sky/view"
VIEW = """<!doctype html>
<html><head><meta charset="utf-8"><title>Sky</title></head>
<body>
  <p id="input">no input</p>
  <p id="result">no result</p>
<script>
  let nextId = 1;
  const send = (message) => window.parent.postMessage({ jsonrpc: "2.0", ...message }, "*");
  window.addEventListener("message", (event) => {
    if (event.source !== window.parent) return;
    const message = event.data;
    if (!message || message.jsonrpc !== "2.0") return;
    if (message.id === 1 && !message.method) {
      send({ method: "ui/notifications/initialized" });
    } else if (message.method === "ui/notifications/tool-input") {
      document.getElementById("input").textContent = "input: " + message.params.arguments.city;
    } else if (message.method === "ui/notifications/tool-result") {
      const data = message.params.structuredContent;
      document.getElementById("result").textContent = "result: " + data.city + " is " + data.sky;
    } else if (message.method === "ui/resource-teardown") {
      send({ id: message.id, result: {} });
    } else if (message.id !== undefined && message.method) {
      send({ id: message.id, error: { code: -32601, message: "Method not found" } });
    }
  });
  send({ id: nextId++, method: "ui/initialize", params: {
    protocolVersion: "2026-01-26",
    appInfo: { name: "sky-view", version: "1.0.0" },
    appCapabilities: { availableDisplayModes: ["inline", "fullscreen", "pip"] },
  } });
</script></body></html>
"""

registry = ModelContextRegistry()
registry.add_ui_resource(URI, html=VIEW, title="Sky", prefers_border=True)


@registry.tool(ui=URI)
def show(city: str) -> ToolResult:
    """Show the sky over a city."""
    data = {"city": city, "sky": "blue"}
    return ToolResult(content=f"Blue over {city}.", structured_content=data)
'''


@asynccontextmanager
async def sky_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[DevPage]:
    (tmp_path / "sky.py").write_text(textwrap.dedent(SKY), encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # MODULE:OBJECT is imported from here, as the CLI does
    monkeypatch.delitem(sys.modules, "sky", raising=False)
    registry = await load_frame_async("sky:registry")
    try:
        async with Federation() as federation, DevPage(federation) as page:
            await page.add("sky", registry)
            yield page
    finally:
        sys.modules.pop("sky", None)


async def act(page: BrowserPage, action: str, selector: str, value: str | None = None) -> None:
    """What a person does, through Playwright: ``click`` or ``fill`` ``selector``."""

    def run(_context: Any) -> None:
        locator = page._page.locator(selector)
        if action == "fill":
            locator.fill(value)
        else:
            locator.click()

    with anyio.fail_after(WAIT + 5):
        await page.browser.call(run)


async def in_view(page: BrowserPage, dev: DevPage, expression: str) -> Any:
    """Wait (bounded) until ``expression`` is truthy in the view's frame (the one frame
    on the views' origin); its value."""
    return await page.wait_in_frame(f"{dev.views_origin}/view/", expression, WAIT)


async def snapshot_view(page: BrowserPage, condition: str) -> dict[str, Any]:
    """The page's report on its one view, once ``condition`` (on ``v``) holds."""
    expression = (
        f"(() => {{ const v = devPage.snapshot().views[0]; return v && ({condition}) && v; }})()"
    )
    shown: dict[str, Any] = await page.wait_for(expression, timeout=WAIT)
    return shown


async def test_a_ui_tool_renders_its_view_beside_the_result_with_its_traffic(
    page: BrowserPage, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with sky_page(tmp_path, monkeypatch) as dev:
        await page.browser.call(lambda _c: page._page.set_viewport_size(VIEWPORT))
        await page.goto(dev.url)
        await page.wait_for(
            """() => {
                 const s = devPage.snapshot();
                 return s.status === "connected" && s.tools.includes("sky_show");
               }""",
            timeout=WAIT,
        )
        card = '.tool[data-tool="sky_show"]'
        await act(page, "click", f"{card} > details > summary")
        await act(page, "fill", f'{card} [data-field="city"] input', "Lima")
        await act(page, "click", f"{card} .call-button")
        await page.wait_for(
            f"""() => document.querySelector('{card} .call[data-state="done"] .result')""",
            timeout=WAIT,
        )

        # The view, beside the result, from the views' origin, sandboxed.
        view = await snapshot_view(page, "v.state === 'ready' && v.src")
        assert view["src"].startswith(f"{dev.views_origin}/view/{view['id']}/")
        assert not view["src"].startswith(dev.origin)
        assert view["sandbox"] == "allow-scripts allow-same-origin"
        assert view["relay"] == "iframe"  # the socket open, the view loaded
        beside = await page.evaluate(
            f"""() => {{
                 const row = document.querySelector('{card} .call .call-row');
                 return [...row.children].map((node) => node.className);
               }}"""
        )
        assert beside == ["output", "app-view"]

        # It shows the input, then the result.
        assert await in_view(page, dev, "document.getElementById('input').textContent") == (
            "input: Lima"
        )
        shown = await in_view(
            page,
            dev,
            "(() => { const t = document.getElementById('result').textContent;"
            " return t.startsWith('result:') && t; })()",
        )
        assert shown == "result: Lima is blue"

        # The traffic panel lists ui/initialize and the tool-result notification.
        view = await snapshot_view(
            page, "v.traffic.some((t) => t.includes('ui/notifications/tool-result'))"
        )
        assert "in \u2190 ui/initialize #1" in view["traffic"]
        assert "out \u2192 ui/notifications/tool-result" in view["traffic"]
        assert "out \u2192 ui/notifications/tool-input" in view["traffic"]

        # Display modes, then closing it tears it down (its traffic stays).
        await act(page, "click", f'{card} .app-view button.mode[data-mode="pip"]')
        await snapshot_view(page, "v.displayMode === 'pip'")
        assert await page.evaluate(
            f"document.querySelector('{card} .view-box').classList.contains('pip')"
        )
        await act(page, "click", f'{card} .app-view button.mode[data-mode="inline"]')
        await snapshot_view(page, "v.displayMode === 'inline'")
        await act(page, "click", f"{card} .app-view button.close")
        view = await snapshot_view(page, "v.state === 'closed'")
        assert view["src"] is None
        assert any("out \u2192 ui/resource-teardown" in line for line in view["traffic"])
        with anyio.fail_after(WAIT):
            while app_page(dev).views:  # noqa: ASYNC110 (a dict, no event to wait on)
                await anyio.sleep(0.05)
