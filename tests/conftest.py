"""Every async test runs under both asyncio and trio."""

from __future__ import annotations

import pytest

# The shared helpers (tests/helpers.py) assert too: have pytest explain their failures.
pytest.register_assert_rewrite("helpers")


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)
