"""Hostile link URLs, judged as a browser reads them: shared by ``tests/apps/test_links.py``
(``LinkPolicy`` with ``ada-url``) and ``tests/browser/test_browser_links.py`` (Chromium's
own ``URL``)."""

from __future__ import annotations

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
