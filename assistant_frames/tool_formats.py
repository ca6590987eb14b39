"""Deprecated: the vendors' tool definitions moved to :mod:`assistant_frames.formats.tools`.

Importing ``assistant_frames.tool_formats`` warns (``DeprecationWarning``) and gives the same
names; the alias goes after one minor release. Import from ``assistant_frames.formats``
(or from ``assistant_frames``) instead.
"""

from ._deprecated import moved
from .formats import tools as _moved
from .formats.tools import *  # noqa: F403

__all__ = moved(__name__, "assistant_frames.formats", _moved.__all__)
