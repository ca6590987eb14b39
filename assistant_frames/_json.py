"""JSON for the wire: pydantic-core, with the standard library behind it.

pydantic-core (Rust) is several times faster than the ``json`` module, but it refuses
two things that valid peers send: strings holding a lone UTF-16 surrogate (JavaScript's
``JSON.stringify`` writes them as ``\\ud800`` escapes, and ``json.loads`` decodes LLM
output into them) and nesting deeper than about 250 levels. Those fall back to the
``json`` module, which takes both, so such a message reaches the protocol (which answers
it) instead of vanishing.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic_core import from_json, to_json

__all__ = ["decode_json", "encode_json"]


def encode_json(item: Any) -> bytes:
    """``item`` as compact JSON (non-finite floats as ``null``); ``TypeError`` if it has
    no JSON form."""
    try:
        return to_json(item, inf_nan_mode="null")
    except (ValueError, RecursionError) as exc:
        error = exc
    import json  # only for the fallback: a worker's start need not import it

    try:  # lone surrogates become \\uXXXX escapes, as in JavaScript
        return json.dumps(
            _finite(item), ensure_ascii=True, allow_nan=False, separators=(",", ":")
        ).encode()
    except (TypeError, ValueError, RecursionError):
        raise TypeError(f"Cannot send a value that has no JSON form: {error}") from None


def _finite(item: Any) -> Any:
    """``item`` with non-finite floats as ``None``, as pydantic-core writes them."""
    if isinstance(item, float):
        return item if math.isfinite(item) else None
    if isinstance(item, dict):
        return {key: _finite(value) for key, value in item.items()}
    if isinstance(item, list | tuple):
        return [_finite(value) for value in item]
    return item


def decode_json(data: bytes) -> Any:
    """The value ``data`` holds; ``UnicodeDecodeError`` if it is not UTF-8 and
    ``ValueError`` if it is not JSON."""
    try:
        return from_json(data)
    except ValueError as exc:
        error = exc
    import json  # only for the fallback, as in encode_json

    text = data.decode("utf-8")  # UnicodeDecodeError: the caller may treat it apart
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        raise ValueError(str(error)) from None
