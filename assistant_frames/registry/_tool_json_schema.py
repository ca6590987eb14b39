"""``ToolJsonSchema``: Pydantic's JSON Schema generator, as tools use it.

Apart from :mod:`.schema` because it subclasses Pydantic's generator: it is imported
when a schema is derived with Pydantic, not by every worker.
"""

from __future__ import annotations

from pydantic.json_schema import GenerateJsonSchema
from pydantic_core import CoreSchema, core_schema

__all__ = ["ToolJsonSchema"]


class ToolJsonSchema(GenerateJsonSchema):
    """Pydantic's JSON Schema without the titles it invents from field names.

    ``{"a": {"title": "A", "type": "integer"}}`` tells a model nothing the key does not,
    and costs bytes in every context update; titles a user sets explicitly are kept.
    """

    def field_title_should_be_set(self, schema: CoreSchema | core_schema.DataclassField) -> bool:
        return False
