"""pytest fixtures for testing frames, registered through the ``pytest11`` entry point.

Define a ``frame`` fixture returning what you want to test (a registry, any
``ModelContextProvider`` or an ``AssistantFrameProvider``); then ``frame_host`` is a
connected :class:`~assistant_frames.AssistantFrameHost` for it::

    @pytest.fixture
    def frame():
        return my_registry

    @pytest.mark.anyio
    async def test_add(frame_host):
        assert await frame_host.call_tool("add", {"a": 1, "b": 2}) == 3

``connect_frame`` is :func:`assistant_frames.testing.connect_frame`, for tests that need
several connections. The fixtures are async, so tests run under anyio's pytest plugin
(``@pytest.mark.anyio``), on whichever backends ``anyio_backend`` selects.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from .frames import AssistantFrameHost
from .testing import connect_frame as _connect_frame

__all__ = ["connect_frame", "frame_host"]


@pytest.fixture
def connect_frame() -> Any:
    """:func:`assistant_frames.testing.connect_frame`, as a fixture."""
    return _connect_frame


@pytest.fixture
async def frame_host(frame: Any, anyio_backend: Any) -> AsyncIterator[AssistantFrameHost]:
    """A host connected over ``memory_pair()`` to your ``frame`` fixture, context received."""
    async with _connect_frame(frame) as host:
        yield host
