"""``_anyio.clock()`` and ``_anyio.cancel_scope_class()``: the backend's clock and cancel
scope, looked up once for hot paths, must be anyio's own. Every test runs on both
backends."""

from __future__ import annotations

import anyio
import pytest

from assistant_frames._anyio import cancel_scope_class, clock

pytestmark = pytest.mark.anyio


async def test_the_clock_is_anyios() -> None:
    now = clock()
    before = anyio.current_time()
    ours = now()
    after = anyio.current_time()
    assert before <= ours <= after
    await anyio.sleep(0.02)
    assert now() - ours >= 0.015  # it moves with the backend's time, not once read


async def test_the_cancel_scope_class_makes_anyio_scopes() -> None:
    new_scope = cancel_scope_class()
    with new_scope() as scope:
        assert isinstance(scope, anyio.CancelScope)
        scope.cancel()
        await anyio.sleep(5)  # cancelled at once: never waits this long
    assert scope.cancelled_caught
    with anyio.move_on_after(0.01) as outer:  # nested in anyio's own: the deadline reaches it
        with new_scope():
            await anyio.sleep(5)
    assert outer.cancelled_caught
