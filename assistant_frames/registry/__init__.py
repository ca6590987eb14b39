"""Pure data and logic: tools, model contexts, registries and merging. No I/O."""

from .annotations import ToolAnnotations
from .context import ModelContext, ModelContextProvider, Subscribers, ToolConflict, Unsubscribe
from .merge import ConflictPolicy, merge_model_contexts, namespaced
from .registry import InstructionHandle, ModelContextRegistry, ProviderHandle, ToolHandle
from .schema import inline_refs
from .tool import OutputSchema, Tool, ToolCallContext, ToolOptions, ToolType

__all__ = [
    "ConflictPolicy",
    "InstructionHandle",
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
    "ToolHandle",
    "ToolOptions",
    "ToolType",
    "Unsubscribe",
    "inline_refs",
    "merge_model_contexts",
    "namespaced",
]
