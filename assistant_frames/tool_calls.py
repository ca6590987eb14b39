"""Deprecated: running a model response's tool calls moved to :mod:`assistant_frames.formats.calls`.

Importing ``assistant_frames.tool_calls`` warns (``DeprecationWarning``) and gives the same
names; the alias goes after one minor release. Import from ``assistant_frames.formats``
(or from ``assistant_frames``) instead.
"""

import warnings

from .formats import calls as _moved
from .formats.calls import *  # noqa: F403

__all__ = list(_moved.__all__)

warnings.warn(
    "assistant_frames.tool_calls is deprecated; import from assistant_frames.formats"
    " (or assistant_frames) instead",
    DeprecationWarning,
    stacklevel=2,
)
