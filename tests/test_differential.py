"""A differential test of every format's reply side, with its own replies and mutators.

Replies are written by each format's ``render_reply`` from messages drawn here (not from
``strategies.py``: other code, other blind spots), then mutated by mutators of this module's
own: a marker of the format, a cut half of one or a markup character dropped in, a slice cut
out or repeated, two characters swapped, the end cut off. Each mutated reply is read by
``Format.parse`` (the whole-reply reader, where it takes the reply), by the grammar's path in
one piece, and by streams fed in random chunks, one character at a time and in two pieces: all
must give the same result, and a strict parse that does not raise :class:`codec.ParseError`
gives it too.

The default profile runs a few examples per format; ``CODEC_TESTS=deep`` many.
"""

from __future__ import annotations

import contextlib
import random
from typing import Any

import pytest
from harness import assert_streams_like, examples, parse_char_by_char, parse_whole, run_chunks
from hypothesis import given
from hypothesis import strategies as st

import codec

FORMATS = codec.formats()

# --------------------------------------------------------------------------- replies

_WORDS = ("ok", "Paris", "então", "x", "1", "a b", "日本", "-", "(", ")", "[", "]", "{", "}", ",", ":", "=", '"', "'")
_text = st.lists(st.sampled_from(_WORDS), max_size=6).map(" ".join)
_key = st.from_regex(r"\A[a-z][a-z0-9_]{0,6}\Z")
_scalar = st.one_of(
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.booleans(),
    st.none(),
    _text,
)
_value = st.recursive(
    _scalar,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_key, inner, max_size=3),
    max_leaves=6,
)
_call = st.fixed_dictionaries(
    {
        "function": st.fixed_dictionaries(
            {"name": st.from_regex(r"\A[a-z][a-z_]{0,8}\Z"), "arguments": st.dictionaries(_key, _value, max_size=3)}
        )
    }
)
_message = st.fixed_dictionaries(
    {"role": st.just("assistant"), "content": st.one_of(st.none(), _text), "tool_calls": st.lists(_call, max_size=2)}
)


def _reply(fmt: codec.Format, message: dict[str, Any]) -> str | None:
    """What the model writes for ``message``, or None where the format cannot write it."""
    if not message["tool_calls"]:
        message = {**message, "tool_calls": None}
    try:
        return fmt.render_reply(message)
    except codec.CodecError:
        return None


# --------------------------------------------------------------------------- mutators


def _pieces(fmt: codec.Format) -> list[str]:
    """The format's markers (its spec's strings), their halves, and markup characters."""
    spec = fmt.wire
    found: list[str] = []
    for value in spec.to_json().values():
        items = value if isinstance(value, list) else [value]
        found += [item for item in items if isinstance(item, str) and len(item) > 1 and item != spec.family]
    halves = [marker[: len(marker) // 2] for marker in found] + [marker[len(marker) // 2 :] for marker in found]
    return [*found, *halves, *"<>[]{}()\"',:=\n \\`|"]


def _mutate(text: str, pieces: list[str], rng: random.Random) -> str:
    at = rng.randint(0, len(text))
    how = rng.randrange(5)
    if how == 0:  # drop a piece in
        return text[:at] + rng.choice(pieces) + text[at:]
    if how == 1:  # cut a slice out
        return text[:at] + text[at + rng.randint(1, 12) :]
    if how == 2:  # repeat a slice
        end = min(len(text), at + rng.randint(1, 24))
        return text[:end] + text[at:end] + text[end:]
    if how == 3 and at + 1 < len(text):  # swap two characters
        return text[:at] + text[at + 1] + text[at] + text[at + 2 :]
    return text[:at]  # cut the end off


# --------------------------------------------------------------------------- the property


@pytest.mark.parametrize("name", FORMATS)
@given(message=_message, seed=st.integers(0, 2**32 - 1), mutations=st.integers(0, 3), tools=st.booleans())
@examples(15)
def test_every_reading_of_a_mutated_reply_agrees(
    name: str, message: dict[str, Any], seed: int, mutations: int, tools: bool
) -> None:
    fmt = codec.get_format(name)
    text = _reply(fmt, message)
    if text is None:
        return
    rng = random.Random(seed)
    pieces = _pieces(fmt)
    for _ in range(mutations):
        text = _mutate(text, pieces, rng)
    declared = [
        {"type": "function", "function": {"name": call["function"]["name"], "parameters": {"type": "object"}}}
        for call in message["tool_calls"]
    ]
    kwargs: dict[str, Any] = {"tools": declared} if tools and declared else {}
    whole = fmt.parse(text, **kwargs)
    assert_streams_like(parse_whole(fmt, text, **kwargs), whole)
    assert_streams_like(parse_char_by_char(fmt, text, **kwargs), whole)
    cuts, chunks, at = sorted(rng.sample(range(len(text) + 1), min(len(text) + 1, 6))), [], 0
    for cut in cuts:
        chunks.append(text[at:cut])
        at = cut
    chunks.append(text[at:])
    assert_streams_like(run_chunks(fmt, chunks, **kwargs), whole)
    split = rng.randint(0, len(text))
    assert_streams_like(run_chunks(fmt, [text[:split], text[split:]], **kwargs), whole)
    with contextlib.suppress(codec.ParseError):
        assert fmt.parse(text, strict=True, **kwargs) == whole
