"""What a worker builds before its first context, and what waits for first use.

A worker's start is what it imports and builds before it sends its first context: the
Pydantic models it does not need yet (tool annotations, ...) are built on first use,
which must not change what a tool is, says or does.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional, Union

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import Field

from assistant_frames._json import encode_json
from assistant_frames.errors import ToolArgumentsError
from assistant_frames.registry import Tool, ToolAnnotations
from assistant_frames.registry import tool as tool_module
from assistant_frames.registry.invoker import _Signature, _signatures

_Str = type("_Str", (str,), {})


def test_tool_annotations_are_still_importable_from_the_tool_module() -> None:
    assert tool_module.ToolAnnotations is ToolAnnotations
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        tool_module.Nope  # noqa: B018


async def _nothing(args: Any, context: Any) -> None:
    return None


@pytest.mark.parametrize(
    "given",
    [ToolAnnotations(read_only_hint=True), {"readOnlyHint": True}, {"read_only_hint": True}],
)
def test_annotations_given_in_any_form_become_tool_annotations(given: Any) -> None:
    for tool in (Tool("t", annotations=given), Tool.from_parts("t", _nothing, annotations=given)):
        assert tool.annotations == ToolAnnotations(read_only_hint=True)
    if isinstance(given, ToolAnnotations):
        assert Tool.from_parts("t", _nothing, annotations=given).annotations is given


def test_unusable_annotations_are_refused_as_before() -> None:
    for make in (Tool, lambda name, **kw: Tool.from_parts(name, _nothing, **kw)):
        with pytest.raises(ValueError, match="annotations of tool 't' are invalid"):
            make("t", annotations={"readOnlyHint": "yes"})
        with pytest.raises(TypeError, match="Tool 't': annotations must be"):
            make("t", annotations=["readOnlyHint"])
        assert make("t", annotations=None).annotations is None


# -- signatures: the schema of plain parameters is written without Pydantic -------------------

# Names Pydantic takes as they are, names it cannot (aliased), and the names it gives those.
_NAMES = ["a", "b_2", "_private", "copy", "json", "model_dump", "field_0", "field_1", "field_2"]
_ANNOTATIONS = [
    "int",
    "float",
    "str",
    "bool",
    "Any",
    "",  # none
    "int | None",
    "Optional[str]",
    "None | float",
    "Union[bool, None]",
    "list[int]",
    "Literal['x', 'y']",
    "int | str",
    "Annotated[int, Field(description='given')]",
    "Optional[Any]",
]
_DEFAULTS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),
    st.text(max_size=5),
    st.just([]),
    st.just(b"x"),
    st.sampled_from([_Str("s"), 1.0, -0.0, 2.5]),
)
_NO_DEFAULT = object()
_OF_TYPE = {
    "int": st.integers(min_value=-(2**70), max_value=2**70),
    "float": st.floats(),
    "str": st.text(max_size=5),
    "bool": st.booleans(),
}


def _defaults(annotation: str, *, fitting_only: bool = False) -> st.SearchStrategy[Any]:
    """No default, one of the annotation's type, ``None``, or (unless ``fitting_only``)
    anything."""
    kinds = [kind for kind in _OF_TYPE if kind in annotation]
    fitting = st.one_of([_OF_TYPE[kind] for kind in kinds]) if kinds else _DEFAULTS
    if fitting_only:
        nullable = "None" in annotation or annotation in ("Any", "")
        return st.one_of(st.just(_NO_DEFAULT), fitting, *([st.none()] if nullable else []))
    return st.one_of(st.just(_NO_DEFAULT), fitting, st.none(), _DEFAULTS)


_PLAIN_ANNOTATIONS = _ANNOTATIONS[:10]


def _parameter_lists(plain: bool) -> st.SearchStrategy[list[tuple[str, str, Any, str | None]]]:
    """Parameters (name, annotation, default, description): plain ones (on the path that
    writes the schema, mostly), or any."""
    names = [name for name in _NAMES if not name.startswith("field_")] if plain else _NAMES
    return st.lists(
        st.tuples(
            st.sampled_from(names),
            st.sampled_from(_PLAIN_ANNOTATIONS if plain else _ANNOTATIONS),
        ).flatmap(
            lambda named: st.tuples(
                st.just(named[0]),
                st.just(named[1]),
                _defaults(named[1], fitting_only=plain),
                st.one_of(st.none(), st.sampled_from(["The thing.", "Two words", "x"])),
            )
        ),
        max_size=4,
        unique_by=lambda parameter: parameter[0],
    )


def _function(parameters: list[tuple[str, str, Any, str | None]]) -> Any:
    """A function with these (name, annotation, default, description) parameters; the
    descriptions in a Google-style docstring."""
    params, docs = [], []
    namespace: dict[str, Any] = {
        "Annotated": Annotated,
        "Any": Any,
        "Field": Field,
        "Literal": Literal,
        "Optional": Optional,
        "Union": Union,
    }
    for index, (name, annotation, default, description) in enumerate(parameters):
        text = f"{name}: {annotation}" if annotation else name
        if default is not _NO_DEFAULT:
            namespace[f"default_{index}"] = default
            text += f" = default_{index}"
        elif any(d is not _NO_DEFAULT for _, _, d, _ in parameters[:index]):
            text = f"*, {text}" if "*" not in ", ".join(params) else text
        params.append(text)
        if description:
            docs.append(f"        {name}: {description}")
    doc = "Do it.\n\n    Args:\n" + "\n".join(docs) if docs else "Do it."
    source = f'def tool({", ".join(params)}):\n    """{doc}\n    """\n'
    exec(source, namespace)
    return namespace["tool"]


@settings(max_examples=300, deadline=None, database=None)
@given(_parameter_lists(plain=True) | _parameter_lists(plain=False))
@example([("a", "int", 1, "x"), ("b_2", "int | None", _NO_DEFAULT, None)])
@example([("_private", "int", _NO_DEFAULT, None), ("field_0", "int", _NO_DEFAULT, None)])
@example([("copy", "float", 2.5, None), ("_private", "Any", None, None), ("field_1", "", 1, None)])
def test_a_plain_signature_gets_the_schema_pydantic_derives(
    parameters: list[tuple[str, str, Any, str | None]],
) -> None:
    function = _function(parameters)
    signature = _Signature("tool", function)
    written = signature.validator is None  # no model built: the schema was written
    derived = signature._build()  # what Pydantic derives
    assert encode_json(signature.schema) == encode_json(derived)  # byte for byte
    plain = all(annotation in _PLAIN_ANNOTATIONS for _, annotation, _, _ in parameters)
    if not plain:
        assert not written


@pytest.mark.parametrize(
    "function",
    [
        lambda: None,
        lambda a, b=1, c=None: None,
    ],
)
def test_plain_signatures_build_no_model_before_the_first_call(function: Any) -> None:
    assert _Signature("t", function).validator is None


@pytest.mark.anyio
async def test_a_tool_with_a_written_schema_validates_on_its_first_call() -> None:
    def add(a: int, b: int = 2, *, c: float | None = None, _d: str = "d") -> str:
        """Add.

        Args:
            a: The first.
        """
        return f"{a + b} {c} {_d}"

    tool = Tool("add", add)
    assert tool.parameters == {
        "properties": {
            "a": {"description": "The first.", "type": "integer"},
            "b": {"default": 2, "type": "integer"},
            "c": {"anyOf": [{"type": "number"}, {"type": "null"}], "default": None},
            "_d": {"default": "d", "type": "string"},
        },
        "required": ["a"],
        "type": "object",
    }
    assert _signatures[add].validator is None
    assert await tool.invoke({"a": "1", "c": 1, "_d": "x"}) == "3 1.0 x"
    assert _signatures[add].validator is not None
    with pytest.raises(
        ToolArgumentsError, match=r'tool "add2": b: Input should be a valid integer'
    ):
        await Tool("add2", add).invoke({"a": 1, "b": "two"})
    with pytest.raises(ToolArgumentsError, match=r'tool "add": a: Field required'):
        await tool.invoke({})


class _Opaque:
    pass


def test_a_signature_pydantic_cannot_handle_is_still_refused_when_the_tool_is_made() -> None:
    def opaque(thing: int, other: _Opaque) -> None:
        return None

    with pytest.raises(TypeError, match="cannot build a JSON Schema for its parameters"):
        Tool("opaque", opaque)


def test_no_pydantic_model_class_before_pydantic_main() -> None:
    """Output schemas are derived from a return type that is a model: told without
    importing Pydantic, which must be right whether or not Pydantic is loaded."""
    from pydantic import BaseModel
    from typing_extensions import TypedDict

    from assistant_frames.registry.output_schema import _is_model_class

    class Model(BaseModel):
        x: int

    class Typed(TypedDict):
        x: int

    assert _is_model_class(Model)
    assert not any(_is_model_class(kind) for kind in (int, Typed, list[int], None, "Model"))

    def model() -> Model:
        return Model(x=1)

    def typed() -> Typed:
        return {"x": 1}

    def plain() -> int:
        return 1

    assert Tool("m", model).output_schema == Tool("t", typed).output_schema
    assert Tool("p", plain).output_schema is None
