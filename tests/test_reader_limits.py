"""The whole-reply readers and the reasoning lookahead at the grammars' limits.

A grammar bounds what it reads in places (a name's length in the text that opens a call list, a
tag's name, how far the reasoning lookahead reads): past a bound the stream reads the reply
otherwise (as text, a broken call). A whole-reply reader takes only what the grammar's path reads
the same, so it must decline exactly there, and a stream must not read a reply otherwise than a
parse of it does however it is chunked. Here every format's reply of one call whose name, or
whose argument's key, is as long as each bound and one character either side, after prose or not,
is parsed whole (the reader's path), fed at once and fed in small chunks.
"""

from __future__ import annotations

from typing import Any

import pytest
from harness import call_message, deep, parse_chunked, parse_whole, reply_formats

import codec

#: The lengths around every bound the grammars and the stream set on names and lookaheads.
LENGTHS = sorted({n + d for n in (1, 16, 32, 64, 256, 4096) for d in (-1, 0, 1) if n + d > 0} | {4200})


def _reply(fmt: codec.Format, part: str, length: int, prose: str) -> str:
    name, key = ("f" * length, "k") if part == "name" else ("f", "k" * length)
    return fmt.render_reply(call_message({key: "x", "n": 1}, content=prose or None, name=name))


def _shape(result: codec.ParseResult) -> Any:
    return (
        [(len(c.function.name), sorted(map(len, c.function.arguments))) for c in result.tool_calls],
        [issue.kind for issue in result.issues],
        len(result.content),
        len(result.reasoning),
    )


#: Which part is long, and the prose before the call: all four pairs when deep, two by default (each
#: part once, each prose once: what the two change is independent of each other).
SHAPES = [
    (part, prose) for part in ("name", "key") for prose in ("", "Sure.") if deep() or (part == "name") == (prose == "")
]


@pytest.mark.parametrize(("part", "prose"), SHAPES)
@pytest.mark.parametrize("name", reply_formats())
def test_every_reader_reads_what_the_stream_reads_at_its_bounds(name: str, part: str, prose: str) -> None:
    fmt = codec.get_format(name)
    for length in LENGTHS:
        text = _reply(fmt, part, length, prose)
        whole = fmt.parse(text)
        for run in (parse_whole(fmt, text), parse_chunked(fmt, text, 61)):
            assert run.result == whole, (length, _shape(whole), _shape(run.result))


_REASONING_LISTS = [
    name
    for name in codec.formats()
    if codec.get_format(name).wire.family == "call_list" and codec.get_format(name).wire.reasoning
]


@pytest.mark.parametrize("name", _REASONING_LISTS)
@pytest.mark.parametrize("blanks", [("", ""), ("", " "), ("    ", "\n   "), (" \t", "")])
@pytest.mark.parametrize("length", [1, 32, 33, 64])
def test_a_first_call_list_with_a_reasoning_closer_in_a_string_is_a_call_however_streamed(
    name: str, blanks: tuple[str, str], length: int
) -> None:
    """A reply that starts with a call list (blanks around its first name as the grammar's free text
    allows them, the name as long as it allows) opens no reasoning, whatever ``</think>`` its strings
    hold: the reasoning lookahead knows a list's start as the grammar does."""
    fmt = codec.get_format(name)
    close = fmt.wire.reasoning[1]
    text = f'[{blanks[0]}{"f" * length}{blanks[1]}(a="x{close}")]{fmt.wire.stop}'
    whole = fmt.parse(text)
    assert [(c.function.name, c.function.arguments) for c in whole.tool_calls] == [("f" * length, {"a": "x" + close})]
    assert whole.reasoning == "" and whole.issues == []
    for size in (1, 7):
        assert parse_chunked(fmt, text, size).result == whole
