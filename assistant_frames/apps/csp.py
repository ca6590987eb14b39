"""The sandbox of an app view: its Content-Security-Policy header and iframe ``allow``.

A view's ``ui://`` resource declares the origins it needs in ``_meta.ui.csp`` (a
``ResourceCsp``) and the browser features it asks for in ``_meta.ui.permissions`` (a
``ResourcePermissions``). The host builds the CSP from the declared domains only: the
MCP Apps spec (2026-01-26) says a host "MUST NOT allow undeclared domains", and gives the
restrictive policy to use when a resource declares no ``csp`` at all (:data:`DEFAULT_CSP`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from mcp.server.apps import ResourceCsp, ResourcePermissions

from ..registry.ui import csp_sources

__all__ = ["DEFAULT_CSP", "CspError", "allow_attribute", "build_csp"]

#: The spec's restrictive default, for a resource without ``_meta.ui.csp``, exactly.
DEFAULT_CSP: Final = (
    "default-src 'none'; "
    "script-src 'self' 'unsafe-inline'; "
    "style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; "
    "media-src 'self' data:; "
    "connect-src 'none'"
)


class CspError(ValueError):
    """A declared CSP domain is not a host source (it could widen or break the policy)."""


def _sources(field: str, domains: Sequence[str] | None) -> list[str]:
    try:
        return csp_sources(field, domains)
    except ValueError as exc:
        raise CspError(str(exc)) from None


def build_csp(csp: ResourceCsp | None) -> str:
    """The ``Content-Security-Policy`` header value for a view declaring ``csp``.

    ``None`` (no ``_meta.ui.csp``) gives :data:`DEFAULT_CSP`. Declared domains are added
    to the default's directives as the spec maps them: ``resourceDomains`` to
    ``script-src``, ``style-src``, ``img-src``, ``font-src`` and ``media-src``;
    ``connectDomains`` to ``connect-src``; ``frameDomains`` to ``frame-src`` (else
    ``'none'``); ``baseUriDomains`` to ``base-uri`` (else ``'self'``). Raises
    :class:`CspError` for an entry that is not a host source (``"*"``, ``"'unsafe-eval'"``,
    ``"a.com; script-src *"``...).
    """
    if csp is None:
        return DEFAULT_CSP
    resources = _sources("resourceDomains", csp.resource_domains)
    connect = _sources("connectDomains", csp.connect_domains)
    frames = _sources("frameDomains", csp.frame_domains)
    bases = _sources("baseUriDomains", csp.base_uri_domains)
    directives = [
        ["default-src", "'none'"],
        ["script-src", "'self'", "'unsafe-inline'", *resources],
        ["style-src", "'self'", "'unsafe-inline'", *resources],
        ["img-src", "'self'", "data:", *resources],
        ["media-src", "'self'", "data:", *resources],
        ["connect-src", *(connect or ["'none'"])],
        ["frame-src", *(frames or ["'none'"])],
        ["base-uri", *(bases or ["'self'"])],
    ]
    if resources:  # fonts fall under default-src 'none' unless domains are declared
        directives.insert(5, ["font-src", "'self'", *resources])
    return "; ".join(" ".join(parts) for parts in directives)


_FEATURES: Final = (
    ("camera", "camera"),
    ("microphone", "microphone"),
    ("geolocation", "geolocation"),
    ("clipboard_write", "clipboard-write"),
)


def allow_attribute(permissions: ResourcePermissions | None) -> str:
    """The iframe ``allow`` attribute (Permissions Policy) for the requested features.

    ``""`` when none are requested: the host grants nothing it was not asked for.
    """
    if permissions is None:
        return ""
    return "; ".join(feature for key, feature in _FEATURES if getattr(permissions, key) is not None)
