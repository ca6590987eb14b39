"""Pure data and logic: tools, model contexts, registries and merging. No I/O."""

from .annotations import ToolAnnotations
from .context import ModelContext, ModelContextProvider, Subscribers, ToolConflict, Unsubscribe
from .events import LogLevel, ToolEvent, ToolEventCallback, ToolLog, ToolProgress
from .merge import ConflictPolicy, merge_model_contexts, namespaced
from .registry import (
    InstructionHandle,
    ModelContextRegistry,
    ProviderHandle,
    ToolHandle,
    UIResourceHandle,
)
from .schema import inline_refs
from .tool import OutputSchema, Tool, ToolCallContext, ToolOptions, ToolType
from .ui import ToolResult, ToolUI, UIResource

__all__ = [
    "ConflictPolicy",
    "InstructionHandle",
    "LogLevel",
    "ModelContext",
    "ModelContextProvider",
    "ModelContextRegistry",
    "OutputSchema",
    "ProviderHandle",
    "Subscribers",
    "Tool",
    "ToolAnnotations",
    "ToolCallContext",
    "ToolConflict",
    "ToolEvent",
    "ToolEventCallback",
    "ToolHandle",
    "ToolLog",
    "ToolOptions",
    "ToolProgress",
    "ToolResult",
    "ToolType",
    "ToolUI",
    "UIResource",
    "UIResourceHandle",
    "Unsubscribe",
    "inline_refs",
    "merge_model_contexts",
    "namespaced",
]
