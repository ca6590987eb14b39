"""The ways a call over NATS fails that no other transport has."""

from __future__ import annotations

from ..errors import FrameDisconnected

__all__ = ["NoResponders", "ReplicaLost"]


class NoResponders(FrameDisconnected):
    """No replica of the frame took the call: none is running (NATS said so at once).

    The call was never run, so calling again once a replica is up is safe.
    """


class ReplicaLost(FrameDisconnected):
    """The replica running the call stopped, was killed or was cut off before answering.

    The call may or may not have run: it is not sent again (a tool may not be idempotent).
    """
