"""``nats://`` targets: what :func:`~assistant_frames.connect` and ``Federation`` reach.

``nats://HOST:PORT/NAME`` is the frame ``NAME`` (any of its replicas);
``nats://HOST:PORT`` is every frame on the bus (a :class:`~.discovery.NATSDiscovery`).
``?prefix=acme.frames`` picks a tenant's prefix; credentials in the URL
(``nats://user:password@host:4222``) and ``tls://`` go to ``nats-py`` as they are.
:class:`NATSFrameTarget` is the same as an object, to share one connected client.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit, urlunsplit

from .._text import without_credentials
from .connection import NATSTarget
from .subjects import DEFAULT_PREFIX, check_frame_name, check_prefix

__all__ = ["NATSFrameTarget", "NATSBusTarget", "parse_nats_url", "resolve_nats_target"]

SCHEMES = ("nats://", "tls://")


@dataclass(frozen=True)
class NATSFrameTarget:
    """The frame ``name`` on NATS, as a target (``connect(NATSFrameTarget(...))``)."""

    name: str
    nats: NATSTarget
    prefix: str = DEFAULT_PREFIX
    nats_options: Mapping[str, Any] | None = None
    liveness: float = 3.0

    def __post_init__(self) -> None:
        check_frame_name(self.name)
        check_prefix(self.prefix)

    def __repr__(self) -> str:
        return f"NATSFrameTarget({self.name!r}, nats={_shown(self.nats)}, prefix={self.prefix!r})"


@dataclass(frozen=True)
class NATSBusTarget:
    """Every frame under ``prefix`` on NATS, as a target (discovered)."""

    nats: NATSTarget
    prefix: str = DEFAULT_PREFIX
    nats_options: Mapping[str, Any] | None = None
    interval: float = 1.0

    def __post_init__(self) -> None:
        check_prefix(self.prefix)

    def __repr__(self) -> str:
        return f"NATSBusTarget(nats={_shown(self.nats)}, prefix={self.prefix!r})"


def _urls(target: NATSTarget) -> str | list[str] | None:
    """The server URL(s) of ``target`` without credentials; ``None`` for a client."""
    if isinstance(target, str):
        return without_credentials(target)
    if isinstance(target, Sequence):
        return [without_credentials(url) for url in target]
    return None


def _shown(target: NATSTarget) -> str:
    """``target`` for a repr: the server URLs without credentials, or the client's type."""
    urls = _urls(target)
    return f"<{type(target).__name__}>" if urls is None else repr(urls)


def _servers(target: NATSTarget) -> str:
    """``target`` for a description: the server URLs without credentials, or the client's
    type (a connected client, shared)."""
    urls = _urls(target)
    if urls is None:
        return f"a shared {type(target).__name__}"
    return urls if isinstance(urls, str) else ", ".join(urls)


def parse_nats_url(
    url: str, options: Mapping[str, Any] | None = None
) -> NATSFrameTarget | NATSBusTarget:
    """The target a ``nats://`` (or ``tls://``) URL names; ``ValueError`` if it names none."""
    parts = urlsplit(url)
    # Errors name the URL, never its credentials.
    shown = without_credentials(url)
    if not url.startswith(SCHEMES) or not parts.netloc:
        raise ValueError(f"A NATS target is nats://HOST:PORT[/FRAME][?prefix=P], not {shown!r}")
    query = parse_qs(parts.query)
    unknown = set(query) - {"prefix"}
    if unknown:
        raise ValueError(f"Unknown NATS URL parameter(s) {sorted(unknown)} in {shown!r}")
    prefix = query.get("prefix", [DEFAULT_PREFIX])[-1]
    server = urlunsplit((parts.scheme, parts.netloc, "", "", ""))
    name = parts.path.strip("/")
    if not name:
        return NATSBusTarget(server, prefix, options)
    if "/" in name:
        raise ValueError(f"A NATS URL names one frame (nats://HOST:PORT/FRAME), not {shown!r}")
    return NATSFrameTarget(name, server, prefix, options)


def resolve_nats_target(
    target: str | NATSFrameTarget | NATSBusTarget,
    *,
    mcp: bool | None = None,
    token: str | None = None,
) -> tuple[NATSFrameTarget | NATSBusTarget, str]:
    """A ``nats://`` URL or a NATS target object as the target it names, and its
    description (for :class:`~assistant_frames.FrameTarget`); ``token`` is the NATS token
    of a URL."""
    if mcp:
        raise ValueError(f"A NATS target is a frame, not an MCP server: {target}")
    if isinstance(target, str):
        options = None if token is None else {"token": token}
        resolved = parse_nats_url(target, options)
        shown = without_credentials(target)
    else:
        resolved = target
        shown = _servers(target.nats)
        if target.prefix != DEFAULT_PREFIX:
            shown += f", prefix {target.prefix!r}"
    if isinstance(resolved, NATSFrameTarget):
        return resolved, f"frame {resolved.name!r} on NATS ({shown})"
    return resolved, f"the frames on NATS ({shown})"
