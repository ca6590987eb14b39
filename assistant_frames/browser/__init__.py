"""Relays that bridge browser frames and hosts to the WebSocket transport.

The package ships three static files (plain JavaScript, no build step, no
dependencies), under ``assistant_frames/browser/static/``:

* ``parent-relay.js``: a page that embeds a JS frame's iframe bridges it to a Python
  host (``AssistantFramesRelay.parent({url, token, src})``).
* ``child-relay.js`` and ``child-relay.html``: the iframe a JS ``AssistantFrameHost``
  talks to, bridged to a Python frame.

:func:`relay_files` returns them ready for ``websocket_server(..., http_files=...)``,
so one Python server can hand out the relays and accept their WebSockets on the same
origin. See ``docs/browser.md``.
"""

from __future__ import annotations

from importlib import resources

__all__ = ["RELAY_FILES", "relay_files", "relay_source"]

#: The shipped files and their content types.
RELAY_FILES: dict[str, str] = {
    "parent-relay.js": "text/javascript; charset=utf-8",
    "child-relay.js": "text/javascript; charset=utf-8",
    "child-relay.html": "text/html; charset=utf-8",
}


def relay_source(name: str) -> bytes:
    """The content of one shipped relay file, e.g. ``relay_source("parent-relay.js")``."""
    if name not in RELAY_FILES:
        raise KeyError(f"No relay file {name!r}; there are {sorted(RELAY_FILES)}")
    return resources.files(__package__).joinpath("static", name).read_bytes()


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
