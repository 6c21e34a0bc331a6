"""``codec.watch``: following a long token across chunks without re-lexing it.

Each watch is fed generated text in generated chunkings and must wake (``scan`` returns True) at
exactly the chunk where the awaited token may be complete, as a plain reference scan of the whole
text says, and never before: a :class:`Delimiter` at its closer (escapes, also split across chunks,
make the next character literal; a closer split across chunks still counts), a lookahead
``Delimiter`` at the first closer that what follows it confirms, :class:`JsonScan` where the value's
brackets balance or at a ``<`` outside a string. ``Delimiter.watch`` reports the characters it
examined, which the stream adds to its work counter: each character after the opener, once.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from harness import examples
from hypothesis import assume, given
from hypothesis import strategies as st

from codec.watch import Delimiter, JsonScan, Watch, json_fast_lexer

#: Pieces the bodies are made of: quotes, escapes, brackets, the closers' own pieces, plain text.
PIECES = ('"', "\\", "\\\\", '\\"', "'", "<", "|", ">", "{", "}", "[", "]", ",", ")", " ", "\n", "x", "é", "🙂")
#: Delimiters as the formats use them: JSON strings, gemma4's quote token, qwen3_coder's heads.
PLAIN = (Delimiter('"', '"', "\\"), Delimiter("'", "'", "\\"), Delimiter('<|"|>', '<|"|>'), Delimiter("<p=", ">"))
#: What follows a closing quote of a deepseek raw string (``, name=`` or ``)``), in a small lookahead.
FOLLOWS = r"[ \t]{0,2}(?:,[ \t]{0,2}[a-z]{1,3}=|\))"
LOOKAHEAD = 8

bodies = st.lists(st.sampled_from((*PIECES, '<|"', '|"|>', '<|"|>', "<p", ", b=", ", bb =", ")")), max_size=24).map(
    "".join
)
cuts = st.lists(st.integers(1, 6), min_size=1, max_size=8)


def chunks_of(text: str, start: int, sizes: list[int]) -> tuple[str, list[str]]:
    """``text`` cut at ``start`` (the first chunk ends there) and then in chunks of ``sizes`` (cycled)."""
    rest, out, k = text[start:], [], 0
    while rest:
        size = sizes[k % len(sizes)]
        out.append(rest[:size])
        rest = rest[size:]
        k += 1
    return text[:start], out


def wake_chunk(watch: Watch, chunks: list[str]) -> int | None:
    """The index of the chunk at which ``watch`` wakes, or None if it never does."""
    for index, chunk in enumerate(chunks):
        if watch.scan(chunk):
            return index
    return None


def chunk_reaching(first: str, chunks: list[str], length: int) -> int | None:
    """The index of the chunk at whose end at least ``length`` characters have arrived (-1: the first part)."""
    if len(first) >= length:
        return -1
    arrived = len(first)
    for index, chunk in enumerate(chunks):
        arrived += len(chunk)
        if arrived >= length:
            return index
    return None


def plain_end(delim: Delimiter, text: str, body: int) -> int | None:
    """Reference: the end of the token whose body starts at ``text[body]`` (just after its closer), or None."""
    i = body
    while i < len(text):
        if delim.escape is not None and text.startswith(delim.escape, i):
            i += len(delim.escape) + 1
            continue
        if text.startswith(delim.close, i):
            return i + len(delim.close)
        i += 1
    return None


def lookahead_wake(delim: Delimiter, text: str, body: int) -> int | None:
    """Reference: how much text must have arrived for the lookahead watch to wake, or None.

    Closers are decided in order: one is confirmed once ``follows`` matches what has arrived after it,
    refused once ``lookahead`` characters after it have arrived without a match.
    """
    follows = re.compile(delim.follows)
    needed = 0  # the text the closers before this one need to be decided
    at = text.find(delim.close, body)
    while at >= 0:
        after = at + len(delim.close)
        confirmed = next(
            (n for n in range(after, min(len(text), after + delim.lookahead) + 1) if follows.match(text[:n], after)),
            None,
        )
        if confirmed is not None:
            return max(needed, confirmed)
        needed = max(needed, after + delim.lookahead)
        at = text.find(delim.close, after)
    return None


@examples(200)
@given(delim=st.sampled_from(PLAIN), body=bodies, tail=bodies, data=st.data())
def test_a_delimiter_wakes_when_its_closer_has_arrived(delim: Delimiter, body: str, tail: str, data: Any) -> None:
    text = "pre" + delim.open + body + delim.close + tail
    start = len("pre")
    end = plain_end(delim, text, start + len(delim.open))
    assume(end is not None)  # a body ending in an escape escapes the closer
    first_len = data.draw(st.integers(start + len(delim.open), len(text)), label="first")
    first, chunks = chunks_of(text, first_len, data.draw(cuts, label="sizes"))
    watch, examined = delim.watch(first, start)
    expected = chunk_reaching(first, chunks, end)
    if expected == -1:  # closed within the first part: no watch, and only the token was examined
        assert watch is None
        assert examined == end - start - len(delim.open)
        return
    assert watch is not None
    assert examined == len(first) - start - len(delim.open)  # each character after the opener, once
    assert wake_chunk(watch, chunks) == expected


@pytest.mark.parametrize("chunks", [list('<|"|>'), ['<|"', "|>"]], ids=["one_by_one", "three_then_two"])
def test_a_closer_arriving_right_after_the_opener_in_small_chunks_wakes_the_watch(chunks: list[str]) -> None:
    """gemma4's empty string ``<|"|><|"|>`` streamed in small chunks: the watch wakes as the closer ends
    (it kept too little of a closer split across chunks while fewer characters than the closer had come)."""
    watch, _ = Delimiter('<|"|>', '<|"|>').watch('<|"|>', 0)
    assert watch is not None
    assert wake_chunk(watch, chunks) == len(chunks) - 1


@examples(200)
@given(body=bodies, tail=bodies, data=st.data())
def test_a_lookahead_delimiter_wakes_at_the_first_closer_that_what_follows_confirms(
    body: str, tail: str, data: Any
) -> None:
    delim = Delimiter('"', '"', lookahead=LOOKAHEAD, follows=FOLLOWS)
    text = "[f(a=" + delim.open + body + data.draw(st.sampled_from(('")', '", b=', '"  )', '" , bb=')), "end") + tail
    start = len("[f(a=")
    wake = lookahead_wake(delim, text, start + len(delim.open))
    assert wake is not None  # the closer drawn above is confirmed, if no earlier one is
    first_len = data.draw(st.integers(start + len(delim.open), len(text)), label="first")
    first, chunks = chunks_of(text, first_len, data.draw(cuts, label="sizes"))
    watch, examined = delim.watch(first, start)
    assert examined == len(first) - start - len(delim.open)  # a lookahead watch examines all it is given
    expected = chunk_reaching(first, chunks, wake)
    if expected == -1:
        assert watch is None
        return
    assert watch is not None
    assert wake_chunk(watch, chunks) == expected


def test_a_lookahead_closer_that_nothing_confirms_never_wakes() -> None:
    delim = Delimiter('"', '"', lookahead=LOOKAHEAD, follows=FOLLOWS)
    text = '[f(a="' + '" x "y' * 50
    watch, _ = delim.watch(text[:8], len("[f(a="))
    assert watch is not None
    assert wake_chunk(watch, [text[i : i + 3] for i in range(8, len(text), 3)]) is None


def json_end(text: str) -> int | None:
    """Reference: the index at which :class:`JsonScan` reports the end of the value starting ``text``."""
    depth, in_string, escaped, started = 0, False, False, False
    for i, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth, started = depth + 1, True
        elif char == "<":
            return i
        elif char in "}]":
            depth -= 1
            if depth <= 0 and started:
                return i
    return None


json_texts = st.lists(
    st.sampled_from(('{"k": ', '"a\\"b"', '"<x>"', '"\\\\"', "[1, 2]", "{", "}", "[", "]", ", ", "<", "é", '"', "\\")),
    min_size=1,
    max_size=16,
).map("".join)


@examples(200)
@given(text=json_texts, sizes=cuts)
def test_json_scan_wakes_where_the_brackets_balance_or_at_a_less_than_sign(text: str, sizes: list[int]) -> None:
    end = json_end(text)
    _, chunks = chunks_of(text, 0, sizes)
    expected = None if end is None else chunk_reaching("", chunks, end + 1)
    assert wake_chunk(JsonScan(), chunks) == expected


values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(st.sampled_from('ab"\\<>{}[]é\n'), max_size=5)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from("abc"), inner, max_size=3)),
    max_leaves=8,
).filter(lambda value: isinstance(value, (list, dict)))


@examples(200)
@given(value=values, after=st.sampled_from(("", "\n</tool_call>", " x")), data=st.data())
def test_json_fast_lexer_lexes_a_value_once_its_watch_wakes(value: Any, after: str, data: Any) -> None:
    """A JSON object or array cut anywhere gives a watch (or the value itself once complete); fed the rest,
    the watch wakes at the value's last character, and the lexer then returns the value."""
    lex = json_fast_lexer(json.JSONDecoder())
    dumped = json.dumps(value, ensure_ascii=False)
    text = dumped + after
    cut = data.draw(st.integers(1, len(text)), label="cut")
    first, chunks = chunks_of(text, cut, data.draw(cuts, label="sizes"))
    got = lex(first, 0, False)
    if cut >= len(dumped):
        assert got == (value, len(dumped))
        return
    assert isinstance(got, JsonScan)
    woke = wake_chunk(got, chunks)
    assert woke == chunk_reaching(first, chunks, len(dumped))
    arrived = first + "".join(chunks[: woke + 1] if woke is not None else chunks)
    assert lex(arrived, 0, False) == (value, len(dumped))
    assert lex(first, 0, True) is None  # at the end of the reply, an unfinished value is left to the grammar


def test_json_fast_lexer_leaves_what_is_not_an_object_or_array_to_the_grammar() -> None:
    lex = json_fast_lexer(json.JSONDecoder())
    assert lex('"x"', 0, False) is None
    assert lex("1", 0, False) is None
    assert lex("", 0, False) is None
    assert lex('{"a": 1} ', 0, False) == ({"a": 1}, 8)
    assert lex('{"a": 1}', 0, False) is not None
    assert json_fast_lexer(json.JSONDecoder(), accept=lambda value: False)('{"a": 1}', 0, False) is None


def test_delimiter_arguments_are_checked() -> None:
    for bad in ({"escape": "\\", "close": "ab"}, {"lookahead": 3}, {"follows": "x"}):
        try:
            Delimiter(**{"open": '"', "close": '"', **bad})  # type: ignore[arg-type]
        except ValueError:
            continue
        raise AssertionError(f"Delimiter accepted {bad}")
