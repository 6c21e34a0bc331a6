"""Format-independent property tests, run for every registered format (hypothesis, derandomized).

* bad input: arbitrary text (junk, the format's markers and their fragments, slices of its golden
  replies), with or without tools, never raises in lenient mode and raises nothing but
  ``ParseError`` in strict mode, exactly when lenient parsing reports issues;
* chunking invariance: any chunking of arbitrary text, and of replies rendered from generated
  messages, gives exactly the whole parse, with append-only events that rebuild the message;
* truncation: every prefix of every golden reply parses without raising, and a call that is
  complete before the cut is kept unchanged;
* adversarial inputs (per format): complete, with the lexer's ``stream.work`` linear in the length.

What is particular to a format lives in its profile, ``tests/formats/<name>.py`` (markers, syntax
snippets, plain text, a broken block, its call closer, adversarial inputs); every test here fails for
a registered format without one. Known parser bugs are ``xfail(strict=True)``, so that a fix shows up
as XPASS: per adversarial input (``Adversarial.xfail``, ``Profile.generic_xfail``) or per generic test
(``Profile.test_xfail``). A bug that a whole family of inputs hits is instead left out of the generic
tests by ``Profile.known_bugs`` and reproduced by an xfail test of the format's own module.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

import pytest
import strategies
from formats import PROFILES, Adversarial, N, profile
from harness import (
    CHUNK,
    WHOLE_WORK,
    WORK_SLACK,
    GoldenCase,
    assert_append_only,
    assert_streams_like,
    chunked_budget,
    examples,
    load_golden,
    parse_char_by_char,
    parse_chunked,
    parse_whole,
    run_chunks,
    sample_cuts,
    split,
)
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.strategies import DrawFn

import codec
from codec.formats import reply_owner
from codec.models import TextDelta, ToolCallEnd

FORMATS = codec.formats()


# --------------------------------------------------------------------------- per-format profiles


def _xfail(name: str, key: str) -> list[Any]:
    """The strict xfail mark of a known bug of format ``name`` in the generic test ``key`` (see
    :attr:`Profile.test_xfail`), if its profile names one. A format without a profile gets no mark:
    its tests fail at :func:`profile`, saying what to add."""
    reason = PROFILES[name].test_xfail.get(key) if name in PROFILES else None
    return [pytest.mark.xfail(strict=True, reason=reason)] if reason else []


def _params_for(test: str) -> list[Any]:
    """Every format as a parameter of the generic test ``test_<test>``, marked xfail (strict) where its
    Profile names a known bug in that test."""
    return [pytest.param(name, marks=_xfail(name, test)) for name in FORMATS]


def hits_known_bug(name: str, text: str, prompt: str | None = None) -> bool:
    """Whether ``text`` hits a known parser bug of format ``name`` (see :attr:`Profile.known_bugs`)."""
    return any(hits(text, prompt) for _, hits in profile(name).known_bugs)


@cache
def adversarial(name: str) -> dict[str, Adversarial]:
    """The format's adversarial inputs, after those every format gets (plain text, newlines, '<',
    and its golden replies one after another)."""
    replies = "\n".join(case.text for case in golden(name) if not case.xfail)
    generic = {
        "plain_text": "Olá mundo, " * (N // 11),
        "newlines": "\n" * N,
        "less_than_signs": "<" * N,
    }
    if replies:
        generic["golden_replies_repeated"] = (replies + "\n") * (N // (len(replies) + 1) + 1)
    known = profile(name).generic_xfail
    return {**{k: Adversarial(v, xfail=known.get(k)) for k, v in generic.items()}, **profile(name).adversarial()}


# --------------------------------------------------------------------------- helpers


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def check_strict(fmt: codec.Format, text: str, lenient: codec.ParseResult, **kwargs: Any) -> None:
    """Strict mode raises only ParseError, and does so exactly when lenient parsing reports issues."""
    try:
        strict = fmt.parse(text, strict=True, **kwargs)
    except codec.ParseError as exc:
        assert 0 <= exc.pos <= len(text)
        assert lenient.issues, f"strict mode raised {exc} but lenient parsing reports no issue"
        return
    assert not lenient.issues, f"strict mode accepted a reply with issues {[i.kind for i in lenient.issues]}"
    assert strict == lenient


@cache
def golden(name: str) -> tuple[GoldenCase, ...]:
    return tuple(load_golden(name))


@cache
def golden_tools(name: str) -> tuple[list[dict[str, Any]] | None, ...]:
    """None and every distinct tool list of the format's golden cases."""
    found: dict[str, list[dict[str, Any]]] = {}
    for case in golden(name):
        if case.tools is not None:
            found.setdefault(json.dumps(case.tools, sort_keys=True), case.tools)
    return (None, *found.values())


# --------------------------------------------------------------------------- bad input

_chars = st.characters(codec="utf-8")  # every code point but the surrogates
#: Junk any format may meet: quotes, escapes, brackets, literals, whitespace, control and wide characters.
JUNK = (
    '"',
    "'",
    "\\",
    "\\n",
    "\\u00e9",
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
    "<",
    ">",
    "|",
    "/",
    "=",
    ":",
    ",",
    "true",
    "True",
    "None",
    "null",
    "1",
    "-",
    "1e400",
    "NaN",
    " ",
    "\n",
    "\r\n",
    "\t",
    "\x00",
    "\u2028",
    "é",
    "🙂",
    "x",
)


def _cuts(markers: tuple[str, ...]) -> list[str]:
    """Every marker's proper prefixes and suffixes (a marker cut by a chunk boundary or a truncation)."""
    return sorted(
        {m[:k] for m in markers for k in range(1, len(m))} | {m[k:] for m in markers for k in range(1, len(m))}
    )


@cache
def bad_texts(name: str) -> st.SearchStrategy[str]:
    """Arbitrary replies for format ``name``: junk, its markers and their fragments, its call syntax,
    and slices of its golden replies."""
    markers = profile(name).markers
    texts = [case.text for case in golden(name) if case.text]

    @st.composite
    def golden_slice(draw: DrawFn) -> str:
        text = draw(st.sampled_from(texts))
        start = draw(st.integers(0, len(text) - 1))
        return text[start : start + draw(st.integers(1, 60))]

    pieces = st.sampled_from(JUNK + markers + profile(name).snippets + tuple(_cuts(markers)))
    options = [pieces, pieces, st.text(_chars, max_size=3)] + ([golden_slice()] if texts else [])
    piece = st.one_of(*options)
    return st.lists(piece, max_size=30).map("".join)


_sizes = st.lists(st.integers(1, 8), min_size=1, max_size=6)


def draw_bad_reply(name: str, data: st.DataObject) -> tuple[codec.Format, str, list[dict[str, Any]] | None]:
    """Format ``name``, an arbitrary reply for it (not one of its known bugs) and tools of its golden cases."""
    text = data.draw(bad_texts(name), label="text")
    assume(not hits_known_bug(name, text))
    return codec.get_format(name), text, data.draw(st.sampled_from(golden_tools(name)), label="tools")


@pytest.mark.parametrize("name", FORMATS)
@examples(60)
@given(data=st.data())
def test_arbitrary_text_never_raises(name: str, data: st.DataObject) -> None:
    fmt, text, tools = draw_bad_reply(name, data)
    lenient = fmt.parse(text, tools=tools)
    check_strict(fmt, text, lenient, tools=tools)


@pytest.mark.parametrize("name", FORMATS)
@examples(60)
@given(data=st.data())
def test_arbitrary_text_streams_like_it_parses(name: str, data: st.DataObject) -> None:
    fmt, text, tools = draw_bad_reply(name, data)
    sizes = data.draw(_sizes, label="sizes")
    whole = fmt.parse(text, tools=tools)
    run = parse_chunked(fmt, text, sizes, tools=tools)
    assert_streams_like(run, whole)
    with pytest.raises(codec.ParseError) if whole.issues else _nothing():
        parse_chunked(fmt, text, sizes, tools=tools, strict=True)


# --------------------------------------------------------------------------- rendered replies


@st.composite
def rendered_replies(draw: DrawFn, name: str) -> tuple[str, list[dict[str, Any]] | None]:
    """A reply that ``render_reply`` writes for a generated assistant message, and the tools to parse it with."""
    tools = draw(st.one_of(st.none(), strategies.tools()))
    message: dict[str, Any] = {"role": "assistant", "content": draw(st.one_of(st.none(), strategies.texts()))}
    if draw(st.integers(0, 3)):
        message["tool_calls"] = draw(strategies.tool_calls(tools, string_arguments=False))
    return codec.get_format(name).render_reply(message), tools


@pytest.mark.parametrize("name", FORMATS)
@examples(60)
@given(data=st.data())
def test_rendered_replies_stream_like_they_parse(name: str, data: st.DataObject) -> None:
    fmt = codec.get_format(name)
    reply, tools = data.draw(rendered_replies(name), label="reply")
    sizes = data.draw(st.one_of(st.just([1]), st.lists(st.integers(1, 16), min_size=1, max_size=8)), label="sizes")
    whole = fmt.parse(reply, tools=tools)
    run = parse_chunked(fmt, reply, sizes, tools=tools)
    assert_streams_like(run, whole)


# --------------------------------------------------------------------------- truncation


def _truncation_params(test: str) -> list[Any]:
    """Every golden case that is not a known parser bug, marked xfail (strict) where the format's Profile
    names a known bug of ``test_<test>`` on that case (``test_xfail["<test>/<case>"]``)."""
    params = []
    for name in FORMATS:
        for case in golden(name):
            if case.xfail:
                continue
            params.append(pytest.param(case, id=case.id, marks=_xfail(name, f"{test}/{case.name}")))
    return params


@pytest.mark.parametrize("case", _truncation_params("every_truncation_never_raises"))
def test_every_truncation_never_raises(case: GoldenCase) -> None:
    fmt = codec.get_format(case.format)
    closer = profile(case.format).call_closer
    full = fmt.parse(case.text, **case.kwargs())
    # When the reply holds exactly one closer per call, the k-th closer ends the k-th call.
    closers_end_calls = bool(closer) and case.text.count(closer) == len(full.tool_calls)
    for cut in sample_cuts(case.text, profile(case.format).markers):
        prefix = case.text[:cut]
        if hits_known_bug(case.format, prefix, case.prompt):
            continue
        lenient = fmt.parse(prefix, **case.kwargs())
        check_strict(fmt, prefix, lenient, **case.kwargs())
        if closers_end_calls:
            done = prefix.count(closer)
            assert lenient.tool_calls[:done] == full.tool_calls[:done], f"a complete call changed at cut {cut}"


@pytest.mark.parametrize("case", _truncation_params("a_call_the_stream_finished_survives_truncation"))
def test_a_call_the_stream_finished_survives_truncation(case: GoldenCase) -> None:
    """Once the stream has sent a call's ToolCallEnd, a reply cut at that point still gives that call."""
    fmt = codec.get_format(case.format)
    stream = fmt.stream(**case.kwargs())
    ended: list[tuple[int, ToolCallEnd]] = []
    for fed, char in enumerate(case.text, 1):
        ended += [(fed, e) for e in stream.feed(char) if isinstance(e, ToolCallEnd)]
    for fed, end in ended:
        for cut in range(fed, len(case.text) + 1, max(1, (len(case.text) - fed) // 8)):
            if hits_known_bug(case.format, case.text[:cut], case.prompt):
                continue
            calls = fmt.parse(case.text[:cut], **case.kwargs()).tool_calls
            assert calls[end.index] == end.call, f"call {end.index} (ended after {fed} chars) changed at cut {cut}"


# --------------------------------------------------------------------------- lossless


@pytest.mark.parametrize("name", _params_for("rejected_block_is_kept_verbatim"))
def test_rejected_block_is_kept_verbatim(name: str) -> None:
    fmt = codec.get_format(name)
    block = profile(name).broken_block
    text = "Sure.\n" + block
    result = fmt.parse(text)
    assert [i.kind for i in result.issues] == ["invalid_tool_call"]
    assert result.content == text


# --------------------------------------------------------------------------- adversarial inputs, linear work


def _adversarial_params() -> list[Any]:
    """Every format's adversarial inputs, each reply syntax's once: formats that share a compiled
    reply syntax (prompt variants) parse a text alike, so a text another of them gave already
    (same tools) would only repeat its test."""
    params = []
    seen: set[tuple[str, str, str]] = set()
    for name in FORMATS:
        if name not in PROFILES:  # the test fails at profile(name), saying what to add
            params.append(pytest.param(name, "profile", id=f"{name}/profile"))
            continue
        owner = reply_owner(name)
        for key, entry in adversarial(name).items():
            same = (owner, entry.text, json.dumps(entry.tools, sort_keys=True))
            if same in seen:
                continue
            seen.add(same)
            marks = [pytest.mark.xfail(strict=True, reason=entry.xfail, raises=entry.raises)] if entry.xfail else []
            params.append(pytest.param(name, key, id=f"{name}/{key}", marks=marks))
    return params


@pytest.mark.parametrize(("name", "key"), _adversarial_params())
def test_adversarial_input_completes_in_linear_work(name: str, key: str) -> None:
    fmt = codec.get_format(name)
    entry = adversarial(name)[key]
    text, tools = entry.text, entry.tools
    whole = parse_whole(fmt, text, tools=tools)
    assert whole.work <= WHOLE_WORK * len(text) + WORK_SLACK, f"whole parse: work {whole.work} for {len(text)} chars"
    chunked = parse_chunked(fmt, text, CHUNK, tools=tools)
    assert chunked.work <= chunked_budget(fmt, len(text)), f"{CHUNK}-char chunks: work {chunked.work}"
    assert chunked.result == whole.result
    assert_append_only(chunked.events, chunked.result)
    with pytest.raises(codec.ParseError) if whole.result.issues else _nothing():
        fmt.parse(text, tools=tools, strict=True)


@pytest.mark.parametrize("name", FORMATS)
def test_work_counter_grows_with_the_input(name: str) -> None:
    """Guard for the linear-work assertions: the counter must really count the characters lexed."""
    fmt = codec.get_format(name)
    small, big = "a" * 1_000, "a" * 10_000
    assert parse_whole(fmt, small).work >= len(small)
    assert parse_chunked(fmt, big, 4).work >= len(big)


# --------------------------------------------------------------------------- streaming basics


@pytest.mark.parametrize("name", _params_for("text_that_cannot_start_a_marker_is_not_held_back"))
def test_text_that_cannot_start_a_marker_is_not_held_back(name: str) -> None:
    """Given the prompt (here one that opens nothing), text is held back only while it could start a
    marker; without it, a format whose prompts may open reasoning first reads whether this one did."""
    text = profile(name).plain_text
    stream = codec.get_format(name).stream(prompt="")
    events = stream.feed(text)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == text
    syntax = codec.get_format(name).syntax()
    if syntax.reasoning_close is None:
        assert "".join(e.text for e in codec.get_format(name).stream().feed(text) if isinstance(e, TextDelta)) == text


@pytest.mark.parametrize("name", FORMATS)
def test_run_chunks_accepts_any_iterable(name: str) -> None:
    """Harness self-check: chunks from a generator, empty chunks and char-by-char all agree."""
    fmt = codec.get_format(name)
    assert golden(name), f"{name} has no golden cases: add tests/golden/{name}/"
    case = max(golden(name), key=lambda c: (len(c.expected["tool_calls"]), -len(c.expected["issues"])))
    whole = fmt.parse(case.text, **case.kwargs())
    assert whole.tool_calls
    assert run_chunks(fmt, iter(split(case.text, [0, 5, 0, 2])), **case.kwargs()).result == whole
    assert parse_char_by_char(fmt, case.text, **case.kwargs()).result == whole


_LOOKAHEAD_FORMATS = [name for name in FORMATS if codec.get_format(name).syntax().reasoning_close is not None]


@pytest.mark.parametrize("name", _LOOKAHEAD_FORMATS)
def test_a_reply_that_starts_inside_reasoning_is_read_so_without_its_prompt(name: str) -> None:
    """A prompt that ends in an open ``<think>`` block makes the reply start with reasoning and a bare
    closer: without the prompt the reply says so (reported), with it nothing is reported, and with a
    prompt that opened nothing the closer is text; whole and streamed alike."""
    fmt = codec.get_format(name)
    close = fmt.syntax().reasoning_close
    assert close is not None
    reply = f"Let me think.\n{close}\n\nIt is sunny."
    guessed = fmt.parse(reply)
    assert (guessed.reasoning, guessed.content) == ("Let me think.", "It is sunny.")
    assert [(i.kind, i.pos) for i in guessed.issues] == [("reasoning_without_opener", reply.index(close))]
    opened = "<|im_start|>assistant\n<think>\n"
    opens = fmt.syntax().prompt_opens_reasoning
    if opens is not None and not opens(opened) and fmt.wire.reasoning:  # a reasoning opener of its own
        opened = f"assistant\n{fmt.wire.reasoning[0]}\n"
    told = fmt.parse(reply, prompt=opened)
    assert (told.reasoning, told.content, told.issues) == ("Let me think.", "It is sunny.", [])
    assert fmt.parse(reply, prompt="").content == reply
    for size in (1, 3, 7):
        assert parse_chunked(fmt, reply, size).result == guessed
    # A call before the closer says that the reply started outside reasoning.
    call = fmt.render_reply({"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]})
    after_call = fmt.parse(f"{call}{close}")
    assert after_call.reasoning == "" and [c.function.name for c in after_call.tool_calls] == ["f"]
    assert "reasoning_without_opener" not in [i.kind for i in after_call.issues]
