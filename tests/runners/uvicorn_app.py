"""A FastAPI app that keeps its agent's frames in a Federation, served by uvicorn.

The lifespan serves a frame over WebSockets (websocket_server, on uvicorn's own loop)
and opens a Federation of it and a worker subprocess; the routes call tools through
the federation, which is also an MCP server mounted at ``/agent/mcp``. Run it as users
do::

    python -m uvicorn uvicorn_app:app --app-dir tests/runners --loop uvloop --fd 3
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from common import calculator, failure, launched, progress_of
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from assistant_frames import AssistantFrameProvider, Federation, ToolCallError, connect
from assistant_frames.mcp import MCPContextServer
from assistant_frames.transports import websocket_server

TOKEN = "uvicorn-token"
federation = Federation(initial_delay=0.05, max_attempts=3)
mcp_server = MCPContextServer(federation, name="agent")


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    provider = AssistantFrameProvider(calculator("ws"))
    async with (
        websocket_server(provider.serve, token=TOKEN) as server,
        federation,
        mcp_server.running(),
    ):
        await federation.add("ws", server.url, token=TOKEN)
        await federation.add("worker", launched("worker_frame.py", "asyncio", "worker"))
        app.state.federation = federation
        app.state.ws_url = server.url
        print("lifespan: federation ready", flush=True)
        yield
        print("lifespan: closing the federation", flush=True)
    print("lifespan: closed", flush=True)


app = FastAPI(lifespan=lifespan)
app.mount("/agent", mcp_server.http_app(path="/mcp", token=TOKEN))


def federation_of(request: Request) -> Federation:
    federation: Federation = request.app.state.federation
    return federation


@app.get("/tools")
async def tools(request: Request) -> dict[str, Any]:
    context = federation_of(request).get_model_context()
    return {"system": context.system, "tools": sorted(context.tools)}


@app.get("/status")
async def status(request: Request) -> list[dict[str, Any]]:
    return [
        {"name": s.name, "state": s.state, "connections": s.connections}
        for s in federation_of(request).statuses()
    ]


@app.post("/call/{name}")
async def call(name: str, request: Request) -> JSONResponse:
    args = await request.json()
    events: list[Any] = []
    context = federation_of(request).get_model_context()
    try:
        result = await context.call_tool(name, args, on_event=events.append)
    except ToolCallError as error:
        return JSONResponse({"error": failure(error)}, status_code=422)
    return JSONResponse({"result": result, "events": progress_of(events)})


@app.post("/once/{kind}/{name}")
async def once(kind: str, name: str, request: Request) -> dict[str, Any]:
    """A connection of the request's own: to the ws frame, or to a new worker."""
    target = request.app.state.ws_url if kind == "ws" else launched("worker_frame.py", "asyncio")
    async with connect(target, token=TOKEN if kind == "ws" else None, name=kind) as frame:
        return {"result": await frame.call_tool(name, await request.json())}
