"""A model context in the shapes model vendors speak, and back.

* :mod:`assistant_frames.formats.tools`: the context's tools as OpenAI Chat Completions,
  OpenAI Responses, Anthropic Messages and MCP tool definitions.
* :mod:`assistant_frames.formats.calls`: :func:`run_tool_calls` runs the tool calls of
  a model's response against the context and builds the messages that answer them.

No vendor SDK is imported. Every name is also importable from ``assistant_frames``.
"""

from . import calls, tools
from .calls import *  # noqa: F403
from .tools import *  # noqa: F403

__all__ = [*calls.__all__, *tools.__all__]
