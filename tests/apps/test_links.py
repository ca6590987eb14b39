"""Links a view asks to open are judged as a browser reads them (WHATWG URL, ``ada-url``).

Each hostile URL below is one a ``urllib`` reading would judge by another host or path
than the one a browser opens. ``tests/browser/test_browser_links.py`` checks the same
table against Chromium's own ``URL``.
"""

from __future__ import annotations

import pytest
from ada_url import URL
from link_cases import ALLOW, HOSTILE

from assistant_frames.apps import LinkPolicy


@pytest.mark.anyio
@pytest.mark.parametrize(("url", "decision", "host"), HOSTILE)
async def test_a_hostile_link_is_judged_by_the_host_a_browser_opens(
    url: str, decision: str, host: str | None
) -> None:
    policy = LinkPolicy(allow=ALLOW)
    assert await policy.decide(url) == decision
    assert policy.allowed(url) is (decision == "allowed")
    resolved = policy.resolve(url)
    if decision == "allowed":
        assert resolved is not None
        assert policy.allowed(resolved)  # what opens is what was judged
    if resolved is not None:
        assert URL(resolved).hostname == host


def test_there_are_at_least_thirty_hostile_urls() -> None:
    assert len(HOSTILE) >= 30


def test_the_resolved_form_is_what_a_browser_opens() -> None:
    policy = LinkPolicy(allow=ALLOW)
    assert policy.resolve("https://WEATHER.example\\a\\..\\b?q=1#f") == (
        "https://weather.example/b?q=1#f"
    )
    assert policy.resolve("javascript:alert(1)") is None
    assert policy.resolve("https://u:p@weather.example/") is None


@pytest.mark.parametrize(
    "entry", ["javascript:", "https://a.example/?q", "https://a.example/#x", "https://u@a.example"]
)
def test_an_allowlist_entry_that_is_no_url_prefix_is_refused(entry: str) -> None:
    with pytest.raises(ValueError, match="not an http"):
        LinkPolicy(allow=[entry])
