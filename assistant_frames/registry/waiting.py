"""``wait_for_tools``: wait, woken by the context's own change notices, until tools are
there: what tests and live code need instead of polling ``get_model_context()``."""

from __future__ import annotations

import math
from collections.abc import Callable

import anyio

from ..errors import ContextTimeout
from .context import ModelContext, ModelContextProvider

__all__ = ["WaitsForTools"]


class WaitsForTools:
    """:meth:`wait_for_tools` for a model context provider (a host, a registry, a
    federation): a mixin for anything with ``get_model_context`` and ``subscribe``."""

    __slots__ = ()

    async def wait_for_tools(
        self: ModelContextProvider,
        *wanted: str | Callable[[ModelContext], bool],
        timeout: float | None = 10.0,
    ) -> ModelContext:
        """Wait until the context has every tool named in ``wanted`` and meets every
        predicate in it (``lambda context: len(context.tools) > 3``); return that context.

        Woken by each change, never polling. Raises
        :class:`~assistant_frames.ContextTimeout` (a ``TimeoutError``) after ``timeout``
        seconds (``None``: no limit), saying what is still missing.
        """
        names = [item for item in wanted if isinstance(item, str)]
        checks = [item for item in wanted if not isinstance(item, str)]
        for check in checks:
            if not callable(check):
                raise TypeError(f"wait_for_tools() takes tool names and predicates, not {check!r}")

        def met(context: ModelContext) -> bool:
            return all(name in context.tools for name in names) and all(
                check(context) for check in checks
            )

        changed = [anyio.Event()]
        unsubscribe = self.subscribe(lambda: changed[0].set())  # before the first look
        try:
            with anyio.move_on_after(math.inf if timeout is None else timeout):
                while True:
                    context = self.get_model_context()
                    if met(context):
                        return context
                    await changed[0].wait()
                    changed[0] = anyio.Event()
        finally:
            unsubscribe()
        frame = getattr(self, "name", None)
        frame = frame if isinstance(frame, str) else None
        context = self.get_model_context()
        missing = [name for name in names if name not in context.tools]
        unmet = any(not check(context) for check in checks)
        raise ContextTimeout(_still_missing(context, missing, unmet, frame, timeout), frame=frame)


def _still_missing(
    context: ModelContext, missing: list[str], unmet: bool, frame: str | None, timeout: float | None
) -> str:
    """What ``wait_for_tools`` waited for in vain, and what the context has instead."""
    lacked = [f"the tools {missing}"] if missing else []
    if unmet:
        lacked.append("the condition asked for")
    where = f" of {frame}" if frame else ""
    have = list(context.tools)
    shown = ", ".join(have[:10]) + (f" and {len(have) - 10} more" if len(have) > 10 else "")
    return (
        f"The context{where} still lacked {' and '.join(lacked) or 'nothing'} after "
        f"{timeout or 0:g} s (it has {len(have)} tools{': ' + shown if have else ''})"
    )
