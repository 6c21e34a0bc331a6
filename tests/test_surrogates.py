"""A raw surrogate code point in a reply: U+FFFD and ``lone_surrogate``, whatever the chunking.

A str can hold half of a UTF-16 pair (text decoded with ``surrogateescape``, a pair of ``\\u``
escapes joined badly upstream); no UTF-8 text can. The stream replaces each one where text enters
it, so every path after (fast lexers, the grammar's rules, whole-call readers) reads the same
characters, and the result can always be written out.
"""

from __future__ import annotations

import random
from functools import cache

import pytest
from harness import (
    assert_append_only,
    chunkings,
    examples,
    golden_formats,
    load_golden,
    parse_char_by_char,
    run_chunks,
)
from hypothesis import given
from hypothesis import strategies as st

import codec

FORMATS = golden_formats()


@cache
def _replies(name: str) -> list[str]:
    return [case.text for case in load_golden(name) if case.prompt is None and not case.tools][:12] or ["Hello."]


def _with_surrogates(text: str, seed: int) -> tuple[str, int]:
    """``text`` with one to three surrogate code points put in at random offsets (one pair too)."""
    rng = random.Random(seed)
    chars = list(text)
    count = rng.randint(1, 3)
    for _ in range(count):
        chars.insert(rng.randint(0, len(chars)), chr(rng.randint(0xD800, 0xDFFF)))
    if rng.random() < 0.3:  # a pair of halves is no character in a str either: two of them
        at = rng.randint(0, len(chars))
        chars[at:at] = ["\ud83d", "\ude00"]
        count += 2
    return "".join(chars), count


def _entered(result: codec.ParseResult) -> list[codec.Issue]:
    return [i for i in result.issues if i.kind == "lone_surrogate" and "in the text" in i.message]


@pytest.mark.parametrize("name", FORMATS)
@examples(30)
@given(st.integers(0, 10**6), st.integers(0, 10**6))
def test_a_raw_surrogate_reads_the_same_in_every_chunking(name: str, pick: int, seed: int) -> None:
    fmt = codec.get_format(name)
    replies = _replies(name)
    text, count = _with_surrogates(replies[pick % len(replies)], seed)
    whole = fmt.parse(text)
    whole.model_dump_json()  # writable: no surrogate left anywhere
    assert sorted(i.pos for i in _entered(whole)) == sorted(
        j for j, ch in enumerate(text) if "\ud800" <= ch <= "\udfff"
    )
    assert len(_entered(whole)) == count
    runs = [parse_char_by_char(fmt, text), *(run_chunks(fmt, chunks) for chunks in chunkings(text, seed, count=3))]
    for run in runs:
        assert run.result == whole
        assert_append_only(run.events, run.result)
        for event in run.events:  # what a server sends is writable too
            for part in (getattr(event, "text", ""), getattr(event, "arguments", "")):
                part.encode("utf-8")


def test_a_surrogate_in_an_argument_marks_its_call_damaged() -> None:
    fmt = codec.get_format("hermes")
    text = 'Hi\udc80 <tool_call>\n{"name": "f", "arguments": {"a": "x\ud800y"}}\n</tool_call>'
    result = fmt.parse(text)
    assert result.content.startswith("Hi\ufffd")
    assert result.tool_calls[0].function.arguments == {"a": "x\ufffdy"}
    assert [(i.kind, i.pos, i.call_index) for i in result.issues] == [
        ("lone_surrogate", 2, None),
        ("lone_surrogate", text.index("\ud800"), 0),
    ]
    assert result.intact_calls == []


def test_strict_parsing_refuses_a_surrogate() -> None:
    with pytest.raises(codec.ParseError, match="lone surrogate"):
        codec.get_format("hermes").parse("Hi \ud800", strict=True)
