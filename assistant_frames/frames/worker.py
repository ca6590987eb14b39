"""The frame side of a worker process: serve a frame over this process's stdin/stdout."""

from __future__ import annotations

from ..registry.context import ModelContextProvider
from ..transports.stdio import DEFAULT_MAX_MESSAGE_BYTES, own_stdio
from .provider import AssistantFrameProvider

__all__ = ["serve_stdio"]


async def serve_stdio(
    frame: AssistantFrameProvider | ModelContextProvider,
    *,
    max_message_bytes: int | None = DEFAULT_MAX_MESSAGE_BYTES,
    max_line_bytes: int | None = None,
) -> None:
    """Serve ``frame`` to the host that started this process, until stdin closes.

    ``frame`` is an :class:`~assistant_frames.AssistantFrameProvider` or any provider
    (a registry...), which is then wrapped in one. POSIX only: stdin and stdout must be
    pipes (as ``spawn_worker`` makes them) or sockets. ``max_message_bytes``
    (16 MiB; ``None``: no limit) bounds the messages sent to the host and the lines
    read from it (``max_line_bytes`` is its deprecated name). Also importable from
    ``assistant_frames.transports``, its former home.
    """
    provider = frame if isinstance(frame, AssistantFrameProvider) else AssistantFrameProvider(frame)
    async with own_stdio(max_message_bytes, max_line_bytes=max_line_bytes) as transport:
        await provider.serve(transport)
