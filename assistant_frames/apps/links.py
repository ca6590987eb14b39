"""Which links a view may open (``ui/open-link``): an allowlist, then the user's say.

Only ``http`` and ``https`` URLs are ever opened. One that matches the allowlist is
opened; any other is passed to an async ``confirm`` callback (the host asks the user),
and refused when there is none. ``javascript:``, ``data:``, ``file:``, ``blob:`` and
every other scheme are refused without asking, as is a URL with whitespace or control
characters (browsers strip some of them, so what is checked would not be what opens).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import SplitResult, urlsplit

from .._anyio import call_maybe_async

__all__ = ["LinkDecision", "LinkPolicy"]

LinkDecision = Literal["allowed", "confirmed", "declined", "refused"]
"""``allowed``: on the allowlist; ``confirmed`` / ``declined``: what ``confirm`` said;
``refused``: not an http(s) URL, or off the list with no ``confirm``."""

_PORTS = {"http": 80, "https": 443}


def _split(url: str) -> SplitResult | None:
    """The URL's parts if it is a well-formed http(s) URL with a host, else ``None``."""
    if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in url):
        return None
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises for a port out of range
    except ValueError:
        return None
    if parts.scheme not in _PORTS or not parts.hostname:
        return None
    return parts


def _port(parts: SplitResult) -> int:
    return parts.port or _PORTS[parts.scheme]


@dataclass(frozen=True)
class _Entry:
    scheme: str
    host: str  # "*.example.com" for subdomains
    port: int
    path: str

    def matches(self, parts: SplitResult) -> bool:
        host = parts.hostname or ""
        wild = self.host.startswith("*.")
        host_ok = host.endswith(self.host[1:]) if wild else host == self.host
        if parts.scheme != self.scheme or not host_ok or _port(parts) != self.port:
            return False
        if self.path in ("", "/"):
            return True
        path, prefix = parts.path or "/", self.path.rstrip("/") + "/"
        return path == self.path.rstrip("/") or path.startswith(prefix)


def _entry(text: str) -> _Entry:
    wildcard = "://*." in text
    parts = _split(text.replace("://*.", "://x.", 1) if wildcard else text)
    if parts is None or parts.query or parts.fragment:
        raise ValueError(f"Link allowlist entry {text!r} is not an http(s) URL prefix")
    host = parts.hostname or ""
    return _Entry(parts.scheme, "*." + host[2:] if wildcard else host, _port(parts), parts.path)


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

    def allowed(self, url: str) -> bool:
        """Whether ``url`` is an http(s) URL on the allowlist (no one is asked)."""
        parts = _split(url)
        return parts is not None and any(entry.matches(parts) for entry in self._entries)

    async def decide(self, url: str) -> LinkDecision:
        """What to do with a view's ``ui/open-link`` to ``url`` (see :data:`LinkDecision`)."""
        if _split(url) is None:
            return "refused"
        if self.allowed(url):
            return "allowed"
        if self.confirm is None:
            return "refused"
        return "confirmed" if await call_maybe_async(self.confirm, url) is True else "declined"
