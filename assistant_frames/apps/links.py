"""Which links a view may open (``ui/open-link``): an allowlist, then the user's say.

Only ``http`` and ``https`` URLs are ever opened. One that matches the allowlist is
opened; any other is passed to an async ``confirm`` callback (the host asks the user),
and refused when there is none. ``javascript:``, ``data:``, ``file:``, ``blob:`` and
every other scheme are refused without asking, as is a URL with whitespace or control
characters, or with credentials (``https://docs.example.com@evil.example/`` opens
``evil.example``: a phishing shape).

URLs are read as browsers read them: by the WHATWG URL Standard, with ``ada-url`` (the
parser Node.js uses), not ``urllib``, which differs on backslashes, percent-encoded and
international hosts, dot segments and more. So the host and path a decision judged are
the ones the browser opens; :meth:`LinkPolicy.resolve` gives the URL in that form, and
that form is what a host should open.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ada_url import URL

from .._anyio import call_maybe_async

__all__ = ["LinkDecision", "LinkPolicy"]

LinkDecision = Literal["allowed", "confirmed", "declined", "refused"]
"""``allowed``: on the allowlist; ``confirmed`` / ``declined``: what ``confirm`` said;
``refused``: not an http(s) URL, or off the list with no ``confirm``."""

_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class _Parsed:
    """An http(s) URL as a browser reads it."""

    scheme: str
    host: str  # lower case, IDNA (punycode), percent-decoded: the host that is contacted
    port: int
    path: str  # dot segments resolved, backslashes as slashes
    href: str  # the whole URL, serialized: what opens


# White space (\s is str.isspace's set) and control characters, found in C: a view's
# URL may be megabytes long, and a scan in Python held the event loop for ~0.1 s a MB.
_UNSAFE = re.compile(r"[\s\x00-\x1f\x7f]")


def _parse(url: object) -> _Parsed | None:
    """``url`` as a browser reads it if it is an http(s) URL with a host and no
    credentials, white space or control characters; else ``None``."""
    if not isinstance(url, str) or _UNSAFE.search(url):
        return None
    try:
        parsed = URL(url)
    except ValueError:
        return None
    scheme = parsed.protocol.removesuffix(":")
    if scheme not in _PORTS or not parsed.hostname or parsed.username or parsed.password:
        return None
    port = int(parsed.port) if parsed.port else _PORTS[scheme]
    return _Parsed(scheme, parsed.hostname, port, parsed.pathname or "/", parsed.href)


@dataclass(frozen=True)
class _Entry:
    scheme: str
    host: str  # "*.example.com" for subdomains
    port: int
    path: str

    def matches(self, url: _Parsed) -> bool:
        wild = self.host.startswith("*.")
        host_ok = url.host.endswith(self.host[1:]) if wild else url.host == self.host
        if url.scheme != self.scheme or not host_ok or url.port != self.port:
            return False
        if self.path in ("", "/"):
            return True
        prefix = self.path.rstrip("/") + "/"
        return url.path == self.path.rstrip("/") or url.path.startswith(prefix)


def _entry(text: str) -> _Entry:
    wildcard = isinstance(text, str) and "://*." in text
    parsed = _parse(text.replace("://*.", "://x.", 1) if wildcard else text)
    if parsed is None or "?" in text or "#" in text:
        raise ValueError(f"Link allowlist entry {text!r} is not an http(s) URL prefix")
    host = "*." + parsed.host[2:] if wildcard else parsed.host
    return _Entry(parsed.scheme, host, parsed.port, parsed.path)


@dataclass
class LinkPolicy:
    """What a view may open: ``allow`` entries, else ``confirm(url)``.

    An ``allow`` entry is an http(s) URL prefix: ``"https://docs.example.com"`` matches
    every page of that origin, ``"https://*.example.com"`` its subdomains (not the
    domain itself), ``"https://example.com/help/"`` pages under that path. Scheme,
    host and port must match exactly. ``confirm`` (plain or async) returns whether the
    user agreed to open a link not on the list.
    """

    allow: Sequence[str] = ()
    confirm: Callable[[str], Awaitable[bool] | bool] | None = None
    _entries: tuple[_Entry, ...] = field(init=False, repr=False, default=())

    def __post_init__(self) -> None:
        if isinstance(self.allow, str):
            raise TypeError("allow is a list of URL prefixes, not one string")
        self._entries = tuple(_entry(text) for text in self.allow)

    def resolve(self, url: str) -> str | None:
        """``url`` as a browser will open it (WHATWG-serialized), or ``None`` when it is
        no http(s) URL this policy would ever open. Open this form, not the view's text."""
        parsed = _parse(url)
        return None if parsed is None else parsed.href

    def allowed(self, url: str) -> bool:
        """Whether ``url`` is an http(s) URL on the allowlist (no one is asked)."""
        parsed = _parse(url)
        return parsed is not None and any(entry.matches(parsed) for entry in self._entries)

    async def decide(self, url: str) -> LinkDecision:
        """What to do with a view's ``ui/open-link`` to ``url`` (see :data:`LinkDecision`)."""
        if _parse(url) is None:
            return "refused"
        if self.allowed(url):
            return "allowed"
        if self.confirm is None:
            return "refused"
        return "confirmed" if await call_maybe_async(self.confirm, url) is True else "declined"
