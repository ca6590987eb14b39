"""Links a view asks to open are judged as a browser reads them (WHATWG URL, ``ada-url``).

Each hostile URL below is one a ``urllib`` reading would judge by another host or path
than the one a browser opens. ``tests/browser/test_browser_links.py`` checks the same
table against Chromium's own ``URL``.
"""

from __future__ import annotations

import pytest
from ada_url import URL

from assistant_frames.apps import LinkPolicy

ALLOW = ["https://weather.example", "https://*.cdn.example", "https://docs.example/help/"]

# (url, the decision with ALLOW and no confirm, the host a browser contacts or None)
HOSTILE: list[tuple[str, str, str | None]] = [
    # userinfo and its look-alikes: the host is after the last "@", or the "@" is a path
    ("https://evil.example\\@weather.example/", "refused", "evil.example"),
    ("https://weather.example@evil.example/", "refused", "evil.example"),
    ("https://weather.example:443@evil.example/", "refused", "evil.example"),
    ("https://user:pass@weather.example/", "refused", "weather.example"),
    ("https://@weather.example/", "allowed", "weather.example"),
    ("https://evil.example%5C@weather.example/", "refused", "weather.example"),
    ("https:\\\\evil.example\\weather.example", "refused", "evil.example"),
    ("https:/\\evil.example/", "refused", "evil.example"),
    ("https:evil.example/", "refused", "evil.example"),
    ("https:///evil.example/", "refused", "evil.example"),
    # backslashes are slashes in special schemes
    ("https://weather.example\\..\\evil", "allowed", "weather.example"),
    ("https://weather.example.evil.example\\x", "refused", "weather.example.evil.example"),
    # percent-encoded and odd hosts
    ("https://weather.example%2eevil.example/", "refused", "weather.example.evil.example"),
    ("https://weather%2Eexample/", "allowed", "weather.example"),
    ("https://WEATHER.EXAMPLE/", "allowed", "weather.example"),
    ("https://weather.example./", "refused", "weather.example."),
    ("https://weather.example:443/", "allowed", "weather.example"),
    ("https://weather.example:8443/", "refused", "weather.example"),
    ("https://weather.example:0443/", "allowed", "weather.example"),
    ("http://weather.example/", "refused", "weather.example"),
    ("https://xn--wather-bva.example/", "refused", "xn--wather-bva.example"),
    ("https://wéather.example/", "refused", "xn--wather-bva.example"),
    ("https://\uff57eather.example/", "allowed", "weather.example"),  # fullwidth w: NFKC
    ("https://0x7f.1/", "refused", "127.0.0.1"),
    ("https://2130706433/", "refused", "127.0.0.1"),
    ("https://[::1]/", "refused", "[::1]"),
    # wildcards: subdomains only, and only real ones
    ("https://a.cdn.example/x", "allowed", "a.cdn.example"),
    ("https://cdn.example/x", "refused", "cdn.example"),
    ("https://evilcdn.example/x", "refused", "evilcdn.example"),
    ("https://a.cdn.example.evil.example/", "refused", "a.cdn.example.evil.example"),
    ("https://a.cdn.example%2Fevil.example/", "refused", None),
    # paths: dot segments (plain and percent-encoded) leave the allowed prefix
    ("https://docs.example/help/page", "allowed", "docs.example"),
    ("https://docs.example/help/../admin", "refused", "docs.example"),
    ("https://docs.example/help/%2e%2e/admin", "refused", "docs.example"),
    ("https://docs.example/help/%2E%2E%2Fadmin", "allowed", "docs.example"),
    ("https://docs.example/help\\..\\admin", "refused", "docs.example"),
    ("https://docs.example/helpers", "refused", "docs.example"),
    # white space and control characters: never (browsers strip some of them)
    ("https://weather.example/\n", "refused", None),
    ("https://weather\t.example/", "refused", None),
    ("\x00https://weather.example/", "refused", None),
    ("https://weather.example/\u2028", "refused", None),
    # other schemes, and what is no URL
    ("javascript:alert(1)//https://weather.example/", "refused", None),
    ("JAVASCRIPT:alert(1)", "refused", None),
    ("data:text/html,<script>alert(1)</script>", "refused", None),
    ("blob:https://weather.example/uuid", "refused", None),
    ("file:///etc/passwd", "refused", None),
    ("//weather.example/", "refused", None),
    ("weather.example", "refused", None),
    ("https://", "refused", None),
    ("https://weather.example:99999/", "refused", None),
]


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
