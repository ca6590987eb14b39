from __future__ import annotations

import pytest

from assistant_frames import ModelContextRegistry

from helpers import calculator

pytestmark = pytest.mark.anyio


@pytest.fixture
def frame() -> ModelContextRegistry:
    return calculator("Adds.")


async def test_plugin_fixture_connects(frame_host) -> None:  # type: ignore[no-untyped-def]
    assert frame_host.get_model_context().system == "Adds."
    assert await frame_host.call_tool("add", {"a": 2, "b": 3}) == 5
