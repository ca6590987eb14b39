"""assistant-frames: model-context federation for Python assistants.

Frames (sub-agents, worker processes, browser iframes, remote services) register tools
and instructions; a parent assistant's hosts subscribe to them over postMessage-like
transports, see one merged, live model context, and have every tool call routed back to
the frame that owns the tool. Wire-compatible with assistant-ui's Assistant Frames.
"""

from __future__ import annotations

from ._lazy import lazy_exports

# Not typing.TYPE_CHECKING: importing typing would be most of what ``import
# assistant_frames`` costs. Type checkers take any ``TYPE_CHECKING`` to be true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    __version__: str

    from . import calls as calls
    from . import errors as errors
    from . import federation as federation
    from . import formats as formats
    from . import frames as frames
    from . import registry as registry
    from . import transports as transports
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

# The public names are imported on first use (PEP 562), each from the subpackage that
# defines it: ``import assistant_frames`` costs next to nothing, and a worker that only
# needs a registry and ``serve_stdio`` loads neither the host side nor the federation,
# the vendor formats or the WebSocket, MCP and NATS support.
_LAZY: dict[str, str] = {
    name: module
    for module, names in {
        ".errors": (
            "AssistantFramesError",
            "ConnectError",
            "ContextTimeout",
            "DocumentChanged",
            "ErrorCode",
            "FrameDisconnected",
            "HandshakeRejected",
            "ProviderDisposed",
            "ToolArgumentsError",
            "ToolCallError",
            "ToolCallTimeout",
            "ToolConflictError",
            "ToolDisabledError",
            "ToolNotFoundError",
        ),
        ".federation": ("Federation", "MemberStatus", "connect"),
        ".formats.calls": (
            "AnthropicToolResult",
            "AnthropicToolResultMessage",
            "OpenAIChatToolMessage",
            "OpenAIFunctionCallOutput",
            "ToolCallFormat",
            "ToolCallFormatError",
            "run_tool_calls",
        ),
        ".formats.tools": (
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
        ".frames": (
            "AssistantFrameHost",
            "AssistantFrameProvider",
            "ConnectionState",
            "FrameConnection",
            "ReconnectingHost",
        ),
        ".registry": (
            "ConflictPolicy",
            "InstructionHandle",
            "ModelContext",
            "ModelContextProvider",
            "ModelContextRegistry",
            "ProviderHandle",
            "Tool",
            "ToolAnnotations",
            "ToolCallContext",
            "ToolConflict",
            "ToolEvent",
            "ToolHandle",
            "ToolLog",
            "ToolOptions",
            "ToolProgress",
            "ToolResult",
            "ToolUI",
            "UIResource",
            "UIResourceHandle",
            "merge_model_contexts",
        ),
        ".transports": ("MemoryTransport", "Multiplexer", "TransportAttribute", "memory_pair"),
    }.items()
    for name in names
}

# The modules that ``import assistant_frames`` used to import as a side effect stay
# reachable as attributes after it (``assistant_frames.transports.spawn_worker``).
_SUBMODULES = ("calls", "errors", "federation", "formats", "frames", "registry", "transports")
_LAZY.update(dict.fromkeys(_SUBMODULES, ""))


_load, _names = lazy_exports(__name__, globals(), _LAZY)


def __getattr__(name: str) -> Any:
    if name == "__version__":  # read from the installed metadata (see _version.py)
        from ._version import package_version

        return package_version()
    return _load(name)


def __dir__() -> list[str]:
    return [*_names(), "__version__"]
