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
(``@pytest.mark.anyio``), on whichever backends ``anyio_backend`` selects: by default
(anyio 4.x's own fixture) every installed backend, trio too when it is importable.

A test of code that runs on asyncio only (pydantic-ai, for one) then fails under trio
with asyncio's ``RuntimeError: no running event loop``; for a test that uses these
fixtures, the report says so and how to pin the backend in ``conftest.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Generator
from typing import Any

import pytest

from .frames import AssistantFrameHost
from .testing import connect_app as _connect_app
from .testing import connect_frame as _connect_frame

__all__ = ["connect_app", "connect_frame", "frame_host"]


@pytest.fixture
def connect_frame() -> Any:
    """:func:`assistant_frames.testing.connect_frame`, as a fixture."""
    return _connect_frame


@pytest.fixture
def connect_app() -> Any:
    """:func:`assistant_frames.testing.connect_app` (an ``AppBridge`` and an ``App``, paired),
    as a fixture."""
    return _connect_app


@pytest.fixture
async def frame_host(frame: Any, anyio_backend: Any) -> AsyncIterator[AssistantFrameHost]:
    """A host connected over ``memory_pair()`` to your ``frame`` fixture, context received."""
    async with _connect_frame(frame) as host:
        yield host


ASYNCIO_ONLY_HINT = (
    "This test ran under trio, and something it calls needs asyncio's event loop "
    "(pydantic-ai does). anyio's pytest plugin runs every test on each installed backend; "
    "to run on asyncio only, put this in conftest.py:\n\n"
    "    @pytest.fixture\n"
    "    def anyio_backend():\n"
    '        return "asyncio"\n'
)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    """Explain asyncio's "no running event loop" in a test of ours that ran under trio."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if not report.failed or call.excinfo is None:
        return
    if not {"frame_host", "connect_frame", "connect_app"} & set(getattr(item, "fixturenames", ())):
        return
    callspec = getattr(item, "callspec", None)
    backend = callspec.params.get("anyio_backend") if callspec is not None else None
    if isinstance(backend, tuple) and backend:
        backend = backend[0]  # (name, options)
    if backend != "trio":
        return
    if any(_needs_asyncio(exc) for exc in _leaves(call.excinfo.value)):
        report.sections.append(("assistant-frames: asyncio only?", ASYNCIO_ONLY_HINT))


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _needs_asyncio(exc: BaseException) -> bool:
    return isinstance(exc, RuntimeError) and "no running event loop" in str(exc)
