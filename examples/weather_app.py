"""An MCP App served from a registry: a weather tool with an HTML view.

- ``forecast`` is the model's tool; its UI is the ``ui://weather/view`` resource, so an
  MCP Apps host renders the view when the model calls it. It returns the three tiers:
  text for the model, structured content for the model and the view, and ``_meta`` for
  the view alone.
- ``refresh`` is app-only (``visibility=["app"]``): the view's button calls it, a
  model is never offered it.
- The view is one HTML page with inline JavaScript and no dependencies: it speaks the
  MCP Apps protocol (``ui/initialize``, then the tool's result, host context changes and
  teardown) with its host over ``postMessage``.

Serve it over stdio (``python examples/weather_app.py``) for an MCP host, or over
Streamable HTTP (``python examples/weather_app.py --http 8000``). Needs
``pip install 'assistant-frames[mcp]'``.
"""

from __future__ import annotations

import sys

import anyio
from mcp.server.apps import ResourceCsp

from assistant_frames import ModelContextRegistry, ToolResult, ToolUI
from assistant_frames.mcp import MCPContextServer

URI = "ui://weather/view"
SKIES = {"lima": "overcast", "oslo": "snow", "paris": "sunny"}

VIEW = """<!doctype html>
<html><head><meta charset="utf-8"><title>Weather</title>
<style>
  body { font: 15px system-ui, sans-serif; margin: 12px; color: #222; background: #fff; }
  body.dark { color: #eee; background: #222; }
  #sky { font-size: 28px; margin: 4px 0 8px; }
</style></head>
<body>
  <div id="city">Waiting for the forecast...</div>
  <div id="sky"></div>
  <button id="refresh" disabled>Refresh</button>
<script>
  // The MCP Apps protocol over postMessage: JSON-RPC 2.0 with the host (our parent).
  let nextId = 1;
  const pending = new Map();
  const send = (message) => window.parent.postMessage({ jsonrpc: "2.0", ...message }, "*");
  const request = (method, params) => new Promise((resolve, reject) => {
    const id = nextId++;
    pending.set(id, { resolve, reject });
    send({ id, method, params });
  });
  let city = null;
  let shown = 0;
  const show = (result) => {
    const data = result && result.structuredContent;
    if (!data) return;
    city = data.city;
    document.body.dataset.shown = String(++shown);  // how many results, for tests
    document.getElementById("city").textContent = "Weather in " + data.city;
    document.getElementById("sky").textContent = data.sky;
    document.getElementById("refresh").disabled = false;
    const unit = result._meta && result._meta.unit;  // the view's tier: never the model's
    if (unit) document.getElementById("sky").title = "unit: " + unit;
  };
  const theme = (context) => {
    if (context && context.theme) document.body.classList.toggle("dark", context.theme === "dark");
  };
  window.addEventListener("message", (event) => {
    if (event.source !== window.parent) return;
    const message = event.data;
    if (!message || message.jsonrpc !== "2.0") return;
    if (message.id !== undefined && pending.has(message.id) && !message.method) {
      const { resolve, reject } = pending.get(message.id);
      pending.delete(message.id);
      message.error ? reject(message.error) : resolve(message.result);
    } else if (message.method === "ui/notifications/tool-result") {
      show(message.params);
    } else if (message.method === "ui/notifications/host-context-changed") {
      theme(message.params);
    } else if (message.method === "ui/resource-teardown") {
      send({ id: message.id, result: {} });
    } else if (message.id !== undefined && message.method) {
      send({ id: message.id, error: { code: -32601, message: "Method not found" } });
    }
  });
  document.getElementById("refresh").addEventListener("click", async () => {
    show(await request("tools/call", { name: "refresh", arguments: { city } }));
  });
  request("ui/initialize", {
    protocolVersion: "2026-01-26",
    appInfo: { name: "weather-view", version: "1.0.0" },
    appCapabilities: { availableDisplayModes: ["inline"] },
  }).then((result) => {
    theme(result.hostContext);
    send({ method: "ui/notifications/initialized" });
  });
</script></body></html>
"""

registry = ModelContextRegistry()
registry.add_instruction("Use forecast to show the weather of a city.")
registry.add_ui_resource(
    URI,
    html=VIEW,
    title="Weather",
    csp=ResourceCsp(connect_domains=[]),  # no network: everything is inline
    prefers_border=True,
)


def _report(city: str) -> ToolResult:
    sky = SKIES.get(city.lower(), "clear")
    return ToolResult(
        content=f"The sky over {city} is {sky}.",
        structured_content={"city": city, "sky": sky},
        meta={"unit": "C"},
    )


@registry.tool(ui=URI)
def forecast(city: str) -> ToolResult:
    """Show the weather of a city.

    Args:
        city: The city, e.g. "Paris".
    """
    return _report(city)


@registry.tool(ui=ToolUI(URI, visibility=["app"]))
def refresh(city: str) -> ToolResult:
    """Fetch the weather again, for the view's Refresh button."""
    return _report(city)


server = MCPContextServer(registry, name="weather")


def main(argv: list[str]) -> None:
    if argv[:1] == ["--http"]:
        port = int(argv[1]) if len(argv) > 1 else 8000
        ready = lambda url: print(f"Serving the weather app at {url}", flush=True)  # noqa: E731
        anyio.run(lambda: server.run_http(port=port, ready=ready))
    else:
        anyio.run(server.run_stdio)


if __name__ == "__main__":
    main(sys.argv[1:])
