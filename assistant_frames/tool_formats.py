"""Deprecated: the vendors' tool definitions moved to :mod:`assistant_frames.formats.tools`.

Importing ``assistant_frames.tool_formats`` warns (``DeprecationWarning``) and gives the same
names; the alias goes after one minor release. Import from ``assistant_frames.formats``
(or from ``assistant_frames``) instead.
"""

import warnings

from .formats import tools as _moved
from .formats.tools import *  # noqa: F403

__all__ = list(_moved.__all__)

warnings.warn(
    "assistant_frames.tool_formats is deprecated; import from assistant_frames.formats"
    " (or assistant_frames) instead",
    DeprecationWarning,
    stacklevel=2,
)
