"""The pages and page hooks the @assistant-ui/core interop tests share.

``frame-page.js`` (a JS frame) and ``host-page.js`` (a JS host) are bundled per release
by ``conftest.py``; these are the HTML pages around them, the expressions that reach
their test hooks, and the content types the Python side serves them with.
"""

from __future__ import annotations

from typing import Any

from assistant_frames.browser import relay_files

TOKEN = "browser-test-token"
HTML = "text/html; charset=utf-8"
JS = "text/javascript; charset=utf-8"

#: A JS frame (``frame-page.js``), to load in the parent relay's iframe.
FRAME_HTML = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>JS frame</title></head>
<body><script src="/frame-page.js"></script></body></html>
"""
#: The JS frame's test hooks, seen from the parent relay's page.
FRAME = "window.relay.iframe.contentWindow.frameTest"

#: A JS host (``host-page.js``), which embeds the child relay itself.
HOST_HTML = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>JS host</title></head>
<body><script src="/host-page.js"></script></body></html>
"""
#: True once the JS host has its relay and a context with tools.
HOST_READY = (
    "window.hostTest && hostTest.ready() && Object.keys(hostTest.context().tools).length > 0"
)


def frame_files(bundles: dict[str, bytes], **pages: bytes) -> dict[str, tuple[bytes, str]]:
    """The relays, the JS frame's page and bundle, and ``pages`` (``name_html=...`` is
    served as ``/name.html``)."""
    return {
        **relay_files(),
        "/frame-page.js": (bundles["/frame-page.js"], JS),
        "/frame.html": (FRAME_HTML, HTML),
        **_html(pages),
    }


def host_files(bundles: dict[str, bytes], **pages: bytes) -> dict[str, tuple[bytes, str]]:
    """The relays, the JS host's page and bundle, and ``pages`` (as for frame_files)."""
    return {
        **relay_files(),
        "/host-page.js": (bundles["/host-page.js"], JS),
        "/host.html": (HOST_HTML, HTML),
        **_html(pages),
    }


def _html(pages: dict[str, Any]) -> dict[str, tuple[bytes, str]]:
    return {f"/{name.removesuffix('_html')}.html": (page, HTML) for name, page in pages.items()}
