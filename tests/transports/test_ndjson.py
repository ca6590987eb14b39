"""The NDJSON line framing of the stream transports, without I/O: however the bytes are
cut into chunks, the same messages come out and the same lines are dropped."""

from __future__ import annotations

import itertools
import json
import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assistant_frames.transports import MessageTooLarge
from assistant_frames.transports._ndjson import LineDecoder, encode_line

LIMIT = 40

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=6,
)
lines = st.one_of(
    json_values.map(lambda value: json.dumps(value).encode()),
    st.binary(max_size=60).map(lambda raw: raw.replace(b"\n", b" ")),  # garbage, long lines
)


def _decode(chunks: list[bytes]) -> tuple[list[object], int]:
    decoder = LineDecoder(LIMIT)
    for chunk in chunks:
        decoder.feed(chunk)
    decoder.end()
    return list(decoder.messages), decoder.dropped


@given(st.lists(lines, max_size=8), st.lists(st.integers(min_value=0), max_size=10))
def test_any_cut_into_chunks_decodes_alike(lines: list[bytes], cuts: list[int]) -> None:
    data = b"".join(line + b"\n" for line in lines)
    points = sorted({cut % (len(data) + 1) for cut in cuts} | {0, len(data)})
    chunks = [data[a:b] for a, b in itertools.pairwise(points)]
    assert _decode(chunks) == _decode([data])


def test_a_line_is_one_json_value_and_a_newline() -> None:
    assert encode_line({"a": [1, "é"]}, None) == b'{"a":[1,"\xc3\xa9"]}\n'
    with pytest.raises(MessageTooLarge):
        encode_line("x" * LIMIT, LIMIT)


def test_what_is_not_a_message_is_dropped_counted_and_sampled(
    caplog: pytest.LogCaptureFixture,
) -> None:
    decoder = LineDecoder(LIMIT)
    with caplog.at_level(logging.DEBUG, logger="assistant_frames.transports"):
        decoder.feed(b'not json\n\n{"ok": 1}\n' + b"x" * (LIMIT + 1))
        decoder.feed(b"still the long line\n[2]\n[3")
        decoder.end()
    assert list(decoder.messages) == [{"ok": 1}, [2]]
    assert decoder.dropped == 3  # not JSON, too long, cut off at the end
    assert decoder.dropped_samples == ["not json", f"<a line longer than {LIMIT} bytes>", "[3"]
    levels = [r.levelno for r in caplog.records if r.getMessage().startswith("Dropped")]
    assert levels == [logging.WARNING, logging.DEBUG, logging.DEBUG]
