"""Deprecated: running a model response's tool calls moved to :mod:`assistant_frames.formats.calls`.

Importing ``assistant_frames.tool_calls`` warns (``DeprecationWarning``) and gives the same
names; the alias goes after one minor release. Import from ``assistant_frames.formats``
(or from ``assistant_frames``) instead.
"""

from ._deprecated import moved
from .formats import calls as _moved
from .formats.calls import *  # noqa: F403

__all__ = moved(__name__, "assistant_frames.formats", _moved.__all__)
