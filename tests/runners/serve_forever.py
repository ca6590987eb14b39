"""A long-running program: serves a frame over WebSockets beside a Federation with a
worker, says where on its first line, and runs until Ctrl-C (SIGINT)."""

from __future__ import annotations

import json

import anyio
from common import calculator, launched

from assistant_frames import AssistantFrameProvider, Federation
from assistant_frames.transports import websocket_server

TOKEN = "forever"


async def main() -> None:
    provider = AssistantFrameProvider(calculator("served"))
    async with (
        websocket_server(provider.serve, token=TOKEN) as server,
        Federation() as federation,
    ):
        await federation.add("worker", launched("worker_frame.py", None, "kept"))
        worker = await federation.call_tool("worker_pid")
        print(json.dumps({"url": server.url, "worker": worker}), flush=True)
        await anyio.sleep_forever()
