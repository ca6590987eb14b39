"""Chromium reads every hostile link of ``tests/link_cases.py`` as the link policy does.

The policy judges a view's ``ui/open-link`` with ``ada-url``; this checks, URL by URL,
that Chromium's own ``URL`` contacts the same host and opens the same URL, so a link
allowed for one host can never open another.
"""

from __future__ import annotations

from typing import Any

import pytest
from ada_url import URL
from link_cases import ALLOW, HOSTILE

from assistant_frames.apps import LinkPolicy

from browser_support import BrowserPage

pytestmark = pytest.mark.anyio

READ_IN_CHROMIUM = """urls => urls.map(u => {
    try {
        const p = new URL(u);
        return {href: p.href, hostname: p.hostname, username: p.username, password: p.password};
    } catch (e) {
        return null;
    }
})"""


def ada(url: str) -> dict[str, Any] | None:
    try:
        parsed = URL(url)
    except ValueError:
        return None
    return {
        "href": parsed.href,
        "hostname": parsed.hostname,
        "username": parsed.username,
        "password": parsed.password,
    }


async def test_chromium_opens_the_host_the_policy_judged(page: BrowserPage) -> None:
    await page.goto("about:blank")
    urls = [url for url, _, _ in HOSTILE]
    chromium = await page.evaluate(READ_IN_CHROMIUM, urls)
    policy = LinkPolicy(allow=ALLOW)
    compared = 0
    for url, (_, decision, host), seen in zip(urls, HOSTILE, chromium, strict=True):
        if any(ch.isspace() or ord(ch) < 0x20 for ch in url):
            continue  # refused before parsing; Chromium strips some of these itself
        assert ada(url) == seen, url  # the same reading, field by field (or both refuse)
        resolved = policy.resolve(url)
        if resolved is not None:
            assert seen is not None
            assert seen["href"] == resolved, url
            assert seen["hostname"] == host, url
        if decision == "allowed":  # an allowed link opens a host on the list, nothing else
            assert seen is not None
            hostname = seen["hostname"]
            assert hostname in ("weather.example", "docs.example") or hostname.endswith(
                ".cdn.example"
            ), url
        compared += 1
    assert compared >= 30
