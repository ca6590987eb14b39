"""A model context in the shapes model vendors speak, and back.

* :mod:`assistant_frames.formats.tools`: the context's tools as OpenAI Chat Completions,
  OpenAI Responses, Anthropic Messages and MCP tool definitions.
* :mod:`assistant_frames.formats.calls`: :func:`run_tool_calls` runs the tool calls of
  a model's response against the context and builds the messages that answer them.

No vendor SDK is imported. Every name is also importable from ``assistant_frames``.
"""

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

__all__ = [
    "AnthropicTool",
    "AnthropicToolResult",
    "AnthropicToolResultMessage",
    "MCPTool",
    "OpenAIChatTool",
    "OpenAIChatToolMessage",
    "OpenAIFunctionCallOutput",
    "OpenAIFunctionDefinition",
    "OpenAIResponsesTool",
    "ToolCallFormat",
    "ToolCallFormatError",
    "run_tool_calls",
    "to_anthropic_tools",
    "to_mcp_tools",
    "to_openai_chat_tools",
    "to_openai_responses_tools",
]
