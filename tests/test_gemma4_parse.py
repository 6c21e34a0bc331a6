"""Property tests particular to ``gemma4`` (hypothesis, derandomized).

The format-independent properties (bad input, truncation, chunking, linear work) are in
``test_parse_properties.py``; the golden replies in ``golden/gemma4/``; the renderer in
``test_gemma4_render.py`` and ``test_render.py``. Here:

* chunking invariance of rendered replies when the prompt opens the thought channel (the round
  trip of generated messages is in ``test_round_trip.py``, their strategies in ``formats/gemma4.py``);
* what the round trip leaves out (``string_ok``, ``key_ok``, ``content_ok``, ``reasoning_ok`` in
  ``formats/gemma4.py``) really does not round trip: ``test_exclusions_are_real``;
* streaming: a long string value arrives in many argument fragments, a number only once it is
  complete, reasoning as ``ReasoningDelta`` events while it is generated.

Known parser bugs are ``xfail(strict=True)`` tests at the end, each with a minimal reproducer, so
that a fix shows up as XPASS.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from formats.gemma4 import content_ok, messages, reasoning_ok, reasonings, value_ok
from harness import (
    GOLDEN_DIR,
    argument_fragments,
    assert_append_only,
    assert_events_rebuild,
    assert_streams_like,
    call_message,
    examples,
    parse_chunked,
    run_chunks,
    split,
)
from hypothesis import given
from hypothesis import strategies as st

import codec
from codec.models import ReasoningDelta, TextDelta, ToolCallDelta, ToolCallStart

FMT = codec.get_format("gemma4")
Q = '<|"|>'
OPEN, CLOSE, RESPONSE, TURN = "<|tool_call>", "<tool_call|>", "<|tool_response>", "<turn|>"
THOUGHT, CHANNEL_CLOSE = "<|channel>thought\n", "<channel|>"


PROMPT_THINKING = "<|turn>system\n<|think|>\n<turn|>\n<|turn>user\nHi<turn|>\n<|turn>model\n" + THOUGHT


@examples(50)
@given(
    pair=messages(with_tools=False),
    reasoning=reasonings,
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
        {"a": 'x"}<tool_call|>'},
        {"a": "it's'<turn|>"},
        {"a": "f(x)call:g"},
    ]:
        assert not value_ok(arguments)
        result = FMT.parse(FMT.render_reply(call_message(arguments)))
        read = ([c.function.arguments for c in result.tool_calls], result.issues)
        assert read != ([arguments], []), arguments
    for content in ["  padded\n", "a<turn|>b", "a<|tool_response>b", "a<tool_call|>b", "a<channel|>b", "a<|channel>b"]:
        assert not content_ok(content)
        result = FMT.parse(FMT.render_reply({"role": "assistant", "content": content}))
        assert result.content != content, content
    for content in ["call:f{}", "see:\ncall:f(x=1)", "a<|tool_call>call:g{}<tool_call|>", "a<call>g{}", "see call:f{}"]:
        assert not content_ok(content)
        result = FMT.parse(FMT.render_reply(call_message({}, content)), tools=[{"function": {"name": "f"}}])
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
    fragments, sent_at_half, result = argument_fragments(FMT, _write_call(value), 4)
    assert result.issues == []
    arguments = result.to_message().model_dump(mode="json")["tool_calls"][0]["function"]["arguments"]
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


@pytest.mark.parametrize("size", [1, 4])
def test_a_block_after_a_line_of_text_streams_as_it_is_generated(size: int) -> None:
    # The line break before the block starts no call (prose calls start with ``call:``): it is
    # not held for the fast lexer of calls in prose, and the block's reasoning is not either.
    reply = "Before\n<|channel>thought\n" + "Some reasoning here. " * 4 + CHANNEL_CLOSE + "\nrest"
    stream = FMT.stream()
    text: list[tuple[int, str]] = []
    reasoning: list[tuple[int, str]] = []
    for n, chunk in enumerate(split(reply, size)):
        for event in stream.feed(chunk):
            if isinstance(event, TextDelta):
                text.append((size * (n + 1), event.text))
            elif isinstance(event, ReasoningDelta):
                reasoning.append((size * (n + 1), event.text))
    stream.close()
    assert stream.result.content == "Before\n\nrest" and stream.result.reasoning.startswith("Some")
    # "Before\n" is out once the opener has begun to arrive; the reasoning as it comes
    opener = reply.index("<|channel>")
    assert "".join(t for fed, t in text if fed <= opener + size) == "Before\n"
    assert reasoning[0][0] <= reply.index("Some") + size


def test_reasoning_opened_by_the_prompt_streams_as_reasoning_deltas() -> None:
    reply = "Thinking " * 50 + CHANNEL_CLOSE + "Hello!" + TURN
    run = run_chunks(FMT, split(reply, 4), prompt=PROMPT_THINKING)
    deltas = [e.text for e in run.events if isinstance(e, ReasoningDelta)]
    assert "".join(deltas) == "Thinking " * 50 == run.result.reasoning
    assert len(deltas) > 50
    assert run.result.content == "Hello!"
    assert run.result.issues == []


# --------------------------------------------------------------------------- known parser bugs


def test_a_call_inside_a_long_line_of_prose_is_decided_within_a_bounded_wait() -> None:
    """What a call inside a line of prose waits for (the end of its line) is bounded: a line that
    goes on and on is decided once 1,024 characters after ``call:`` have arrived."""
    tools = json.loads((GOLDEN_DIR / "gemma4" / "tools.json").read_text(encoding="utf-8"))
    stream = codec.get_format("gemma4").stream(tools=tools)
    started = stream.feed("I'll look it up. call:search{query:weather in Tokyo} ")
    for _ in range(300):
        started += stream.feed("more ")
    assert [e.name for e in started if isinstance(e, ToolCallStart)] == ["search"]  # before close()
    stream.close()
    assert [c.function.name for c in stream.result.tool_calls] == ["search"]


# --------------------------------------------------------------------------- nothing silently lost


def test_leading_zeros_are_reported_with_their_digits() -> None:
    reply = "<|tool_call>call:lookup{zip:02134,n:0}<tool_call|>"
    result = FMT.parse(reply)
    assert result.tool_calls[0].function.arguments == {"zip": 2134, "n": 0}
    assert [(issue.kind, issue.pos, issue.text) for issue in result.issues] == [
        ("leading_zeros", reply.index("02134"), "02134")
    ]
    with pytest.raises(codec.ParseError):
        FMT.parse(reply, strict=True)


@pytest.mark.parametrize("value", ['"a\\ud800"', "'a\\udfff'", '["\\ud800"]', '{k:"\\udc00"}'])
def test_a_lone_surrogate_escape_is_replaced_and_reported(value: str) -> None:
    result = FMT.parse(f"<|tool_call>call:f{{a:{value}}}<tool_call|>")
    assert "\ufffd" in json.dumps(result.tool_calls[0].function.arguments, ensure_ascii=False)
    assert "lone_surrogate" in [issue.kind for issue in result.issues]
    result.model_dump_json()


@pytest.mark.parametrize(
    ("body", "arguments", "missing"),
    [
        (f"{{filters:{{city:Tokyo{Q}}},query:{Q}x{Q}}}", {"filters": {"city": "Tokyo"}, "query": "x"}, ["Tokyo"]),
        (f"{{query:[{Q}a{Q},b{Q}]}}", {"query": ["a", "b"]}, ["b"]),
        (
            f"{{query:[a{Q}, {Q}b{Q}],n:{{k:5{Q},j:{Q}y{Q}}}}}",
            {"query": ["a", "b"], "n": {"k": "5", "j": "y"}},
            ["a", "5"],
        ),
        (f"{{city:Tokyo{Q}}}", {"city": "Tokyo"}, ["Tokyo"]),  # (at the top level, as before)
    ],
)
def test_a_nested_value_without_its_opening_quote_is_read_up_to_its_closer(
    body: str, arguments: dict[str, Any], missing: list[str]
) -> None:
    """As at the top level: ``Tokyo<|"|>`` inside an object or a list is the string ``Tokyo``,
    reported (``missing_open_quote``), not a call broken to ``{}``."""
    reply = f"{OPEN}call:f{body}{CLOSE}"
    result = FMT.parse(reply)
    assert [(call.function.name, call.function.arguments) for call in result.tool_calls] == [("f", arguments)]
    assert [(issue.kind, issue.pos) for issue in result.issues] == [
        ("missing_open_quote", reply.index(word + Q)) for word in missing
    ]
    for size in (1, 2, 5):
        assert_streams_like(parse_chunked(FMT, reply, size), result)
