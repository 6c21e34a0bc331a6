"""Whole-reply readers (``Syntax.whole``): a complete parse that takes one gives exactly what the
stream gives, and they take the replies their templates write.

The stream is the grammar's path, token by token; a reader is a shortcut for complete replies in
the template's shape. Here every reply is parsed both ways and compared (content, reasoning, calls
with their ids, issues): golden replies, replies written by ``render_reply`` for generated
messages, and both after random damage (markers, markup characters and blanks dropped in, slices
cut out or repeated, the end cut off), with and without tools, prompts and strict mode.
"""

from __future__ import annotations

from functools import cache, partial
from typing import Any

import pytest
from formats import profile
from harness import examples, load_golden
from hypothesis import given
from hypothesis import strategies as st

import codec
from codec.models import ParseResult
from codec.stream import Stream, read_whole
from codec.wire import arg_pairs, xml_params

READERS = [name for name in codec.formats() if codec.get_format(name).syntax().whole is not None]
_MARKUP = (
    "call:",
    "<b>",
    "|",
    "<",
    ">",
    "{",
    "}",
    "[",
    "]",
    "`",
    '"',
    "'",
    "\\",
    "\n",
    " ",
    "\t",
    "\n\n",
    ",",
    ":",
    "=",
    "(",
    ")",
)


def stream_parse(fmt: codec.Format, text: str, **kwargs: Any) -> ParseResult:
    """What the grammar's path alone reads: the stream, fed the reply at once."""
    stream = Stream(fmt.syntax(), events=False, **{"call_id": fmt.default_call_id, **kwargs})
    stream.feed(text)
    stream.close()
    return stream.result


@cache
def _golden(name: str) -> list[tuple[str, Any, Any]]:
    return [(case.text, case.tools, case.prompt) for case in load_golden(name)]


def _pieces(name: str) -> list[str]:
    found = profile(name)
    return [*found.markers, *found.snippets, *_MARKUP]


@st.composite
def _replies(draw: st.DrawFn, name: str) -> tuple[str, Any]:
    """A reply of format ``name`` (a golden one, or one its renderer writes) and tools to parse it with."""
    fmt = codec.get_format(name)
    if draw(st.booleans(), label="rendered"):
        message, tools = draw(profile(name).round_trip.messages(draw(st.booleans(), label="with tools")))
        return fmt.render_reply(message), tools
    text, tools, _ = draw(st.sampled_from(_golden(name)), label="golden")
    return text, tools


@st.composite
def _damaged(draw: st.DrawFn, name: str) -> str:
    text, _ = draw(_replies(name))
    for _ in range(draw(st.integers(0, 3), label="edits")):
        at = draw(st.integers(0, len(text)), label="at")
        edit = draw(st.sampled_from(["insert", "cut", "repeat", "truncate"]), label="edit")
        if edit == "insert":
            text = text[:at] + draw(st.sampled_from(_pieces(name)), label="piece") + text[at:]
        elif edit == "cut":
            text = text[:at] + text[at + draw(st.integers(1, 12), label="length") :]
        elif edit == "repeat":
            end = min(len(text), at + draw(st.integers(1, 40), label="length"))
            text = text[:end] + text[at:end] + text[end:]
        else:
            text = text[:at]
    return text


@pytest.mark.parametrize("name", READERS)
def test_golden_replies_read_whole_as_the_stream_reads_them(name: str) -> None:
    fmt = codec.get_format(name)
    for text, tools, prompt in _golden(name):
        for kwargs in ({"tools": tools, "prompt": prompt}, {"tools": None, "prompt": prompt}):
            assert fmt.parse(text, **kwargs) == stream_parse(fmt, text, **kwargs), text


@pytest.mark.parametrize("name", READERS)
@examples(150)
@given(data=st.data())
def test_a_reading_is_what_the_stream_reads(name: str, data: st.DataObject) -> None:
    fmt = codec.get_format(name)
    text, tools = data.draw(_replies(name), label="reply")
    if data.draw(st.booleans(), label="damaged"):
        text = data.draw(_damaged(name), label="damaged reply")
        tools = data.draw(st.sampled_from([None, tools]), label="tools")
    prompt = data.draw(st.sampled_from([None, "", "<|im_start|>assistant\n<think>\n"]), label="prompt")
    strict = data.draw(st.booleans(), label="strict")
    try:
        want: ParseResult | Exception = stream_parse(fmt, text, tools=tools, prompt=prompt, strict=strict)
    except codec.ParseError as exc:
        want = exc
    try:
        got: ParseResult | Exception = fmt.parse(text, tools=tools, prompt=prompt, strict=strict)
    except codec.ParseError as exc:
        got = exc
    if isinstance(want, Exception):
        assert isinstance(got, Exception) and str(got) == str(want)
    else:
        assert got == want


@pytest.mark.parametrize("name", READERS)
@examples(60)
@given(data=st.data())
def test_the_reader_takes_what_the_template_writes(name: str, data: st.DataObject) -> None:
    """Replies ``render_reply`` writes for plain messages (prose without markup, ordinary values)
    are read whole: the shortcut is there for the replies that matter."""
    fmt = codec.get_format(name)
    prose = data.draw(st.sampled_from(["", "Let me check that.", "Sure: two calls, one per city."]), label="prose")
    calls = [
        {"type": "function", "function": {"name": "get_weather", "arguments": {"city": city, "days": days}}}
        for city, days in data.draw(
            st.lists(st.tuples(st.sampled_from(["Paris", "São Paulo", "Zürich"]), st.integers(0, 9)), max_size=3),
            label="calls",
        )
    ]
    message: dict[str, Any] = {"role": "assistant", "content": prose}
    if calls:
        message["tool_calls"] = calls
    reply = fmt.render_reply(message)
    read = read_whole(fmt.syntax(), reply, _WEATHER, None, fmt.default_call_id)
    assert read is not None, reply
    assert read == stream_parse(fmt, reply, tools=_WEATHER)


_WEATHER = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    }
]


@pytest.mark.parametrize("name", READERS)
def test_a_reply_with_something_to_report_is_left_to_the_stream(name: str) -> None:
    """An undeclared tool or arguments its schema refuses: the reader declines, the stream reports."""
    fmt = codec.get_format(name)
    refused = (
        ({"city": "Paris"}, "get_time"),
        ({"days": 3}, "get_weather"),
        ({"city": "P", "days": "soon"}, "get_weather"),
    )
    for arguments, tool in refused:
        reply = fmt.render_reply(
            {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": tool, "arguments": arguments}}]}
        )
        # read whole without tools
        assert read_whole(fmt.syntax(), reply, None, None, fmt.default_call_id) is not None, reply
        assert read_whole(fmt.syntax(), reply, _WEATHER, None, fmt.default_call_id) is None
        result = fmt.parse(reply, tools=_WEATHER)
        assert result == stream_parse(fmt, reply, tools=_WEATHER) and result.issues


def test_formats_in_the_template_shape_have_a_reader() -> None:
    assert set(READERS) == set(codec.formats())


def _reads_xml_params(name: str) -> bool:
    whole = codec.get_format(name).syntax().whole
    return isinstance(whole, partial) and whole.func is xml_params.whole_reply


XML_PARAMS = [name for name in READERS if _reads_xml_params(name)]
#: The readers whose values are runs of the grammar's VALUE: xml_params' and arg_pairs'.
VALUE_READERS = [
    *XML_PARAMS,
    *(
        name
        for name in READERS
        if getattr(codec.get_format(name).syntax().whole, "func", None) is arg_pairs.whole_reply
    ),
]


def _reads_json_object_blocks(name: str) -> bool:
    whole = codec.get_format(name).syntax().whole
    qualname = getattr(whole, "__qualname__", "")
    return (
        getattr(whole, "__module__", "") == "codec.wire.json_object"
        and qualname == "_whole_reader.<locals>.whole_reply"
    )


def _reader_module(name: str) -> str:
    whole = codec.get_format(name).syntax().whole
    return str(getattr(getattr(whole, "func", whole), "__module__", ""))


#: The families whose readers take prose holding markup where the grammar reads it as text.
_PROSE_FAMILIES = {
    "codec.wire.named_json",
    "codec.wire.invoke",
    "codec.wire.arg_pairs",
    "codec.wire.call_list",
    "codec.wire._gemma4_parse",
}
#: The readers that take prose holding markup where the grammar reads it as text.
PROSE_READERS = [
    *XML_PARAMS,
    *(name for name in READERS if _reads_json_object_blocks(name) or _reader_module(name) in _PROSE_FAMILIES),
]


@pytest.mark.parametrize("name", VALUE_READERS)
@examples(80)
@given(data=st.data())
def test_values_spanning_lines_and_holding_markup_read_as_the_stream_reads_them(name: str, data: st.DataObject) -> None:
    """xml_params values of several lines, holding tags, closers and heads (the format's own
    markers among them): the reader gives what the stream gives, or declines."""
    fmt = codec.get_format(name)
    words = st.sampled_from([*_pieces(name), "word", "two words", "\n", "\n\n", "  ", "<b>", "</b>", "x<y"])
    values = st.lists(words, min_size=1, max_size=8).map("".join)
    calls = [
        {"type": "function", "function": {"name": "get_weather", "arguments": {"city": city, "days": days}}}
        for city, days in data.draw(
            st.lists(st.tuples(values, st.integers(0, 9)), min_size=1, max_size=3), label="calls"
        )
    ]
    reply = fmt.render_reply({"role": "assistant", "content": "", "tool_calls": calls})
    for tools in (None, _WEATHER):
        assert fmt.parse(reply, tools=tools) == stream_parse(fmt, reply, tools=tools), reply


@pytest.mark.parametrize("name", XML_PARAMS)
@pytest.mark.parametrize(
    "city",
    ["first line\nsecond line", "a <b>bold</b> claim", "a < b > c", "one\n\n  indented\nthree", "x </parameter> y"],
)
def test_the_reader_takes_values_the_rules_read_as_text(name: str, city: str) -> None:
    """Lines and markup that the rules read as text of a value are read whole, as the stream reads them."""
    fmt = codec.get_format(name)
    call = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": city, "days": 2}}}
    reply = fmt.render_reply({"role": "assistant", "content": "", "tool_calls": [call, call]})
    read = read_whole(fmt.syntax(), reply, _WEATHER, None, fmt.default_call_id)
    assert read is not None, reply
    assert read == stream_parse(fmt, reply, tools=_WEATHER)
    assert [c.function.arguments for c in read.tool_calls] == [call["function"]["arguments"]] * 2


@pytest.mark.parametrize("name", READERS)
@examples(60)
@given(data=st.data())
def test_prose_holding_markup_reads_as_the_stream_reads_it(name: str, data: st.DataObject) -> None:
    """Prose holding tags, brackets, fences and the format's own markers, before calls or alone:
    the reader gives what the stream gives, or declines."""
    fmt = codec.get_format(name)
    words = st.sampled_from(
        [
            *_pieces(name),
            "word",
            "two words",
            "<b>bold</b>",
            "```",
            "\n```\n",
            "</think>",
            '{"name": "get_weather"',
            "]",
        ]
    )
    prose = data.draw(st.lists(words, max_size=8).map("".join), label="prose")
    calls = [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 1}}}]
    message: dict[str, Any] = {"role": "assistant", "content": prose}
    if data.draw(st.booleans(), label="with a call"):
        message["tool_calls"] = calls
    reply = fmt.render_reply(message)
    for tools in (None, _WEATHER):
        assert fmt.parse(reply, tools=tools) == stream_parse(fmt, reply, tools=tools), reply


@pytest.mark.parametrize("name", PROSE_READERS)
@pytest.mark.parametrize(
    "prose", ['Use <b>bold</b> or [links](x) and {"json": [1, 2]} in a <div class="a">; 3 < 4 > 2.', "a `code` span"]
)
def test_the_reader_takes_prose_the_rules_read_as_text(name: str, prose: str) -> None:
    fmt = codec.get_format(name)
    call = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}}
    for message in ({"content": prose}, {"content": prose, "tool_calls": [call]}):
        reply = fmt.render_reply({"role": "assistant", **message})
        read = read_whole(fmt.syntax(), reply, _WEATHER, None, fmt.default_call_id)
        assert read is not None, reply
        assert read == stream_parse(fmt, reply, tools=_WEATHER)
        if prose in reply:  # (a template may drop the content of a message with calls)
            assert read.content.rstrip("\n") == prose


@pytest.mark.parametrize("name", READERS)
@examples(60)
@given(data=st.data())
def test_replies_of_pieces_read_as_the_stream_reads_them(name: str, data: st.DataObject) -> None:
    """Text of the format's markers, snippets, markup and words in any order, no renderer's shape
    (plain text, a marker anywhere, a stop token or none): the reader gives what the stream gives, or declines."""
    fmt = codec.get_format(name)
    words = st.sampled_from([*_pieces(name), "word", "Hello there.", "a", "to", "assistant", "final"])
    reply = data.draw(st.lists(words, max_size=8).map("".join), label="reply")
    for tools in (None, _WEATHER):
        assert fmt.parse(reply, tools=tools) == stream_parse(fmt, reply, tools=tools), reply


@pytest.mark.parametrize("name", [name for name in READERS if _reader_module(name) == "codec.wire.harmony"])
@pytest.mark.parametrize("reply", ["Hello! Paris is sunny today.", 'Use <b>bold</b> or {"json": 1}.'])
def test_a_harmony_reply_of_plain_text_is_read_whole(name: str, reply: str) -> None:
    fmt = codec.get_format(name)
    reply += fmt.wire.stop
    read = read_whole(fmt.syntax(), reply, None, None, fmt.default_call_id)
    assert read is not None and read == stream_parse(fmt, reply)
    assert read.content == reply.removesuffix(fmt.wire.stop)


def test_arguments_the_end_finds_no_object_are_a_broken_call_not_an_error() -> None:
    """A handler refusing what the end of the reply completes (arguments written as a string that
    holds no object) rejects the block as a refusal at any token does: recovered and reported,
    alike whatever the chunks, and a ParseError when strict."""
    fmt = codec.get_format("ministral3")
    reply = '[TOOL_CALLS]f[ARGS]"f"'
    whole = fmt.parse(reply)
    assert [c.function.name for c in whole.tool_calls] == ["f"] and whole.issues
    stream = fmt.stream()
    for char in reply:
        stream.feed(char)
    stream.close()
    assert stream.result == whole
    with pytest.raises(codec.ParseError):
        fmt.parse(reply, strict=True)
