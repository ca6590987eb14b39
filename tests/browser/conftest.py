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

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browser_support import (
    CHROMIUM,
    HERE,
    AuiBundles,
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
#: The @assistant-ui/core releases the frame and host pages are built against: the
#: newest (``@assistant-ui/core`` in package.json) and the oldest supported (an npm
#: alias), with a string only that release's frame code contains (0.3.35 added
#: provider-disposed; 0.3.20 has none of it).
AUI_NEWEST = "0.3.35"
AUI_RELEASES = {
    AUI_NEWEST: ("@assistant-ui/core", True),
    "0.3.20": ("aui-core-0.3.20", False),
}
AUI_PAGES = ("frame-page.js", "host-page.js")
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
    builds = [(source, source, ()) for source in PAGE_SOURCES]
    for version, (package, _) in AUI_RELEASES.items():
        installed = json.loads((HERE / "node_modules" / package / "package.json").read_text())
        assert installed["version"] == version, f"{package} is {installed['version']}"
        if version != AUI_NEWEST:
            alias = (f"--alias:@assistant-ui/core={package}",)
            builds += [(source, f"aui-{version}/{source}", alias) for source in AUI_PAGES]
    for source, name, options in builds:
        target = out / name
        _run(
            [
                str(esbuild),
                source,
                "--bundle",
                "--format=iife",
                "--target=es2020",
                "--external:react",  # @assistant-ui/core's React parts are tree-shaken away
                "--log-level=warning",
                *options,
                f"--outfile={target}",
            ],
            timeout=ESBUILD_TIMEOUT,
            what=f"esbuild {name}",
        )
        bundle = target.read_bytes()
        assert b'require("react")' not in bundle, f"{name}: the bundle still needs react"
        result[f"/{name}"] = bundle
    return result


@pytest.fixture(params=list(AUI_RELEASES), ids=lambda version: f"aui-{version}")
def aui_bundles(bundles: dict[str, bytes], request: pytest.FixtureRequest) -> AuiBundles:
    """The bundles, with ``/frame-page.js`` and ``/host-page.js`` built against one
    @assistant-ui/core release: each test that takes it runs against every release."""
    version: str = request.param
    chosen = dict(bundles)
    if version != AUI_NEWEST:
        for source in AUI_PAGES:
            chosen[f"/{source}"] = bundles[f"/aui-{version}/{source}"]
    documents = AUI_RELEASES[version][1]
    for source in AUI_PAGES:  # the alias really swapped the frame code
        assert (b"provider-disposed" in chosen[f"/{source}"]) is documents, (version, source)
    return AuiBundles(chosen, version, documents)


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
