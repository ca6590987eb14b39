"""Frames inside a FastAPI application: a Federation in the lifespan, tools behind routes.

- The lifespan opens a ``Federation`` with one member, a calculator served in this
  process (any ``connect()`` target would do: a ``ws://`` URL, a worker, an MCP server).
- ``/frames/{name}`` is a ``frame_endpoint``: a frame that dials in (a browser page
  running the parent relay, served by ``/assistant-frames/parent-relay.js``; a process
  behind a firewall) joins the federation as ``<name>_<tool>`` while it is connected.
- ``GET /tools`` lists the federation's tools; ``POST /tools/{name}`` calls one with the
  JSON body as its arguments.

``python examples/fastapi_app.py`` runs a short demonstration on a free port of
127.0.0.1 (a Python frame dials in, HTTP requests call both members' tools) and exits;
``python examples/fastapi_app.py --serve 8000`` serves until Ctrl-C. Needs
``pip install 'assistant-frames[asgi,websockets]' fastapi uvicorn``.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import uvicorn
from fastapi import FastAPI, HTTPException

from assistant_frames import (
    AssistantFrameHost,
    AssistantFrameProvider,
    Federation,
    ModelContextRegistry,
    ToolArgumentsError,
    ToolCallError,
    ToolNotFoundError,
)
from assistant_frames.asgi import ASGIAttribute, ASGIWebSocketTransport, frame_endpoint, relay_app
from assistant_frames.transports import connect_websocket

TOKEN = os.environ.get("FRAMES_TOKEN", "change-me")

calculator = ModelContextRegistry()
calculator.add_instruction("Use the calculator for arithmetic.")


@calculator.tool
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    async with Federation() as federation:
        await federation.add("calc", calculator)
        app.state.federation = federation
        yield


app = FastAPI(title="Frames in FastAPI", lifespan=lifespan)


async def host_frame(transport: ASGIWebSocketTransport) -> None:
    """Host a frame that dialled in at /frames/<name> while it stays connected."""
    name = transport.extra(ASGIAttribute.scope)["path_params"]["name"]
    federation: Federation = app.state.federation
    async with AssistantFrameHost(transport, name=name) as host:
        handle = federation.registry.add_provider(host, namespace=name)
        try:
            await host.wait_disconnected()
        finally:
            handle.remove()


app.router.add_websocket_route(
    "/frames/{name}", frame_endpoint(host_frame, token=TOKEN, same_origin=True)
)
app.mount("/assistant-frames", relay_app())


@app.get("/tools")
async def list_tools() -> dict[str, Any]:
    context = app.state.federation.get_model_context()
    return {
        "system": context.system,
        "tools": {name: tool.description or "" for name, tool in context.tools.items()},
    }


@app.post("/tools/{name}")
async def call_tool(name: str, arguments: dict[str, Any]) -> Any:
    try:
        return await app.state.federation.call_tool(name, arguments)
    except ToolNotFoundError as exc:
        raise HTTPException(404, str(exc)) from None
    except ToolArgumentsError as exc:
        raise HTTPException(422, str(exc)) from None
    except ToolCallError as exc:
        raise HTTPException(502, str(exc)) from None


# -- the demonstration -------------------------------------------------------------------------


def request(url: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    with urllib.request.urlopen(urllib.request.Request(url, data, headers), timeout=10) as answer:
        return json.load(answer)


async def tool_joined(federation: Federation, name: str) -> None:
    """Return once the federation has the tool ``name`` (10 s at most)."""
    joined = asyncio.Event()

    def changed() -> None:
        if name in federation.get_model_context().tools:
            joined.set()

    unsubscribe = federation.subscribe(changed)
    try:
        changed()
        async with asyncio.timeout(10):
            await joined.wait()
    finally:
        unsubscribe()


async def demonstrate() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    base = f"127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(10):
            while not server.started:  # noqa: ASYNC110 - uvicorn has no event for it
                await asyncio.sleep(0.01)
        print("serving on", f"http://{base}")
        print(
            "calc_add(2, 3) =",
            await asyncio.to_thread(request, f"http://{base}/tools/calc_add", {"a": 2, "b": 3}),
        )

        notes = ModelContextRegistry()  # a frame that dials in, as a browser page would
        notes.add_tool("count", lambda text: len(text.split()), description="Count words.")
        url = f"ws://{base}/frames/notes?access_token={TOKEN}"
        async with connect_websocket(url) as transport:
            frame = asyncio.create_task(AssistantFrameProvider(notes).serve(transport))
            await tool_joined(app.state.federation, "notes_count")
            listed = await asyncio.to_thread(request, f"http://{base}/tools")
            print("tools:", listed["tools"])
            counted = await asyncio.to_thread(
                request, f"http://{base}/tools/notes_count", {"text": "counted by the frame"}
            )
            print("notes_count =", counted)
            frame.cancel()
    finally:
        server.should_exit = True
        await serving


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        port = int(sys.argv[2]) if len(sys.argv) > 2 else 8000
        uvicorn.run(app, host="127.0.0.1", port=port)
    else:
        asyncio.run(demonstrate())
