"""The subjects a frame uses on NATS, and the checks on the names they are made of.

One frame named ``calc`` under the prefix ``frames`` (a tenant's own prefix keeps it
apart from every other tenant on the same server):

=================================  ============================================================
``frames.calc.call``               tool calls: request-reply, queue group ``frames.calc``, so
                                   each call goes to exactly one replica
``frames.calc.cancel``             ``tool-cancel``: every replica hears it, the one running
                                   the call acts on it
``frames.calc.context``            the frame's context, published by each replica whenever it
                                   changes: whole when it starts, then each change as a
                                   patch, numbered
``frames.calc.context.get``        the context on request: every replica answers (each is a
                                   queue group of its own), so the asker sees every
                                   replica's tools; a host takes the first answer
``frames.calc.context.get.<id>``   the context on request, from the replica ``<id>`` alone
                                   (a host following it): whole, or "you hold my latest"
=================================  ============================================================

Discovery goes through the NATS service API: each replica is a service instance named
after the frame, whose metadata names the prefix.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

__all__ = ["DEFAULT_PREFIX", "FrameSubjects", "check_frame_name", "check_prefix"]

#: The prefix when none is given.
DEFAULT_PREFIX: Final = "frames"

# A frame name is one subject token and a NATS service name: both allow exactly this.
_NAME = re.compile(r"[A-Za-z0-9_-]+")


def check_frame_name(name: str) -> str:
    """``name`` if it can name a frame on NATS; ``ValueError`` saying why not."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(
            f"A frame on NATS needs a name of letters, digits, '-' and '_' (it is a subject "
            f"token and a NATS service name), not {name!r}"
        )
    return name


def check_prefix(prefix: str) -> str:
    """``prefix`` if it is one or more dot-separated tokens; ``ValueError`` if not."""
    if not isinstance(prefix, str) or not all(_NAME.fullmatch(t) for t in prefix.split(".")):
        raise ValueError(
            f"A NATS subject prefix is tokens of letters, digits, '-' and '_' joined by "
            f"dots (no wildcards), not {prefix!r}"
        )
    return prefix


@dataclass(frozen=True)
class FrameSubjects:
    """The subjects of the frame ``name`` under ``prefix`` (see the module's table)."""

    name: str
    prefix: str = DEFAULT_PREFIX

    def __post_init__(self) -> None:
        check_frame_name(self.name)
        check_prefix(self.prefix)

    @property
    def base(self) -> str:
        """``<prefix>.<name>``, also the queue group of the frame's replicas."""
        return f"{self.prefix}.{self.name}"

    @property
    def call(self) -> str:
        """Tool calls: request-reply, one replica of the queue group answers."""
        return f"{self.base}.call"

    @property
    def cancel(self) -> str:
        """``tool-cancel``: every replica hears it."""
        return f"{self.base}.cancel"

    @property
    def context(self) -> str:
        """The context, published by each replica whenever it changes."""
        return f"{self.base}.context"

    @property
    def context_get(self) -> str:
        """The context on request: every replica answers."""
        return f"{self.base}.context.get"

    def context_get_of(self, replica: str) -> str:
        """Where the replica ``replica`` (its id) alone answers for its context."""
        return f"{self.base}.context.get.{replica}"

    @property
    def queue(self) -> str:
        """The queue group of the frame's replicas (its :attr:`base`)."""
        return self.base
