"""Shared by the browser tests and their conftest: Chromium under Playwright on one thread.

Playwright's sync API runs on one dedicated thread (``BrowserThread``); the tests ``await``
work queued to it through ``anyio.to_thread``, so the Python side under test runs on asyncio
and on trio alike.
"""

from __future__ import annotations

import concurrent.futures
import functools
import os
import queue
import struct
import threading
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from anyio.abc import ObjectStream

HERE = Path(__file__).resolve().parent
#: Debian's Chromium (``apt-get install -y chromium``); no browser is ever downloaded.
#: ``ASSISTANT_FRAMES_CHROMIUM`` points elsewhere (e.g. to check the skip/fail paths).
CHROMIUM = os.environ.get("ASSISTANT_FRAMES_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
LAUNCH_TIMEOUT = 30.0
#: Playwright's default timeout for every action and wait, in milliseconds.
PLAYWRIGHT_TIMEOUT_MS = 10_000
#: The longest a test waits for one call to the browser thread.
CALL_TIMEOUT = 30.0


def browser_required() -> bool:
    """In CI (``CI`` set) or with ``ASSISTANT_FRAMES_REQUIRE_BROWSER=1``, never skip."""
    return bool(os.environ.get("CI")) or os.environ.get("ASSISTANT_FRAMES_REQUIRE_BROWSER") == "1"


def unavailable(reason: str) -> None:
    """Skip (loudly) or, in CI or when required, fail: the browser tests cannot run."""
    if browser_required():
        pytest.fail(
            f"browser tests cannot run: {reason} "
            "(CI or ASSISTANT_FRAMES_REQUIRE_BROWSER=1 is set, so this fails instead of skipping)",
            pytrace=False,
        )
    # tests/conftest.py finds this prefix in the skip reports and repeats the reason at the end.
    pytest.skip(f"browser tests skipped: {reason}")


# -- the browser thread ------------------------------------------------------------------------


class BrowserThread:
    """Chromium under Playwright's sync API, owned by one thread; work is queued to it."""

    def __init__(self, user_data_dir: Path) -> None:
        self._user_data_dir = user_data_dir
        self._queue: queue.Queue[Any] = queue.Queue()
        self._started: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._thread = threading.Thread(target=self._main, name="playwright", daemon=True)

    def start(self) -> None:
        self._thread.start()
        self._started.result(timeout=LAUNCH_TIMEOUT + 10)

    def _main(self) -> None:
        try:
            from playwright.sync_api import sync_playwright

            playwright = sync_playwright().start()
        except BaseException as exc:
            self._started.set_exception(exc)
            return
        try:
            context = playwright.chromium.launch_persistent_context(
                str(self._user_data_dir),
                executable_path=CHROMIUM,
                headless=True,
                args=CHROMIUM_FLAGS,
                timeout=LAUNCH_TIMEOUT * 1000,
            )
            context.set_default_timeout(PLAYWRIGHT_TIMEOUT_MS)
        except BaseException as exc:
            playwright.stop()
            self._started.set_exception(exc)
            return
        self._started.set_result(None)
        try:
            while True:
                item = self._queue.get()
                if item is None:
                    break
                fn, args, future = item
                if not future.set_running_or_notify_cancel():
                    continue
                try:
                    future.set_result(fn(context, *args))
                except BaseException as exc:
                    future.set_exception(exc)
        finally:
            try:
                context.close()
            finally:
                playwright.stop()

    def submit(self, fn: Callable[..., Any], *args: Any) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._queue.put((fn, args, future))
        return future

    def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn(context, *args)`` on the browser thread, from a thread with no event loop."""
        return self.submit(fn, *args).result(timeout=CALL_TIMEOUT)

    async def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``await`` ``fn(context, *args)`` run on the browser thread (asyncio or trio)."""
        future = self.submit(fn, *args)
        return await anyio.to_thread.run_sync(
            functools.partial(future.result, timeout=CALL_TIMEOUT), abandon_on_cancel=True
        )

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=30)


class BrowserPage:
    """One Playwright page; every method runs on the browser thread and is awaitable."""

    def __init__(self, browser: BrowserThread) -> None:
        self.browser = browser
        self.console: list[str] = []

        def new_page(context: Any) -> Any:
            page = context.new_page()
            page.on("console", lambda msg: self.console.append(f"{msg.type}: {msg.text}"))
            page.on("pageerror", lambda error: self.console.append(f"pageerror: {error}"))
            return page

        self._page = browser.run(new_page)

    async def goto(self, url: str) -> None:
        await self.browser.call(lambda _context: self._page.goto(url, wait_until="load"))

    async def evaluate(self, expression: str, arg: Any = None) -> Any:
        return await self.browser.call(lambda _context: self._page.evaluate(expression, arg))

    async def wait_for(self, expression: str, arg: Any = None, timeout: float = 10.0) -> Any:
        """Wait (bounded) until ``expression`` is truthy in the page; return its value."""

        def wait(_context: Any) -> Any:
            handle = self._page.wait_for_function(expression, arg=arg, timeout=timeout * 1000)
            return handle.json_value()

        return await self.browser.call(wait)

    async def wait_in_frame(self, url_prefix: str, expression: str, timeout: float = 15.0) -> Any:
        """Wait (bounded) until ``expression`` is truthy in the first frame whose URL
        starts with ``url_prefix``; its value. Polled with ``evaluate``: a view's CSP
        forbids the string evaluation ``wait_for_function`` needs."""

        def wait(_context: Any) -> Any:
            value: Any = None
            for _ in range(int(timeout / 0.05)):
                frames = [f for f in self._page.frames if f.url.startswith(url_prefix)]
                try:
                    value = frames[0].evaluate(expression) if frames else None
                except Exception as exc:  # mid-navigation
                    value = exc
                if value and not isinstance(value, Exception):
                    return value
                self._page.wait_for_timeout(50)
            raise TimeoutError(f"{expression!r} still {value!r} in {url_prefix}")

        with anyio.fail_after(timeout + 10):
            return await self.browser.call(wait)

    def close(self) -> None:
        self.browser.run(lambda _context: self._page.close())


class RecordingTransport(ObjectStream[Any]):
    """Wraps a transport and keeps every message received from the browser in ``log``
    (and every message sent to it in ``sent``, when given)."""

    def __init__(
        self, inner: ObjectStream[Any], log: list[Any], sent: list[Any] | None = None
    ) -> None:
        self._inner = inner
        self.log = log
        self.sent = sent

    async def receive(self) -> Any:
        message = await self._inner.receive()
        self.log.append(message)
        return message

    async def send(self, item: Any) -> None:
        if self.sent is not None:
            self.sent.append(item)
        await self._inner.send(item)

    async def send_eof(self) -> None:
        await self._inner.send_eof()

    async def aclose(self) -> None:
        await self._inner.aclose()


class AuiBundles(dict[str, bytes]):
    """Page bundles for one @assistant-ui/core ``version``; ``documents``: whether that
    release has documents (``documentId``, ``provider-disposed``, ``frameLoaded``)."""

    def __init__(self, bundles: dict[str, bytes], version: str, documents: bool) -> None:
        super().__init__(bundles)
        self.version = version
        self.documents = documents


# -- PNG, decoded without Pillow (to tell a blank screenshot from a drawn one) ------------


def png_rows(data: bytes) -> tuple[int, int, int, list[bytes]]:
    """``(width, height, bytes per pixel, rows)`` of an 8-bit RGB(A), non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    position, compressed = 8, b""
    width = height = depth = color = interlace = 0
    while position < len(data):
        length, kind = struct.unpack(">I4s", data[position : position + 8])
        chunk = data[position + 8 : position + 8 + length]
        position += 12 + length
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            compressed += chunk
    assert (depth, interlace) == (8, 0), (depth, interlace)
    assert color in (2, 6), color  # RGB or RGBA
    bpp = 3 if color == 2 else 4
    raw, stride = zlib.decompress(compressed), width * bpp
    rows, previous, at = [], bytearray(stride), 0
    for _ in range(height):
        kind, line = raw[at], bytearray(raw[at + 1 : at + 1 + stride])
        at += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = previous[x]
            c = previous[x - bpp] if x >= bpp else 0
            if kind == 1:
                line[x] = (line[x] + a) & 255
            elif kind == 2:
                line[x] = (line[x] + b) & 255
            elif kind == 3:
                line[x] = (line[x] + ((a + b) >> 1)) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        previous = line
    return width, height, bpp, rows


def ink(data: bytes) -> float:
    """The share of pixels that differ from the most common colour (0: a blank image)."""
    width, height, bpp, rows = png_rows(data)
    counts: dict[bytes, int] = {}
    for row in rows:
        for x in range(0, width * bpp, bpp):
            pixel = row[x : x + 3]
            counts[pixel] = counts.get(pixel, 0) + 1
    return 1 - max(counts.values()) / (width * height)
