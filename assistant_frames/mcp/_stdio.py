"""An MCP server subprocess over stdio, as an ``mcp`` client transport we own.

The SDK's ``stdio_client`` hides its process: when the server dies, the client only
sees "Connection closed". This transport runs the server with :func:`spawn_worker`
(the same process handling as worker frames: stderr passed through with its tail kept,
stdin closed then SIGTERM then SIGKILL on the way out, always reaped), so that the end
of the server comes with its exit code and the end of its stderr.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from mcp import StdioServerParameters
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from ..transports.contract import CLOSED_ERRORS, CloseReason, close_reason
from ..transports.stdio import spawn_worker
from ..transports.worker_process import describe_exit as _describe_exit

if TYPE_CHECKING:
    # The SDK names a client transport's stream pair only in a private module: imported
    # here alone (for typing), and from here by the rest of this package.
    from mcp.client._transport import TransportStreams as TransportStreams

__all__ = ["describe_exit", "server_process"]

_GRACE_PERIOD = 2.0  # as the SDK's stdio client gives a server to leave on its own
_READER_WAIT = 2.0  # how long a failed write waits for the reader to learn why


@asynccontextmanager
async def server_process(
    params: StdioServerParameters, on_end: Callable[[CloseReason], None]
) -> AsyncIterator[TransportStreams]:
    """Start the server; yield the SDK's streams to it.

    ``on_end(reason)`` is called when the server's stdout ends, before the client's
    read stream ends (so the reason is known by the time requests fail).
    """
    env = get_default_environment() | (params.env or {})
    command = [params.command, *params.args]
    async with spawn_worker(
        command,
        env=env,
        cwd=params.cwd,
        grace_period=_GRACE_PERIOD,
        max_message_bytes=None,
        own_process_group=True,  # as the SDK's stdio_client: npx's children go with it
    ) as transport:
        to_client, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_stream, from_client = anyio.create_memory_object_stream[SessionMessage](0)
        reader_done = anyio.Event()

        async def read() -> None:
            try:
                async with to_client:
                    while True:
                        try:
                            raw = await transport.receive()
                        except CLOSED_ERRORS as exc:
                            on_end(close_reason(exc))
                            return
                        await to_client.send(_parse(raw))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass  # the client is gone
            finally:
                reader_done.set()

        async def write() -> None:
            async with from_client:
                async for message in from_client:
                    wire = message.message.model_dump(
                        mode="json", by_alias=True, exclude_unset=True
                    )
                    try:
                        await transport.send(wire)
                    except CLOSED_ERRORS:
                        break
                else:
                    return  # the client closed its end
            # The server stopped reading: its stdout ending says why, if it ends soon.
            with anyio.move_on_after(_READER_WAIT):
                await reader_done.wait()
            await to_client.aclose()

        async with anyio.create_task_group() as group:
            group.start_soon(read)
            group.start_soon(write)
            try:
                yield read_stream, write_stream
            finally:
                group.cancel_scope.cancel()
                for stream in (read_stream, write_stream):
                    with suppress(Exception):
                        await stream.aclose()


def _parse(raw: Any) -> SessionMessage | Exception:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_python(raw, by_name=False))
    except ValidationError as exc:  # handed to the session, as the SDK's transports do
        return exc


def describe_exit(reason: CloseReason) -> str:
    """How a server process ended, with the last lines of its stderr."""
    return _describe_exit("it", reason.exit_code, reason.stderr_tail or "")
