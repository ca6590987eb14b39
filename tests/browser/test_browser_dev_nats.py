"""The dev page in Chromium, its member a whole NATS bus: frames joining and leaving.

A real ``nats-server`` (``nats_support.NATSServer``); the member "bus" is its URL with no
frame name, which the federation turns into a discovery of every frame on the bus. The
frames are ``NATSFrameProvider`` replicas in this process: "calc" on the bus from the
start, "notes" started while the page is open and stopped again. The shipped page shows
the bus connected with calc's tool, then notes' tool joining the tool list (and the
member's tool count, and the activity log), then leaving it. Every wait is bounded.
asyncio only: ``nats-py`` runs on asyncio.
"""

from __future__ import annotations

import anyio
import pytest

from assistant_frames import Federation
from assistant_frames.dev import DevPage
from assistant_frames.nats import NATSBusTarget, NATSFrameProvider

from browser_support import BrowserPage
from nats_support import NATSServer, greeting_frame, leavable, nats_server

pytestmark = pytest.mark.anyio

__all__ = ["nats_server"]  # a fixture, used by name

#: Bounds every wait. The bus member's discovery round (1 s by default): a frame joins
#: within a round and leaves after 3 silent ones.
WAIT = 15.0
ROUND = 0.25


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def text_of(page: BrowserPage, selector: str) -> str | None:
    text: str | None = await page.evaluate(
        "(s) => { const n = document.querySelector(s); return n ? n.textContent : null }",
        selector,
    )
    return text


async def activity(page: BrowserPage) -> list[str]:
    """The page's activity log, oldest first (the page shows the newest on top)."""
    entries: list[str] = await page.evaluate(
        "Array.from(document.querySelectorAll('#activity li'))"
        ".map((li) => li.lastChild.textContent).reverse()"
    )
    return entries


async def test_the_frames_of_a_bus_member_join_and_leave_the_tool_list(
    page: BrowserPage, nats_server: NATSServer
) -> None:
    url = nats_server.url
    with anyio.fail_after(4 * WAIT):
        async with (
            NATSFrameProvider(greeting_frame("calc"), "calc", nats=url),
            Federation() as federation,
            DevPage(federation) as dev,
        ):
            # No frame name: every frame on the bus.
            await dev.add("bus", NATSBusTarget(url, interval=ROUND))
            await page.goto(dev.url)
            await page.wait_for(
                """() => {
                     const s = devPage.snapshot();
                     return s.status === "connected" && s.members.length === 1
                       && s.members[0].state === "connected" && s.tools.length === 1;
                   }""",
                timeout=WAIT,
            )
            snapshot = await page.evaluate("devPage.snapshot()")
            assert snapshot["members"] == [{"name": "bus", "state": "connected", "error": None}]
            assert snapshot["tools"] == ["bus_calc_hello"]
            bus = '.member[data-member="bus"]'
            assert await text_of(page, f"{bus} .state") == "connected"
            assert await text_of(page, f"{bus} .target") == f"the frames on NATS ({url})"
            assert await text_of(page, f"{bus} .muted") == "1 tool, 1 connection"
            assert await text_of(page, '.tool[data-tool="bus_calc_hello"] .owner') == "bus"

            # A frame that starts serving now joins the page's tool list.
            notes = NATSFrameProvider(greeting_frame("notes"), "notes", nats=url)
            async with leavable(notes) as leave:
                await page.wait_for(
                    """() => document.querySelector('.tool[data-tool="bus_notes_hello"]')""",
                    timeout=WAIT,
                )
                snapshot = await page.evaluate("devPage.snapshot()")
                assert snapshot["tools"] == ["bus_calc_hello", "bus_notes_hello"]
                owner = await text_of(page, '.tool[data-tool="bus_notes_hello"] .owner')
                assert owner == "bus"
                await page.wait_for(
                    f"""() => document.querySelector('{bus} .muted').textContent
                                === "2 tools, 1 connection" """,
                    timeout=WAIT,
                )
                assert (await activity(page))[-1] == "bus: 2 tools"

                # ... and leaves it once it stops serving.
                await leave()
                await page.wait_for(
                    """() => !document.querySelector('.tool[data-tool="bus_notes_hello"]')""",
                    timeout=WAIT,
                )
            snapshot = await page.evaluate("devPage.snapshot()")
            assert snapshot["tools"] == ["bus_calc_hello"]
            assert snapshot["members"] == [{"name": "bus", "state": "connected", "error": None}]
            assert await text_of(page, f"{bus} .muted") == "1 tool, 1 connection"
            assert (await activity(page))[-2:] == ["bus: 2 tools", "bus: 1 tool"]
            assert not [line for line in page.console if line.startswith(("error", "pageerror"))]
