"""The far end of a stdio transport, for the conformance suite (test_transport_contract.py).

``python transport_peer.py BACKEND PORT MAX_MESSAGE_BYTES`` opens the worker side of the
stdio transport over its own stdin and stdout (what ``serve_stdio`` serves on) and takes
orders from the test over a TCP control connection to ``127.0.0.1:PORT``, one JSON line
each: ``{"id": n, "op": "send" | "receive" | "aclose", "message": ...}``. It answers
``{"id": n, "ok": value}``, or ``{"id": n, "error": "<exception class>", "text": str,
"reason": <close_reason() of it>}``. Every order runs in a task of its own, so a
``receive`` can wait while other orders run. After ``aclose`` it exits (code 0), as a
worker that is done does; it also exits when the control connection ends.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

import anyio

from assistant_frames.transports import StdioTransport, close_reason
from assistant_frames.transports.stdio import own_stdio


async def main(port: int, max_message_bytes: int) -> None:
    stream = await anyio.connect_tcp("127.0.0.1", port)
    control = StdioTransport(stream, stream, max_message_bytes=None)
    async with own_stdio(max_message_bytes) as transport, anyio.create_task_group() as tasks:
        tasks.start_soon(control.run)
        done = anyio.Event()

        async def obey(order: dict[str, Any]) -> None:
            op = order["op"]
            try:
                if op == "send":
                    result = await transport.send(order["message"])
                elif op == "receive":
                    result = await transport.receive()
                elif op == "aclose":
                    result = await transport.aclose()
                else:
                    raise ValueError(f"unknown order {op!r}")
            except Exception as exc:
                reply = {
                    "id": order["id"],
                    "error": type(exc).__name__,
                    "text": str(exc),
                    "reason": dataclasses.asdict(close_reason(exc)),
                }
            else:
                reply = {"id": order["id"], "ok": result}
            await control.send(reply)
            if op == "aclose":
                done.set()

        async def take_orders() -> None:
            try:
                while True:
                    tasks.start_soon(obey, await control.receive())
            except (anyio.EndOfStream, anyio.ClosedResourceError):  # the test is done, or we are
                done.set()

        tasks.start_soon(take_orders)
        await done.wait()
        await control.aclose()  # writes the last reply first
        tasks.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[2]), int(sys.argv[3]), backend=sys.argv[1])
