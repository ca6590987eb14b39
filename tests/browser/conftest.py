"""Fixtures for the browser interop tests: real @assistant-ui/core code in headless Chromium.

* ``bundles``: the test pages (``frame-page.js``, ``host-page.js``) bundled with the pinned
  esbuild from ``package-lock.json`` (``npm ci`` first when ``node_modules`` is missing).
* ``browser``: Debian's Chromium (``/usr/bin/chromium``) driven by Playwright's *sync* API on
  one dedicated thread, so the Python side under test runs on asyncio and on trio; tests
  ``await browser.call(fn, ...)`` or use a ``BrowserPage``.

When Chromium, Playwright, node or npm are missing the tests are skipped, loudly (a summary
line at the end of the session), unless ``CI`` or ``ASSISTANT_FRAMES_REQUIRE_BROWSER=1`` is
set: then they fail.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browser_support import (
    CHROMIUM,
    HERE,
    BrowserPage,
    BrowserThread,
    unavailable,
)
from helpers import one_process_at_a_time

PAGE_SOURCES = (
    "frame-page.js",
    "host-page.js",
    "app-view-page.js",
    "app-host-page.js",
    "openai-host-page.js",
)
NPM_TIMEOUT = 300
ESBUILD_TIMEOUT = 60


# -- bundles -----------------------------------------------------------------------------------


def _run(command: list[str], *, timeout: float, what: str) -> None:
    try:
        completed = subprocess.run(
            command, cwd=HERE, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        unavailable(f"{what} timed out after {timeout:g} s")
    except OSError as exc:
        unavailable(f"{what} could not start: {exc}")
    else:
        if completed.returncode != 0:
            tail = (completed.stderr or completed.stdout)[-2000:]
            unavailable(f"{what} exited with {completed.returncode}: {tail}")


@pytest.fixture(scope="session")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """``{"/frame-page.js": ..., "/host-page.js": ...}``: the pages, bundled by esbuild."""
    esbuild = HERE / "node_modules" / ".bin" / "esbuild"
    with one_process_at_a_time(HERE):  # pytest-xdist: one npm ci, not one per worker
        if not esbuild.exists():
            npm = shutil.which("npm")
            if npm is None:
                unavailable("npm is not installed (needed for the pinned @assistant-ui/core)")
            _run([npm, "ci", "--no-audit", "--no-fund"], timeout=NPM_TIMEOUT, what="npm ci")
    if shutil.which("node") is None:
        unavailable("node is not installed (needed by esbuild)")
    out = tmp_path_factory.mktemp("bundles")
    result = {}
    for source in PAGE_SOURCES:
        target = out / source
        _run(
            [
                str(esbuild),
                source,
                "--bundle",
                "--format=iife",
                "--target=es2020",
                "--external:react",  # @assistant-ui/core's React parts are tree-shaken away
                "--log-level=warning",
                f"--outfile={target}",
            ],
            timeout=ESBUILD_TIMEOUT,
            what=f"esbuild {source}",
        )
        bundle = target.read_bytes()
        assert b'require("react")' not in bundle, f"{source}: the bundle still needs react"
        result[f"/{source}"] = bundle
    return result


@pytest.fixture(scope="session")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrowserThread]:
    if not Path(CHROMIUM).exists():
        unavailable(f"{CHROMIUM} is missing (apt-get install -y chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        unavailable("Playwright for Python is not installed (pip install -e '.[test]')")
    thread = BrowserThread(tmp_path_factory.mktemp("chromium-profile"))
    try:
        thread.start()
    except Exception as exc:
        unavailable(f"Chromium did not start: {exc}")
    yield thread
    thread.close()


@pytest.fixture
def page(browser: BrowserThread, request: pytest.FixtureRequest) -> Iterator[BrowserPage]:
    browser_page = BrowserPage(browser)
    yield browser_page
    failed = getattr(request.node, "_browser_failed", False)
    if failed and browser_page.console:
        print("--- browser console ---\n" + "\n".join(browser_page.console))
    browser_page.close()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: Any) -> Any:
    report = yield
    if report.when == "call" and report.failed:
        item._browser_failed = True  # type: ignore[attr-defined]
    return report
