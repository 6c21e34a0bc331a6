"""Property tests shared by the two Python-list formats, ``gemma3_tool_code`` and ``deepseek_pythonic``
(hypothesis, derandomized).

The format-independent properties (bad input, truncation, chunking, linear work on fixed adversarial
inputs) are in ``test_parse_properties.py``; the golden replies in ``golden/<name>/``; the renderers in
``test_<name>_render.py`` and ``test_render.py``. Here, for each format (and for
``Gemma3ToolCode(corrected=True)``, whose replies must parse to the same calls):

* round trip: ``parse(render_reply(msg), tools)`` gives back the names and the typed arguments of
  generated calls (and the content and reasoning the format keeps), with and without tools;
* chunking invariance of those replies, with append-only events that rebuild the message;
* no catastrophic backtracking: generated unterminated strings and long prose full of brackets
  are lexed in work linear in their length (``stream.work``, never wall-clock).

What a format cannot represent is excluded explicitly by its :class:`Spec` (``key_ok``,
``string_ok``, ``args_ok``, ``content_ok``, ``reasoning_ok``), and ``test_exclusions_are_real``
checks that each exclusion really fails. Known parser bugs are ``xfail(strict=True)`` tests at the
end, each with a minimal reproducer, so that a fix shows up as XPASS.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import pytest
import strategies
from harness import (
    CHUNK,
    WHOLE_WORK,
    WORK_SLACK,
    assert_append_only,
    assert_events_rebuild,
    assert_streams_like,
    call_message,
    chunked_budget,
    examples,
    parse_chunked,
    parse_whole,
)
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.strategies import DrawFn

import codec
from codec.formats.gemma3_tool_code import Gemma3ToolCode
from codec.models import TextDelta, ToolCallEnd
from codec.schema import violations
from codec.stream import Syntax

GEMMA3 = codec.get_format("gemma3_tool_code")
CORRECTED = Gemma3ToolCode(corrected=True)
DEEPSEEK = codec.get_format("deepseek_pythonic")
G3_STOP, DS_STOP = "<end_of_turn>", "<|end_of_sentence|>"
FENCE = "```tool_code\n"

# --------------------------------------------------------------------------- what each format can carry

#: A keyword or tool name as the grammar reads it (``NAME``): an ASCII letter or ``_``, then word characters,
#: ``-`` and ``.``.
_NAME = re.compile(r"[A-Za-z_][\w\-.]*")
#: Where a ``[`` opens a call list (the grammars' free-text lookahead): ``[``, a name, ``(``.
_CALL_START = re.compile(r"\[[ \t\r\n]{0,4}[A-Za-z_][\w\-.]{0,63}[ \t\r\n]{0,4}\(")
#: Where a deepseek raw string closes: a ``"`` followed by ``, NAME=`` or ``)`` (ARG_STRING's lookahead).
_RAW_CLOSE = re.compile(r'"(?=[ \t\r\n]{0,16}(?:,[ \t\r\n]{0,16}[A-Za-z_][\w\-.]{0,63}[ \t\r\n]{0,16}=|\)))')
#: A key that glues onto a number written just before it when nothing separates them (``a=1e1=2``).
_EXPONENT_KEY = re.compile(r"[eE][+-]?\d")


def key_ok(key: str) -> bool:
    """A keyword both formats carry: a ``NAME``. Keywords are written bare (``key=value``), so a key
    holding a space, ``=``, ``:``, a quote..., an empty key, or one starting with a digit, ``-`` or a
    non-ASCII letter (``été``) cannot be read back."""
    return _NAME.fullmatch(key) is not None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def seed_args_ok(arguments: dict[str, Any]) -> bool:
    """Gemma 3's seed writes keyword arguments with no separator (G1): a key like ``e1`` or ``E-5`` right
    after a number reads as the number's exponent (``a=1e1=2``), which the text cannot tell apart."""
    pairs = list(arguments.items())
    return not any(_is_number(value) and _EXPONENT_KEY.match(key) for (_, value), (key, _) in pairwise(pairs))


def raw_string_ok(text: str) -> bool:
    """A deepseek top-level string the format carries: written ``"`` + value + ``"`` with nothing escaped
    (D1), it ends at the first ``"`` followed by ``, NAME=`` or ``)``, so a value holding ``", b=`` or
    ``")`` ends early. Nested strings are JSON and carry anything."""
    return _RAW_CLOSE.search(text) is None


def _gemma3_content_ok(text: str, with_calls: bool, with_reasoning: bool) -> bool:
    """Gemma 3 content: dropped beside calls (G6, so anything goes there); otherwise trimmed (the
    generated content is trimmed first) and without what starts markup, as nothing is escaped:
    ``<end_of_turn>``, a ```` ```tool_code ```` fence opener, or ``[NAME(`` (a bare call list)."""
    if with_calls:
        return True
    return (
        text == text.strip() and G3_STOP not in text and "```tool_code" not in text and _CALL_START.search(text) is None
    )


def _deepseek_content_ok(text: str, with_calls: bool, with_reasoning: bool) -> bool:
    """DeepSeek content, written as is (never trimmed, glued before the calls, D4). Excluded:
    ``<|end_of_sentence|>`` (the stop token), ``[NAME(`` (a call list), ``</think>`` (the renderer
    splits content there, D7); ``<think>`` at the start (after blanks) when there is no reasoning (it
    opens reasoning); a line break at the start after reasoning (``</think>`` swallows the line
    breaks that follow it, as the template writes ``</think>\\n\\n``)."""
    return (
        DS_STOP not in text
        and _CALL_START.search(text) is None
        and "</think>" not in text
        and not (not with_reasoning and text.lstrip(" \t\r\n").startswith("<think>"))
        and not (with_reasoning and text.startswith("\n"))
    )


@dataclass(frozen=True)
class Spec:
    """One Python-list format as these tests see it."""

    fmt: codec.Format
    #: Whether a top-level string argument comes back (nested strings are JSON in both formats).
    string_ok: Callable[[str], bool]
    #: Whether a whole argument dict comes back (beyond its keys and strings).
    args_ok: Callable[[dict[str, Any]], bool]
    content_ok: Callable[[str, bool, bool], bool]
    #: Content as the reply keeps it, given the message content (None: dropped) and whether there are calls.
    expected_content: Callable[[str | None, bool], str]
    #: Reasoning as the reply keeps it ("" when the format drops it).
    expected_reasoning: Callable[[str], str]
    reasoning_ok: Callable[[str], bool]
    #: The stop token after a reply with calls.
    stop: str


def _gemma3_spec(fmt: codec.Format, *, seed: bool) -> Spec:
    return Spec(
        fmt=fmt,
        string_ok=lambda text: True,  # tojson: every string is JSON-escaped
        args_ok=seed_args_ok if seed else (lambda arguments: True),
        content_ok=_gemma3_content_ok,
        expected_content=lambda content, with_calls: "" if with_calls else (content or "").strip(),
        expected_reasoning=lambda reasoning: "",  # the template ignores reasoning (G8)
        reasoning_ok=lambda text: True,
        stop=G3_STOP,
    )


SPECS: dict[str, Spec] = {
    "gemma3_tool_code": _gemma3_spec(GEMMA3, seed=True),
    "gemma3_corrected": _gemma3_spec(CORRECTED, seed=False),
    "deepseek_pythonic": Spec(
        fmt=DEEPSEEK,
        string_ok=raw_string_ok,
        args_ok=lambda arguments: True,
        content_ok=_deepseek_content_ok,
        expected_content=lambda content, with_calls: content or "",
        # think_block strips the reasoning's surrounding line breaks
        expected_reasoning=lambda reasoning: reasoning.strip("\n"),
        # '</think>' ends the reasoning
        reasoning_ok=lambda text: "</think>" not in text,
        stop=DS_STOP,
    ),
}
NAMES = list(SPECS)


def arguments_ok(spec: Spec, arguments: dict[str, Any]) -> bool:
    return (
        all(key_ok(key) for key in arguments)
        and all(spec.string_ok(value) for value in arguments.values() if isinstance(value, str))
        and spec.args_ok(arguments)
    )


# --------------------------------------------------------------------------- strategies

#: Keywords beyond ``strategies.names()``: '-' and '.', a non-ASCII letter after the first, keywords that
#: look like literals, and bad ones (spaces, punctuation, leading digit or '-', empty, non-ASCII first).
_keys = st.one_of(
    strategies.names(),
    st.sampled_from(
        ("a-b", "x.y", "preço", "e1", "E5", "e", "e-1", "None", "true", "False", "日付", "1a", "a b", "", "-x", "a=b")
    ),
)
#: Tool names with '-' and '.' as well (MCP-style).
_tool_names = st.one_of(strategies.names(), st.sampled_from(("my-tool", "mcp.fs.read_file", "a.b-c", "None")))
#: What a string value must carry verbatim: quotes, backslashes, line breaks, brackets, separators,
#: the formats' markers, and the pieces that make a deepseek raw string end early.
_RAW_PIECES = (
    '"',
    "'",
    "\\",
    '\\"',
    "\\n",
    "\n",
    "\r\n",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ", b=",
    "=",
    " ",
    "é",
    "🙂",
    '", b=',
    '")',
    '" )',
    "```",
    FENCE,
    G3_STOP,
    DS_STOP,
    "<think>",
    "</think>",
    "[f(a=1)]",
    "True",
    "null",
    "1e+20",
)
_raw_strings = st.lists(st.sampled_from(_RAW_PIECES), max_size=8).map("".join)
_values = st.one_of(
    strategies.json_values(6),
    _raw_strings,
    st.lists(_raw_strings, max_size=3),
    st.dictionaries(_raw_strings, _raw_strings, max_size=2),
)


@st.composite
def _free_arguments(draw: DrawFn, spec: Spec) -> dict[str, Any]:
    """Arguments without a schema: free JSON values and raw strings under odd keys, then cleaned of what
    the format cannot carry (see :func:`arguments_ok`), entry by entry in order."""
    drawn = draw(strategies.arguments())
    drawn.update(draw(st.dictionaries(_keys, _values, max_size=4)))
    arguments: dict[str, Any] = {}
    for key, value in drawn.items():
        if arguments_ok(spec, {**arguments, key: value}):
            arguments[key] = value
    return arguments


@st.composite
def messages(draw: DrawFn, name: str, *, with_tools: bool) -> tuple[dict[str, Any], list[dict[str, Any]] | None]:
    """An assistant message with 0-3 calls, content (sometimes), reasoning (sometimes), and its tools (or None).

    With tools, arguments fit each tool's schema; without, they are free. Only what the format carries
    is drawn (the exclusions of its :class:`Spec`).
    """
    spec = SPECS[name]
    tools = draw(strategies.tools()) if with_tools else None
    calls = []
    for _ in range(draw(st.sampled_from((1, 0, 1, 2, 3, 2)))):
        if tools:
            function = draw(st.sampled_from(tools))["function"]
            tool_name, parameters = function["name"], function.get("parameters")
            arguments = draw(strategies.arguments(parameters))
            assume(arguments_ok(spec, arguments) and not violations(arguments, parameters or {}))
        else:
            tool_name, arguments = draw(_tool_names), draw(_free_arguments(spec))
        calls.append({"type": "function", "function": {"name": tool_name, "arguments": arguments}})
    reasoning = draw(st.one_of(st.none(), strategies.texts(5)))
    assume(reasoning is None or spec.reasoning_ok(reasoning))
    content = draw(st.one_of(st.none(), strategies.texts(6)))
    if content is not None and spec.fmt is not DEEPSEEK:
        content = content.strip()
    assume(content is None or spec.content_ok(content, bool(calls), bool(reasoning)))
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    if calls:
        message["tool_calls"] = calls
    return message, tools


def typed(value: Any) -> str:
    """``value`` as JSON with sorted keys: equal only if the types agree too (1 / 1.0 / True, -0.0, big ints)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def check_round_trip(name: str, message: dict[str, Any], tools: list[dict[str, Any]] | None) -> codec.ParseResult:
    spec = SPECS[name]
    reply = spec.fmt.render_reply(message)
    result = spec.fmt.parse(reply, tools=tools)
    calls = message.get("tool_calls") or []
    assert result.issues == []
    assert result.content == spec.expected_content(message["content"], bool(calls))
    assert result.reasoning == spec.expected_reasoning(message.get("reasoning_content") or "")
    assert [c.id for c in result.tool_calls] == [f"call_{i}" for i in range(len(calls))]
    assert [c.function.name for c in result.tool_calls] == [c["function"]["name"] for c in calls]
    for got, call in zip(result.tool_calls, calls, strict=True):
        assert got.function.arguments == call["function"]["arguments"]
        assert typed(got.function.arguments) == typed(call["function"]["arguments"])
    return result


# --------------------------------------------------------------------------- round trip


@pytest.mark.parametrize("name", NAMES)
@examples(60)
@given(data=st.data())
def test_round_trip_with_tools(name: str, data: st.DataObject) -> None:
    message, tools = data.draw(messages(name, with_tools=True), label="message")
    check_round_trip(name, message, tools)


@pytest.mark.parametrize("name", NAMES)
@examples(60)
@given(data=st.data())
def test_round_trip_without_tools(name: str, data: st.DataObject) -> None:
    message, tools = data.draw(messages(name, with_tools=False), label="message")
    check_round_trip(name, message, tools)


@pytest.mark.parametrize("name", NAMES)
@examples(60)
@given(data=st.data())
def test_round_trip_streams_like_it_parses(name: str, data: st.DataObject) -> None:
    fmt = SPECS[name].fmt
    message, tools = data.draw(messages(name, with_tools=False), label="message")
    sizes = data.draw(st.one_of(st.just([1]), st.lists(st.integers(1, 12), min_size=1, max_size=6)), label="sizes")
    reply = fmt.render_reply(message)
    whole = fmt.parse(reply, tools=tools)
    run = parse_chunked(fmt, reply, sizes, tools=tools)
    assert run.result == whole
    assert run.result.issues == []
    assert_append_only(run.events, run.result)
    assert_events_rebuild(run.events, run.result)


def _without_fast_path(fmt: codec.Format) -> Syntax:
    return dataclasses.replace(fmt.syntax(), fast_terminals={}, fast_by_state={}, preempting={})


_RULES_ONLY = {name: _without_fast_path(spec.fmt) for name, spec in SPECS.items()}
#: Pieces of call lists the fast path must read exactly as the grammar's rules do, or leave to them.
_LIST_PIECES = (*_RAW_PIECES, "[f(", "g(", "a=", "b =", "=1", "1.5", "-2", ".5", "1.", "+3", "1e5", "'x'", "(1, 2)")


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
        bad_arguments += [{"a": 'x", b=1'}, {"a": 'x")', "b": 1}, {"a": 'say "hi")'}]
    for arguments in bad_arguments:
        assert not arguments_ok(spec, arguments), arguments
        result = fmt.parse(fmt.render_reply(call_message(arguments)))
        assert [c.function.arguments for c in result.tool_calls] != [arguments], arguments
    bad_contents = ["a<end_of_turn>b", "Use ```tool_code\n", "see [f(x)]"] if spec.stop == G3_STOP else []
    if spec.stop == DS_STOP:
        # (content opening with '<think>' and no '</think>' after it is the known crash, see
        # test_deepseek_reply_ending_inside_reasoning)
        bad_contents = ["a<|end_of_sentence|>b", "see [f(x)]", "a</think>b"]
    for content in bad_contents:
        assert not spec.content_ok(content, False, False), content
        result = fmt.parse(fmt.render_reply({"role": "assistant", "content": content}))
        assert (result.content, result.reasoning, result.tool_calls, result.issues) != (content, "", [], []), content
    if spec.stop == DS_STOP:
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


@pytest.mark.parametrize(
    ("reply", "prompt"),
    [
        ("<think>\nStill thinking", None),
        ("Still thinking", PROMPT_THINKING),
        ("Still [f(a=1)]<|end_of_sentence|>", PROMPT_THINKING),
    ],
    ids=["opened_by_reply", "opened_by_prompt", "stop_inside_reasoning"],
)
def test_deepseek_reply_ending_inside_reasoning(reply: str, prompt: str | None) -> None:
    result = DEEPSEEK.parse(reply, prompt=prompt)
    assert result.reasoning.startswith("Still")
    assert [i.kind for i in result.issues] == ["missing_closer"]


def test_deepseek_line_break_after_the_prompts_think_is_markup() -> None:
    reply = DEEPSEEK.render_reply({"role": "assistant", "reasoning_content": "Hmm.", "content": "Hi."})
    assert reply == "<think>\nHmm.\n</think>\n\nHi."
    assert DEEPSEEK.parse(reply).reasoning == "Hmm."
    assert DEEPSEEK.parse(reply.removeprefix("<think>"), prompt=PROMPT_THINKING).reasoning == "Hmm."


@pytest.mark.parametrize("reply", ["[f(a=1) oops]", "[f(a=1) g(b=2)]", "[f(a=1) oops] and more text"])
def test_gemma3_text_after_a_complete_call_is_not_dropped(reply: str) -> None:
    result = GEMMA3.parse(reply)
    assert result.issues, "the refused text must be reported"
    with pytest.raises(codec.ParseError):
        GEMMA3.parse(reply, strict=True)


@pytest.mark.parametrize("reply", ['[f(a="\\"), b]', '[f(a="a"b"), g', '[f(a="x\\"), b=1")]'])
def test_deepseek_text_after_a_raw_string_is_not_dropped(reply: str) -> None:
    result = DEEPSEEK.parse(reply)
    assert result.issues, "the refused text must be reported"
    with pytest.raises(codec.ParseError):
        DEEPSEEK.parse(reply, strict=True)


@pytest.mark.parametrize(
    ("fmt", "reply"),
    [
        (GEMMA3, FENCE + "[a(), b(c=@), d(e=1)]\n```<end_of_turn>"),
        (GEMMA3, FENCE + "[a(), oops, d(e=1)]\n```"),
        (GEMMA3, "[a(), oops, d(e=1)] done"),
        (DEEPSEEK, "[a(), b(c=@), d(e=1)]<|end_of"),
    ],
    ids=[
        "gemma3_fence_truncated_call",
        "gemma3_fence_unreadable_element",
        "gemma3_prose_after",
        "deepseek_partial_stop",
    ],
)
def test_calls_after_a_broken_one_survive_what_follows_the_list(fmt: codec.Format, reply: str) -> None:
    result = fmt.parse(reply)
    assert [c.function.name for c in result.tool_calls][-1] == "d"
    assert "d(e=1)" not in result.content


@pytest.mark.parametrize(
    "reply",
    [FENCE + "[f(a=1)]", FENCE + "[f(a=1)]<end_of_turn>", FENCE + "f(a=1)", FENCE + "f(a=1)<end_of_turn>"],
    ids=["list_at_end", "list_before_stop", "bare_call_at_end", "bare_call_before_stop"],
)
def test_gemma3_unclosed_fence(reply: str) -> None:
    result = GEMMA3.parse(reply)
    assert [(c.function.name, c.function.arguments) for c in result.tool_calls] == [("f", {"a": 1})]
    assert [i.kind for i in result.issues] == ["missing_closer"]
    with pytest.raises(codec.ParseError):
        GEMMA3.parse(reply, strict=True)


def test_deepseek_pretty_printed_call() -> None:
    result = DEEPSEEK.parse('[get_weather(\n    city="Paris",\n    days=3\n)]<|end_of_sentence|>')
    assert result.issues == []
    assert result.tool_calls[0].function.arguments == {"city": "Paris", "days": 3}


def test_deepseek_quotes_in_a_long_string_stream_in_linear_work() -> None:
    document = json.dumps([{"id": i, "name": f"item {i}", "tags": ["a", "b"]} for i in range(100)])
    reply = DEEPSEEK.render_reply(call_message({"path": "data.json", "content": document}))
    assert DEEPSEEK.parse(reply).tool_calls[0].function.arguments["content"] == document
    _check_linear_work(DEEPSEEK, reply)


def test_deepseek_first_words_are_not_held_back() -> None:
    stream = DEEPSEEK.stream()
    events = stream.feed("Hello! How can I help?")
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello! How can I help?"


def test_deepseek_calls_without_a_comma_blame_the_right_call() -> None:
    result = DEEPSEEK.parse("[f(a=1) g(b=2)]<|end_of_sentence|>")
    assert "truncated_call" not in [i.kind for i in result.issues], "f(a=1) is complete"
    assert len(result.tool_calls) == 2 or "g(b=2)" in result.content
