"""Take docs/images/dev-page.png: the dev page of a small federation, mid-session.

Run from the repository's root (Chromium at /usr/bin/chromium, or ASSISTANT_FRAMES_CHROMIUM)::

    .venv/bin/python tests/dev/dev_page_screenshot.py [OUTPUT.png]

A registry (``shop:registry``, loaded as ``assistant-frames dev`` loads it) and a worker
script are written into a temporary directory and federated; the page is opened in
headless Chromium, a tool with a nested object is called from its generated form, and a
call that reports progress is left half way, so that the picture shows a result, a
progress bar and a log. Not a test (pytest does not collect it): the test of the page
is tests/browser/test_browser_dev_page.py.
"""

from __future__ import annotations

import os
import sys
import tempfile
import textwrap
from pathlib import Path

import anyio

from assistant_frames import Federation
from assistant_frames.cli.loading import load_frame_async
from assistant_frames.dev import DevPage

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))  # the tests' helpers: the worker they federate too

from helpers import WORDS_WORKER  # noqa: E402

CHROMIUM = os.environ.get("ASSISTANT_FRAMES_CHROMIUM", "/usr/bin/chromium")
WAIT_MS = 15_000

SHOP = '''
"""A shop: a tool with a nested object and an array, one that reports progress."""

import anyio
from pydantic import BaseModel, Field

from assistant_frames import ModelContextRegistry, ToolCallContext, ToolAnnotations

registry = ModelContextRegistry()
registry.add_instruction("Book stays and restock shelves with the shop tools.")


class Place(BaseModel):
    city: str = Field(description="Where to stay")
    nights: int = Field(1, ge=1, le=30)


@registry.tool
def book(place: Place, guests: list[str], breakfast: bool = False) -> str:
    """Book a stay for some guests."""
    extra = " with breakfast" if breakfast else ""
    return f"{place.nights} night(s) in {place.city} for {', '.join(guests)}{extra}"


@registry.tool(annotations=ToolAnnotations(read_only_hint=True))
def prices(city: str) -> dict[str, float]:
    """Nightly prices in a city."""
    return {"single": 80.0, "double": 120.0}


@registry.tool
async def restock(items: int, context: ToolCallContext) -> str:
    """Restock the shelves, reporting progress."""
    for done in range(1, items + 1):
        context.report_progress(done, items * 2, f"shelf {done} of {items * 2}")
        context.log("info", f"shelf {done} restocked")
        await anyio.sleep(0.05)
    await anyio.sleep_forever()  # half way, for the picture
    return "restocked"
'''


async def main(output: Path) -> None:
    from playwright.async_api import async_playwright

    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory)
        (folder / "shop.py").write_text(textwrap.dedent(SHOP), encoding="utf-8")
        (folder / "words_worker.py").write_text(textwrap.dedent(WORDS_WORKER), encoding="utf-8")
        os.chdir(folder)
        registry = await load_frame_async("shop:registry")
        async with Federation() as federation, DevPage(federation) as dev:
            await dev.add("shop", registry)
            # Relative to the folder it runs in: the picture shows no temporary path.
            await dev.add("words", [sys.executable, "words_worker.py"])
            async with async_playwright() as playwright:
                browser = await playwright.chromium.launch(
                    executable_path=CHROMIUM, args=["--headless", "--no-sandbox"]
                )
                page = await browser.new_page(viewport={"width": 1440, "height": 1000})
                page.set_default_timeout(WAIT_MS)
                await page.goto(dev.url)
                await page.wait_for_function(
                    "() => devPage.snapshot().members.every((m) => m.state === 'connected')"
                    " && devPage.snapshot().tools.length === 4"
                )
                book = '.tool[data-tool="shop_book"]'
                await page.click(f"{book} > details > summary")
                await page.fill(f'{book} [data-field="city"] input', "Oslo")
                await page.fill(f'{book} [data-field="nights"] input', "3")
                guests = f'{book} fieldset[data-field="guests"]'
                for index, name in enumerate(["Ann", "Bo"], start=1):
                    await page.click(f"{guests} .add-item")
                    await page.fill(f"{guests} li:nth-child({index}) input", name)
                await page.click(f"{book} .call-button")
                await page.wait_for_selector(f'{book} .call[data-state="done"] .result')
                restock = '.tool[data-tool="shop_restock"]'
                await page.click(f"{restock} > details > summary")
                await page.fill(f'{restock} [data-field="items"] input', "3")
                await page.click(f"{restock} .call-button")
                await page.wait_for_function(
                    f"() => document.querySelector('{restock} .call')"
                    f".getAttribute('data-progress') === '3'"
                )
                await page.click('#instructions details[data-member="shop"] > summary')
                await page.screenshot(path=str(output), full_page=True)
                await browser.close()
    print(f"wrote {output}")


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "images" / "dev-page.png"
    anyio.run(main, target.resolve())
