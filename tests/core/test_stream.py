"""codec.stream.Stream on the toy format: holdback, watches, the work counter, recovery, the
fast path, strict mode and its failed state, and chunking invariance (hypothesis)."""

from __future__ import annotations

import random
from typing import Any

import pytest
import toy
from harness import assert_append_only, assert_events_rebuild, examples, split
from hypothesis import given
from hypothesis import strategies as st

import codec
from codec.models import Event, ParseResult, TextDelta, ToolCallDelta, ToolCallEnd, ToolCallStart
from codec.stream import Stream, Syntax


def run(text: str, chunks: list[str] | None = None, syntax: Syntax | None = None, **kwargs: Any) -> Stream:
    """``text`` fed to a fresh toy stream (in ``chunks`` if given), closed."""
    stream = Stream(syntax or toy.syntax(), **kwargs)
    for chunk in chunks if chunks is not None else [text]:
        stream.feed(chunk)
    stream.close()
    return stream


def events_of(text: str, chunks: list[str]) -> tuple[list[Event], ParseResult]:
    stream = Stream(toy.syntax())
    events: list[Event] = []
    for chunk in chunks:
        events += stream.feed(chunk)
    events += stream.close()
    return events, stream.result


def calls(result: ParseResult) -> list[tuple[str, dict[str, Any]]]:
    return [(c.function.name, c.function.arguments) for c in result.tool_calls]


def kinds(result: ParseResult) -> list[str]:
    return [issue.kind for issue in result.issues]


# --------------------------------------------------------------------------- what a reply reads as


def test_a_reply_reads_as_content_and_calls() -> None:
    result = run('Hi <<f a=1 s="x y" l=[1, ["z"]]>> and <<g n=3>> done$').result
    assert result.content == "Hi  and  done"
    assert calls(result) == [("f", {"a": 1, "s": "x y", "l": [1, ["z"]]}), ("g", {"n": 3})]
    assert kinds(result) == []


def test_a_cut_call_keeps_what_was_read_and_the_next_call_survives() -> None:
    text = "a <<f x=1 ? y=2>> b <<g z=3>>"
    result = run(text).result
    # The error comes before `x=1` is reduced (its rule waits for the token after it) ...
    assert calls(result) == [("f", {}), ("g", {"z": 3})]
    # The block reached its closer: nothing was cut, the call is broken.
    assert kinds(result) == ["broken_call"]
    assert [(i.call_index, i.severity) for i in result.issues] == [(0, "damaged")]
    assert result.intact_calls == result.tool_calls[1:]
    assert result.content == "a  b "
    # ... unless the syntax settles a rejected block first: then what was complete is built.
    settled = run(text, syntax=toy.syntax(settle_rejected_blocks=True)).result
    assert calls(settled) == [("f", {"x": 1}), ("g", {"z": 3})]
    assert kinds(settled) == ["broken_call"]


def test_a_block_that_makes_no_call_is_kept_as_content() -> None:
    result = run("a <<? oops>> b").result
    assert result.content == "a <<? oops>> b"
    assert kinds(result) == ["invalid_tool_call"]
    assert result.issues[0].pos == 2


def test_a_builder_refusal_rejects_the_block() -> None:
    result = run("<<bad a=1>> then <<ok b=2>>").result
    assert result.content.startswith("<<bad a=1>>")
    assert calls(result) == [("ok", {"b": 2})]
    assert kinds(result) == ["invalid_tool_call"]


def test_missing_closers_are_inserted_before_a_marker_and_at_the_end() -> None:
    before_stop = run("<<f l=[1 $").result
    assert calls(before_stop) == [("f", {"l": [1]})]
    assert kinds(before_stop) == ["missing_closer", "missing_closer"]
    at_end = run("<<f a=2").result
    assert calls(at_end) == [("f", {"a": 2})]
    # Only the block's own closer is missing: the call is whole, repaired.
    assert kinds(at_end) == ["missing_closer"]
    assert [(i.call_index, i.severity) for i in at_end.issues] == [(0, "repaired")]
    assert at_end.intact_calls == at_end.tool_calls


def test_a_reply_that_ends_inside_a_call_cut_it() -> None:
    """More than the block's closer missing at the end: the call was cut, marked damaged once,
    whole and streamed alike."""
    text = "x <<f a=2 l=[1"
    cut = run(text).result
    assert calls(cut) == [("f", {"a": 2, "l": [1]})]
    assert kinds(cut) == ["truncated_call", "missing_closer", "missing_closer"]
    assert [i.call_index for i in cut.issues] == [0, 0, 0]
    assert cut.intact_calls == [] and cut.damaged_indices == {0}
    assert cut.to_message(drop_damaged=True).tool_calls is None
    assert cut.to_message().tool_calls == cut.tool_calls
    for size in (1, 2, 5):
        assert run(text, split(text, size)).result == cut


def test_nesting_past_the_limit_is_an_error_not_a_recursion() -> None:
    result = run("<<f a=1 l=" + "[" * 10 + "]" * 10 + ">> after").result
    assert calls(result) == [("f", {"a": 1})]
    assert kinds(result) == ["broken_call"]
    assert "deeper than 5" in result.issues[0].message
    assert result.content == " after"


def test_text_after_the_stop_token_is_content_reported_once_per_stop() -> None:
    result = run("a$b c$$d").result
    assert result.content == "ab cd"
    assert kinds(result) == ["text_after_stop", "repeated_stop", "repeated_stop", "text_after_stop"]


# --------------------------------------------------------------------------- holdback


def test_text_that_cannot_start_a_marker_is_sent_at_once() -> None:
    stream = toy.stream()
    events = stream.feed("plain words, nothing held")
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["plain words, nothing held"]


def test_text_is_held_back_only_from_a_character_that_could_start_a_marker() -> None:
    stream = toy.stream()
    first = stream.feed("some text <")
    assert "".join(e.text for e in first if isinstance(e, TextDelta)) == "some text "
    second = stream.feed("x more")  # "<x" is text after all
    assert "".join(e.text for e in second if isinstance(e, TextDelta)) == "<x more"


def test_a_token_that_could_still_grow_waits_for_the_holdback() -> None:
    stream = toy.stream()
    early = stream.feed("<<f a=12") + stream.feed("3")  # the number may still go on
    assert not any(isinstance(e, ToolCallDelta) for e in early)
    events = stream.feed(">> ok")
    ends = [e for e in events if isinstance(e, ToolCallEnd)]
    assert [e.call.function.arguments for e in ends] == [{"a": 123}]


def test_a_string_argument_streams_as_it_arrives() -> None:
    stream = toy.stream()
    # The name is whole once a blank follows it: the call starts (the quote may be a string token).
    assert [type(e) for e in stream.feed('<<f s="')] == [ToolCallStart]
    sent = [stream.feed(piece) for piece in ("abc", "def", 'g"', ">>", " ")]
    fragments = [[e.arguments for e in events if isinstance(e, ToolCallDelta)] for events in sent]
    # The call is sent whole in the delta that closes it, not when the next text arrives.
    assert fragments == [['{"s": "', "abc"], ["def"], ["g"], ['"', "}"], []]
    assert [type(e) for e in sent[-2]] == [ToolCallDelta, ToolCallDelta, ToolCallEnd]
    assert [type(e) for e in sent[-1]] == [TextDelta]


# --------------------------------------------------------------------------- work stays linear


N = 20_000
WHOLE_WORK = 8
SLACK = 256


def budget(length: int, chunk: int) -> int:
    """Work allowed for ``length`` characters fed in ``chunk``-character chunks (the held-back tail
    is looked at again on each feed)."""
    return (WHOLE_WORK + 2 * toy.syntax().holdback // chunk) * length + SLACK


ADVERSARIAL = {
    "plain_text": "words and more words " * (N // 21),
    "less_than_signs": "<" * N,
    "unterminated_string_in_a_list": '<<f l=["' + "x" * N,
    "unterminated_string_argument": '<<f s="' + "x" * N,
    "many_broken_calls": "<<f ? >> " * (N // 9),
    "many_calls": "<<f a=1>> " * (N // 10),
    "unclosed_call_then_text": "<<f a=1 " + "y " * (N // 2),
    "deep_lists": "<<f l=" + "[" * (N // 2),
}


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_work_is_linear_whatever_the_chunking(name: str) -> None:
    text = ADVERSARIAL[name]
    whole = run(text)
    assert whole.work <= WHOLE_WORK * len(text) + SLACK, f"whole: {whole.work} for {len(text)} chars"
    for chunk in (1, 4):
        chunked = run(text, split(text, chunk))
        assert chunked.work <= budget(len(text), chunk), f"{chunk}-char chunks: {chunked.work}"
        assert chunked.result == whole.result


def test_a_broken_block_in_small_chunks_costs_no_more_for_more_resync_markers() -> None:
    """A rejected block that keeps arriving is searched for its end once per character, whatever
    the number of resync markers (one search for all of them, not one per marker)."""
    many = toy.syntax(resync_before=("<<", "$", *(f"@@@@@@@@{i}" for i in range(8))))
    text = "<<f ? " + "x " * (N // 2) + "@@@@@@@@3 tail"
    whole = run(text, syntax=many)
    for chunk in (1, 4):
        chunked = run(text, split(text, chunk), syntax=many)
        assert chunked.work <= budget(len(text), chunk), f"{chunk}-char chunks: {chunked.work}"
        assert chunked.result == whole.result
    assert whole.result.content.endswith("@@@@@@@@3 tail")


def test_the_work_counter_counts_what_is_lexed() -> None:
    small, big = run("a" * 1_000), run("a" * 10_000, split("a" * 10_000, 4))
    assert small.work >= 1_000 and big.work >= 10_000


# --------------------------------------------------------------------------- strict mode


def test_strict_mode_raises_at_the_first_problem() -> None:
    with pytest.raises(codec.ParseError) as error:
        run("ok <<f x=1 ? >>", strict=True)
    assert error.value.pos == 11 and (error.value.line, error.value.column) == (1, 12)


def test_a_failed_strict_stream_stays_failed() -> None:
    stream = toy.stream(strict=True)
    with pytest.raises(codec.ParseError):
        stream.feed("ok <<f x=1 ? >> more")
    for again in (lambda: stream.feed("more"), stream.close):
        with pytest.raises(codec.CodecError, match=r"failed at line 1, column 12 \(offset 11\)") as error:
            again()
        assert not isinstance(error.value, codec.ParseError)


def test_a_failure_found_when_closing_also_stays() -> None:
    stream = toy.stream(strict=True)
    stream.feed("<<f a=1")
    with pytest.raises(codec.ParseError):
        stream.close()
    with pytest.raises(codec.CodecError, match="failed"):
        stream.close()


def test_feed_after_close_and_wrong_types_are_errors() -> None:
    stream = toy.stream()
    stream.close()
    assert stream.close() == []
    with pytest.raises(codec.CodecError, match="after close"):
        stream.feed("x")
    with pytest.raises(TypeError, match="bytes"):
        toy.stream().feed(b"x")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- properties

PIECES = (
    "<<",
    ">>",
    "<",
    ">",
    "$",
    "f",
    "g ",
    " ",
    "\n",
    "a=",
    "s=",
    "l=",
    "1",
    "23",
    '"',
    '"x y"',
    "[",
    "]",
    ",",
    "?",
    "bad",
    "text é ",
)
replies = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)


@examples(200)
@given(text=replies, seed=st.integers(0, 2**32 - 1))
def test_every_chunking_gives_the_whole_parse(text: str, seed: int) -> None:
    whole = run(text, events=False).result
    chunks = split(text, random.Random(seed), max_size=6)
    events, result = events_of(text, chunks)
    assert result == whole
    assert_append_only(events, result)
    assert_events_rebuild(events, result)
    assert events_of(text, list(text))[1] == whole


@examples(200)
@given(text=replies)
def test_the_fast_path_means_what_the_rules_mean(text: str) -> None:
    rules_only = toy.syntax(fast_terminals={})
    assert run(text).result == run(text, syntax=rules_only).result
    assert run(text, list(text)).result == run(text, list(text), syntax=rules_only).result


@examples(200)
@given(text=replies)
def test_strict_raises_exactly_when_lenient_reports_issues(text: str) -> None:
    lenient = run(text).result
    try:
        strict = run(text, strict=True).result
    except codec.ParseError as error:
        assert lenient.issues, f"strict raised {error} on a reply with no issue"
        assert 0 <= error.pos <= len(text)
    else:
        assert not lenient.issues
        assert strict == lenient


# --------------------------------------------------------------------------- reasoning the prompt opened

LOOKING = toy.syntax(**toy.REASONING_LOOKAHEAD)


def reasoning_run(text: str, chunks: list[str] | None = None, **kwargs: Any) -> Stream:
    return run(text, chunks, syntax=LOOKING, **kwargs)


def test_a_closer_without_an_opener_ends_reasoning_the_prompt_opened() -> None:
    text = "Let me think. </think>Done <<f a=1>>"
    result = reasoning_run(text).result
    assert (result.reasoning, result.content, calls(result)) == ("Let me think. ", "Done ", [("f", {"a": 1})])
    assert kinds(result) == ["reasoning_without_opener"]
    assert result.issues[0].pos == text.index("</think>")
    for chunks in (list(text), split(text, 3)):
        assert reasoning_run(text, chunks).result == result


def test_a_prompt_says_whether_it_opened_reasoning() -> None:
    text = "Let me think. </think>Done"
    opened = reasoning_run(text, prompt="...<think>").result
    assert (opened.reasoning, opened.content, kinds(opened)) == ("Let me think. ", "Done", [])
    not_opened = reasoning_run(text, prompt="...").result
    assert (not_opened.reasoning, not_opened.content, kinds(not_opened)) == ("", text, [])


@pytest.mark.parametrize(
    "text",
    [
        "<think>x</think>y",  # the reply opens its reasoning itself
        "a <<f a=1>> </think>",  # a call first: the reply did not start in reasoning
        "a$ </think>",  # the stop token first
        "a" * 70 + "</think>",  # the closer past the lookahead (64)
        "no closer at all",
    ],
)
def test_reasoning_is_not_read_where_the_reply_shows_it_was_not_opened(text: str) -> None:
    result = reasoning_run(text).result
    assert "reasoning_without_opener" not in kinds(result)
    assert result.reasoning == ("x" if text.startswith("<think>") else "")


def test_the_text_waits_only_until_the_reply_decides() -> None:
    stream = Stream(LOOKING)
    assert stream.feed("plain words") == []  # a closer may still come
    assert stream.feed(" and <<") != []  # a call opener: not reasoning; the text goes out
    quick = Stream(LOOKING, prompt="")
    assert [e.text for e in quick.feed("plain words") if isinstance(e, TextDelta)] == ["plain words"]
    long = Stream(LOOKING)
    assert long.feed("x" * 80) != []  # past the lookahead (64, and the longest marker): content


def test_strict_mode_raises_at_the_closer_without_an_opener() -> None:
    with pytest.raises(codec.ParseError) as error:
        reasoning_run("abc</think>", strict=True)
    assert error.value.pos == 3 and error.value.kind == "reasoning_without_opener"


def test_the_reasoning_lookahead_looks_at_each_character_once() -> None:
    text = "x" * 60 + "<" * 2_000
    for chunk in (1, 4):
        assert reasoning_run(text, split(text, chunk)).work <= budget(len(text), chunk)


@examples(200)
@given(text=st.lists(st.sampled_from((*PIECES, "<think>", "</think>", "</thi", "nk>")), max_size=40).map("".join))
def test_reasoning_lookahead_streams_like_it_parses(text: str) -> None:
    whole = reasoning_run(text, events=False).result
    for chunks in (list(text), split(text, random.Random(text), max_size=6)):
        stream = Stream(LOOKING)
        events: list[Event] = []
        for chunk in chunks:
            events += stream.feed(chunk)
        events += stream.close()
        assert stream.result == whole
        assert_append_only(events, stream.result)
        assert_events_rebuild(events, stream.result)


# --------------------------------------------------------------------------- two fast lexers at one place

TWO_LEXERS = r"""
start: items?
items: items _item | _item
_item: text | tag | marked
text: TEXT
tag: TAG
marked: MARKED
%declare TAG MARKED
TEXT: /[^<]+/
"""


class _Until:
    """Wakes once ``close`` has arrived."""

    def __init__(self, close: str) -> None:
        self.close = close

    def scan(self, text: str) -> bool:
        return self.close in text


def test_a_woken_watch_tells_only_its_own_lexer_to_decide() -> None:
    """When the watch of one fast lexer wakes, the text is final for that lexer only: another
    lexer at the same place is asked as in a whole parse, and may still wait for more text."""
    from codec._lark import CompiledGrammar

    told: list[tuple[str, int, bool]] = []

    def marked(text: str, pos: int, final: bool) -> Any:
        """``<...>!``: undecided (None) until the character after ``>`` has arrived."""
        told.append(("MARKED", pos, final))
        end = text.find(">", pos)
        if end < 0 or (end + 1 == len(text) and not final):
            return None
        return (text[pos : end + 2], end + 2) if text.startswith("!", end + 1) else None

    def tag(text: str, pos: int, final: bool) -> Any:
        """``<...>``, watched until its ``>`` arrives."""
        told.append(("TAG", pos, final))
        end = text.find(">", pos)
        if end >= 0:
            return text[pos : end + 1], end + 1
        return None if final else _Until(">")

    syntax = Syntax(
        grammar=CompiledGrammar(TWO_LEXERS),
        builder=toy.Builder,
        text_terminals={"TEXT": "content"},
        blocks={},
        fast_terminals={"MARKED": marked, "TAG": tag},
        holdback=2,
    )
    text = "x <b>! y <c> z"
    whole = Stream(syntax)
    whole.feed(text)
    whole.close()
    for chunks in (list(text), split(text, 2), split(text, 3)):
        told.clear()
        stream = Stream(syntax)
        for chunk in chunks:
            stream.feed(chunk)
        fed_all = len(told)
        stream.close()
        assert stream.result == whole.result, chunks
        # While the reply was arriving, MARKED was never told its text was final.
        assert not [t for t in told[:fed_all] if t[0] == "MARKED" and t[2]], chunks
