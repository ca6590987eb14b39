"""A small JSON-RPC 2.0 peer for the multiplexing tests (``from jsonrpc_peer import ...``)."""

from __future__ import annotations

import itertools
from typing import Any

import anyio
from anyio.abc import ObjectStream

WAIT = 10.0


def rpc_request(id: int | str, method: str = "echo", params: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params}


class JsonRpcPeer:
    """Answers every request with ``{"echo": params, "by": name}`` and matches the responses
    to its own requests by id. Records every message it receives."""

    def __init__(self, stream: ObjectStream[Any], name: str) -> None:
        self.stream = stream
        self.name = name
        self.received: list[Any] = []
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[anyio.Event, list[Any]]] = {}
        self.ended: BaseException | None = None

    async def run(self) -> None:
        try:
            while True:
                message = await self.stream.receive()
                self.received.append(message)
                assert message["jsonrpc"] == "2.0", message
                if "method" in message:
                    reply = {"echo": message.get("params"), "by": self.name}
                    await self.stream.send({"jsonrpc": "2.0", "id": message["id"], "result": reply})
                else:
                    event, box = self._pending.pop(message["id"])
                    box.append(message["result"])
                    event.set()
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            self.ended = exc
            for event, _box in self._pending.values():
                event.set()

    async def call(self, params: Any) -> Any:
        id = next(self._ids)
        event, box = self._pending[id] = (anyio.Event(), [])
        await self.stream.send(rpc_request(id, params=params))
        with anyio.fail_after(WAIT):
            await event.wait()
        if not box:
            raise ConnectionError(f"JSON-RPC peer {self.name} ended: {self.ended!r}")
        return box[0]
