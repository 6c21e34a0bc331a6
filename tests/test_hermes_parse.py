"""Property tests of the ``hermes`` reply parser (hypothesis, derandomized).

The format-independent properties (arbitrary text and every truncation of golden replies never
raise, strict mode raises only ``ParseError``, chunking invariance, linear ``stream.work`` on
adversarial inputs, including hermes's own) are in ``test_parse_properties.py``. Here:

* chunking invariance with a ``<think>`` block first, or a prompt that opens one (the round trip of
  generated messages is in ``test_round_trip.py``, the strategies in ``formats/hermes.py``);
* lossless: text without markers is all content; a broken block's text is kept somewhere;
* deep nesting inside a string, strict JSON in ``arguments``, linear work of the lark adapter's
  value stack, and regressions of bugs found and fixed.

Known parser bugs are ``xfail(strict=True)`` tests, each with a minimal reproducer, so that a
fix shows up as XPASS.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Callable
from typing import Any

import pytest
from formats.hermes import CHARS, assistant_messages, content_ok, expected, json_values, text_values, tools_for
from harness import (
    assert_append_only,
    assert_streams_like,
    examples,
    expected_message,
    parse_char_by_char,
    parse_chunked,
    run_chunks,
    split,
)
from hypothesis import assume, given
from hypothesis import strategies as st

import codec
from codec import wire
from codec.models import TextDelta
from codec.wire import _json_object_values as values
from codec.wire.json_object import opener_pattern

FMT = codec.get_format("hermes")
OPEN, CLOSE, STOP = "<tool_call>\n", "\n</tool_call>", "<|im_end|>"


#: Reasoning the ``<think>`` frame carries unchanged (the newlines next to the tags are markup).
reasonings = text_values().filter(lambda r: "</think>" not in r and not r.startswith("\n") and not r.endswith("\n"))


@examples(80)
@given(
    message=assistant_messages(),
    reasoning=reasonings,
    sizes=st.one_of(st.just([1]), st.lists(st.integers(1, 16), min_size=1, max_size=8)),
)
def test_a_think_block_first_is_reasoning_whatever_the_chunking(
    message: dict[str, Any], reasoning: str, sizes: list[int]
) -> None:
    """A ``<think>`` block before the reply (``render_reply`` does not write reasoning); without one, the
    round trip (``test_round_trip.py``) checks the same."""
    # '</think>' swallows the newlines after it, as the Qwen3 templates write them
    assume(not (message["content"] or "").startswith("\n"))
    reply = f"<think>{reasoning}</think>\n\n{FMT.render_reply(message)}"
    tools = tools_for(message)
    whole = FMT.parse(reply, tools=tools)
    run = parse_chunked(FMT, reply, sizes, tools=tools)
    assert_streams_like(run, whole)
    assert whole.issues == []
    assert whole.to_message().model_dump(mode="json") == expected_message(
        {**expected(message, tools), "reasoning": reasoning}
    )


@examples(40)
@given(message=assistant_messages(), sizes=st.lists(st.integers(1, 8), min_size=1, max_size=6))
def test_prompt_opening_reasoning_streams_like_it_parses(message: dict[str, Any], sizes: list[int]) -> None:
    assume(not (message["content"] or "").startswith("\n"))
    prompt = "<|im_start|>user\nOi<|im_end|>\n<|im_start|>assistant\n<think>\n"
    reply = "Pensando no pedido.</think>\n\n" + FMT.render_reply(message)
    whole = FMT.parse(reply, prompt=prompt)
    assert whole.reasoning == "Pensando no pedido."
    assert whole.content == (message["content"] or "")
    run = parse_chunked(FMT, reply, sizes, prompt=prompt)
    assert run.result == whole
    assert_append_only(run.events, run.result)


# --------------------------------------------------------------------------- lossless

_no_marker_text = st.lists(
    st.one_of(
        st.sampled_from(
            ("<tool_cal", "tool_call>", "</tool_call>", "<|im_end", "|im_end|>", "<thin", "</think>", "<", "\n")
        ),
        st.text(CHARS, max_size=6),
    ),
    max_size=12,
).map("".join)


@examples(80)
@given(text=_no_marker_text, sizes=st.lists(st.integers(1, 8), min_size=1, max_size=5))
def test_text_without_markers_is_all_content(text: str, sizes: list[int]) -> None:
    """Given a prompt that opened no reasoning (without one, a leading `</think>` would say it did)."""
    assume(content_ok(text))
    result = FMT.parse(text, prompt="")
    assert (result.content, result.reasoning, result.tool_calls, result.issues) == (text, "", [], [])
    assert parse_chunked(FMT, text, sizes, prompt="").result == result


GOOD_A = OPEN + '{"name": "alpha", "arguments": {"x": 1}}' + CLOSE
GOOD_B = OPEN + '{"name": "beta", "arguments": {}}' + CLOSE
_plain = st.text(st.characters(codec="utf-8", exclude_characters="<"), max_size=6)


@st.composite
def broken_blocks(draw: st.DrawFn) -> str:
    """A ``broken_tool`` block damaged by truncation, a deleted or an inserted character; closed or not."""
    args = draw(st.dictionaries(_plain, json_values(_plain), max_size=3))
    body = '{"name": "broken_tool", "arguments": ' + json.dumps(args, ensure_ascii=False) + "}"
    i = draw(st.integers(0, len(body) - 1))
    damage = draw(st.sampled_from(("truncate", "delete", "insert")))
    if damage == "truncate":
        body = body[:i]
    elif damage == "delete":
        body = body[:i] + body[i + 1 :]
    else:
        body = body[:i] + draw(st.sampled_from(('"', "{", "}", "[", "]", ":", ",", "\\", "x", "\n"))) + body[i:]
    return OPEN + body + (CLOSE if draw(st.booleans()) else "")


@examples(80)
@given(block=broken_blocks(), sizes=st.lists(st.integers(1, 8), min_size=1, max_size=5))
def test_broken_block_is_kept_somewhere(block: str, sizes: list[int]) -> None:
    text = GOOD_A + "\n" + block + "\n" + GOOD_B + STOP
    result = FMT.parse(text)
    names = [c.function.name for c in result.tool_calls]
    from_block = [n for n in names if n not in ("alpha", "beta")]
    kept = block in result.content or any(block in (issue.text or "") for issue in result.issues)
    assert from_block or kept, "the broken block's text is neither a call, content nor an issue's text"
    if not from_block:
        assert result.issues, "a block kept as text must be reported"
    assert names[0] == "alpha"


# --------------------------------------------------------------------------- nesting and value-stack work

_DEEP = 10_000
_ARG = OPEN + '{"name": "f", "arguments": {"a": '  # a call cut right where the value of argument "a" starts


def _call(value: str) -> str:
    return _ARG + value + "}}" + CLOSE


def test_deep_nesting_inside_a_string_is_just_text() -> None:
    value = "[" * _DEEP + "{" * _DEEP
    text = OPEN + json.dumps({"name": "f", "arguments": {"a": value}}) + CLOSE + STOP
    result = FMT.parse(text)
    assert result.issues == []
    assert result.tool_calls[0].function.arguments == {"a": value}


# --------------------------------------------------------------------------- regressions


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_arguments_string_is_strict_json(value: str) -> None:
    """Non-finite numbers never reach arguments, whichever path (grammar or repair) reads the block."""
    text = OPEN + '{"name": "f", "arguments": {"a": ' + value + ', "b": True}}' + CLOSE

    def reject(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    result = FMT.parse(text)
    for call in result.to_message().model_dump(mode="json").get("tool_calls") or []:
        json.loads(call["function"]["arguments"], parse_constant=reject)
    for call in result.tool_calls:
        assert all(not isinstance(v, float) or math.isfinite(v) for v in call.function.arguments.values())


def _splice_copies(fn: Callable[[], object], monkeypatch: pytest.MonkeyPatch) -> int:
    """Elements copied by the lark adapter when it splices inlined rules' children (white-box).

    ``stream.work`` counts only the lexer; this counts the other place where a long reply could
    cost O(n^2): rebuilding the children list of a repetition at every reduction.
    """
    from codec import _lark

    original = getattr(_lark, "_splice", None)
    if original is None:
        pytest.skip("codec._lark no longer splices children")
    copied = 0

    def counting(children: list[Any]) -> list[Any]:
        nonlocal copied
        copied += sum(len(c) if type(c) is _lark.Splice else 1 for c in children)
        return original(children)

    monkeypatch.setattr(_lark, "_splice", counting)
    fn()
    return copied


_MANY_ARGS = _ARG + "0, " + ", ".join(f'"k{i}": {i}' for i in range(3_000)) + "}}" + CLOSE
_LONG_ARRAY = _ARG + "[" + "1, " * 6_000
_QUADRATIC_SPLICE = (
    "`(COMMA arg)*` / `(COMMA value)*` / `(COMMA pair)*` are lark star helpers that codec._lark inlines by "
    "copying every earlier child at each reduction: many arguments or a long array that the C fast path "
    "cannot take (streamed, or truncated) cost O(n^2) - 8 000 arguments in 4-char chunks take ~2 s, "
    "a truncated 20 000-element array ~6 s"
)


@pytest.mark.parametrize(
    ("text", "sizes"),
    [
        pytest.param("Olá mundo, " * 2_000, 4, id="plain_text_4_char_chunks"),
        pytest.param((_call("1") + "\n") * 2_000, None, id="many_calls_whole"),
        pytest.param(
            _MANY_ARGS,
            4,
            id="many_arguments_4_char_chunks",
        ),
        pytest.param(
            _LONG_ARRAY,
            None,
            id="truncated_long_array_whole",
        ),
        pytest.param(
            _LONG_ARRAY,
            4,
            id="long_array_4_char_chunks",
        ),
    ],
)
def test_parser_value_stack_work_is_linear(text: str, sizes: int | None, monkeypatch: pytest.MonkeyPatch) -> None:
    copied = _splice_copies(lambda: parse_chunked(FMT, text, sizes) if sizes else FMT.parse(text), monkeypatch)
    assert copied <= 4 * len(text)


#: Blocks each JSON decoder fails on somewhere (a wrong bracket, nested containers, a Python
#: literal, a missing closer, no JSON at all, a fence): the rest of the reply follows each one.
_BROKEN_BLOCKS = [
    pytest.param(OPEN + '{"name": "f", "arguments": {"a": 1, "b": [1, 2}}' + CLOSE + "\n", id="wrong_bracket"),
    pytest.param(OPEN + '{"name": "f", "arguments": {"a": {"b": {"c": [1, {"d": 2}}}}}' + CLOSE + "\n", id="nested"),
    pytest.param(OPEN + "{'name': 'f', 'arguments': {'a': None}}" + CLOSE + "\n", id="python_literal"),
    pytest.param(OPEN + '{"name": "f", "arguments": {"a": 1}\n', id="missing_closer"),
    pytest.param(OPEN + "{name: f}" + CLOSE + "\n", id="no_json"),
    pytest.param('```json\n{"name": "f", "arguments": {"a": 1 2}}\n```\n', id="fence"),
]


@pytest.mark.parametrize("block", _BROKEN_BLOCKS)
@pytest.mark.parametrize("chunked", [False, True], ids=["whole", "chunked"])
def test_decoders_are_handed_work_in_proportion_to_the_reply(
    block: str, chunked: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed decode makes ``json`` count lines from the start of the text it was handed, up to
    the error: decoders are handed windows of a block, never the rest of the reply (1 MB of broken
    blocks took half a minute). Ten times the blocks, about ten times the characters handed
    (``DecoderInput``) and counted through (every ``JSONDecodeError``'s position, whoever
    decoded)."""
    counted = 0
    init = json.JSONDecodeError.__init__

    def counting(self: json.JSONDecodeError, msg: str, doc: str, pos: int) -> None:
        nonlocal counted
        counted += pos
        init(self, msg, doc, pos)

    monkeypatch.setattr(json.JSONDecodeError, "__init__", counting)

    def work(n: int) -> tuple[int, int]:
        nonlocal counted
        before, counted = values.DecoderInput.chars, 0
        if chunked:
            parse_chunked(FMT, block * n, 4096)
        else:
            FMT.parse(block * n)
        return values.DecoderInput.chars - before, counted

    (handed, through), (handed_10, through_10) = work(100), work(1000)
    assert handed_10 <= 12 * handed  # (quadratic: 100 times; the windows near the reply's end make it over 10)
    assert through_10 <= 12 * through


@pytest.mark.parametrize("size", [1, 2, 200, 255, 256, 257, 1_000, 3_000])
def test_a_value_decodes_in_windows_as_in_the_whole_text(size: int) -> None:
    """A value longer than the first window, or ending at its edge, reads as it does whole."""
    for value in ({"a": "x" * size}, {"a": [1] * size}, {"k" * size: -1.5e-7}, ["\u00e9" * size, None]):
        text = json.dumps(value) + " tail"
        assert values.raw_decode(values.PLAIN_JSON_DECODER, text) == (value, len(text) - 5)
        for cut in (len(text) - 6, len(text) - 8):  # cut inside the value: the same error as whole
            with pytest.raises(json.JSONDecodeError) as whole:
                values.PLAIN_JSON_DECODER.raw_decode(text[:cut])
            with pytest.raises(values.Undecodable) as windowed:
                values.raw_decode(values.PLAIN_JSON_DECODER, text[:cut])
            assert (windowed.value.msg, windowed.value.pos) == (whole.value.msg, whole.value.pos)


# --------------------------------------------------------------------------- regressions (bugs found and fixed)


JUNK_AFTER_OBJECT = [
    OPEN + '{"name": "f", "arguments": {"a": 1}}\nVou esperar o resultado.' + CLOSE + STOP,
    '<tool_call>{"name": "f", "arguments": {"a": 1}}x</tool_call>',
    '<tool_call>{"name": "f", "arguments": {"a": 1}}<think></tool_call>',
]


@pytest.mark.parametrize("text", JUNK_AFTER_OBJECT)
def test_complete_call_followed_by_junk_in_its_block(text: str) -> None:
    whole = FMT.parse(text)
    assert parse_char_by_char(FMT, text).result == whole
    assert [(c.function.name, c.function.arguments) for c in whole.tool_calls] == [("f", {"a": 1})]
    junk = text[text.index("}}") + 2 : text.index("</tool_call>")].strip()
    assert any(junk in (i.text or "") for i in whole.issues) or junk in whole.content


# --------------------------------------------------------------------------- calls in other models' shapes

CALL = '{"name": "get_weather", "arguments": {"city": "Lisboa"}}'


@pytest.mark.parametrize(
    "content",
    [
        CALL,
        "[" + CALL + "]",
        "```json\n" + CALL + "\n```",
        "Veja:\n```\n" + CALL + "\n```",
        "<tool>" + CALL + "</tool>",
        'Assim: <function=get_weather>{"city": "Lisboa"}</function>',
    ],
)
def test_exclusions_are_real(content: str) -> None:
    """Content that ``content_ok`` leaves out of the round trip really does not come back as content."""
    assert not content_ok(content)
    result = FMT.parse(FMT.render_reply({"role": "assistant", "content": content}))
    assert result.content != content and result.tool_calls


_AFTER_OPENER = ["", " ", "\t", "  ", "\n", "\r\n", " \n", "\t\r\n", "{", "[", " {", "  {", "x", " x", "\r", "<"]


@pytest.mark.parametrize("after", _AFTER_OPENER)
def test_the_fast_paths_open_blocks_where_the_grammar_does(after: str) -> None:
    """``CALL_OPEN`` (the grammar) and ``opener_pattern`` (the fast paths) open a block before the same text."""
    text = "<tool_call>" + after
    grammar = FMT.syntax().grammar.pattern("CALL_OPEN")
    opens_block = FMT.kit().lexers().opens_block
    assert bool(grammar.match(text)) == bool(re.match(opener_pattern("<tool_call>"), text)) == opens_block(text, 0)


def _text_before(reply: str, prefix: str, size: int = 3) -> str:
    """The content a stream has sent once it has been given ``prefix`` of ``reply`` (in ``size``-character chunks)."""
    stream = FMT.stream(prompt="")  # a prompt that opened nothing: no reasoning lookahead
    sent = [e.text for chunk in split(prefix, size) for e in stream.feed(chunk) if isinstance(e, TextDelta)]
    return "".join(sent)


def test_a_fence_that_may_hold_calls_is_held_back_until_it_closes() -> None:
    reply = "Vou ver.\n```json\n" + CALL + "\n```" + STOP
    assert _text_before(reply, reply[: reply.index("\n```", 20)]) == "Vou ver."
    assert FMT.parse(reply).tool_calls


def test_a_fence_that_cannot_hold_calls_streams_at_once() -> None:
    """A fence whose first characters rule out calls is text as soon as they do: a long code block
    is not held back until it closes."""
    code = "print('olá')\n" * 200
    reply = "Código:\n```python\n" + code + "```"
    sent = _text_before(reply, reply[: len(reply) // 2])
    assert sent.startswith("Código:\n```python\nprint") and len(sent) > len(reply) // 2 - 20
    json_reply = 'Dados:\n```json\n{"status": "ok", "items": [' + "1, " * 300 + "2]}\n```"
    assert len(_text_before(json_reply, json_reply[: len(json_reply) // 2])) > len(json_reply) // 2 - 60


def test_a_fence_that_holds_no_call_is_all_content_whatever_the_chunking() -> None:
    reply = 'Exemplo:\n```json\n{"name": "get_weather", "arguments": {...}}\n```\nFim.'
    for size in (1, 2, 5, 64):
        run = parse_chunked(FMT, reply, size)
        assert (run.result.content, run.result.tool_calls, run.result.issues) == (reply, [], [])
        assert "".join(e.text for e in run.events if isinstance(e, TextDelta)) == reply


def test_a_tag_opener_inside_a_string_ends_the_scan_of_another_shape() -> None:
    """A shape's scan gives up at the opener of the next one even inside a string, so that no text
    is scanned for two shapes (the adversarial inputs check the work; this checks the meaning)."""
    reply = '<tool>{"name": "a <tool>{"name": "get_weather", "arguments": {"city": "Lisboa"}}</tool>'
    result = FMT.parse(reply)
    assert [(c.function.name, c.function.arguments) for c in result.tool_calls] == [("get_weather", {"city": "Lisboa"})]
    assert result.content == '<tool>{"name": "a '


def test_without_tools_any_name_makes_a_fenced_call() -> None:
    reply = "```json\n" + '{"name": "enviar_email", "arguments": {"para": "ana@example.com"}}' + "\n```"
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    assert [c.function.name for c in FMT.parse(reply).tool_calls] == ["enviar_email"]
    assert FMT.parse(reply, tools=tools).content == reply


_SHAPE_PIECES = (
    "\n",
    "  ",
    "```",
    "```json\n",
    "\n```",
    "<tool>",
    "</tool>",
    "<response>",
    "</response>",
    "<function=get_weather>",
    '<function name="search">',
    "</function>",
    OPEN,
    CLOSE,
    STOP,
    "<think>",
    "</think>",
    CALL,
    "[" + CALL + ", ",
    '{"city": "Lisboa"}',
    "{'name': 'search', 'arguments': {'query': 'x'}}",
    '{"name": "Ana", "age": 3}',
    '"',
    "\\",
    "{",
    "}",
    "]",
    "texto",
)
_TOOLS = [
    {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
    for name in ("get_weather", "search")
]


@examples(150)
@given(
    pieces=st.lists(st.sampled_from(_SHAPE_PIECES), max_size=12),
    sizes=st.one_of(st.just([1]), st.lists(st.integers(1, 9), min_size=1, max_size=6)),
    with_tools=st.booleans(),
)
def test_shapes_stream_like_they_parse(pieces: list[str], sizes: list[int], with_tools: bool) -> None:
    """Replies made of the shapes' openers, closers and call objects: every chunking gives the whole
    parse, and strict mode raises exactly where issues are reported."""
    text = "".join(pieces)
    tools = _TOOLS if with_tools else None
    whole = FMT.parse(text, tools=tools)
    assert_streams_like(parse_chunked(FMT, text, sizes, tools=tools), whole)
    try:
        strict = FMT.parse(text, tools=tools, strict=True)
    except codec.ParseError:
        assert whole.issues
    else:
        assert strict == whole and not whole.issues


@pytest.mark.parametrize(
    "reply",
    [
        "\n<tool>" + CALL + "</tool>",
        '  \n<function=get_weather>{"city": "Lisboa"}</function>',
        "\n\n<tool>" + CALL,
        "\n```json\n" + CALL + "\n```",
    ],
)
def test_a_shape_after_blanks_at_the_start_streams_like_it_parses(reply: str) -> None:
    """Where two lexers may read the same text (the start of the reply), a stream that waited for
    one of them reads it as the whole reply does, wherever the chunk boundary falls."""
    whole = FMT.parse(reply)
    assert whole.tool_calls
    for cut in range(1, len(reply)):
        for end in range(cut, len(reply), 3):
            assert run_chunks(FMT, [reply[:cut], reply[cut:end], reply[end:]]).result == whole, (cut, end)


# --------------------------------------------------------------------------- repairs read call objects as JSON does

#: Keys and strings of generated call objects (no marker: a repair finds the block's end before
#: it reads the block, and a single-quoted string is no string to that search).
_words = st.one_of(st.text(CHARS, max_size=6), st.sampled_from(["\ud800", "x\udfffy", "\ud83d\ude00", "\ude00\ud83d"]))
_keys = st.one_of(st.sampled_from(["a", "b", "id", "type", "name", "arguments"]), _words)


def _objects(values: st.SearchStrategy[Any]) -> st.SearchStrategy[list[tuple[str, Any]]]:
    """An object as its members, a key repeated at times."""
    return st.lists(st.tuples(_keys, values), max_size=4).flatmap(
        lambda members: st.just(members) if not members else st.sampled_from([members, members + members[:1]])
    )


class _Members(list[tuple[str, Any]]):
    """An object's members, as written."""


_leaves = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**20), 10**20), st.floats(allow_nan=False, allow_infinity=False), _words
)
_values = st.recursive(
    _leaves,
    lambda inner: st.one_of(st.lists(inner, max_size=3), _objects(inner).map(_Members)),
    max_leaves=8,
)


@st.composite
def call_members(draw: st.DrawFn) -> _Members:
    """A call object's members: names (some repeated, some not strings), arguments and parameters
    (objects with repeated keys, strings holding an object, null), other keys, in any order."""
    members: list[tuple[str, Any]] = []
    for _ in range(draw(st.integers(0, 2))):
        members.append(("name", draw(st.one_of(tool_names_, st.integers(0, 3)) if members else tool_names_)))
    for _ in range(draw(st.integers(0, 2))):
        arguments = _Members(draw(_objects(_values)))
        value = draw(st.sampled_from([arguments, _Written(arguments), None]))
        members.append((draw(st.sampled_from(["arguments", "parameters"])), value))
    members += draw(st.lists(st.tuples(st.sampled_from(["id", "type", "function", "x"]), _values), max_size=2))
    return _Members(draw(st.permutations(members)))


tool_names_ = st.sampled_from(["get_weather", "f", "search.web"])


class _Written(str):
    """Arguments given as a string: the JSON text of these members."""

    def __new__(cls, members: _Members) -> _Written:
        return super().__new__(cls, _spelled(members, style="json"))


def _spelled(value: Any, *, style: str) -> str:
    """``value`` written as JSON (``style`` "json"), JSON with raw control characters in its
    strings ("raw"), or a Python literal (single quotes, True/False/None: "python"), its objects'
    members as given."""
    if isinstance(value, _Members):
        return "{" + ", ".join(f"{_spelled(k, style=style)}: {_spelled(v, style=style)}" for k, v in value) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_spelled(item, style=style) for item in value) + "]"
    if style == "raw" and isinstance(value, str):
        return '"' + "".join(c if c in "\t\n\r" else _json(c)[1:-1] for c in value) + '"'
    if style != "python":
        return _json(value)
    if isinstance(value, str):
        return "'" + _json(value)[1:-1].replace("'", "\\'") + "'"
    return repr(value) if value is None or isinstance(value, bool) else json.dumps(value)


def _json(value: Any) -> str:
    """JSON text, a surrogate written as its escape (``\\ud800``: no text holds one)."""
    return re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", json.dumps(value, ensure_ascii=False))


def _readings(result: codec.ParseResult) -> tuple[Any, ...]:
    """The calls and the kinds of the issues, but for the word that a repair read the block."""
    calls = [(c.function.name, c.function.arguments) for c in result.tool_calls]
    kinds = [issue.kind for issue in result.issues if issue.kind != "repaired_call"]
    return calls, kinds, [(issue.kind, issue.text) for issue in result.issues if issue.kind != "repaired_call"]


@examples(150)
@given(
    objects=st.lists(call_members(), min_size=1, max_size=2),
    listed=st.booleans(),
    style=st.sampled_from(["python", "raw"]),
    fenced=st.booleans(),
    sizes=st.integers(1, 9),
)
def test_a_repaired_call_object_reads_as_its_json_does(
    objects: list[_Members], listed: bool, style: str, fenced: bool, sizes: int
) -> None:
    """Quote style never decides which tool runs: the same call objects written in JSON and in
    single-quoted Python literals (or JSON with raw control characters in strings) give the same
    calls and the same issues (the first ``name``, merged ``arguments``/``parameters``, the first
    value of a repeated argument, unused keys reported with their text), and the repair says it
    read the block. Where: the grammar reports each issue at its key, a repair at the block (the
    decoders that read it say no more). In a code fence (``fenced``), where only call objects
    make calls, the same."""
    assume(listed or len(objects) == 1)

    def block(style: str) -> str:
        body = [_spelled(members, style=style) for members in objects]
        calls = "[" + ", ".join(body) + "]" if listed else body[0]
        return ("```json\n" + calls + "\n```" if fenced else OPEN + calls + CLOSE) + STOP

    as_json, repaired = FMT.parse(block("json")), FMT.parse(block(style))
    assert parse_chunked(FMT, block(style), sizes).result == repaired
    assert parse_chunked(FMT, block("json"), sizes).result == as_json
    as_json.model_dump_json(), repaired.model_dump_json()  # no lone surrogate anywhere
    if not as_json.tool_calls:  # no call: the block is content (what the rules reported before it failed stays)
        assert (repaired.tool_calls, repaired.content) == ([], block(style)[: -len(STOP)])
        assert as_json.content == block("json")[: -len(STOP)]
        return
    assert _readings(repaired) == _readings(as_json)
    if block(style) != block("json") and (fenced or not listed):  # (in a list, what the rules read is no repair's)
        assert "repaired_call" in [issue.kind for issue in repaired.issues]


# --------------------------------------------------------------------------- lone surrogates

_FENCE = "`" * 3


@pytest.mark.parametrize(
    ("reply", "arguments"),
    [
        pytest.param(OPEN + '{"name": "f", "arguments": {"a": "x\\ud800y"}}' + CLOSE, {"a": "x\ufffdy"}, id="json"),
        pytest.param(
            OPEN + '{"name": "f", "arguments": {"a": "\\uDFFF\\ud800"}}' + CLOSE,
            {"a": "\ufffd\ufffd"},
            id="reversed_pair",
        ),
        pytest.param(
            OPEN + '{"name": "f", "arguments": {"\\udc00": [{"b": "\\ud800"}]}}' + CLOSE,
            {"\ufffd": [{"b": "\ufffd"}]},
            id="key_and_nested",
        ),
        pytest.param(
            OPEN + '{"name": "f", "arguments": {"a": "\\ud800", "b": None}}' + CLOSE,
            {"a": "\ufffd", "b": None},
            id="then_repaired",
        ),
        pytest.param(
            OPEN + "{'name': 'f', 'arguments': {'a': '\\ud800'}}" + CLOSE, {"a": "\ufffd"}, id="python_literal"
        ),
        pytest.param(
            OPEN + '{"name": "f", "arguments": "{\\"a\\": \\"\\\\ud800\\"}"}' + CLOSE,
            {"a": "\ufffd"},
            id="arguments_string",
        ),
        pytest.param(
            _FENCE + 'json\n{"name": "f", "arguments": {"a": "\\ud800"}}\n' + _FENCE, {"a": "\ufffd"}, id="fence"
        ),
        pytest.param('<function=f>{"a": "\\ud800"}</function>', {"a": "\ufffd"}, id="function_tag"),
        pytest.param('{"name": "f", "arguments": {"a": "\\ud800"}}', {"a": "\ufffd"}, id="bare"),
    ],
)
def test_a_lone_surrogate_is_replaced_and_reported(reply: str, arguments: dict[str, Any]) -> None:
    """``\\ud800`` alone decodes to no character: it would reach the arguments (and make the result
    unserializable) unreported. Each is U+FFFD, reported with the string's escaped text, by every
    path (the grammar's rules, the fast paths, which leave such text to them, the repairs, the
    shapes); strict mode raises."""
    result = FMT.parse(reply)
    assert [(c.function.name, c.function.arguments) for c in result.tool_calls] == [("f", arguments)]
    surrogates = [issue for issue in result.issues if issue.kind == "lone_surrogate"]
    assert surrogates and all(issue.text is not None and "\\ud" in issue.text.lower() for issue in surrogates)
    result.model_dump_json()
    assert result.to_message().model_dump(mode="json")["tool_calls"][0]["function"]["arguments"] == json.dumps(
        arguments, ensure_ascii=False
    )
    assert_streams_like(parse_char_by_char(FMT, reply), result)
    with pytest.raises(codec.ParseError):
        FMT.parse(reply, strict=True)


@pytest.mark.parametrize(
    "reply",
    [
        OPEN + '{"name": "f", "arguments": {"a": "\\ud83d\\ude00"}}' + CLOSE,  # a pair: one character
        OPEN + '{"name": "f", "arguments": {"a": "\\\\ud800"}}' + CLOSE,  # an escaped backslash, then text
    ],
)
def test_surrogate_pairs_and_escaped_backslashes_are_no_lone_surrogates(reply: str) -> None:
    result = FMT.parse(reply)
    assert result.issues == []
    assert result == FMT.parse(reply, strict=True) == parse_chunked(FMT, reply, 3).result


# --------------------------------------------------------------------------- hermes' spec in its family


def test_specs_that_parse_alike_share_one_syntax() -> None:
    """A spec that differs from hermes' only in what the renderer writes between calls reads
    replies the same: one Syntax (its grammar and lexers built once)."""
    spaced = wire.compile_spec(dataclasses.replace(FMT.wire, separator="\n\n"))
    assert spaced is not FMT.kit() and spaced.syntax() is FMT.syntax()
    assert spaced.reply_text({"content": "a", "tool_calls": [{"function": {"name": "f", "arguments": {}}}]}).startswith(
        "a\n\n<tool_call>"
    )


def test_the_shapes_of_other_models_are_recoveries_the_spec_names() -> None:
    """Without ``foreign_shapes`` and ``unwrapped_calls``, hermes' markers read a fence, a
    ``<tool>`` tag and a bare call object as the text they are."""
    plain = wire.reply_format(dataclasses.replace(FMT.wire, recover=()), "plain_hermes")
    call = '{"name": "get_weather", "arguments": {"city": "Lisboa"}}'
    for reply in (call, "```json\n" + call + "\n```", "Veja: <tool>" + call + "</tool>"):
        assert FMT.parse(reply).tool_calls
        result = plain.parse(reply)
        assert (result.content, result.tool_calls, result.issues) == (reply, [], [])
        assert parse_char_by_char(plain, reply).result == result
    assert plain.parse(OPEN + call + CLOSE + STOP).tool_calls


@pytest.mark.parametrize(
    ("change", "refused"),
    [
        ({"recover": ("fences",)}, "recovers no fences"),
        ({"call": ("\n<tool_call>", "</tool_call>")}, "start with other than a blank"),
        ({"stop": ""}, "and a stop token"),
        ({"name": ("name", "")}, "quoted JSON key"),
        ({"arguments_keys": ('a"b',)}, "plain keys"),
    ],
)
def test_a_spec_the_family_cannot_read_is_refused(change: dict[str, Any], refused: str) -> None:
    with pytest.raises(ValueError, match=refused):
        wire.compile_spec(dataclasses.replace(FMT.wire, **change))


@pytest.mark.parametrize(
    "block",
    [
        '{"name": "", "arguments": {}}',
        '{"name": "  ", "arguments": {"a": 1}}',
        '{"arguments": {}, "name": ""}',
        "{'name': '', 'arguments': {}}",
        '{"name": "", "arguments": {"a": 1}',
    ],
)
def test_a_call_object_with_an_empty_name_is_no_call(block: str) -> None:
    """No tool is called ``""``: the block gives no call, kept as content and reported, as a
    name that is no string is; a call after it is still read."""
    after = '<tool_call>\n{"name": "g", "arguments": {}}\n</tool_call>'
    reply = f"<tool_call>\n{block}\n</tool_call>{after}"
    result = FMT.parse(reply)
    assert [(call.function.name, call.function.arguments) for call in result.tool_calls] == [("g", {})]
    assert [(issue.kind, issue.call_index) for issue in result.issues] == [("invalid_tool_call", None)]
    assert result.content == reply[: -len(after)]
    assert_streams_like(parse_chunked(FMT, reply, 1), result)
    with pytest.raises(codec.ParseError):
        FMT.parse(reply, strict=True)
