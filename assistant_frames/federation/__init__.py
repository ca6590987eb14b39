"""Connecting to frames by what they are: :func:`connect` for one, :class:`Federation`
for many in one parent registry, kept connected.

A target is a registry or provider in this process, a ``ws://`` URL, a worker command,
or an MCP server (an ``http(s)://`` URL, a command with ``mcp=True``, a server object);
:class:`FrameTarget` holds the rule. WebSocket and MCP support are imported only when
a target needs them.
"""

from __future__ import annotations

from .connecting import connect
from .members import Federation, MemberState, MemberStatus
from .targets import FrameTarget, TargetKind

__all__ = ["Federation", "FrameTarget", "MemberState", "MemberStatus", "TargetKind", "connect"]
