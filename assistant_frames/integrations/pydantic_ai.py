"""A model context as a pydantic-ai toolset: ``Agent(..., toolsets=[ContextToolset(provider)])``.

Needs the ``pydantic-ai`` extra (``pip install 'assistant-frames[pydantic-ai]'``).
"""

from __future__ import annotations

from typing import Any

try:
    from pydantic_ai import ModelRetry, RunContext
    from pydantic_ai.tools import ToolDefinition
    from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
except ImportError as exc:
    raise ImportError(
        "assistant_frames.integrations.pydantic_ai needs pydantic-ai: "
        "pip install 'assistant-frames[pydantic-ai]'"
    ) from exc
from pydantic_core import SchemaValidator, core_schema

from ..errors import FrameDisconnected, ToolCallError, ToolCallTimeout
from ..registry.context import ModelContextProvider
from ..registry.tool import Tool
from ..registry.ui import model_value

__all__ = ["ContextToolset"]

# Any JSON object passes: the tool, or the frame that owns it, validates the arguments
# itself and reports what is wrong as a ToolCallError, which the model then sees.
_ANY_OBJECT = SchemaValidator(
    core_schema.dict_schema(core_schema.str_schema(), core_schema.any_schema())
)


class ContextToolset(AbstractToolset[Any]):
    """A pydantic-ai toolset whose tools and instructions are a provider's live context.

    ``provider`` is any :class:`~assistant_frames.ModelContextProvider`: a registry, a
    frame host, an ``MCPFrameHost``, or a parent registry federating many frames. The context
    is read again at every model step, so tools that frames add or remove show up on the
    next step. Disabled tools are left out. ``id`` names the toolset for pydantic-ai
    (durable execution needs one); ``max_retries`` is how many times in a row the model
    may retry a tool after a failed call before pydantic-ai gives up on the run.
    """

    def __init__(
        self, provider: ModelContextProvider, *, id: str | None = None, max_retries: int = 1
    ) -> None:
        if not callable(getattr(provider, "get_model_context", None)):
            raise TypeError(f"{provider!r} is not a ModelContextProvider")
        self.provider = provider
        self.max_retries = max_retries
        self._id = id

    @property
    def id(self) -> str | None:
        """The toolset's id, as given to the constructor."""
        return self._id

    async def get_instructions(self, ctx: RunContext[Any]) -> str | None:
        """The context's system text, or ``None`` when it has none."""
        return self.provider.get_model_context().system or None

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        """The enabled tools of the provider's current context, by the name it uses
        (app-only MCP Apps tools left out: they are for their view, not the model)."""
        tools = self.provider.get_model_context().model_tools()
        return {
            name: ToolsetTool(
                toolset=self,
                tool_def=ToolDefinition(
                    name=name,
                    description=tool.description,
                    parameters_json_schema={
                        key: value for key, value in tool.parameters.items() if key != "$schema"
                    },
                    metadata=_metadata(tool),
                    return_schema=dict(tool.output_schema) if tool.output_schema else None,
                ),
                max_retries=self.max_retries,
                args_validator=_ANY_OBJECT,
            )
            for name, tool in tools.items()
        }

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        """Run ``name`` wherever it lives; failures the model can act on become ``ModelRetry``.

        A :class:`~assistant_frames.ToolCallError` (bad arguments, an error a frame
        reported, a tool that vanished since the model saw it), a ``ToolCallTimeout`` and
        a ``FrameDisconnected`` go back to the model as a retry prompt carrying the
        message. Any other exception a local tool raises propagates unchanged.
        """
        context = self.provider.get_model_context()
        try:
            result = await context.call_tool(name, tool_args, tool_call_id=ctx.tool_call_id)
            return model_value(result)  # a ToolResult's _meta is for a view, not a model
        # A timeout or a lost frame is a retry prompt too, as pydantic-ai does for its own
        # tool timeouts and an MCP server's protocol errors: one slow or vanished frame
        # should not end a run that federates many. The model can try again (a
        # ReconnectingHost may be back) or do without the tool; max_retries bounds it.
        except ToolCallTimeout as exc:
            raise ModelRetry(f"{exc.message} and was cancelled") from exc
        except FrameDisconnected as exc:
            raise ModelRetry(f'Tool "{name}" is unavailable: {exc.message}') from exc
        except ToolCallError as exc:
            raise ModelRetry(exc.message) from exc


def _metadata(tool: Tool) -> dict[str, Any] | None:
    """A tool's ``meta`` and annotations, keyed as pydantic-ai's own MCP toolset keys them.

    ``None`` for a tool with neither, so plain tools' definitions stay as they were.
    """
    annotations = tool.annotations.to_wire() if tool.annotations is not None else None
    if tool.meta is None and not annotations:
        return None
    return {"meta": tool.meta, "annotations": annotations or None}
