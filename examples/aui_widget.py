"""A ``window.aui`` widget in your browser, hosted from Python on the plan's ``AUI_*`` wire.

Run it and open the URL it prints::

    python examples/aui_widget.py [state.sqlite3]

The page (on ``127.0.0.1``) runs the shipped parent relay; the widget (on ``localhost``:
another origin, sandboxed) loads the shipped ``widget-runtime.js`` with
``data-wire="aui"`` and knows nothing but ``window.aui``. Each page load is a new
``WidgetHost`` for the same widget instance: the count it keeps with ``setWidgetState``
survives a reload, and a restart of this script, in an SQLite file. Enter (or the end of
stdin) stops it.
"""

from __future__ import annotations

import secrets
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import ObjectStream

from assistant_frames.browser import relay_files
from assistant_frames.transports import websocket_server
from assistant_frames.widgets import SQLiteWidgetStateStore, WidgetHost, WidgetManifest

HTML = "text/html; charset=utf-8"

PAGE = b"""<!doctype html>
<html><head><meta charset="utf-8"><title>window.aui widget</title></head>
<body><h1>A window.aui widget, hosted from Python</h1>
<script src="/assistant-frames/parent-relay.js"></script>
<script>
  const config = new URLSearchParams(location.hash.slice(1));
  AssistantFramesRelay.parent({
    url: `ws://${location.host}/widget`, token: config.get("token"),
    app: true, wire: "aui",  // a sandboxed widget on another origin, on the AUI_* wire
    src: `http://localhost:${location.port}/widget.html`,
  });
</script></body></html>
"""

# Written against window.aui only, as the plan's widgets are.
WIDGET = b"""<!doctype html>
<html><head><meta charset="utf-8">
<script src="/assistant-frames/widget-runtime.js" data-wire="aui"></script></head>
<body><p id="out"></p><button id="add">+1</button> <button id="double">Double it (a tool)</button>
<script>
  const count = () => (window.aui.widgetState && window.aui.widgetState.count) || 0;
  const show = () => {
    out.textContent = `${window.aui.toolInput.label}: ${count()} (${window.aui.theme})`;
  };
  window.addEventListener("aui:set_globals", show);
  add.onclick = () => window.aui.setWidgetState({ count: count() + 1 });
  double.onclick = async () => {
    const result = await window.aui.callTool("double", { n: count() });
    await window.aui.setWidgetState({ count: result.structuredContent.n });
  };
  show();
</script></body></html>
"""


def double(name: str, args: dict[str, Any]) -> dict[str, Any]:
    """The widget's one tool (a real host sends it to the widget's MCP server)."""
    n = int(args["n"]) * 2
    return {"content": [{"type": "text", "text": str(n)}], "structuredContent": {"n": n}}


async def main(state_file: Path) -> None:
    store = SQLiteWidgetStateStore(state_file)
    token = secrets.token_urlsafe(16)

    async def host_widget(transport: ObjectStream[Any]) -> None:
        async with WidgetHost(
            transport,
            "example/counter",  # the widget instance: its state is kept under this id
            globals={"theme": "light", "toolInput": {"label": "Count"}},
            manifest=WidgetManifest.from_permissions({"callTools": True}),
            store=store,
            on_call_tool=double,
            on_widget_state=lambda state: print("widget state:", state, flush=True),
        ) as host:
            await host.wait_ready()
            await host.update_globals(theme="dark")  # only this change is sent
            await host.wait_disconnected()  # until the page goes

    files = {**relay_files(), "/": (PAGE, HTML), "/widget.html": (WIDGET, HTML)}
    async with websocket_server(host_widget, token=token, http_files=files) as server:
        print(f"Open http://127.0.0.1:{server.port}/#token={token}", flush=True)
        print(f"Widget state is kept in {state_file}; Enter stops.", flush=True)
        await anyio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True)


if __name__ == "__main__":
    default = Path(tempfile.gettempdir()) / "assistant-frames-aui-widget.sqlite3"
    anyio.run(main, Path(sys.argv[1]) if len(sys.argv) > 1 else default)
