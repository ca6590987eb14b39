"""Pure data and logic: tools, model contexts, registries and merging. No I/O."""

from .context import ModelContext, ModelContextProvider, Subscribers, ToolConflict, Unsubscribe
from .merge import ConflictPolicy, merge_model_contexts, namespaced
from .registry import InstructionHandle, ModelContextRegistry, ProviderHandle, ToolHandle
from .schema import inline_refs
from .tool import Tool, ToolCallContext, ToolType

__all__ = [
    "ConflictPolicy",
    "InstructionHandle",
    "ModelContext",
    "ModelContextProvider",
    "ModelContextRegistry",
    "ProviderHandle",
    "Subscribers",
    "Tool",
    "ToolCallContext",
    "ToolConflict",
    "ToolHandle",
    "ToolType",
    "Unsubscribe",
    "inline_refs",
    "merge_model_contexts",
    "namespaced",
]
