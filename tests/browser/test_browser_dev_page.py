"""The dev page (``DevPage``, ``assistant-frames dev``) in Chromium.

A federation of a ``MODULE:OBJECT`` registry (``shop.py``, loaded as the command line
loads it) and a worker script (``words_worker.py``), both written into ``tmp_path``, is
shown in the shipped page. The test sees both members connected and their tools, lets
the generated form refuse a call with a required field missing, fills the form of a
tool with a nested object and an array parameter and sees the result, watches a call's
progress bar and log while it runs, cancels a running call, reads the model's view, and
checks that a screenshot is not blank. Every wait is bounded.
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
from assistant_frames.cli.loading import load_frame_async
from assistant_frames.dev import DevPage

from browser_support import BrowserPage, ink
from helpers import WORDS_WORKER

pytestmark = pytest.mark.anyio

WAIT = 15.0
VIEWPORT = {"width": 1400, "height": 900}

SHOP = '''
"""A shop: a tool with a nested object and an array, one that reports progress."""

import anyio
from pydantic import BaseModel, Field

from assistant_frames import ModelContextRegistry, ToolCallContext

registry = ModelContextRegistry()
registry.add_instruction("Book stays with the shop tools.")
release = None  # the test's anyio.Event: the progress call waits for it half way


class Place(BaseModel):
    city: str = Field(description="Where to stay")
    nights: int = Field(1, ge=1, le=30)


@registry.tool
def book(place: Place, guests: list[str], breakfast: bool = False) -> str:
    """Book a stay for some guests."""
    extra = " with breakfast" if breakfast else ""
    return f"{place.nights} night(s) in {place.city} for {', '.join(guests)}{extra}"


@registry.tool
async def restock(items: int, context: ToolCallContext) -> str:
    """Restock the shelves, reporting progress."""
    context.report_progress(1, 2, "half way")
    context.log("info", "shelves checked", data={"items": items})
    await release.wait()
    context.report_progress(2, 2, "done")
    return f"restocked {items}"


@registry.tool
async def hang() -> str:
    """Never answer."""
    await anyio.sleep_forever()
    return "never"
'''

# -- the page ------------------------------------------------------------------------------


@asynccontextmanager
async def shop_and_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[DevPage, Any]]:
    """The dev page of a federation of ``shop:registry`` and ``words_worker.py``; and
    the ``shop`` module (its ``release`` event set by the test)."""
    (tmp_path / "shop.py").write_text(textwrap.dedent(SHOP), encoding="utf-8")
    (tmp_path / "words_worker.py").write_text(textwrap.dedent(WORDS_WORKER), encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # MODULE:OBJECT is imported from here, as the CLI does
    monkeypatch.delitem(sys.modules, "shop", raising=False)
    registry = await load_frame_async("shop:registry")
    shop = sys.modules["shop"]
    shop.release = anyio.Event()
    try:
        async with Federation() as federation, DevPage(federation) as page:
            await page.add("shop", registry)
            await page.add("words", [sys.executable, str(tmp_path / "words_worker.py")])
            yield page, shop
    finally:
        sys.modules.pop("shop", None)


async def screenshot(page: BrowserPage) -> bytes:
    data: bytes = await page.browser.call(lambda _c: bytes(page._page.screenshot()))
    return data


async def act(page: BrowserPage, action: str, selector: str, value: str | None = None) -> None:
    """What a person does, through Playwright: ``click`` or ``fill`` ``selector``."""

    def run(_context: Any) -> None:
        locator = page._page.locator(selector)
        if action == "fill":
            locator.fill(value)
        elif action == "check":
            locator.check()
        else:
            locator.click()

    with anyio.fail_after(WAIT + 5):
        await page.browser.call(run)


async def text_of(page: BrowserPage, selector: str) -> str:
    text: str = await page.evaluate(
        "(s) => { const n = document.querySelector(s); return n ? n.textContent : null }",
        selector,
    )
    return text


async def test_the_dev_page_shows_the_federation_and_calls_its_tools(
    page: BrowserPage, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with shop_and_words(tmp_path, monkeypatch) as (dev, shop):
        await page.browser.call(lambda _c: page._page.set_viewport_size(VIEWPORT))
        await page.goto(dev.url)
        # Both members connected, with their tools, instructions and owners.
        await page.wait_for(
            """() => {
                 const s = devPage.snapshot();
                 return s.status === "connected"
                   && s.members.length === 2
                   && s.members.every((m) => m.state === "connected")
                   && s.tools.length === 4;
               }""",
            timeout=WAIT,
        )
        snapshot = await page.evaluate("devPage.snapshot()")
        assert sorted(snapshot["tools"]) == [
            "shop_book",
            "shop_hang",
            "shop_restock",
            "words_count",
        ]
        assert await text_of(page, '.member[data-member="words"] .state') == "connected"
        assert await text_of(page, '.tool[data-tool="words_count"] .owner') == "words"
        merged = await text_of(page, "#merged-instructions pre")
        assert "Book stays" in merged
        assert "Count words" in merged
        assert "1 connection" in await text_of(page, '.member[data-member="shop"]')

        # The form of shop_book: a nested object and an array, checked before sending.
        book = '.tool[data-tool="shop_book"]'
        await act(page, "click", f"{book} > details > summary")
        await act(page, "click", f"{book} .call-button")
        errors = await text_of(page, f"{book} .form-errors")
        assert "city is required" in errors
        assert await page.evaluate("document.querySelectorAll('.call').length") == 0
        place = f'{book} fieldset[data-field="place"]'
        await act(page, "fill", f'{place} [data-field="city"] input', "Oslo")
        await act(page, "fill", f'{place} [data-field="nights"] input', "40")
        guests = f'{book} fieldset[data-field="guests"]'
        await act(page, "click", f"{guests} .add-item")
        await act(page, "fill", f"{guests} li:nth-child(1) input", "Ann")
        await act(page, "click", f"{book} .call-button")
        assert "nights: must be at most 30" in await text_of(page, f"{book} .form-errors")
        await act(page, "fill", f'{place} [data-field="nights"] input', "2")
        await act(page, "click", f"{guests} .add-item")
        await act(page, "fill", f"{guests} li:nth-child(2) input", "Bo")
        await act(page, "click", f"{book} .call-button")
        await page.wait_for(
            f"""() => document.querySelector('{book} .call[data-state="done"] .result')""",
            timeout=WAIT,
        )
        assert await text_of(page, f"{book} .call .result") == "2 night(s) in Oslo for Ann, Bo"

        # The raw JSON mode: the form's value, edited and sent as it is.
        await act(page, "click", f'{book} input[type="radio"][value="json"]')
        raw = await page.evaluate(f"document.querySelector('{book} .raw textarea').value")
        assert '"city": "Oslo"' in raw
        edited = raw.replace("Oslo", "Bergen")
        await act(page, "fill", f"{book} .raw textarea", edited)
        await act(page, "click", f"{book} .call-button")
        await page.wait_for(
            f"() => document.querySelectorAll('{book} .call[data-state=\"done\"]').length === 2",
            timeout=WAIT,
        )
        assert "Bergen" in await text_of(page, f"{book} .call .result")

        # A call that reports progress: the bar and the log show while it runs.
        restock = '.tool[data-tool="shop_restock"]'
        await act(page, "click", f"{restock} > details > summary")
        await act(page, "fill", f'{restock} [data-field="items"] input', "7")
        await act(page, "click", f"{restock} .call-button")
        await page.wait_for(
            f"""() => {{
                 const call = document.querySelector('{restock} .call[data-state="running"]');
                 return call && call.querySelector("progress").value === 1
                   && call.querySelector(".progress-text").textContent.includes("half way")
                   && call.querySelector(".logs").textContent.includes("shelves checked");
               }}""",
            timeout=WAIT,
        )
        progress = await page.evaluate(
            f"(() => {{ const p = document.querySelector('{restock} progress');"
            " return [p.value, p.max]; })()"
        )
        assert progress == [1, 2]
        shop.release.set()
        await page.wait_for(
            f"() => document.querySelector('{restock} .call[data-state=\"done\"] .result')",
            timeout=WAIT,
        )
        assert await text_of(page, f"{restock} .call .result") == "restocked 7"

        # A running call, cancelled from the page.
        hang = '.tool[data-tool="shop_hang"]'
        await act(page, "click", f"{hang} > details > summary")
        await act(page, "click", f"{hang} .call-button")
        await page.wait_for(f"() => document.querySelector('{hang} .call .cancel')")
        await act(page, "click", f"{hang} .call .cancel")
        await page.wait_for(
            f"() => document.querySelector('{hang} .call[data-state=\"cancelled\"]')",
            timeout=WAIT,
        )

        # The model's view: the tools as Anthropic takes them.
        await page.evaluate(
            """() => { const s = document.getElementById("format"); s.value = "anthropic";
                       s.dispatchEvent(new Event("change")); }"""
        )
        exported = await text_of(page, "#export")
        assert '"input_schema"' in exported
        assert '"name": "shop_book"' in exported

        image = await screenshot(page)
        assert ink(image) > 0.02
        assert not [line for line in page.console if line.startswith(("error", "pageerror"))]


async def test_members_joining_and_leaving_are_shown_live(
    page: BrowserPage, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with shop_and_words(tmp_path, monkeypatch) as (dev, _):
        await page.goto(dev.url)
        await page.wait_for(
            "() => devPage.snapshot().members.filter((m) => m.state === 'connected').length === 2",
            timeout=WAIT,
        )
        await dev.remove("words")
        await page.wait_for(
            """() => !document.querySelector('.member[data-member="words"]')
                 && !document.querySelector('.tool[data-tool="words_count"]')
                 && document.getElementById("activity").textContent.includes("words left")""",
            timeout=WAIT,
        )
        crash = tmp_path / "crash.py"
        crash.write_text("import sys\nsys.exit(3)\n", encoding="utf-8")
        await dev.add("crash", [sys.executable, str(crash)])
        await page.wait_for(
            """() => {
                 const m = document.querySelector('.member[data-member="crash"]');
                 return m && m.dataset.state === "reconnecting" && m.querySelector(".error")
                   && document.getElementById("activity").textContent.includes("crash joined");
               }""",
            timeout=WAIT,
        )
