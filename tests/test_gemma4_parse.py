"""Property tests particular to ``gemma4`` (hypothesis, derandomized).

The format-independent properties (bad input, truncation, chunking, linear work) are in
``test_parse_properties.py``; the golden replies in ``golden/gemma4/``; the renderer in
``test_gemma4_render.py`` and ``test_render.py``. Here:

* round trip: ``parse(render_reply(msg), tools)`` gives back the content, the reasoning, the
  names and the arguments of generated assistant messages, with and without tools (the template
  sorts keys case-insensitively, so arguments are compared as dicts, with their types);
* chunking invariance of those replies, also when the prompt opens the thought channel;
* streaming: a long string value arrives in many argument fragments, a number only once it is
  complete, reasoning as ``ReasoningDelta`` events while it is generated.

What the format cannot represent is excluded explicitly (see :func:`string_ok`, :func:`key_ok`,
:func:`content_ok`, :func:`reasoning_ok`), and ``test_exclusions_are_real`` checks that each
exclusion really fails. Known parser bugs are ``xfail(strict=True)`` tests at the end, each with
a minimal reproducer, so that a fix shows up as XPASS.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import strategies
from harness import (
    assert_append_only,
    assert_events_rebuild,
    assert_streams_like,
    call_message,
    examples,
    parse_chunked,
    run_chunks,
    split,
)
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.strategies import DrawFn

import codec
from codec.models import ReasoningDelta, TextDelta, ToolCallDelta
from codec.schema import violations

FMT = codec.get_format("gemma4")
Q = '<|"|>'
OPEN, CLOSE, RESPONSE, TURN = "<|tool_call>", "<tool_call|>", "<|tool_response>", "<turn|>"
THOUGHT, CHANNEL_CLOSE = "<|channel>thought\n", "<channel|>"


# --------------------------------------------------------------------------- what the format can carry

#: A bare key or tool name as the grammar reads it (``NAME``).
_NAME = re.compile(r"\w[\w\-.]*")
#: Where a bare ``call:NAME{`` / ``call:NAME(`` starts a call: at the start of the text or of a line.
_BARE_CALL = re.compile(r"(?:^|\n)call:[A-Za-z_][\w\-.]*[{(]")


def string_ok(text: str) -> bool:
    """A string value the format carries: anything but ``<|"|>``.

    Strings are pasted raw between ``<|"|>`` tokens with no escape mechanism (FORMATS.md Q1), so a
    value holding the delimiter ends early (``a<|"|>b`` reads as ``a``, then garbage).
    """
    return Q not in text


def key_ok(key: str) -> bool:
    """A key the format carries: an identifier, ASCII letter or ``_`` first, then word characters, ``-``, ``.``.

    Call arguments and their nested objects are written with bare keys (the template's
    ``escape_keys=False``; only declarations quote them), so a key holding a space, ``:``, ``,``,
    a brace, a quote... or an empty key cannot be read back. A key starting with a digit or ``-``
    would lex as a number. A key starting with a non-ASCII letter (``é``) could be read but is
    not: a known parser bug, see ``test_key_starting_with_a_non_ascii_letter``.
    """
    return _NAME.fullmatch(key) is not None


def value_ok(value: Any) -> bool:
    """Every string in ``value`` passes :func:`string_ok` and every object key :func:`key_ok`."""
    if isinstance(value, str):
        return string_ok(value)
    if isinstance(value, list):
        return all(value_ok(v) for v in value)
    if isinstance(value, dict):
        return all(key_ok(k) and value_ok(v) for k, v in value.items())
    return True


#: Markers that end content wherever they are (the grammar's TEXT stops at them).
_CONTENT_MARKERS = (OPEN, "<call>", CLOSE, TURN, RESPONSE, "<|channel>", CHANNEL_CLOSE)


def content_ok(text: str) -> bool:
    """Content the format carries unchanged. Excluded, because nothing is escaped:

    * surrounding whitespace: the renderer trims content (as the template does; generated content
      is trimmed before this check, so this only documents it);
    * ``<|tool_call>``, ``<call>`` (a call opener), ``<tool_call|>`` (a stray closer, dropped),
      ``<turn|>`` / ``<|tool_response>`` (the stop tokens);
    * ``<|channel>`` and ``<channel|>``: the renderer strips ``<|channel>...<channel|>`` blocks from
      content, and a lone ``<channel|>`` as well;
    * ``call:NAME{`` or ``call:NAME(`` at the start of the content or of a line: a bare call, a
      real-world deviation the parser accepts (FORMATS.md §2.8.3);
    * any ``call:`` at the very start (where the content starts the reply or follows ``<channel|>``):
      taken as a bare call even without braces, a known parser bug, see
      ``test_content_starting_with_call_colon_is_plain_text``.
    """
    return (
        text == text.strip()
        and not text.startswith("call:")
        and not any(marker in text for marker in _CONTENT_MARKERS)
        and _BARE_CALL.search(text) is None
    )


def reasoning_ok(text: str) -> bool:
    """Reasoning the format carries unchanged. Excluded:

    * reasoning that ends with a newline: ``<channel|>`` swallows one newline before it (the
      template writes reasoning back as ``...\\n<channel|>``, so that newline is markup);
    * ``<channel|>``: it ends the channel;
    * ``<|tool_call>`` / ``<call>``: a call opened while the channel is still open closes it
      (a real-world deviation, FORMATS.md §2.8.5);
    * the stop tokens ``<turn|>`` / ``<|tool_response>``: today they are read as reasoning text, but
      a model that ends its turn without closing the channel writes exactly that, so they should
      end the turn (a known parser bug, see ``test_stop_token_ends_an_unclosed_thought``).

    Surrounding whitespace is kept (the renderer does not trim reasoning), and so is text that
    looks like other markers (``<tool_call|>``, ``<|channel>``, ``call:f{`` at a line start...).
    """
    return not text.endswith("\n") and not any(m in text for m in (CHANNEL_CLOSE, OPEN, "<call>", TURN, RESPONSE))


# --------------------------------------------------------------------------- strategies

#: Keys beyond ``strategies.names()``: '-' and '.', non-ASCII word characters, and bad keys
#: (spaces, punctuation, leading digits, empty) that :func:`key_ok` must filter out.
_keys = st.one_of(
    strategies.names(),
    st.sampled_from(("a-b", "x.y", "a.b-c_d", "preço", "日付", "über", "1a", "a b", "", "-x", "a:b", "None", "true")),
)
#: Tool names with '-' and '.' as well (MCP-style).
_tool_names = st.one_of(strategies.names(), st.sampled_from(("my-tool", "mcp.fs.read_file", "a.b-c")))
#: Strings made of what a Gemma string must carry verbatim: backslashes, quotes, newlines, separators,
#: brackets, the format's markers and pieces of its string delimiter.
_RAW_PIECES = (
    "\\",
    '"',
    "'",
    "\n",
    "\r\n",
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "=",
    " ",
    "é",
    "🙂",
    "\\n",
    "<",
    "<|",
    '<|"|',
)
_MARKER_PIECES = ("<tool_call|>", "<turn|>", "<|tool_response>", "<channel|>", "call:f{", "\ncall:g(", "None", "1e+20")
_raw_strings = st.lists(st.sampled_from(_RAW_PIECES + _MARKER_PIECES), max_size=10).map("".join)
_reasonings = strategies.texts(6).filter(reasoning_ok)
_contents = st.one_of(st.none(), strategies.texts(6).map(str.strip).filter(content_ok))


def _clean(arguments: dict[str, Any]) -> dict[str, Any]:
    """``arguments`` without the entries the format cannot carry (see :func:`value_ok`)."""
    return {k: v for k, v in arguments.items() if key_ok(k) and value_ok(v)}


@st.composite
def _free_arguments(draw: DrawFn) -> dict[str, Any]:
    """Arguments without a schema: free JSON values (unicode, quotes, backslashes, newlines, braces, big
    ints, floats, None, nested lists and objects) under identifier keys and odd ones."""
    arguments = draw(strategies.arguments())
    values = st.one_of(strategies.json_values(6), _raw_strings, st.lists(_raw_strings, max_size=3))
    arguments.update(draw(st.dictionaries(_keys, values, max_size=3)))
    return _clean(arguments)


@st.composite
def messages(draw: DrawFn, *, with_tools: bool) -> tuple[dict[str, Any], list[dict[str, Any]] | None]:
    """An assistant message with content, sometimes reasoning, and 0-3 calls; and the tools it calls (or None).

    With tools, arguments fit each tool's schema (values drawn from it, nested values checked); without,
    they are free.
    """
    tools = draw(strategies.tools()) if with_tools else None
    message: dict[str, Any] = {"role": "assistant", "content": draw(_contents)}
    reasoning = draw(st.one_of(st.none(), _reasonings))
    if reasoning is not None:
        message[draw(st.sampled_from(("reasoning", "reasoning_content")))] = reasoning
    calls = []
    for _ in range(draw(st.sampled_from((1, 0, 1, 2, 3, 2)))):
        if tools:
            function = draw(st.sampled_from(tools))["function"]
            name, parameters = function["name"], function.get("parameters")
            arguments = _clean(draw(strategies.arguments(parameters)))
            assume(not violations(arguments, parameters or {}))
        else:
            name, arguments = draw(_tool_names), draw(_free_arguments())
        calls.append({"type": "function", "function": {"name": name, "arguments": arguments}})
    if calls or draw(st.booleans()):
        message["tool_calls"] = calls
    return message, tools


def typed(value: Any) -> str:
    """``value`` as JSON with sorted keys: equal only if the types agree too (1 / 1.0 / True, -0.0, big ints)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def reasoning_of(message: dict[str, Any]) -> str:
    return message.get("reasoning") or message.get("reasoning_content") or ""


def check_round_trip(message: dict[str, Any], tools: list[dict[str, Any]] | None) -> codec.ParseResult:
    reply = FMT.render_reply(message)
    result = FMT.parse(reply, tools=tools)
    calls = message.get("tool_calls") or []
    assert result.issues == []
    assert result.content == (message["content"] or "")
    assert result.reasoning == reasoning_of(message)
    assert [c.id for c in result.tool_calls] == [f"call_{i}" for i in range(len(calls))]
    assert [c.function.name for c in result.tool_calls] == [c["function"]["name"] for c in calls]
    for got, call in zip(result.tool_calls, calls, strict=True):
        # the template sorts keys case-insensitively: compare dicts, not JSON text
        assert got.function.arguments == call["function"]["arguments"]
        assert typed(got.function.arguments) == typed(call["function"]["arguments"])
    return result


# --------------------------------------------------------------------------- round trip


@examples(100)
@given(pair=messages(with_tools=True))
def test_round_trip_with_tools(pair: tuple[dict[str, Any], list[dict[str, Any]]]) -> None:
    check_round_trip(*pair)


@examples(100)
@given(pair=messages(with_tools=False))
def test_round_trip_without_tools(pair: tuple[dict[str, Any], None]) -> None:
    check_round_trip(*pair)


@examples(100)
@given(
    pair=messages(with_tools=False),
    sizes=st.one_of(st.just([1]), st.lists(st.integers(1, 12), min_size=1, max_size=6)),
)
def test_round_trip_streams_like_it_parses(pair: tuple[dict[str, Any], None], sizes: list[int]) -> None:
    message, tools = pair
    reply = FMT.render_reply(message)
    run = parse_chunked(FMT, reply, sizes, tools=tools)
    assert run.result == FMT.parse(reply, tools=tools)
    assert run.result.issues == []
    assert_append_only(run.events, run.result)
    assert_events_rebuild(run.events, run.result)


PROMPT_THINKING = "<|turn>system\n<|think|>\n<turn|>\n<|turn>user\nHi<turn|>\n<|turn>model\n" + THOUGHT


@examples(50)
@given(
    pair=messages(with_tools=False),
    reasoning=_reasonings,
    sizes=st.lists(st.integers(1, 8), min_size=1, max_size=6),
)
def test_prompt_opening_the_thought_channel_streams_like_it_parses(
    pair: tuple[dict[str, Any], None], reasoning: str, sizes: list[int]
) -> None:
    """A prompt ending in ``<|channel>thought\\n``: the reply starts inside reasoning."""
    message, _ = pair
    message = {k: v for k, v in message.items() if k not in ("reasoning", "reasoning_content")}
    reply = FMT.render_reply({**message, "reasoning": reasoning})
    if reasoning:
        assert reply.startswith(THOUGHT)
        reply = reply[len(THOUGHT) :]
    else:  # nothing rendered: the model closes the channel at once
        reply = CHANNEL_CLOSE + reply
    whole = FMT.parse(reply, prompt=PROMPT_THINKING)
    assert whole.issues == []
    assert whole.reasoning == reasoning
    assert whole.content == (message["content"] or "")
    run = parse_chunked(FMT, reply, sizes, prompt=PROMPT_THINKING)
    assert_streams_like(run, whole)


def test_exclusions_are_real() -> None:
    """What the predicates above exclude really does not round trip (so the exclusions stay honest)."""
    for arguments in [
        {"a": f"x{Q}y"},
        {"a": [f"{Q}"]},
        {"a b": 1},
        {"": 1},
        {"-x": 1},
        {"a:b": 1},
        {"o": {"k,v": 1}},
    ]:
        assert not value_ok(arguments)
        result = FMT.parse(FMT.render_reply(call_message(arguments)))
        assert [c.function.arguments for c in result.tool_calls] != [arguments], arguments
    for content in ["  padded\n", "a<turn|>b", "a<|tool_response>b", "a<tool_call|>b", "a<channel|>b", "a<|channel>b"]:
        assert not content_ok(content)
        result = FMT.parse(FMT.render_reply({"role": "assistant", "content": content}))
        assert result.content != content, content
    for content in ["call:f{}", "see:\ncall:f(x=1)", "a<|tool_call>call:g{}<tool_call|>", "a<call>g{}"]:
        assert not content_ok(content)
        result = FMT.parse(FMT.render_reply(call_message({}, content)))
        assert (result.content, len(result.tool_calls)) != (content, 1), content
    for reasoning in ["r\n", "a<channel|>b", "a<|tool_call>call:g{}<tool_call|>b", "a<call>b"]:
        assert not reasoning_ok(reasoning)
        result = FMT.parse(FMT.render_reply({"role": "assistant", "content": "ok", "reasoning": reasoning}))
        assert (result.reasoning, result.content) != (reasoning, "ok"), reasoning


# --------------------------------------------------------------------------- streaming


def _write_call(content: str) -> str:
    return FMT.render_reply(call_message({"path": "a.txt", "content": content}))


def test_long_string_value_streams_in_many_fragments() -> None:
    value = "".join(f'line {i}: código "{i}" \\ <tag> {{x}}, a:b <|"| <tool_call|>\n' for i in range(600))[:20_000]
    reply = _write_call(value)
    chunks = split(reply, 4)
    stream = FMT.stream()
    fragments: list[str] = []
    sent_at_half = ""
    for n, chunk in enumerate(chunks):
        fragments += [e.arguments for e in stream.feed(chunk) if isinstance(e, ToolCallDelta)]
        if n == len(chunks) // 2:
            sent_at_half = "".join(fragments)
    fragments += [e.arguments for e in stream.close() if isinstance(e, ToolCallDelta)]
    assert stream.result.issues == []
    arguments = stream.result.to_message().model_dump(mode="json")["tool_calls"][0]["function"]["arguments"]
    assert "".join(fragments) == arguments
    assert json.loads(arguments) == {"content": value, "path": "a.txt"}
    assert len(fragments) > 1_000, "the value must arrive as it is generated, not in one burst"
    assert max(len(f) for f in fragments) < 200
    # Half-way through the reply, about half of the value has been sent already.
    assert len(sent_at_half) > 0.4 * len(json.dumps(value, ensure_ascii=False))


#: Numbers as the template writes them, each a prefix of a longer number until its delimiter arrives.
NUMBERS = {"a": 108.25, "b": 12345678901234567890, "c": -0.5, "d": 1e20, "e": 7, "f": 2.0, "g": -1.5e-7, "h": 0}
_JSON_NUMBER = re.compile(r"-?\d[\d.eE+\-]*")


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("closed", [True, False], ids=["closed", "before_next_key"])
def test_number_is_sent_only_once_complete(size: int, closed: bool) -> None:
    arguments: dict[str, Any] = dict(NUMBERS)
    if not closed:  # every number followed by another argument, not by '}'
        arguments["z"] = "end"
    reply = FMT.render_reply(call_message(arguments))
    run = run_chunks(FMT, split(reply, size))
    assert run.result.issues == []
    assert run.result.tool_calls[0].function.arguments == arguments
    wanted = {json.dumps(v) for v in NUMBERS.values()}
    fragments = [e.arguments for e in run.events if isinstance(e, ToolCallDelta)]
    for fragment in fragments:
        for number in _JSON_NUMBER.findall(fragment):
            assert number in wanted, f"fragment {fragment!r} holds a partial number {number!r}"
    assert_append_only(run.events, run.result)


def test_reasoning_streams_as_reasoning_deltas() -> None:
    reasoning = "".join(f"Step {i}: the user wants <b>X</b>, call:f{{}} maybe.\n" for i in range(100)).rstrip("\n")
    message = {"role": "assistant", "content": "Done.", "reasoning": reasoning}
    reply = FMT.render_reply(message)
    cut = reply.index(CHANNEL_CLOSE)
    stream = FMT.stream()
    before_close: list[str] = []
    events = []
    for n, chunk in enumerate(split(reply, 4)):
        new = stream.feed(chunk)
        events += new
        if 4 * (n + 1) <= cut:
            before_close += [e.text for e in new if isinstance(e, ReasoningDelta)]
    events += stream.close()
    assert stream.result.reasoning == reasoning
    assert stream.result.content == "Done."
    deltas = [e.text for e in events if isinstance(e, ReasoningDelta)]
    assert "".join(deltas) == reasoning
    assert len(deltas) > 100, "reasoning must stream as it is generated"
    assert len("".join(before_close)) > 0.9 * len(reasoning), "reasoning must not wait for <channel|>"
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Done."
    assert_events_rebuild(events, stream.result)


def test_reasoning_opened_by_the_prompt_streams_as_reasoning_deltas() -> None:
    reply = "Thinking " * 50 + CHANNEL_CLOSE + "Hello!" + TURN
    run = run_chunks(FMT, split(reply, 4), prompt=PROMPT_THINKING)
    deltas = [e.text for e in run.events if isinstance(e, ReasoningDelta)]
    assert "".join(deltas) == "Thinking " * 50 == run.result.reasoning
    assert len(deltas) > 50
    assert run.result.content == "Hello!"
    assert run.result.issues == []


# --------------------------------------------------------------------------- known parser bugs


def test_key_starting_with_a_non_ascii_letter() -> None:
    arguments = {"été": 1, "日付": "2024-01-01"}
    reply = FMT.render_reply(call_message(arguments))
    assert reply == OPEN + "call:f{été:1,日付:" + Q + "2024-01-01" + Q + "}" + CLOSE + RESPONSE
    result = FMT.parse(reply)
    assert result.issues == []
    assert result.tool_calls[0].function.arguments == arguments


def test_tool_name_starting_with_a_digit() -> None:
    tools = [{"type": "function", "function": {"name": "9tool", "parameters": {"type": "object", "properties": {}}}}]
    message = {"role": "assistant", "tool_calls": [{"function": {"name": "9tool", "arguments": {}}}]}
    result = FMT.parse(FMT.render_reply(message), tools=tools)
    assert result.issues == []
    assert [c.function.name for c in result.tool_calls] == ["9tool"]


@pytest.mark.parametrize(
    "reply",
    ["call: me when you land.<turn|>", "call:me maybe<turn|>", "<|channel>thought\nOk.<channel|>call: 911<turn|>"],
)
def test_content_starting_with_call_colon_is_plain_text(reply: str) -> None:
    result = FMT.parse(reply)
    assert result.issues == []
    assert result.content == reply[reply.find("call:") : -len(TURN)]
    assert FMT.parse(reply, strict=True) == result


def test_channel_marker_in_an_earlier_message_does_not_open_reasoning() -> None:
    prompt = FMT.render([{"role": "user", "content": "What does <|channel> mean?"}], add_generation_prompt=True)
    assert prompt == "<|turn>user\nWhat does <|channel> mean?<turn|>\n<|turn>model\n"
    result = FMT.parse("It opens a channel.<turn|>", prompt=prompt)
    assert (result.content, result.reasoning, result.issues) == ("It opens a channel.", "", [])


@pytest.mark.parametrize("stop", [TURN, RESPONSE])
def test_stop_token_ends_an_unclosed_thought(stop: str) -> None:
    result = FMT.parse(THOUGHT + "I am done thinking" + stop)
    assert result.reasoning == "I am done thinking"
    assert [i.kind for i in result.issues] == ["missing_closer"]
