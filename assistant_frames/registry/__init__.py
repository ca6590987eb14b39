"""Pure data and logic: tools, model contexts, registries and merging. No I/O."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .annotations import ToolAnnotations
    from .context import (
        ModelContext,
        ModelContextProvider,
        Subscribers,
        ToolConflict,
        Unsubscribe,
    )
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

# Imported on first use (PEP 562), each from the module that defines it.
_LAZY = {
    name: module
    for module, names in {
        ".annotations": ("ToolAnnotations",),
        ".context": (
            "ModelContext",
            "ModelContextProvider",
            "Subscribers",
            "ToolConflict",
            "Unsubscribe",
        ),
        ".events": ("LogLevel", "ToolEvent", "ToolEventCallback", "ToolLog", "ToolProgress"),
        ".merge": ("ConflictPolicy", "merge_model_contexts", "namespaced"),
        ".registry": (
            "InstructionHandle",
            "ModelContextRegistry",
            "ProviderHandle",
            "ToolHandle",
            "UIResourceHandle",
        ),
        ".schema": ("inline_refs",),
        ".tool": ("OutputSchema", "Tool", "ToolCallContext", "ToolOptions", "ToolType"),
        ".ui": ("ToolResult", "ToolUI", "UIResource"),
    }.items()
    for name in names
}


__getattr__, __dir__ = lazy_exports(__name__, globals(), _LAZY)
