"""Call tracking, sans-I/O: the calls a client side has sent and awaits answers to.

Every client-side protocol (the frame host, ``MCPFrameHost``, the apps bridge) keeps the same
books: ids, one deadline per call, cancellation, results for ids nobody waits for, and
every call failing at once when the connection goes. :class:`PendingCalls` keeps them
without awaiting anything: the caller passes the time in and is told, through each
call's ``wake`` callback, when an outcome is there. The I/O around it (sending, the one
task that sleeps until the next deadline) belongs to the protocol's driver.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PendingCall", "PendingCalls"]


def _nothing() -> None:
    pass


@dataclass(slots=True, eq=False, repr=False)  # not frozen: one per call
class PendingCall:
    """One call awaiting its outcome.

    Exactly one outcome, once settled: ``result`` (``error is None``), ``error`` (what
    the peer or the connection reported), or ``timed_out``. ``sent`` is set by the
    driver once the request left, so that it knows whether a cancel must follow it.
    ``on_event`` is the caller's callback for the call's progress and log events, if any.
    """

    id: str
    name: str
    deadline: float | None
    wake: Callable[[], None]
    sent: bool = field(default=False, init=False)
    settled: bool = field(default=False, init=False)
    timed_out: bool = field(default=False, init=False)
    result: Any = field(default=None, init=False)
    error: Any = field(default=None, init=False)
    on_event: Callable[[Any], object] | None = field(default=None, init=False)

    def __repr__(self) -> str:
        state = "settled" if self.settled else "sent" if self.sent else "new"
        return f"<PendingCall {self.id!r} {self.name!r} {state}>"


class PendingCalls:
    """The calls awaiting answers on one connection, with their deadlines.

    Deadlines are absolute times on the caller's clock. Calls that share a timeout come
    with ascending deadlines, so those are kept in an insertion-ordered dict (no heap
    operation per call); a deadline earlier than the last one goes to a heap.

    ``timer_wake`` is called when the next deadline moves earlier than the one the
    timer armed for (:meth:`arm`), so a driver's timer task knows to re-arm.
    """

    __slots__ = (
        "_armed",
        "_calls",
        "_heap",
        "_ids",
        "_last",
        "_ordered",
        "id_prefix",
        "timer_wake",
    )

    def __init__(self, id_prefix: str = "call-") -> None:
        self.id_prefix = id_prefix
        self.timer_wake: Callable[[], None] = _nothing
        self._calls: dict[str, PendingCall] = {}
        self._ordered: dict[str, PendingCall] = {}  # ascending deadlines
        self._heap: list[tuple[float, int, PendingCall]] = []  # the others
        self._ids = itertools.count(1)
        self._last = -math.inf
        self._armed = math.inf

    def __len__(self) -> int:
        return len(self._calls)

    def __contains__(self, call_id: object) -> bool:
        return call_id in self._calls

    def __iter__(self) -> Iterator[PendingCall]:
        return iter(list(self._calls.values()))

    def get(self, call_id: str) -> PendingCall | None:
        """The pending call with that id, if any."""
        return self._calls.get(call_id)

    def new_id(self) -> str:
        """A fresh id: the prefix and a counter."""
        return f"{self.id_prefix}{next(self._ids)}"

    def add(
        self,
        name: str,
        *,
        call_id: str | None = None,
        deadline: float | None = None,
        wake: Callable[[], None] = _nothing,
    ) -> PendingCall:
        """Track a new call (``ValueError`` if ``call_id`` is already pending)."""
        if call_id is None:
            call_id = f"{self.id_prefix}{next(self._ids)}"
            while call_id in self._calls:  # a caller chose this one: skip it
                call_id = f"{self.id_prefix}{next(self._ids)}"
        elif call_id in self._calls:
            raise ValueError(f"A call with id {call_id!r} is already pending")
        call = PendingCall(call_id, name, deadline, wake)
        self._calls[call_id] = call
        if deadline is not None:
            if deadline >= self._last:
                self._last = deadline
                self._ordered[call_id] = call
            else:
                heapq.heappush(self._heap, (deadline, next(self._ids), call))
            if deadline < self._armed:
                self._armed = deadline
                self.timer_wake()
        return call

    def _forget(self, call: PendingCall) -> None:
        del self._calls[call.id]
        if call.deadline is not None:
            self._ordered.pop(call.id, None)  # a heap entry is skipped once it is seen

    def discard(self, call_id: str) -> PendingCall | None:
        """Stop tracking a call (its caller gave up or is done); the call, if it was."""
        call = self._calls.get(call_id)
        if call is not None:
            self._forget(call)
        return call

    def _settle(self, call: PendingCall) -> None:
        self._forget(call)
        call.settled = True
        call.wake()

    def resolve(self, call_id: str, result: Any = None, error: Any = None) -> PendingCall | None:
        """Settle a call with the peer's answer; ``None`` (ignored) for an unknown id."""
        call = self._calls.get(call_id)
        if call is None:
            return None
        call.result = result
        call.error = error
        self._settle(call)
        return call

    def fail_all(self, error: Any) -> list[PendingCall]:
        """Settle every call with ``error`` (the connection went); returns them."""
        calls = list(self._calls.values())
        self._calls.clear()
        self._ordered.clear()
        self._heap.clear()
        for call in calls:
            call.error = error
            call.settled = True
            call.wake()
        return calls

    def next_deadline(self) -> float | None:
        """The earliest deadline of a pending call, if any."""
        heap, calls = self._heap, self._calls
        while heap and calls.get(heap[0][2].id) is not heap[0][2]:  # settled or discarded
            heapq.heappop(heap)
        first = next(iter(self._ordered.values()), None)
        ordered = first.deadline if first is not None else None
        if heap and (ordered is None or heap[0][0] < ordered):
            return heap[0][0]
        return ordered

    def arm(self) -> float:
        """The time a timer should wake at (``inf``: none); later adds compare to it."""
        deadline = self.next_deadline()
        self._armed = math.inf if deadline is None else deadline
        return self._armed

    def expire(self, now: float) -> list[PendingCall]:
        """Settle every call whose deadline is at or before ``now`` as timed out.

        Returns them in deadline order (the ordered ones and the heap's, merged).
        """
        expired: list[PendingCall] = []
        ordered, heap, calls = self._ordered, self._heap, self._calls
        while True:
            while heap and calls.get(heap[0][2].id) is not heap[0][2]:  # settled or discarded
                heapq.heappop(heap)
            call = next(iter(ordered.values()), None)
            early = heap[0][0] if heap else None
            if early is not None and early <= now and (call is None or early < call.deadline):  # type: ignore[operator]
                call = heapq.heappop(heap)[2]
            elif call is None or call.deadline > now:  # type: ignore[operator]
                break
            expired.append(call)
            call.timed_out = True
            self._settle(call)
        return expired
