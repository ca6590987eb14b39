"""assistant-frames: model-context federation for Python assistants.

Frames (sub-agents, worker processes, browser iframes, remote services) register tools
and instructions; a parent assistant's hosts subscribe to them over postMessage-like
transports, see one merged, live model context, and have every tool call routed back to
the frame that owns the tool. Wire-compatible with assistant-ui's Assistant Frames.
"""

from typing import Any

from ._version import package_version
from .errors import (
    AssistantFramesError,
    ConnectError,
    ContextTimeout,
    DocumentChanged,
    ErrorCode,
    FrameDisconnected,
    HandshakeRejected,
    ProviderDisposed,
    ToolArgumentsError,
    ToolCallError,
    ToolCallTimeout,
    ToolConflictError,
    ToolDisabledError,
    ToolNotFoundError,
)
from .federation import Federation, MemberStatus, connect
from .formats.calls import (
    AnthropicToolResult,
    AnthropicToolResultMessage,
    OpenAIChatToolMessage,
    OpenAIFunctionCallOutput,
    ToolCallFormat,
    ToolCallFormatError,
    run_tool_calls,
)
from .formats.tools import (
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
from .frames import (
    AssistantFrameHost,
    AssistantFrameProvider,
    ConnectionState,
    FrameConnection,
    ReconnectingHost,
)
from .registry import (
    ConflictPolicy,
    InstructionHandle,
    ModelContext,
    ModelContextProvider,
    ModelContextRegistry,
    ProviderHandle,
    Tool,
    ToolAnnotations,
    ToolCallContext,
    ToolConflict,
    ToolEvent,
    ToolHandle,
    ToolLog,
    ToolOptions,
    ToolProgress,
    ToolResult,
    ToolUI,
    UIResource,
    UIResourceHandle,
    merge_model_contexts,
)
from .transports import MemoryTransport, Multiplexer, TransportAttribute, memory_pair


def __getattr__(name: str) -> Any:
    # __version__ is read from the installed metadata on first use (see _version.py).
    if name == "__version__":
        return package_version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AnthropicTool",
    "AnthropicToolResult",
    "AnthropicToolResultMessage",
    "AssistantFrameHost",
    "AssistantFrameProvider",
    "AssistantFramesError",
    "ConflictPolicy",
    "ConnectError",
    "ConnectionState",
    "ContextTimeout",
    "DocumentChanged",
    "ErrorCode",
    "Federation",
    "FrameConnection",
    "FrameDisconnected",
    "HandshakeRejected",
    "InstructionHandle",
    "MCPTool",
    "MemberStatus",
    "MemoryTransport",
    "ModelContext",
    "ModelContextProvider",
    "ModelContextRegistry",
    "Multiplexer",
    "OpenAIChatTool",
    "OpenAIChatToolMessage",
    "OpenAIFunctionCallOutput",
    "OpenAIFunctionDefinition",
    "OpenAIResponsesTool",
    "ProviderDisposed",
    "ProviderHandle",
    "ReconnectingHost",
    "Tool",
    "ToolAnnotations",
    "ToolArgumentsError",
    "ToolCallContext",
    "ToolCallError",
    "ToolCallFormat",
    "ToolCallFormatError",
    "ToolCallTimeout",
    "ToolConflict",
    "ToolConflictError",
    "ToolDisabledError",
    "ToolEvent",
    "ToolHandle",
    "ToolLog",
    "ToolNotFoundError",
    "ToolOptions",
    "ToolProgress",
    "ToolResult",
    "ToolUI",
    "TransportAttribute",
    "UIResource",
    "UIResourceHandle",
    "__version__",
    "connect",
    "memory_pair",
    "merge_model_contexts",
    "run_tool_calls",
    "to_anthropic_tools",
    "to_mcp_tools",
    "to_openai_chat_tools",
    "to_openai_responses_tools",
]
