"""A model context in the shapes model vendors speak, and back.

* :mod:`assistant_frames.formats.tools`: the context's tools as OpenAI Chat Completions,
  OpenAI Responses, Anthropic Messages and MCP tool definitions.
* :mod:`assistant_frames.formats.calls`: :func:`run_tool_calls` runs the tool calls of
  a model's response against the context and builds the messages that answer them.

No vendor SDK is imported. Every name is also importable from ``assistant_frames``. Each
module is imported on first use of one of its names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from . import calls as calls
    from . import tools as tools
    from .calls import (
        AnthropicToolResult,
        AnthropicToolResultMessage,
        OpenAIChatToolMessage,
        OpenAIFunctionCallOutput,
        ToolCallFormat,
        ToolCallFormatError,
        run_tool_calls,
    )
    from .tools import (
        AnthropicTool,
        MCPTool,
        OpenAIChatTool,
        OpenAIFunctionDefinition,
        OpenAIResponsesTool,
        to_anthropic_tools,
        to_mcp_tools,
        to_openai_chat_tools,
        to_openai_responses_tools,
    )

# calls.__all__, then tools.__all__.
__all__ = [
    "AnthropicToolResult",
    "AnthropicToolResultMessage",
    "OpenAIChatToolMessage",
    "OpenAIFunctionCallOutput",
    "ToolCallFormat",
    "ToolCallFormatError",
    "run_tool_calls",
    "AnthropicTool",
    "MCPTool",
    "OpenAIChatTool",
    "OpenAIFunctionDefinition",
    "OpenAIResponsesTool",
    "to_anthropic_tools",
    "to_mcp_tools",
    "to_openai_chat_tools",
    "to_openai_responses_tools",
]

_LAZY = {
    "calls": "",  # the submodule itself
    "tools": "",
    **dict.fromkeys(
        (
            "AnthropicToolResult",
            "AnthropicToolResultMessage",
            "OpenAIChatToolMessage",
            "OpenAIFunctionCallOutput",
            "ToolCallFormat",
            "ToolCallFormatError",
            "run_tool_calls",
        ),
        ".calls",
    ),
    **dict.fromkeys(
        (
            "AnthropicTool",
            "MCPTool",
            "OpenAIChatTool",
            "OpenAIFunctionDefinition",
            "OpenAIResponsesTool",
            "to_anthropic_tools",
            "to_mcp_tools",
            "to_openai_chat_tools",
            "to_openai_responses_tools",
        ),
        ".tools",
    ),
}


__getattr__, __dir__ = lazy_exports(__name__, globals(), _LAZY)
