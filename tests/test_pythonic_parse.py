"""Property tests shared by the two Python-list formats, ``gemma3_tool_code`` and ``deepseek_pythonic``
(hypothesis, derandomized).

The format-independent properties (bad input, truncation, chunking, linear work on fixed adversarial
inputs) are in ``test_parse_properties.py``; the golden replies in ``golden/<name>/``; the renderers in
``test_<name>_render.py`` and ``test_render.py``. Here, for each format (and for
``Gemma3ToolCode(corrected=True)``):

* the fast paths read exactly what the grammar's rules read, on rendered replies and odd lists;
* the corrected Gemma 3 template's replies parse to the same calls as the seed's;
* what the round trip (``test_round_trip.py``) leaves out really does not round trip: each format's
  exclusions (``key_ok``, ``string_ok``, ``args_ok``, ``content_ok``, ``reasoning_ok`` of its ``Spec``
  in ``formats/_pythonic.py``), ``test_exclusions_are_real``;
* no catastrophic backtracking: generated unterminated strings and long prose full of brackets
  are lexed in work linear in their length (``stream.work``, never wall-clock);
* a member made from a spec alone, with its list in a block of tokens of its own, reads its replies
  back, and members whose specs parse alike share one syntax.

Known parser bugs are ``xfail(strict=True)`` tests at the end, each with a minimal reproducer, so
that a fix shows up as XPASS.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

import pytest
import strategies
from formats._pythonic import (
    CORRECTED,
    DEEPSEEK,
    DS_STOP,
    FENCE,
    G3_STOP,
    GEMMA3,
    LFM2_STOP,
    NAMES,
    RAW_PIECES,
    SPECS,
    arguments_ok,
    messages,
    raw_string_ok,
    seed_args_ok,
)
from harness import (
    CHUNK,
    WHOLE_WORK,
    WORK_SLACK,
    assert_streams_like,
    call_message,
    chunked_budget,
    examples,
    parse_chunked,
    parse_whole,
)
from hypothesis import assume, given
from hypothesis import strategies as st
from wire_toys import call_list as toy

import codec
from codec import wire
from codec.models import TextDelta, ToolCallEnd
from codec.stream import Syntax
from codec.testing import grammars
from codec.testing.assertions import assert_round_trip, assert_stream_matches_parse


def _without_fast_path(fmt: codec.Format) -> Syntax:
    return dataclasses.replace(fmt.syntax(), fast_terminals={})


_RULES_ONLY = {name: _without_fast_path(spec.fmt) for name, spec in SPECS.items()}
#: Pieces of call lists the fast path must read exactly as the grammar's rules do, or leave to them.
_LIST_PIECES = (
    *RAW_PIECES,
    *("[f(", "g(", "a=", "b =", "=1", "1.5", "-2", ".5", "1.", "+3", "1e5", "'x'", "(1, 2)", "`", "1e999", "x", "\n"),
    *("02134", "-007", "0", '"\\ud800"', "'\\ud83d\\ude00'", '{"k": "\\udc00"}', '["\\ud83d\\ude00"]'),
)


@pytest.mark.parametrize("name", NAMES)
@examples(60)
@given(data=st.data())
def test_fast_path_reads_what_the_rules_read(name: str, data: st.DataObject) -> None:
    """The fast paths (whole lists, whole arguments) give exactly the result of the grammar's rules, on
    rendered replies and on lists glued together from odd pieces (which they must read the same way or
    leave alone), whole and streamed."""
    spec = SPECS[name]
    message, tools = data.draw(messages(name, with_tools=data.draw(st.booleans())))
    odd = data.draw(st.lists(st.sampled_from(_LIST_PIECES), max_size=12).map("".join))
    for text in (spec.fmt.render_reply(message), "[f(a=1, " + odd + ")]", odd + "[g(b=" + odd + ")]" + odd):
        rules = codec.Stream(_RULES_ONLY[name], tools=tools)
        rules.feed(text)
        rules.close()
        assert spec.fmt.parse(text, tools=tools) == rules.result
        # streamed, where whole arguments rather than whole lists take the fast path
        assert parse_chunked(spec.fmt, text, CHUNK, tools=tools).result == rules.result


@examples(60)
@given(data=st.data())
def test_corrected_and_seed_replies_parse_to_the_same_calls(data: st.DataObject) -> None:
    """A corrected Gemma 3 template separates keyword arguments (G1); the calls read back are the same."""
    message, _ = data.draw(messages("gemma3_tool_code", with_tools=False), label="message")
    seed, corrected = GEMMA3.parse(GEMMA3.render_reply(message)), GEMMA3.parse(CORRECTED.render_reply(message))
    assert corrected.issues == seed.issues == []
    assert corrected.tool_calls == seed.tool_calls
    assert corrected.content == seed.content
    if any(len(call["function"]["arguments"]) > 1 for call in message.get("tool_calls") or []):
        assert CORRECTED.render_reply(message) != GEMMA3.render_reply(message)


PROMPT_THINKING = "<|begin_of_sentence|><|User|>Hi<|Assistant|><think>"


@examples(40)
@given(data=st.data())
def test_deepseek_prompt_opening_reasoning_streams_like_it_parses(data: st.DataObject) -> None:
    """``enable_thinking=True``: the prompt ends with ``<think>``, the model writes the rest of the reply."""
    message, _ = data.draw(messages("deepseek_pythonic", with_tools=False), label="message")
    reasoning = data.draw(strategies.texts(5).map(lambda text: text.strip("\n")), label="reasoning")
    assume(reasoning and SPECS["deepseek_pythonic"].reasoning_ok(reasoning))
    assume(message["content"] is None or not message["content"].startswith("\n"))
    reply = DEEPSEEK.render_reply({**message, "reasoning_content": reasoning}).removeprefix("<think>")
    sizes = data.draw(st.lists(st.integers(1, 8), min_size=1, max_size=6), label="sizes")
    whole = DEEPSEEK.parse(reply, prompt=PROMPT_THINKING)
    assert whole.issues == []
    assert whole.reasoning == reasoning  # the line break after the prompt's <think> is markup
    assert whole.content == (message["content"] or "")
    run = parse_chunked(DEEPSEEK, reply, sizes, prompt=PROMPT_THINKING)
    assert_streams_like(run, whole)


@pytest.mark.parametrize("name", NAMES)
def test_exclusions_are_real(name: str) -> None:
    """What the predicates above exclude really does not round trip (so the exclusions stay honest)."""
    spec = SPECS[name]
    fmt = spec.fmt
    bad_arguments: list[dict[str, Any]] = [{"a b": 1}, {"": 1}, {"1a": 1}, {"-x": 1}, {"a=b": 1}, {"été": 1}]
    if spec.args_ok is seed_args_ok:
        bad_arguments += [{"a": 1, "e1": 2}, {"a": 2.5, "E-5": "x"}]
    if spec.string_ok is raw_string_ok:
        bad_arguments += [{"a": 'x", b=1'}, {"a": 'x"), y', "b": 1}, {"a": 'say "hi") now'}, {"a": 'a",)'}]
        bad_arguments += [{"a": "a\\nb"}, {"a": 'say \\"hi\\"'}, {"a": "C:\\\\share"}, {"a": "caf\\u00e9"}]
    if spec.stop == LFM2_STOP:  # single-quoted strings, nothing escaped: a quote or an escape misreads
        bad_arguments += [{"a": "it's"}, {"a": "x', b='y"}, {"a": "a\\nb"}, {"a": "back\\\\slash"}]
    for arguments in bad_arguments:
        assert not arguments_ok(spec, arguments), arguments
        result = fmt.parse(fmt.render_reply(call_message(arguments)))
        assert [c.function.arguments for c in result.tool_calls] != [arguments], arguments
    bad_contents = ["a<end_of_turn>b", "Use ```tool_code\n", "see [f(a=1)]"] if spec.stop == G3_STOP else []
    if spec.stop == DS_STOP:
        # (content opening with '<think>' and no '</think>' after it reads as reasoning, see the golden
        # case deepseek_pythonic/reply_ending_inside_reasoning_opened_by_the_reply)
        bad_contents = ["a<|end_of_sentence|>b", "see [f(a=1)]", "a</think>b"]
    if spec.stop == LFM2_STOP:
        bad_contents = ["a<|im_end|>b", "see [f(a=1)]", "a</think>b", "x<|tool_call_start|>"]
    for content in bad_contents:
        assert not spec.content_ok(content, False, False), content
        result = fmt.parse(fmt.render_reply({"role": "assistant", "content": content}))
        assert (result.content, result.reasoning, result.tool_calls, result.issues) != (content, "", [], []), content
    if spec.stop == DS_STOP:
        content = "Run this:\n```python\n"
        assert not spec.content_ok(content, True, False)
        assert fmt.parse(fmt.render_reply(call_message({"a": 1}, content))).tool_calls == []
        message = {"role": "assistant", "reasoning_content": "r", "content": "\nx"}
        assert not spec.content_ok("\nx", False, True)
        assert fmt.parse(fmt.render_reply(message)).content != "\nx"
        assert not spec.reasoning_ok("a</think>b")
        result = fmt.parse(fmt.render_reply({"role": "assistant", "reasoning_content": "a</think>b", "content": "ok"}))
        assert (result.reasoning, result.content) != ("a</think>b", "ok")


# --------------------------------------------------------------------------- linear work

#: Pieces of long text with brackets and quotes that open nothing, or open something never closed.
_PROSE_PIECES = (
    "See [1] and [note]. ",
    "[a, b] ",
    "x[0] = [2]; ",
    "[link](url) ",
    "[" + "a" * 70 + " ",
    "[f ",
    "[ f x",
    "( ",
    ") ",
    '"',
    "'",
    "`",
    "``",
    "<",
    "<end_of_turn",
    "<|end_of_sentence|",
    "</think",
    "\n",
    "é ",
    "word ",
)
_prose = st.lists(st.sampled_from(_PROSE_PIECES), min_size=1, max_size=12).map("".join)
#: Openings that leave a string (or a call) open until the end of the reply.
_OPENINGS = (
    '[f(a="',
    "[f(a='",
    '[f(a=["',
    "[f(a={'k': '",
    '[f(a=1, b="',
    "[f(",
    "[f(a=",
    FENCE + '[f(a="',
    FENCE + "f(",
)
#: What an unterminated string holds: anything but a quote that could close it (which would make it a
#: different input); markers, brackets, backslashes, line breaks. (deepseek strings full of '"' are the
#: known quadratic bug, see test_deepseek_quotes_in_a_long_string_stream_in_linear_work.)
_STRING_PIECES = ("x", "é", " ", "\\\\", "\\n", "\n", "(", ")", "[", "]", ",", "=", "<", "`", "```", G3_STOP, DS_STOP)
_string_body = st.lists(st.sampled_from(_STRING_PIECES), min_size=1, max_size=12).map("".join)
TARGET = 6_000  # characters: large enough that quadratic work is far over the linear budget


def _check_linear_work(fmt: codec.Format, text: str) -> None:
    whole = parse_whole(fmt, text)
    assert whole.work <= WHOLE_WORK * len(text) + WORK_SLACK, f"whole parse: work {whole.work} for {len(text)} chars"
    chunked = parse_chunked(fmt, text, CHUNK)
    assert chunked.work <= chunked_budget(fmt, len(text)), f"{CHUNK}-char chunks: work {chunked.work}"
    assert chunked.result == whole.result


@pytest.mark.parametrize("name", ["gemma3_tool_code", "deepseek_pythonic"])
@examples(12)
@given(data=st.data())
def test_long_prose_with_brackets_is_lexed_in_linear_work(name: str, data: st.DataObject) -> None:
    prose = data.draw(_prose, label="prose")
    text = prose * (TARGET // len(prose) + 1)
    assume(not text.lstrip().startswith("<think>"))
    _check_linear_work(SPECS[name].fmt, text)


@pytest.mark.parametrize("name", ["gemma3_tool_code", "deepseek_pythonic"])
@examples(12)
@given(data=st.data())
def test_unterminated_strings_are_lexed_in_linear_work(name: str, data: st.DataObject) -> None:
    opening = data.draw(st.sampled_from(_OPENINGS), label="opening")
    body = data.draw(_string_body, label="body")
    if name == "deepseek_pythonic":
        body = body.replace("\\", "")  # in a raw string, a backslash is text: '\\"' would close it
    text = opening + body * (TARGET // len(body) + 1)
    _check_linear_work(SPECS[name].fmt, text)


# --------------------------------------------------------------------------- nothing silently lost


_ZIP_TOOLS = [
    {"type": "function", "function": {"name": "f", "parameters": {"properties": {"zip": {"type": "string"}}}}}
]


@pytest.mark.parametrize(
    ("name", "reply"), [(GEMMA3.name, "```tool_code\n[f(zip=02134)]\n```"), (DEEPSEEK.name, "[f(zip=02134)]")]
)
def test_leading_zeros_are_reported_with_their_digits(name: str, reply: str) -> None:
    """``02134`` is no number JSON reads: the number its digits give, or the text where the tool
    declares a string; reported with its text either way, and strict raises."""
    fmt = SPECS[name].fmt
    for tools, value in ((None, 2134), (_ZIP_TOOLS, "02134")):
        result = fmt.parse(reply, tools=tools)
        assert result.tool_calls[0].function.arguments == {"zip": value}
        assert [(issue.kind, issue.pos, issue.text) for issue in result.issues] == [
            ("leading_zeros", reply.index("02134"), "02134")
        ]
        with pytest.raises(codec.ParseError) as raised:
            fmt.parse(reply, tools=tools, strict=True)
        assert raised.value.kind == "leading_zeros"


#: A call list whose calls each hold a list and nested values, for the cuts below.
_CUT_LIST = '[f(a=[1, 2], b={"k": [3]}, c="x(y)"), g(d=[[4], 5], e=6), h()]'


@pytest.mark.parametrize("name", ["gemma3_tool_code", "deepseek_pythonic"])
@pytest.mark.parametrize("fenced", [False, True])
def test_a_call_the_reply_ends_inside_is_never_intact(name: str, fenced: bool) -> None:
    """Wherever the reply ends inside a call (right after ``name(``, inside its first argument's
    list...), that call is reported cut (``truncated_call``) and is not among the intact calls:
    only a call whose ``)`` arrived may be, as in every other format."""
    fmt = codec.get_format(name)
    lead = FENCE if fenced else ""
    closes = [lead + _CUT_LIST[:at] for at in (_CUT_LIST.index("), g"), _CUT_LIST.index("), h"), len(_CUT_LIST) - 2)]
    names = ["f", "g", "h"]
    text = lead + _CUT_LIST
    for cut in range(len(lead) + 1, len(text)):
        result = fmt.parse(text[:cut])
        whole = [n for n, closed in zip(names, closes, strict=True) if cut > len(closed)]
        intact = [call.function.name for call in result.intact_calls]
        assert set(intact) <= set(whole), (text[:cut], intact)
        cut_calls = {issue.call_index for issue in result.issues if issue.kind == "truncated_call"}
        for index, call in enumerate(result.tool_calls):
            if call.function.name not in whole:
                assert index in cut_calls, (text[:cut], result.issues)
        assert_streams_like(parse_chunked(fmt, text[:cut], 3), result)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("value", ['"a\\ud800"', "'a\\udfff'", '{"k": "\\ud800"}', '["x\\udbff"]'])
def test_a_lone_surrogate_escape_is_replaced_and_reported(name: str, value: str) -> None:
    """A lone surrogate escape never reaches the arguments (no JSON encoder takes it): U+FFFD, reported."""
    fmt = SPECS[name].fmt
    reply = f"[f(a={value})]"
    result = fmt.parse(reply)
    assert "\ufffd" in json.dumps(result.tool_calls[0].function.arguments, ensure_ascii=False)
    assert "lone_surrogate" in [issue.kind for issue in result.issues]
    result.model_dump_json()
    result.to_message().model_dump_json()
    with pytest.raises(codec.ParseError):
        fmt.parse(reply, strict=True)


def test_a_surrogate_pair_in_a_python_string_is_joined() -> None:
    result = GEMMA3.parse("[f(a='\\ud83d\\ude00', b=\"\\ud83d\\ude00\")]")
    assert result.tool_calls[0].function.arguments == {"a": "\U0001f600", "b": "\U0001f600"}
    assert [issue.kind for issue in result.issues] == ["surrogate_pair"]


@pytest.mark.parametrize(
    ("reply", "kind", "text", "count"),
    [
        ("```tool_code\nsummary = read_file(filename='notes.txt')]\n```", "assignment", "summary =", 1),
        ("```tool_code\nprint(read_file(filename='notes.txt'))]\n```", "printed_call", "print(", 1),
        ("```tool_code\nx = f(a=1)\ny = g(b=2)]\n```", "assignment", "y =", 2),
    ],
)
def test_a_statement_refused_after_its_call_is_still_reported(reply: str, kind: str, text: str, count: int) -> None:
    """The grammar refuses the `]` after a statement's call before it reads the statement: the
    recovery reports the assignment or print it drops, with its text."""
    result = GEMMA3.parse(reply)
    assert (kind, reply.index(text), text) in [(issue.kind, issue.pos, issue.text) for issue in result.issues]
    assert [issue.kind for issue in result.issues].count(kind) == count  # each statement once


# --------------------------------------------------------------------------- linear work


class _CountingDecoder(json.JSONDecoder):
    """A JSON decoder that counts the characters of the documents handed to it: a failed decode costs
    the whole document's length (``json`` counts its lines up to the error)."""

    handed = 0

    def raw_decode(self, s: str, idx: int = 0) -> tuple[Any, int]:
        _CountingDecoder.handed += len(s)
        return super().raw_decode(s, idx)


@pytest.mark.parametrize("name", ["gemma3_tool_code", "deepseek_pythonic"])
def test_failed_json_values_cost_what_they_read(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken lists in a row, each with a JSON value the fast path fails to decode: eight times the lists,
    the same characters handed to the decoder per character (before, each failure was handed the rest of
    the reply, and json counted its lines from the start)."""
    from codec.wire import _call_list_fast

    kept = _call_list_fast._JSON_DECODER
    counting = _CountingDecoder(
        object_pairs_hook=kept.object_pairs_hook, parse_float=kept.parse_float, parse_constant=kept.parse_constant
    )
    monkeypatch.setattr(_call_list_fast, "_JSON_DECODER", counting)
    fmt = SPECS[name].fmt
    per_char = []
    for count in (500, 4000):
        text = "[f(a=[1,})]" * count
        _CountingDecoder.handed = 0
        stream = fmt.stream()
        stream.feed(text)
        stream.close()
        per_char.append(_CountingDecoder.handed / len(text))
    assert per_char[1] <= per_char[0] * 1.1


# --------------------------------------------------------------------------- issue positions

_NOOP = [{"type": "function", "function": {"name": "noop", "parameters": {"type": "object", "properties": {}}}}]
#: Values of the calls of broken lists: strings holding the list's own syntax, containers ending in a
#: number (which may still grow where a chunk ends), and a long string, so that the list outgrows the holdback.
_VALUES = ('"x"', '"a, b"', '"p", q="r"', '{"n": 20}', "[1, 20]", "20", '"' + "y" * 70 + '"')


@st.composite
def _broken_lists(draw: st.DrawFn) -> str:
    """A call list longer than the stream's holdback that breaks at its end: calls after blanks of
    every kind, some read by the rules and some by the recovery, depending on where the last chunk starts."""
    keys, values = st.sampled_from(("a", "b", "path", "filters")), st.sampled_from(_VALUES)
    args = st.lists(st.tuples(keys, values).map("=".join), min_size=1, max_size=3).map(", ".join)
    call = st.tuples(st.sampled_from(("e", "m", "noop", "search")), args).map(lambda c: f"{c[0]}({c[1]})")
    calls = draw(st.lists(call, min_size=2, max_size=3))
    opener = draw(st.sampled_from(("[", "```tool_code\n[", "```tool_code\n", "x [")))
    separator = draw(st.sampled_from((", ", ",  ", ",\n  ", ",")))
    return opener + separator.join(calls) + draw(st.sampled_from(("\n```", "", "\u2029", ")", "]")))


@pytest.mark.parametrize("name", NAMES)
@examples(90)
@given(data=st.data())
def test_issue_positions_agree_wherever_the_last_chunk_starts(name: str, data: st.DataObject) -> None:
    """Fed in two chunks split at every offset (the first one holding most of the reply, as a server's
    last chunks do), a broken list gives exactly the whole parse: the same issues at the same positions."""
    fmt = SPECS[name].fmt
    text = data.draw(_broken_lists())
    whole = fmt.parse(text, tools=_NOOP)
    for cut in range(len(text) + 1):
        assert parse_chunked(fmt, text, [cut, len(text)], tools=_NOOP).result == whole, f"cut at {cut}"


@pytest.mark.parametrize(
    ("name", "reply", "cut"),
    [
        (
            DEEPSEEK.name,
            '[e(a=""), m(path="nce|>[noop(), search="x", filters={"categ>ory": "music", "max_price": 20})\u2029',
            91,
        ),
        (
            GEMMA3.name,
            '```tool_coder(y="")\ne(zontent="def f(x):\\n    return {\'a\': [x, \\"y}'
            '\\n\\n# <parameter=z> </function>\\n")\\',
            -2,
        ),
    ],
)
def test_a_call_the_recovery_reads_is_where_its_name_is(name: str, reply: str, cut: int) -> None:
    """A call of a broken list is at its name, whether the recovery reads it (after the blanks its piece
    starts with) or the rules did before the list broke: the same for any last chunk."""
    fmt = SPECS[name].fmt
    whole = fmt.parse(reply, tools=_NOOP)
    assert parse_chunked(fmt, reply, [cut % len(reply), len(reply)], tools=_NOOP).result == whole
    for issue in whole.issues:
        if issue.kind == "unknown_tool":
            assert reply[issue.pos].isalpha(), issue


# --------------------------------------------------------------------------- streaming


@pytest.mark.parametrize("name", ["gemma3_tool_code", "deepseek_pythonic"])
def test_each_call_ends_before_the_next_one_arrives(name: str) -> None:
    """A call's ToolCallEnd is sent once its ')' (and what may follow it) has arrived, not at the end of the list."""
    fmt = SPECS[name].fmt
    message = {
        "role": "assistant",
        "tool_calls": [{"function": {"name": f"f{i}", "arguments": {"a": i}}} for i in range(20)],
    }
    reply = fmt.render_reply(message)
    stream = fmt.stream()
    ended_at: dict[int, int] = {}
    for fed, char in enumerate(reply, 1):
        ended_at |= {e.index: fed for e in stream.feed(char) if isinstance(e, ToolCallEnd)}
    ended_at |= {e.index: len(reply) for e in stream.close() if isinstance(e, ToolCallEnd)}
    assert sorted(ended_at) == list(range(20))
    for index in range(20):
        closed = reply.index(")", reply.index(f"f{index}(")) + 1  # characters fed when the call's ')' has arrived
        # The call reduces when the token after its ')' is fed, and a token is fed once `holdback`
        # characters follow it (or the reply ends).
        assert ended_at[index] <= min(closed + 1 + fmt.syntax().holdback, len(reply)), f"call {index}"


# --------------------------------------------------------------------------- known parser bugs


def test_deepseek_line_break_after_the_prompts_think_is_markup() -> None:
    reply = DEEPSEEK.render_reply({"role": "assistant", "reasoning_content": "Hmm.", "content": "Hi."})
    assert reply == "<think>\nHmm.\n</think>\n\nHi."
    assert DEEPSEEK.parse(reply).reasoning == "Hmm."
    assert DEEPSEEK.parse(reply.removeprefix("<think>"), prompt=PROMPT_THINKING).reasoning == "Hmm."


def test_deepseek_quotes_in_a_long_string_stream_in_linear_work() -> None:
    document = json.dumps([{"id": i, "name": f"item {i}", "tags": ["a", "b"]} for i in range(100)])
    reply = DEEPSEEK.render_reply(call_message({"path": "data.json", "content": document}))
    assert DEEPSEEK.parse(reply).tool_calls[0].function.arguments["content"] == document
    _check_linear_work(DEEPSEEK, reply)


def test_deepseek_first_words_are_not_held_back() -> None:
    """Given the prompt; without it the first words wait until the reply says whether the prompt
    opened reasoning (a ``</think>`` first), and come at the latest with the end of the reply."""
    stream = DEEPSEEK.stream(prompt="")
    events = stream.feed("Hello! How can I help?")
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello! How can I help?"
    stream = DEEPSEEK.stream()
    assert [e for e in stream.feed("Hello! How can I help?") if isinstance(e, TextDelta)] == []
    assert "".join(e.text for e in stream.close() if isinstance(e, TextDelta)) == "Hello! How can I help?"


# --------------------------------------------------------------------------- code fences


@pytest.mark.parametrize("name", ["gemma3_tool_code", "deepseek_pythonic"])
def test_code_fences_stream_like_they_parse_split_anywhere(name: str) -> None:
    """A code fence's opener and closer are text that must not be cut where they hold a backtick (the
    stream commits free text only up to a character that may start a marker): fed in two pieces split at
    every offset, with more than the holdback of text before each, the reply reads as it does whole."""
    fmt = SPECS[name].fmt
    hold = fmt.syntax().holdback
    # What follows each closer reads otherwise if the closer's backticks are left out of it.
    after = "tool_code\n[f(a=1)]" if name == "gemma3_tool_code" else "python\n[f(a=1)]"
    code = "\n```python\n" + "y = [g(b=2)]\n" * 15 + "\n```" + after
    text = "x" * (hold + 20) + code + "\n" + "z" * (hold + 20) + code
    whole = fmt.parse(text)
    assert len(whole.tool_calls) == 2 and whole.issues == []
    for cut in range(len(text) + 1):
        assert parse_chunked(fmt, text, [cut, len(text)]).result == whole, f"cut at {cut}"


# --------------------------------------------------------------------------- a member made from its spec

#: A member whose list is in a block of tokens of its own (as LFM2 writes ``<|tool_call_start|>[...]``),
#: with raw strings and reasoning: nothing of it but its spec.
BLOCK_SPEC = wire.WireSpec(
    "call_list",
    block=("<|calls|>", "<|/calls|>"),
    stop="<|end|>",
    reasoning=("<|think|>", "<|/think|>"),
    arguments="python",
    values="json_raw",
    separator=", ",
    argument_separator=", ",
)
BLOCK_MEMBER = wire.reply_format(BLOCK_SPEC, "block_toy")


@pytest.mark.parametrize("index", range(len(toy.MESSAGES)))
def test_a_member_with_a_block_of_its_own_reads_its_replies_back(index: int) -> None:
    """Round trip (whole, in chunks, char by char), the grammar's acceptance and detection, on the toy
    member's messages with the calls in a block and strings raw."""
    message = toy.MESSAGES[index]
    assert_round_trip(BLOCK_MEMBER, message, toy.TOOLS)
    reply = BLOCK_MEMBER.render_reply(message)
    assert any(re.search(pattern, reply) for pattern in BLOCK_MEMBER.reply_markers) == bool(message.get("tool_calls"))
    if grammars.available():
        choice = "required" if message.get("tool_calls") else "auto"
        grammar = BLOCK_MEMBER.grammar(toy.TOOLS, tool_choice=choice)
        assert grammars.llguidance_accepts(grammar, grammars.reply_without_stop(BLOCK_MEMBER, reply)), reply


def test_a_member_with_a_block_marks_a_call_cut_short_and_keeps_a_list_its_closer_was_cut_from() -> None:
    message = toy.MESSAGES[3]
    reply = BLOCK_MEMBER.render_reply(message).removesuffix("<|end|>")
    inside = reply[: reply.index(")]<|/calls|>")]
    result = assert_stream_matches_parse(BLOCK_MEMBER, inside, tools=toy.TOOLS)
    assert "truncated_call" in [issue.kind for issue in result.issues]
    # Cut in the block's closer, the calls are whole: what is left of the closer is kept as text.
    closer_cut = assert_stream_matches_parse(BLOCK_MEMBER, reply[:-2], tools=toy.TOOLS)
    assert len(closer_cut.tool_calls) == 2 and closer_cut.content == "<|/calls"
    assert [issue.kind for issue in closer_cut.issues] == ["unexpected_text"]


def test_members_that_parse_alike_share_a_syntax() -> None:
    """The separators change what the renderer and the exporter write, not how replies parse, but
    for whether a comma between arguments is the member's own (one missing is then reported)."""
    other = dataclasses.replace(BLOCK_SPEC, separator=",", argument_separator=",")
    assert wire.compile_spec(other) is not wire.compile_spec(BLOCK_SPEC)
    assert wire.compile_spec(other).syntax() is BLOCK_MEMBER.syntax()
    uncommaed = wire.compile_spec(dataclasses.replace(BLOCK_SPEC, argument_separator=" "))
    assert uncommaed.syntax() is not BLOCK_MEMBER.syntax()
    assert CORRECTED.syntax() is not GEMMA3.syntax() and CORRECTED.wire != GEMMA3.wire
    assert DEEPSEEK.syntax() is not GEMMA3.syntax()


@pytest.mark.parametrize(
    ("name", "reply", "reported"),
    [
        ("deepseek_pythonic", "[f(a=1b=2)]", True),
        ("deepseek_pythonic", '[f(a=1 b="x", c=[1]d=2)]', True),
        ("deepseek_pythonic", "[f(a=1, b=2,)]", False),
        ("gemma3_tool_code", '```tool_code\n[f(a=1b="x"c=2)]\n```', False),  # the template's own
        ("corrected", '```tool_code\n[f(a=1b="x"c=2)]\n```', True),
    ],
)
def test_an_argument_without_its_comma_is_reported_where_the_template_writes_one(
    name: str, reply: str, reported: bool
) -> None:
    fmt = CORRECTED if name == "corrected" else codec.get_format(name)
    result = fmt.parse(reply)
    names = re.findall(r"([a-z])=", reply)
    assert [list(call.function.arguments) for call in result.tool_calls] == [names]
    expected = [
        ("missing_comma", reply.index(key + "="))
        for key, before in zip(names[1:], names, strict=False)
        if not re.search(re.escape(before) + r"=[^,]*,\s*" + key + "=", reply)
    ]
    assert [(issue.kind, issue.pos) for issue in result.issues] == (expected if reported else [])
    assert_streams_like(parse_chunked(fmt, reply, 1), result)
    if reported:
        with pytest.raises(codec.ParseError, match="without ','"):
            fmt.parse(reply, strict=True)


def test_a_spec_the_family_cannot_write_is_refused() -> None:
    with pytest.raises(ValueError, match="needs a stop token"):
        wire.compile_spec(wire.WireSpec("call_list", arguments="python"))
    with pytest.raises(ValueError, match="both an opener and a closer"):
        wire.compile_spec(dataclasses.replace(BLOCK_SPEC, block=("<|calls|>", "")))
    with pytest.raises(ValueError, match="values as json or json_raw"):
        wire.compile_spec(dataclasses.replace(BLOCK_SPEC, values="quoted"))
    with pytest.raises(ValueError, match="no recoveries"):
        wire.compile_spec(dataclasses.replace(BLOCK_SPEC, recover=("nope",)))
    with pytest.raises(ValueError, match="free text cannot stop before it"):
        wire.compile_spec(dataclasses.replace(BLOCK_SPEC, stop="[end]"))


_STRING_ATOMS = ['"', "\\", "a", ",", ")", " ", "=", "b=", ", k=", "\n", "```", "<end_of_turn>", ")]", '\\"', "é"]


@examples(100)
@given(st.lists(st.sampled_from(_STRING_ATOMS), max_size=16))
def test_the_salvage_scan_of_a_string_argument_ends_where_its_regex_does(atoms: list[str]) -> None:
    """The element cutter reads a JSON string argument with a linear scan (closing_quote), not
    ARG_STRING's regex (which costs the rest of the text at each string): both end in one place."""
    from codec.wire._call_list_fast import arg_string_closes, closing_quote

    grammar = codec.get_format("gemma3_tool_code").syntax().grammar
    text = '"' + "".join(atoms)
    matched = grammar.pattern("ARG_STRING").match(text, 0)
    assert closing_quote(text, 0, arg_string_closes(grammar)) == (matched.end() if matched else None)


_LIST_ATOMS = [*_STRING_ATOMS, "(", "[", "]", "f(", "g(a=", "'", "{", "}"]


@examples(100)
@given(st.lists(st.sampled_from(_LIST_ATOMS), max_size=24))
def test_the_element_cutter_cuts_a_rejected_list_where_the_regexes_would(atoms: list[str]) -> None:
    """The cutter's scan of string arguments (closing_quote, with what earlier scans found kept)
    cuts every list where reading each string with ARG_STRING's regex cuts it."""
    from codec.wire._call_list_fast import ElementCutter

    grammar = codec.get_format("gemma3_tool_code").syntax().grammar
    text = "".join(atoms)
    by_regex = ElementCutter(grammar)
    by_regex._arg_closes = None  # the regex path, which reads every string with ARG_STRING
    for bracketed in (True, False):
        assert ElementCutter(grammar).cut(text, 0, bracketed) == by_regex.cut(text, 0, bracketed)
