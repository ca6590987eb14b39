"""Connecting to frames by what they are: :func:`connect` for one, :class:`Federation`
for many in one parent registry, kept connected.

A target is a registry or provider in this process, a ``ws://`` URL, a worker command,
or an MCP server (an ``http(s)://`` URL, a command with ``mcp=True``, a server object);
:class:`FrameTarget` holds the rule. WebSocket and MCP support are imported only when
a target needs them, and each module of this package on first use of one of its names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .connecting import connect
    from .members import Federation, MemberState, MemberStatus
    from .targets import FrameTarget, TargetKind

__all__ = ["Federation", "FrameTarget", "MemberState", "MemberStatus", "TargetKind", "connect"]

_LAZY = {
    "Federation": ".members",
    "FrameTarget": ".targets",
    "MemberState": ".members",
    "MemberStatus": ".members",
    "TargetKind": ".targets",
    "connect": ".connecting",
}


__getattr__, __dir__ = lazy_exports(__name__, globals(), _LAZY)
