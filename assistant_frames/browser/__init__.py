"""Relays that bridge browser frames and hosts to the WebSocket transport.

The package ships static files (plain JavaScript, no build step, no
dependencies), under ``assistant_frames/browser/static/``:

* ``parent-relay.js``: a page that embeds a JS frame's iframe bridges it to a Python
  host (``AssistantFramesRelay.parent({url, token, src})``).
* ``child-relay.js`` and ``child-relay.html``: the iframe a JS ``AssistantFrameHost``
  talks to, bridged to a Python frame.
* ``widget-runtime.js``: ``window.openai`` (ChatGPT's Apps SDK widget API) over MCP Apps
  JSON-RPC, for a widget written for ChatGPT to run in any MCP Apps host (see
  ``docs/widgets.md``).
* ``app-page.html``, ``app-page.js`` and ``app-page.css``: the page that shows MCP Apps
  views for :class:`assistant_frames.apps.AppPage`, with ``view-box.js``: what a page
  does with an MCP Apps view behind ``parent-relay.js`` (its iframe, its failure, its
  display mode), shared with the dev page. :func:`app_page_files` serves them with the
  relays.

:func:`relay_files` returns them ready for ``websocket_server(..., http_files=...)``,
so one Python server can hand out the relays and accept their WebSockets on the same
origin. See ``docs/browser.md``.
"""

from __future__ import annotations

import html
import re
from importlib import resources

__all__ = [
    "APP_PAGE_FILES",
    "RELAY_FILES",
    "app_page_files",
    "inline_script",
    "relay_files",
    "relay_source",
]

#: The shipped files and their content types.
RELAY_FILES: dict[str, str] = {
    "parent-relay.js": "text/javascript; charset=utf-8",
    "child-relay.js": "text/javascript; charset=utf-8",
    "child-relay.html": "text/html; charset=utf-8",
    "widget-runtime.js": "text/javascript; charset=utf-8",
}


#: The app page's files and their content types.
APP_PAGE_FILES: dict[str, str] = {
    "app-page.html": "text/html; charset=utf-8",
    "app-page.js": "text/javascript; charset=utf-8",
    "app-page.css": "text/css; charset=utf-8",
    "view-box.js": "text/javascript; charset=utf-8",
}


def relay_source(name: str) -> bytes:
    """The content of one shipped file, e.g. ``relay_source("parent-relay.js")``."""
    if name not in RELAY_FILES and name not in APP_PAGE_FILES:
        known = sorted({*RELAY_FILES, *APP_PAGE_FILES})
        raise KeyError(f"No relay file {name!r}; there are {known}")
    return resources.files(__package__).joinpath("static", name).read_bytes()


# What would end an inline script early (``</script``) or switch the HTML parser into
# the script's "escaped" state (``<!--``), in any case: neither can occur in JavaScript
# outside strings, comments and regular expressions, where the escaped forms mean the same.
_SCRIPT_ENDS = re.compile(r"</(?=script)|<!--", re.IGNORECASE)


def inline_script(name: str, **attributes: str) -> str:
    """A shipped script as an inline ``<script>`` element, safe to put in any HTML.

    For a resource's HTML that must carry the widget runtime itself (a widget that runs
    in ChatGPT or Claude cannot load it from your server)::

        html = f"<head>{inline_script('widget-runtime.js', data_wire='aui')}</head>..."

    ``attributes`` become the tag's attributes (``data_wire="aui"`` is
    ``data-wire="aui"``), escaped. Pasting :func:`relay_source`'s bytes between script
    tags by hand is not safe in general: a ``</script`` in the source would end the
    element early.
    """
    if not name.endswith(".js"):
        raise ValueError(f"{name!r} is not a script")
    source = relay_source(name).decode("utf-8")
    safe = _SCRIPT_ENDS.sub(lambda match: "<\\/" if match[0] == "</" else "<\\!--", source)
    attrs = "".join(
        f' {key.replace("_", "-")}="{html.escape(value, quote=True)}"'
        for key, value in attributes.items()
    )
    return f"<script{attrs}>{safe}</script>"


def relay_files(prefix: str = "/assistant-frames/") -> dict[str, tuple[bytes, str]]:
    """The relay files as ``{url path: (content, content type)}`` under ``prefix``.

    Pass the result (merged with your own pages, if any) to
    ``websocket_server(..., http_files=...)``::

        relay_files()["/assistant-frames/parent-relay.js"]  # (b"/* ...", "text/javascript; ...")
    """
    if not prefix.startswith("/"):
        raise ValueError(f"prefix must start with '/': {prefix!r}")
    if not prefix.endswith("/"):
        prefix += "/"
    return {f"{prefix}{name}": (relay_source(name), kind) for name, kind in RELAY_FILES.items()}


def app_page_files() -> dict[str, tuple[bytes, str]]:
    """The app page at ``/`` and its script, style and relay under ``/assistant-frames/``,
    for ``websocket_server(..., http_files=...)`` (the page refers to those paths)."""
    files = relay_files()
    for name, kind in APP_PAGE_FILES.items():
        path = "/" if name.endswith(".html") else f"/assistant-frames/{name}"
        files[path] = (relay_source(name), kind)
    return files
